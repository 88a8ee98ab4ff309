//! Thread axes and iteration axes.

use std::fmt;

use super::{Expr, Var};

/// A GPU thread or block index: what a loop is bound to, and what lowering replaces a
/// bound loop's variable with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThreadAxis {
    BlockIdxX,
    BlockIdxY,
    BlockIdxZ,
    ThreadIdxX,
    ThreadIdxY,
    ThreadIdxZ,
}

impl ThreadAxis {
    pub const ALL: [ThreadAxis; 6] = [
        ThreadAxis::BlockIdxX,
        ThreadAxis::BlockIdxY,
        ThreadAxis::BlockIdxZ,
        ThreadAxis::ThreadIdxX,
        ThreadAxis::ThreadIdxY,
        ThreadAxis::ThreadIdxZ,
    ];

    /// `blockIdx.x` and its kin.
    pub fn name(self) -> &'static str {
        match self {
            ThreadAxis::BlockIdxX => "blockIdx.x",
            ThreadAxis::BlockIdxY => "blockIdx.y",
            ThreadAxis::BlockIdxZ => "blockIdx.z",
            ThreadAxis::ThreadIdxX => "threadIdx.x",
            ThreadAxis::ThreadIdxY => "threadIdx.y",
            ThreadAxis::ThreadIdxZ => "threadIdx.z",
        }
    }

    /// The printed name of the index variable (`blockIdx_x`).
    pub fn var_name(self) -> &'static str {
        match self {
            ThreadAxis::BlockIdxX => "blockIdx_x",
            ThreadAxis::BlockIdxY => "blockIdx_y",
            ThreadAxis::BlockIdxZ => "blockIdx_z",
            ThreadAxis::ThreadIdxX => "threadIdx_x",
            ThreadAxis::ThreadIdxY => "threadIdx_y",
            ThreadAxis::ThreadIdxZ => "threadIdx_z",
        }
    }

    /// Parses `blockIdx.x` .. `threadIdx.z`.
    pub fn parse(s: &str) -> Option<ThreadAxis> {
        ThreadAxis::ALL.into_iter().find(|a| a.name() == s)
    }

    /// True for `blockIdx.*`.
    pub fn is_block(self) -> bool {
        matches!(
            self,
            ThreadAxis::BlockIdxX | ThreadAxis::BlockIdxY | ThreadAxis::BlockIdxZ
        )
    }

    /// 0 for x, 1 for y, 2 for z.
    pub fn dim(self) -> usize {
        match self {
            ThreadAxis::BlockIdxX | ThreadAxis::ThreadIdxX => 0,
            ThreadAxis::BlockIdxY | ThreadAxis::ThreadIdxY => 1,
            ThreadAxis::BlockIdxZ | ThreadAxis::ThreadIdxZ => 2,
        }
    }
}

impl fmt::Display for ThreadAxis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An axis of a te compute or reduction: a variable and its extent (it runs over
/// `0..extent`).
#[derive(Clone, Debug, PartialEq)]
pub struct IterVar {
    pub var: Var,
    pub extent: i64,
}

impl IterVar {
    pub fn new(name: impl Into<String>, extent: i64) -> IterVar {
        IterVar {
            var: Var::index(name),
            extent,
        }
    }
    pub fn expr(&self) -> Expr {
        self.var.expr()
    }
}
