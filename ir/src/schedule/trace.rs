//! The trace: every successful primitive application, printable and replayable.

use std::collections::HashMap;
use std::fmt;

use super::{BlockRV, LoopRV, Schedule, ScheduleError};
use crate::expr::{Scope, ThreadAxis};
use crate::func::Func;

/// One recorded primitive application, with the handles it took and made.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    GetBlock {
        name: String,
        out: BlockRV,
    },
    GetLoops {
        block: BlockRV,
        out: Vec<LoopRV>,
    },
    Split {
        loop_: LoopRV,
        factors: Vec<Option<i64>>,
        out: Vec<LoopRV>,
    },
    Fuse {
        loops: Vec<LoopRV>,
        out: LoopRV,
    },
    Reorder {
        loops: Vec<LoopRV>,
    },
    Bind {
        loop_: LoopRV,
        axis: ThreadAxis,
    },
    Unroll {
        loop_: LoopRV,
    },
    Vectorize {
        loop_: LoopRV,
    },
    CacheRead {
        block: BlockRV,
        index: usize,
        scope: Scope,
        out: BlockRV,
    },
    CacheWrite {
        block: BlockRV,
        index: usize,
        scope: Scope,
        out: BlockRV,
    },
    ComputeAt {
        block: BlockRV,
        loop_: LoopRV,
    },
    ReverseComputeAt {
        block: BlockRV,
        loop_: LoopRV,
    },
    ComputeInline {
        block: BlockRV,
    },
    ReverseComputeInline {
        block: BlockRV,
    },
    DecomposeReduction {
        block: BlockRV,
        loop_: LoopRV,
        out: BlockRV,
    },
}

/// The primitives applied to a schedule, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub insts: Vec<Inst>,
}

fn list<T: fmt::Display>(xs: &[T]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn outs<T: fmt::Display>(xs: &[T]) -> String {
    match xs.len() {
        0 => "_".to_string(),
        1 => format!("{},", xs[0]),
        _ => list(xs),
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inst::GetBlock { name, out } => write!(f, "{out} = sch.get_block(\"{name}\")"),
            Inst::GetLoops { block, out } => write!(f, "{} = sch.get_loops({block})", outs(out)),
            Inst::Split {
                loop_,
                factors,
                out,
            } => {
                let fs: Vec<String> = factors
                    .iter()
                    .map(|x| x.map(|v| v.to_string()).unwrap_or_else(|| "None".into()))
                    .collect();
                write!(
                    f,
                    "{} = sch.split({loop_}, factors=[{}])",
                    outs(out),
                    fs.join(", ")
                )
            }
            Inst::Fuse { loops, out } => write!(f, "{out} = sch.fuse({})", list(loops)),
            Inst::Reorder { loops } => write!(f, "sch.reorder({})", list(loops)),
            Inst::Bind { loop_, axis } => write!(f, "sch.bind({loop_}, \"{axis}\")"),
            Inst::Unroll { loop_ } => write!(f, "sch.unroll({loop_})"),
            Inst::Vectorize { loop_ } => write!(f, "sch.vectorize({loop_})"),
            Inst::CacheRead {
                block,
                index,
                scope,
                out,
            } => write!(f, "{out} = sch.cache_read({block}, {index}, \"{scope}\")"),
            Inst::CacheWrite {
                block,
                index,
                scope,
                out,
            } => write!(f, "{out} = sch.cache_write({block}, {index}, \"{scope}\")"),
            Inst::ComputeAt { block, loop_ } => write!(f, "sch.compute_at({block}, {loop_})"),
            Inst::ReverseComputeAt { block, loop_ } => {
                write!(f, "sch.reverse_compute_at({block}, {loop_})")
            }
            Inst::ComputeInline { block } => write!(f, "sch.compute_inline({block})"),
            Inst::ReverseComputeInline { block } => {
                write!(f, "sch.reverse_compute_inline({block})")
            }
            Inst::DecomposeReduction { block, loop_, out } => {
                write!(f, "{out} = sch.decompose_reduction({block}, {loop_})")
            }
        }
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.insts {
            writeln!(f, "{i}")?;
        }
        Ok(())
    }
}

impl Trace {
    /// Applies the recorded primitives to `func` and returns the resulting schedule.
    /// Replaying a trace on the Func it was recorded from gives the same Func (the same
    /// printed IR).
    pub fn replay(&self, func: Func) -> Result<Schedule, ScheduleError> {
        let mut s = Schedule::new(func);
        let mut loops: HashMap<LoopRV, LoopRV> = HashMap::new();
        let mut blocks: HashMap<BlockRV, BlockRV> = HashMap::new();
        let unknown = |h: String| ScheduleError::UnknownHandle {
            primitive: "replay",
            handle: h,
        };
        let l = |m: &HashMap<LoopRV, LoopRV>, r: &LoopRV| {
            m.get(r).copied().ok_or_else(|| unknown(r.to_string()))
        };
        let b = |m: &HashMap<BlockRV, BlockRV>, r: &BlockRV| {
            m.get(r).copied().ok_or_else(|| unknown(r.to_string()))
        };
        for inst in &self.insts {
            match inst {
                Inst::GetBlock { name, out } => {
                    blocks.insert(*out, s.get_block(name)?);
                }
                Inst::GetLoops { block, out } => {
                    let got = s.get_loops(b(&blocks, block)?)?;
                    loops.extend(out.iter().copied().zip(got));
                }
                Inst::Split {
                    loop_,
                    factors,
                    out,
                } => {
                    let got = s.split(l(&loops, loop_)?, factors)?;
                    loops.extend(out.iter().copied().zip(got));
                }
                Inst::Fuse { loops: ls, out } => {
                    let ls = ls
                        .iter()
                        .map(|r| l(&loops, r))
                        .collect::<Result<Vec<_>, _>>()?;
                    let got = s.fuse(&ls)?;
                    loops.insert(*out, got);
                }
                Inst::Reorder { loops: ls } => {
                    let ls = ls
                        .iter()
                        .map(|r| l(&loops, r))
                        .collect::<Result<Vec<_>, _>>()?;
                    s.reorder(&ls)?;
                }
                Inst::Bind { loop_, axis } => s.bind(l(&loops, loop_)?, *axis)?,
                Inst::Unroll { loop_ } => s.unroll(l(&loops, loop_)?)?,
                Inst::Vectorize { loop_ } => s.vectorize(l(&loops, loop_)?)?,
                Inst::CacheRead {
                    block,
                    index,
                    scope,
                    out,
                } => {
                    let got = s.cache_read(b(&blocks, block)?, *index, scope.name())?;
                    blocks.insert(*out, got);
                }
                Inst::CacheWrite {
                    block,
                    index,
                    scope,
                    out,
                } => {
                    let got = s.cache_write(b(&blocks, block)?, *index, scope.name())?;
                    blocks.insert(*out, got);
                }
                Inst::ComputeAt { block, loop_ } => {
                    s.compute_at(b(&blocks, block)?, l(&loops, loop_)?)?
                }
                Inst::ReverseComputeAt { block, loop_ } => {
                    s.reverse_compute_at(b(&blocks, block)?, l(&loops, loop_)?)?
                }
                Inst::ComputeInline { block } => s.compute_inline(b(&blocks, block)?)?,
                Inst::ReverseComputeInline { block } => {
                    s.reverse_compute_inline(b(&blocks, block)?)?
                }
                Inst::DecomposeReduction { block, loop_, out } => {
                    let got = s.decompose_reduction(b(&blocks, block)?, l(&loops, loop_)?)?;
                    blocks.insert(*out, got);
                }
            }
        }
        Ok(s)
    }
}
