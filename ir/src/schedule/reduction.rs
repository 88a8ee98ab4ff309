//! `decompose_reduction`.

use std::collections::HashMap;

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError, enclosing_loops, find_loop, tidy};
use crate::expr::{Expr, Var};
use crate::func::{Block, BlockId, BlockRealize, BlockVar, For, IterKind, Stmt};

impl Schedule {
    /// Splits a reduction block into an init block, placed just before `loop`, and an
    /// update block (the original, renamed `<name>_update`). Loops between `loop` and the
    /// block that feed spatial variables are copied for the init (`i_2_init`). Returns the
    /// init block.
    ///
    /// Before, `sch.decompose_reduction(C, k_0)` (seed 001):
    /// ```text
    /// for k_0, k_1, i_2, j_2 in T.grid(256, 4, 8, 8):
    ///     with T.block("C"): ...
    ///         with T.init(): C_local[vi, vj] = T.float32(0)
    ///         C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
    /// ```
    /// After:
    /// ```text
    /// for i_2_init, j_2_init in T.grid(8, 8):
    ///     with T.block("C_init"): ... C_local[vi, vj] = T.float32(0)
    /// for k_0, k_1, i_2, j_2 in T.grid(256, 4, 8, 8):
    ///     with T.block("C_update"): ... C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
    /// ```
    pub fn decompose_reduction(&mut self, block: BlockRV, loop_: LoopRV) -> Result<BlockRV> {
        let id = self.block_id(block)?;
        let var = self.loop_var(loop_)?;
        let bpath = self.block_path(id)?;
        let lpath = self.loop_path(&var)?;
        let Some(Stmt::Block(r)) = self.func.body.at(&bpath) else {
            unreachable!("block_path leads to a block")
        };
        let realize = (**r).clone();
        let blk = &realize.block;
        let Some(init) = blk.init.clone().filter(|_| blk.is_reduction()) else {
            return Err(ScheduleError::NotAReduction {
                block: blk.name.clone(),
            });
        };
        if !bpath.starts_with(&lpath) {
            return Err(ScheduleError::LoopNotAncestor {
                primitive: "decompose_reduction",
                block: blk.name.clone(),
                loop_: var.name().to_string(),
            });
        }
        // Loops at or below `loop` on the way to the block.
        let inner: Vec<For> = enclosing_loops(&self.func.body, &bpath)
            .into_iter()
            .filter(|(p, _)| p.len() >= lpath.len())
            .map(|(_, f)| For {
                var: f.var.clone(),
                extent: f.extent,
                kind: f.kind,
                body: Stmt::Seq(Vec::new()),
            })
            .collect();
        let inner_vars: Vec<Var> = inner.iter().map(|f| f.var.clone()).collect();
        let spatial: Vec<(&BlockVar, &Expr)> = blk
            .iter_vars
            .iter()
            .zip(&realize.bindings)
            .filter(|(v, _)| v.kind == IterKind::Spatial)
            .collect();
        // A spatial binding must not use a loop that also feeds a reduce variable.
        for (iv, b) in blk.iter_vars.iter().zip(&realize.bindings) {
            if iv.kind != IterKind::Reduce {
                continue;
            }
            for v in b.vars() {
                if inner_vars.contains(&v) && spatial.iter().any(|(_, sb)| sb.uses_var(&v)) {
                    return Err(ScheduleError::BlockShape {
                        primitive: "decompose_reduction",
                        block: blk.name.clone(),
                        msg: format!(
                            "has loop `{}` feeding both spatial and reduce variables",
                            v.name()
                        ),
                    });
                }
            }
        }
        // Copy the loops that feed spatial variables, renamed `<name>_init`.
        let copies: Vec<(For, Var)> = inner
            .iter()
            .filter(|f| spatial.iter().any(|(_, b)| b.uses_var(&f.var)))
            .map(|f| {
                let nv = f.var.renamed(format!("{}_init", f.var.name()));
                (f.clone(), nv)
            })
            .collect();
        let rename: HashMap<Var, Expr> = copies
            .iter()
            .map(|(f, nv)| (f.var.clone(), nv.expr()))
            .collect();
        let new_ivars: Vec<BlockVar> = spatial
            .iter()
            .map(|(v, _)| BlockVar {
                var: v.var.renamed(v.var.name()),
                extent: v.extent,
                kind: IterKind::Spatial,
            })
            .collect();
        let var_map: HashMap<Var, Expr> = spatial
            .iter()
            .zip(&new_ivars)
            .map(|((old, _), new)| (old.var.clone(), new.var.expr()))
            .collect();
        let mut init_body = init;
        init_body.rewrite_body_exprs(&mut |e| e.substitute(&var_map));
        // Keep the predicate's conjuncts that do not mention dropped loops.
        let dropped: Vec<Var> = inner_vars
            .iter()
            .filter(|v| !rename.contains_key(*v))
            .cloned()
            .collect();
        let pred = Expr::all(
            conjuncts(&realize.predicate)
                .into_iter()
                .filter(|c| !c.uses_any(&dropped))
                .map(|c| c.substitute(&rename)),
        );
        let init_id = BlockId::fresh();
        let init_name = format!("{}_init", blk.name);
        let mut stmt = Stmt::Block(Box::new(BlockRealize {
            bindings: spatial
                .iter()
                .map(|(_, b)| tidy(&b.substitute(&rename)))
                .collect(),
            predicate: tidy(&pred),
            block: Block {
                id: init_id,
                name: init_name.clone(),
                iter_vars: new_ivars,
                init: None,
                body: init_body,
            },
        }));
        for (f, nv) in copies.into_iter().rev() {
            stmt = Stmt::For(Box::new(For {
                var: nv,
                body: stmt,
                ..f
            }));
        }
        let update_name = format!("{}_update", blk.name);
        self.transact(|func| {
            if let Some(Stmt::Block(r)) = func.body.at_mut(&bpath) {
                r.block.init = None;
                r.block.name = update_name;
            }
            // Insert before the loop: wrap it in a sequence with the init nest.
            let lp = find_loop(&func.body, &var).unwrap_or_default();
            if let Some(target) = func.body.at_mut(&lp) {
                let old = std::mem::replace(target, Stmt::Seq(Vec::new()));
                *target = Stmt::Seq(vec![stmt, old]);
            }
            Ok(())
        })?;
        let out = self.new_block_rv(init_id, &init_name);
        self.record(super::Inst::DecomposeReduction { block, loop_, out });
        Ok(out)
    }
}

/// The conjuncts of a predicate.
pub(crate) fn conjuncts(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Binary(crate::expr::BinOp::And, a, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        Expr::Bool(true) => vec![],
        e => vec![e.clone()],
    }
}
