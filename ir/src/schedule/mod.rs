//! Schedule primitives with TensorIR's names and meaning.
//!
//! A [`Schedule`] owns a [`Func`] and transforms it in place. Primitives take and return
//! handles ([`BlockRV`], [`LoopRV`]), check their preconditions, and either apply fully or
//! return a [`ScheduleError`] naming the block and loop at fault, leaving the Func as it
//! was. Every successful application is appended to the [`Trace`], which prints like a
//! TVM trace and replays to the same Func.
//!
//! The primitives, by family (one module each):
//! - get: [`Schedule::get_block`], [`Schedule::get_loops`];
//! - transform loops ([`loops`]): `split`, `fuse`, `reorder`, `bind`, `unroll`, `vectorize`;
//! - cache ([`cache`]): `cache_read`, `cache_write`;
//! - compute location ([`compute_at`]): `compute_at`, `reverse_compute_at`;
//! - inline ([`inline`]): `compute_inline`, `reverse_compute_inline`;
//! - reduction ([`reduction`]): `decompose_reduction`.

mod cache;
mod compute_at;
mod error;
mod inline;
mod loops;
pub(crate) mod reduction;
pub(crate) mod region;
mod trace;

use std::collections::HashSet;
use std::fmt;

pub use error::ScheduleError;
pub use trace::{Inst, Trace};

use crate::expr::{Expr, Var};
use crate::func::{Block, BlockId, For, Func, Path, Stmt};

/// A handle to a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopRV(u32);

/// A handle to a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockRV(u32);

impl fmt::Display for LoopRV {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "l{}", self.0)
    }
}
impl fmt::Display for BlockRV {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}", self.0)
    }
}

#[derive(Clone, Debug)]
enum Handle {
    Loop(Var),
    Block(BlockId, String),
}

/// A Func being scheduled, with its trace.
#[derive(Clone, Debug)]
pub struct Schedule {
    func: Func,
    trace: Trace,
    handles: Vec<Handle>,
}

type Result<T> = std::result::Result<T, ScheduleError>;

impl Schedule {
    /// Starts scheduling `func`.
    pub fn new(func: Func) -> Schedule {
        Schedule {
            func,
            trace: Trace::default(),
            handles: Vec::new(),
        }
    }

    /// The current Func.
    pub fn func(&self) -> &Func {
        &self.func
    }

    /// Gives up the schedule and returns its Func.
    pub fn into_func(self) -> Func {
        self.func
    }

    /// The primitives applied so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The block named `name`.
    pub fn get_block(&mut self, name: &str) -> Result<BlockRV> {
        let blocks = self.func.body.blocks();
        let Some(r) = blocks.iter().find(|r| r.block.name == name) else {
            let names: Vec<&str> = blocks.iter().map(|r| r.block.name.as_str()).collect();
            return Err(ScheduleError::NoSuchBlock {
                name: name.to_string(),
                available: names.join(", "),
            });
        };
        let (id, bname) = (r.block.id, r.block.name.clone());
        let rv = self.new_block_rv(id, &bname);
        self.record(Inst::GetBlock {
            name: name.to_string(),
            out: rv,
        });
        Ok(rv)
    }

    /// The loops enclosing `block`, outermost first.
    pub fn get_loops(&mut self, block: BlockRV) -> Result<Vec<LoopRV>> {
        let id = self.block_id(block)?;
        let path = self.block_path(id)?;
        let vars: Vec<Var> = enclosing_loops(&self.func.body, &path)
            .into_iter()
            .map(|(_, f)| f.var.clone())
            .collect();
        let out: Vec<LoopRV> = vars.into_iter().map(|v| self.new_loop_rv(v)).collect();
        self.record(Inst::GetLoops {
            block,
            out: out.clone(),
        });
        Ok(out)
    }

