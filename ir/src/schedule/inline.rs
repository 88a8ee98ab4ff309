//! Inlining: `compute_inline` and `reverse_compute_inline`.

use std::collections::HashMap;

use super::{BlockRV, Result, Schedule, ScheduleError, find_block, own_subtree};
use crate::expr::{Buffer, Expr, Var};
use crate::func::{Block, IterKind, Stmt};

/// The single store of a block body: (buffer, indices, value).
fn single_store(block: &Block) -> Option<(&Buffer, &Vec<Expr>, &Expr)> {
    match &block.body {
        Stmt::Store {
            buffer,
            indices,
            value,
        } => Some((buffer, indices, value)),
        _ => None,
    }
}

impl Schedule {
    /// Inlines a spatial block into every block that reads its output: each load of the
    /// output is replaced by the block's expression, and the block and its buffer go away.
    ///
    /// Before, `sch.compute_inline(padded)` (seed 000):
    /// ```text
    /// with T.block("padded"): ...
    ///     padded[vb, vc, vh, vw] = T.if_then_else(vh >= 3 and ..., A[vb, vc, vh - 3, vw - 3], T.float32(0))
    /// with T.block("depthwise_conv"): ...
    ///     depthwise_conv[...] = depthwise_conv[...] + padded[vb, vc, vh + vry, vw + vrx] * W[...]
    /// ```
    /// After:
    /// ```text
    /// with T.block("depthwise_conv"): ...
    ///     depthwise_conv[...] = depthwise_conv[...] + T.if_then_else(vh + vry >= 3 and ..., A[vb, vc, vh + vry - 3, vw + vrx - 3], T.float32(0)) * W[...]
    /// ```
    pub fn compute_inline(&mut self, block: BlockRV) -> Result<()> {
        let id = self.block_id(block)?;
        let path = self.block_path(id)?;
        let Some(Stmt::Block(r)) = self.func.body.at(&path) else {
            unreachable!("block_path leads to a block")
        };
        let blk = r.block.clone();
        if blk.is_reduction() || blk.init.is_some() {
            return Err(ScheduleError::InlineReduction { block: blk.name });
        }
        let shape_err = |msg: &str| ScheduleError::BlockShape {
            primitive: "compute_inline",
            block: blk.name.clone(),
            msg: msg.to_string(),
        };
        let Some((out, idx, value)) = single_store(&blk) else {
            return Err(shape_err("must have a body of exactly one store"));
        };
        let ivars: Vec<Expr> = blk.iter_vars.iter().map(|v| v.var.expr()).collect();
        if *idx != ivars {
            return Err(shape_err(
                "must store at exactly its iteration variables, in order",
            ));
        }
        if self.func.is_param(out) {
            return Err(ScheduleError::InlineOutput {
                primitive: "compute_inline",
                block: blk.name.clone(),
                buffer: out.name().to_string(),
            });
        }
        let writers = self
            .func
            .body
            .blocks()
            .iter()
            .filter(|r| r.block.writes().contains(out))
            .count();
        if writers != 1 {
            return Err(shape_err(&format!(
                "is not the only block writing `{}`",
                out.name()
            )));
        }
        let (out, value) = (out.clone(), value.clone());
        let vars: Vec<Var> = blk.iter_vars.iter().map(|v| v.var.clone()).collect();
        let sub = own_subtree(&self.func.body, &path);
        self.transact(|func| {
            func.body.remove_at(&sub);
            let inline = |e: &Expr| {
                e.rewrite(&mut |x| match x {
                    Expr::Load {
                        buffer, indices, ..
                    } if buffer == out => {
                        let m: HashMap<Var, Expr> =
                            vars.iter().cloned().zip(indices.iter().cloned()).collect();
                        value.substitute(&m)
                    }
                    x => x,
                })
            };
            func.body.rewrite_body_exprs(&mut |e| inline(e));
            func.allocs.retain(|b| b != &out);
            Ok(())
        })?;
        self.record(super::Inst::ComputeInline { block });
        Ok(())
    }

