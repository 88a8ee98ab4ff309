//! Cache stages: `cache_read` and `cache_write`.

use super::{BlockRV, Result, Schedule, ScheduleError, fresh_name, own_subtree, used_names};
use crate::expr::{Buffer, Expr, Scope, Var};
use crate::func::{Block, BlockId, BlockRealize, BlockVar, For, ForKind, IterKind, Stmt};

fn parse_scope(primitive: &'static str, scope: &str) -> Result<Scope> {
    Scope::parse(scope).ok_or_else(|| ScheduleError::BadScope {
        primitive,
        scope: scope.to_string(),
    })
}

/// A copy block `dst[v...] = src[v...]` over the whole buffer, in its own loop nest.
fn copy_nest(name: &str, src: &Buffer, dst: &Buffer) -> (Stmt, BlockId) {
    let shape = src.shape().to_vec();
    let loop_vars: Vec<Var> = (0..shape.len())
        .map(|d| Var::index(format!("ax{d}")))
        .collect();
    let block_vars: Vec<BlockVar> = (0..shape.len())
        .map(|d| BlockVar {
            var: Var::index(format!("v{d}")),
            extent: shape[d],
            kind: IterKind::Spatial,
        })
        .collect();
    let idx: Vec<Expr> = block_vars.iter().map(|v| v.var.expr()).collect();
    let id = BlockId::fresh();
    let mut stmt = Stmt::Block(Box::new(BlockRealize {
        bindings: loop_vars.iter().map(|v| v.expr()).collect(),
        predicate: Expr::Bool(true),
        block: Block {
            id,
            name: name.to_string(),
            iter_vars: block_vars,
            init: None,
            body: Stmt::Store {
                buffer: dst.clone(),
                indices: idx.clone(),
                value: src.load(idx),
            },
        },
    }));
    for (v, e) in loop_vars.into_iter().zip(shape).rev() {
        stmt = Stmt::For(Box::new(For {
            var: v,
            extent: e,
            kind: ForKind::Serial,
            body: stmt,
        }));
    }
    (stmt, id)
}

/// Replaces loads (and, if `stores`, stores) of `from` by `to` in a block.
fn retarget(block: &mut Block, from: &Buffer, to: &Buffer, stores: bool) {
    let swap = |e: &Expr| {
        e.rewrite(&mut |x| match x {
            Expr::Load {
                buffer,
                indices,
                lanes,
            } if &buffer == from => Expr::Load {
                buffer: to.clone(),
                indices,
                lanes,
            },
            x => x,
        })
    };
    fn stores_to(s: &mut Stmt, from: &Buffer, to: &Buffer) {
        match s {
            Stmt::Store { buffer, .. } if buffer == from => *buffer = to.clone(),
            Stmt::Seq(items) => items.iter_mut().for_each(|i| stores_to(i, from, to)),
            Stmt::If {
                then, otherwise, ..
            } => {
                stores_to(then, from, to);
                if let Some(o) = otherwise {
                    stores_to(o, from, to);
                }
            }
            _ => {}
        }
    }
    for s in block.init.iter_mut().chain([&mut block.body]) {
        s.rewrite_body_exprs(&mut |e| swap(e));
        if stores {
            stores_to(s, from, to);
        }
    }
}

/// The path at the root level (the first step) of a path.
fn root_index(path: &[usize]) -> usize {
    path.first().copied().unwrap_or(0)
}