    /// The name of the loop a handle refers to (for messages and tools).
    pub fn loop_name(&self, rv: LoopRV) -> Option<String> {
        match self.handles.get(rv.0 as usize)? {
            Handle::Loop(v) => Some(v.name().to_string()),
            Handle::Block(..) => None,
        }
    }

    /// The current name of the block a handle refers to.
    pub fn block_name(&self, rv: BlockRV) -> Option<String> {
        let id = self.block_id(rv).ok()?;
        let path = self.block_path(id).ok()?;
        match self.func.body.at(&path)? {
            Stmt::Block(r) => Some(r.block.name.clone()),
            _ => None,
        }
    }

    // ---- internals shared by the primitive modules ----

    fn record(&mut self, inst: Inst) {
        self.trace.insts.push(inst);
    }

    fn new_loop_rv(&mut self, v: Var) -> LoopRV {
        self.handles.push(Handle::Loop(v));
        LoopRV(self.handles.len() as u32 - 1)
    }

    fn new_block_rv(&mut self, id: BlockId, name: &str) -> BlockRV {
        self.handles.push(Handle::Block(id, name.to_string()));
        BlockRV(self.handles.len() as u32 - 1)
    }

    fn loop_var(&self, rv: LoopRV) -> Result<Var> {
        match self.handles.get(rv.0 as usize) {
            Some(Handle::Loop(v)) => Ok(v.clone()),
            _ => Err(ScheduleError::UnknownHandle {
                primitive: "loop",
                handle: rv.to_string(),
            }),
        }
    }

    fn block_id(&self, rv: BlockRV) -> Result<BlockId> {
        match self.handles.get(rv.0 as usize) {
            Some(Handle::Block(id, _)) => Ok(*id),
            _ => Err(ScheduleError::UnknownHandle {
                primitive: "block",
                handle: rv.to_string(),
            }),
        }
    }