    /// Inlines a spatial consumer block into its producer (an epilogue): the producer
    /// stores the consumer's value directly into the consumer's output. The consumer must
    /// read the produced buffer only at exactly its iteration variables, and the producer
    /// must not be a reduction.
    ///
    /// Before, `sch.reverse_compute_inline(D)`:
    /// ```text
    /// with T.block("C"): vi = ...; C[vi] = A[vi] * T.float32(2)
    /// with T.block("D"): vi = ...; D[vi] = C[vi] + T.float32(1)
    /// ```
    /// After:
    /// ```text
    /// with T.block("C"): vi = ...; D[vi] = A[vi] * T.float32(2) + T.float32(1)
    /// ```
    pub fn reverse_compute_inline(&mut self, block: BlockRV) -> Result<()> {
        let id = self.block_id(block)?;
        let path = self.block_path(id)?;
        let Some(Stmt::Block(r)) = self.func.body.at(&path) else {
            unreachable!("block_path leads to a block")
        };
        let cons = r.block.clone();
        let cons_pred = r.predicate.clone();
        let shape_err = |msg: String| ScheduleError::BlockShape {
            primitive: "reverse_compute_inline",
            block: cons.name.clone(),
            msg,
        };
        if cons.is_reduction() || cons.init.is_some() {
            return Err(shape_err(
                "is a reduction; only spatial blocks can be inlined".into(),
            ));
        }
        if cons_pred != Expr::Bool(true) {
            return Err(shape_err(
                "has a predicate; it must cover its whole domain".into(),
            ));
        }
        let Some((dst, dst_idx, cvalue)) = single_store(&cons) else {
            return Err(shape_err("must have a body of exactly one store".into()));
        };
        let ivars: Vec<Expr> = cons.iter_vars.iter().map(|v| v.var.expr()).collect();
        // The produced buffer: read at exactly the iteration variables, written elsewhere.
        let reads = cons.reads();
        let mut produced = None;
        for b in &reads {
            let writer = self
                .func
                .body
                .blocks()
                .iter()
                .find(|r| r.block.id != id && r.block.writes().contains(b))
                .map(|r| r.block.id);
            if let Some(w) = writer {
                produced = Some((b.clone(), w));
                break;
            }
        }
        let Some((buf, prod_id)) = produced else {
            return Err(shape_err(
                "reads no buffer that another block produces".into(),
            ));
        };
        for (b, idx, _) in cons.accesses() {
            if b == buf && idx != ivars {
                return Err(shape_err(format!(
                    "must read `{}` at exactly its iteration variables",
                    buf.name()
                )));
            }
        }
        if buf.shape().len() != cons.iter_vars.len()
            || buf
                .shape()
                .iter()
                .zip(&cons.iter_vars)
                .any(|(s, v)| *s != v.extent || v.kind != IterKind::Spatial)
        {
            return Err(shape_err(format!(
                "must iterate over the whole of `{}`",
                buf.name()
            )));
        }
        if self.func.is_param(&buf) {
            return Err(ScheduleError::InlineOutput {
                primitive: "reverse_compute_inline",
                block: cons.name.clone(),
                buffer: buf.name().to_string(),
            });
        }
        let other_readers = self
            .func
            .body
            .blocks()
            .iter()
            .filter(|r| r.block.id != id && r.block.id != prod_id)
            .any(|r| r.block.accesses().iter().any(|(b, _, w)| b == &buf && !w));
        if other_readers {
            return Err(shape_err(format!(
                "is not the only reader of `{}`",
                buf.name()
            )));
        }
        let prod_path = find_block(&self.func.body, prod_id).unwrap_or_default();
        let Some(Stmt::Block(pr)) = self.func.body.at(&prod_path) else {
            unreachable!("find_block leads to a block")
        };
        if pr.block.is_reduction() || pr.block.init.is_some() {
            return Err(ScheduleError::ReverseInlineIntoReduction {
                block: cons.name.clone(),
                producer: pr.block.name.clone(),
            });
        }
        let Some((_, pidx, pvalue)) = single_store(&pr.block) else {
            return Err(shape_err(format!(
                "has a producer `{}` whose body is not one store",
                pr.block.name
            )));
        };
        let m: HashMap<Var, Expr> = cons
            .iter_vars
            .iter()
            .map(|v| v.var.clone())
            .zip(pidx.iter().cloned())
            .collect();
        let (dst, dst_idx, cvalue, pidx, pvalue) = (
            dst.clone(),
            dst_idx.clone(),
            cvalue.clone(),
            pidx.clone(),
            pvalue.clone(),
        );
        let new_value = cvalue.substitute(&m).rewrite(&mut |x| match x {
            Expr::Load { buffer, .. } if buffer == buf => pvalue.clone(),
            x => x,
        });
        let new_idx: Vec<Expr> = dst_idx.iter().map(|e| e.substitute(&m)).collect();
        let _ = pidx;
        let sub = own_subtree(&self.func.body, &path);
        self.transact(|func| {
            if let Some(Stmt::Block(pr)) = func.body.at_mut(&prod_path) {
                pr.block.body = Stmt::Store {
                    buffer: dst.clone(),
                    indices: new_idx,
                    value: new_value,
                };
            }
            func.body.remove_at(&sub);
            func.allocs.retain(|b| b != &buf);
            Ok(())
        })?;
        self.record(super::Inst::ReverseComputeInline { block });
        Ok(())
    }
}