impl Schedule {
    /// Adds a stage that copies the `read_index`-th buffer `block` reads into a new buffer
    /// of `scope` (`"shared"`, `"local"` or `"global"`), and makes `block` read the copy.
    /// The copy covers the whole buffer until `compute_at` moves it. Returns the new block,
    /// named after the new buffer (`A_shared`).
    ///
    /// Before, `sch.cache_read(C, 0, "shared")`:
    /// ```text
    /// for i in range(1024):
    ///     with T.block("C"): ... B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
    /// ```
    /// After:
    /// ```text
    /// A_shared = T.alloc_buffer((1027,), scope="shared")
    /// for ax0 in range(1027):
    ///     with T.block("A_shared"): ... A_shared[v0] = A[v0]
    /// for i in range(1024):
    ///     with T.block("C"): ... B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
    /// ```
    pub fn cache_read(
        &mut self,
        block: BlockRV,
        read_index: usize,
        scope: &str,
    ) -> Result<BlockRV> {
        let scope = parse_scope("cache_read", scope)?;
        let id = self.block_id(block)?;
        let path = self.block_path(id)?;
        let b = super::block_at(&self.func.body, &path).cloned();
        let Some(blk) = b else {
            unreachable!("block_path leads to a block")
        };
        let reads = blk.reads();
        let Some(src) = reads.get(read_index).cloned() else {
            let names: Vec<String> = reads
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{i}: {}", r.name()))
                .collect();
            return Err(ScheduleError::NoSuchRead {
                block: blk.name.clone(),
                index: read_index,
                reads: if names.is_empty() {
                    "nothing".into()
                } else {
                    names.join(", ")
                },
            });
        };
        let new_id = self.transact(|func| {
            let mut names = used_names(func);
            let name = fresh_name(&mut names, &format!("{}_{}", src.name(), scope));
            let dst = src.derive(&name, src.shape().to_vec(), scope);
            let (nest, new_id) = copy_nest(&name, &src, &dst);
            if let Some(Stmt::Block(r)) = func.body.at_mut(&path) {
                retarget(&mut r.block, &src, &dst, false);
            }
            func.allocs.push(dst);
            insert_root(&mut func.body, root_index(&path), nest);
            Ok(new_id)
        })?;
        let name = self.block_name_by_id(new_id);
        let out = self.new_block_rv(new_id, &name);
        self.record(super::Inst::CacheRead {
            block,
            index: read_index,
            scope,
            out,
        });
        Ok(out)
    }

    /// Makes `block` write its `write_index`-th output into a new buffer of `scope`, and
    /// adds a stage after it that copies the new buffer back. Returns the copy block,
    /// named after the new buffer (`C_local`).
    ///
    /// Before, `sch.cache_write(C, 0, "local")`:
    /// ```text
    /// for i, j, k in T.grid(1024, 1024, 1024):
    ///     with T.block("C"): ... C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    /// ```
    /// After:
    /// ```text
    /// C_local = T.alloc_buffer((1024, 1024), scope="local")
    /// for i, j, k in T.grid(1024, 1024, 1024):
    ///     with T.block("C"): ... C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
    /// for ax0, ax1 in T.grid(1024, 1024):
    ///     with T.block("C_local"): ... C[v0, v1] = C_local[v0, v1]
    /// ```
    pub fn cache_write(
        &mut self,
        block: BlockRV,
        write_index: usize,
        scope: &str,
    ) -> Result<BlockRV> {
        let scope = parse_scope("cache_write", scope)?;
        let id = self.block_id(block)?;
        let path = self.block_path(id)?;
        let Some(blk) = super::block_at(&self.func.body, &path).cloned() else {
            unreachable!("block_path leads to a block")
        };
        let writes = blk.writes();
        let Some(out) = writes.get(write_index).cloned() else {
            let names: Vec<String> = writes
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{i}: {}", r.name()))
                .collect();
            return Err(ScheduleError::NoSuchWrite {
                block: blk.name.clone(),
                index: write_index,
                writes: names.join(", "),
            });
        };
        let sub = own_subtree(&self.func.body, &path);
        let new_id = self.transact(|func| {
            let mut names = used_names(func);
            let name = fresh_name(&mut names, &format!("{}_{}", out.name(), scope));
            let cache = out.derive(&name, out.shape().to_vec(), scope);
            let (nest, new_id) = copy_nest(&name, &cache, &out);
            if let Some(Stmt::Block(r)) = func.body.at_mut(&path) {
                retarget(&mut r.block, &out, &cache, true);
            }
            func.allocs.push(cache);
            insert_root(&mut func.body, root_index(&sub) + 1, nest);
            Ok(new_id)
        })?;
        let name = self.block_name_by_id(new_id);
        let out = self.new_block_rv(new_id, &name);
        self.record(super::Inst::CacheWrite {
            block,
            index: write_index,
            scope,
            out,
        });
        Ok(out)
    }

    fn block_name_by_id(&self, id: BlockId) -> String {
        self.func
            .body
            .blocks()
            .iter()
            .find(|r| r.block.id == id)
            .map(|r| r.block.name.clone())
            .unwrap_or_default()
    }
}

/// Inserts `stmt` at position `at` of the root sequence.
fn insert_root(body: &mut Stmt, at: usize, stmt: Stmt) {
    if !matches!(body, Stmt::Seq(_)) {
        let old = std::mem::replace(body, Stmt::Seq(Vec::new()));
        *body = Stmt::Seq(vec![old]);
    }
    if let Stmt::Seq(items) = body {
        let at = at.min(items.len());
        items.insert(at, stmt);
    }
}