    fn block_path(&self, id: BlockId) -> Result<Path> {
        find_block(&self.func.body, id).ok_or_else(|| {
            let name = self
                .handles
                .iter()
                .find_map(|h| match h {
                    Handle::Block(i, n) if *i == id => Some(n.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            ScheduleError::StaleBlock { block: name }
        })
    }

    fn loop_path(&self, var: &Var) -> Result<Path> {
        find_loop(&self.func.body, var).ok_or_else(|| ScheduleError::StaleLoop {
            loop_: var.name().to_string(),
        })
    }

    /// Applies `f` to a copy of the Func and keeps the result only on success, so that a
    /// failing primitive leaves the schedule untouched.
    fn transact<T>(&mut self, f: impl FnOnce(&mut Func) -> Result<T>) -> Result<T> {
        let mut func = self.func.clone();
        let out = f(&mut func)?;
        normalize(&mut func.body);
        self.func = func;
        Ok(out)
    }
}

/// The path of the loop whose variable is `var`.
pub(crate) fn find_loop(body: &Stmt, var: &Var) -> Option<Path> {
    let mut found = None;
    body.visit_paths(&mut |p, s| {
        if let Stmt::For(f) = s
            && &f.var == var
            && found.is_none()
        {
            found = Some(p.clone());
        }
    });
    found
}

/// The path of the block realize with identity `id`.
pub(crate) fn find_block(body: &Stmt, id: BlockId) -> Option<Path> {
    let mut found = None;
    body.visit_paths(&mut |p, s| {
        if let Stmt::Block(r) = s
            && r.block.id == id
            && found.is_none()
        {
            found = Some(p.clone());
        }
    });
    found
}

/// The loops enclosing `path` (not including a loop at `path` itself), outermost first.
pub(crate) fn enclosing_loops<'a>(body: &'a Stmt, path: &[usize]) -> Vec<(Path, &'a For)> {
    let mut out = Vec::new();
    let mut s = body;
    for (depth, &i) in path.iter().enumerate() {
        if let Stmt::For(f) = s {
            out.push((path[..depth].to_vec(), f.as_ref()));
        }
        match s.children().get(i) {
            Some(c) => s = c,
            None => break,
        }
    }
    out
}

/// The path of the outermost statement that holds the block at `block_path` and nothing
/// else: the block's own loop nest.
pub(crate) fn own_subtree(body: &Stmt, block_path: &[usize]) -> Path {
    let mut p = block_path.to_vec();
    while let Some((_, parent)) = p.split_last() {
        match body.at(parent) {
            Some(Stmt::For(_)) => p.pop(),
            _ => break,
        };
    }
    p
}

/// Every name used in the Func: loop and block variables, buffers, blocks.
pub(crate) fn used_names(func: &Func) -> HashSet<String> {
    let mut names: HashSet<String> = func.params.iter().map(|p| p.name().to_string()).collect();
    names.extend(func.allocs.iter().map(|b| b.name().to_string()));
    func.body.visit(&mut |s| match s {
        Stmt::For(f) => {
            names.insert(f.var.name().to_string());
        }
        Stmt::Block(r) => {
            names.insert(r.block.name.clone());
            names.extend(r.block.iter_vars.iter().map(|v| v.var.name().to_string()));
        }
        Stmt::Mapping(m) => names.extend(m.task_vars.iter().map(|v| v.name().to_string())),
        Stmt::Let { var, .. } => {
            names.insert(var.name().to_string());
        }
        _ => {}
    });
    names
}

/// `base` if unused, else `base_1`, `base_2`, ...; the result is added to `names`.
pub(crate) fn fresh_name(names: &mut HashSet<String>, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 1;
    while names.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    names.insert(name.clone());
    name
}

/// Flattens nested sequences, drops empty ones and unwraps one-item sequences.
pub(crate) fn normalize(s: &mut Stmt) {
    match s {
        Stmt::Seq(items) => {
            items.iter_mut().for_each(normalize);
            let old = std::mem::take(items);
            let mut flat = Vec::new();
            for i in old {
                match i {
                    Stmt::Seq(inner) => flat.extend(inner),
                    i => flat.push(i),
                }
            }
            *s = if flat.len() == 1 {
                flat.pop().unwrap_or(Stmt::Seq(Vec::new()))
            } else {
                Stmt::Seq(flat)
            };
        }
        Stmt::For(f) => normalize(&mut f.body),
        Stmt::Block(r) => {
            if let Some(i) = &mut r.block.init {
                normalize(i);
            }
            normalize(&mut r.block.body);
        }
        Stmt::If {
            then, otherwise, ..
        } => {
            normalize(then);
            if let Some(o) = otherwise {
                normalize(o);
            }
        }
        Stmt::Mapping(m) => normalize(&mut m.body),
        Stmt::Let { body, .. } => normalize(body),
        Stmt::Store { .. }
        | Stmt::Barrier
        | Stmt::Frag(_)
        | Stmt::Fence
        | Stmt::AtomicAdd(_)
        | Stmt::Prefetch { .. }
        | Stmt::Grid(_) => {}
    }
}

/// The block at `path`, which must be a block realize.
pub(crate) fn block_at<'a>(body: &'a Stmt, path: &[usize]) -> Option<&'a Block> {
    match body.at(path)? {
        Stmt::Block(r) => Some(&r.block),
        _ => None,
    }
}

/// True if loop variable `var` appears in a reduce binding of any block under `s`;
/// returns that block and reduce variable.
pub(crate) fn feeds_reduce(s: &Stmt, var: &Var) -> Option<(String, String)> {
    for r in s.blocks() {
        for (iv, b) in r.block.iter_vars.iter().zip(&r.bindings) {
            if iv.kind == crate::func::IterKind::Reduce && b.uses_var(var) {
                return Some((r.block.name.clone(), iv.var.name().to_string()));
            }
        }
    }
    None
}

/// Simplifies a binding or predicate after a loop transformation.
pub(crate) fn tidy(e: &Expr) -> Expr {
    crate::arith::simplify(e)
}
