//! Gemm and MatMul anchors: two-dimensional products on a matmul template, their
//! operands as views (a transpose, a flatten of the tensor before) fused into its loads,
//! `alpha`, `beta · C` and the epilogue chain into its stores; a batched MatMul on the
//! same templates, one grid layer per product. A product with an operand stored in f16 runs on the fp16 matmul
//! template (matrix units where the target has them), its sums in f32; the output is
//! rounded to its storage type once.

use weft_graph::Graph;
use weft_graph::op::Product;
use weft_graph::partition::{Group, skinny};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;

use super::Chooser;
use super::choose;
use super::row_norm;
use super::values::{Values, broadcast_index, reindex};
use crate::anchor::{AnchorKey, AnchorTemplate, Views};
use crate::error::{LowerError, ModelError};
use weft_kernels::gemv::kmajor::{self, KmajorParams};
use weft_kernels::gemv::{self, GemvParams};
use weft_kernels::matmul_f16;
use weft_kernels::product::Matmul;
use weft_kernels::split_k::{Anchor, Split};

/// Lowers the Gemm or MatMul group `group`.
pub(crate) fn lower<'g>(
    g: &'g Graph,
    group: &Group,
    product: Product<'_>,
    vals: &Values<'g>,
    name: &str,
    chooser: &Chooser,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String, Option<AnchorKey>), ModelError> {
    let node = &g.nodes[group.root.0];
    let fail = |source: LowerError| ModelError::Lower {
        node: node.name.clone(),
        op: node.op.name(),
        source: Box::new(source),
    };
    let (a, b) = (node.inputs[0], node.inputs[1]);
    let (alpha, beta, ta, tb) = match product {
        Product::Gemm(p) => (p.alpha, p.beta, p.trans_a, p.trans_b),
        Product::MatMul => (1.0, 0.0, false, false),
    };
    let out_shape = g.tensor(node.output).shape.clone();
    let rank = out_shape.len();
    let a_shape = &g.tensor(a).shape;
    let k = if ta {
        a_shape[0]
    } else {
        a_shape[a_shape.len() - 1]
    } as i64;
    let f16 = [a, b].iter().any(|&t| g.tensor(t).dtype == DType::F16);
    let operand = if f16 { DType::F16 } else { DType::F32 };
    let template = if f16 {
        AnchorTemplate::MatmulF16
    } else {
        AnchorTemplate::Matmul
    };
    if skinny::product_rows(g, group.root).is_none() {
        // A batched MatMul (attention's Q·Kᵀ and P·V): the leading dimensions flattened
        // into one batch, a grid layer each on the matmul template; the operands' batch
        // dimensions broadcast in their views.
        let lead: Vec<usize> = out_shape[..rank - 2].to_vec();
        let batch = lead.iter().product::<usize>() as i64;
        let (m, n) = (out_shape[rank - 2] as i64, out_shape[rank - 1] as i64);
        let (ra, rb) = (a_shape.len(), g.tensor(b).shape.len());
        let view = |name: &str, t, rows: i64, cols: i64, r: usize| {
            te::compute(name, &[("z", batch), ("i", rows), ("j", cols)], |ix| {
                let z = reindex(&[batch as usize], &lead, &ix[..1]);
                let mut at = broadcast_index(&g.tensor(t).shape[..r - 2], &z);
                at.extend([ix[1].clone(), ix[2].clone()]);
                vals.at_as(t, &at, operand)
            })
        };
        let a_view = view("a_view", a, m, k, ra);
        let b_view = view("b_view", b, k, n, rb);
        let key = AnchorKey {
            template,
            m,
            n,
            k,
            batch,
            views: Views::Batched,
            winograd: None,
        };
        let (choice, why) = choose::anchor(chooser.limits, chooser.choices, &key);
        let (product_params, what) =
            Matmul::of(f16, &choice.config).map_err(|e| fail(LowerError::Kernels(e)))?;
        let product = te::placeholder("y_gemm", &[batch, m, n], DType::F32);
        let product_read = product.clone();
        vals.set_root(
            node.output,
            Box::new(move |ix: &[Expr]| {
                let z = reindex(&lead, &[batch as usize], &ix[..rank - 2]);
                product_read.at(&[z[0].clone(), ix[rank - 2].clone(), ix[rank - 1].clone()])
            }),
        );
        let out = output(vals);
        let anchor = product_params
            .template_over(name, &a_view, &b_view, &product)
            .map_err(|e| fail(e.into()))?;
        let fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
        return Ok((
            fused.func,
            format!("{what} ({why}), {batch} products batched"),
            Some(key),
        ));
    }
    // A MatMul of a batch of rows by a matrix (a transformer's linear layer, `[b, s, k]
    // · [k, n]`) is one product of `b·s` rows: A's leading dimensions flattened into M.
    let lead: Vec<usize> = out_shape[..rank - 1].to_vec();
    let m = lead.iter().product::<usize>() as i64;
    let n = out_shape[rank - 1] as i64;
    let a_rows: Vec<usize> = a_shape[..a_shape.len() - 1].to_vec();
    // A skinny product whose weight the layout pass stored K-major (`WEFT_GEMV_KMAJOR=1`)
    // runs on the K-major template, which reads it `[N, K]` as it is stored.
    // Its rule's config where it fits the target (with a folded norm's sums of squares
    // in the combine); the row-major template elsewhere (plain WebGPU's 16 KB at 8 rows).
    let kmajor_rule = (chooser.choices.gemv_kmajor()
        && group.gated.is_none()
        && !ta
        && skinny::takes(g, group.root, gemv::MAX_M as usize)
        && k_major(g, b, tb)
        && vals.leads(b))
    .then(|| KmajorParams::rule(chooser.limits, m, n, k, operand))
    .filter(|(p, _)| {
        let shared = match group.row_norm {
            Some(_) => p.shared_bytes_normed(m),
            None => p.shared_bytes(m),
        };
        p.fits(chooser.limits, m) && shared <= chooser.limits.max_shared_bytes as i64
    });
    let kmajor = kmajor_rule.is_some();
    // On it, `a` (a folded norm's input `x`) is read as stored where it is rows of the
    // operand type: 16-byte loads of a placeholder of its own.
    let kmajor_a = kmajor_rule.as_ref().and_then(|_| {
        let x = group.row_norm.map_or(a, |nn| g.nodes[nn.0].inputs[0]);
        let sx = stored_matrix(g, group, vals, x, operand)?;
        (f16 || group.row_norm.is_some()).then(|| {
            let buf = te::placeholder(&vals.fresh_name(&g.tensor(sx).name), &[m, k], operand);
            vals.adopt(sx, &buf);
            buf
        })
    });
    // Operands stored in f16 and read as they are (no transpose; reshapes that move no
    // element): the template reads them as its own placeholders, so its whole space
    // applies — Hopper's TMA + wgmma among it, which copies placeholders only.
    // A folded norm's output is never stored: `a` is then read through its view.
    let stored = if f16 && !ta && !tb && group.row_norm.is_none() && !kmajor {
        let f16_rows = |t| {
            vals.stored_rows(t)
                .filter(|&s| g.tensor(s).dtype == DType::F16)
        };
        f16_rows(a).zip(f16_rows(b))
    } else {
        None
    };
    let views = match stored {
        Some(_) => Views::Stored,
        None => Views::Gemm {
            trans_a: ta,
            trans_b: tb,
        },
    };
    let key = AnchorKey {
        template,
        m,
        n,
        k,
        batch: 1,
        views,
        winograd: None,
    };
    let folded = row_norm::operands(g, group, vals, m, k, kmajor_a.as_ref()).map_err(fail)?;
    let (a_view, b_view) = match stored {
        Some((sa, sb)) => {
            // The stored memory as `[m, k]` and `[k, n]` matrices (their element counts
            // are those: a reshape keeps them), registered as holding those tensors.
            let matrix = |t, name: &str, shape: &[i64]| {
                let buf = te::placeholder(&vals.fresh_name(name), shape, DType::F16);
                vals.adopt(t, &buf);
                buf
            };
            (
                matrix(sa, &g.tensor(sa).name, &[m, k]),
                matrix(sb, &g.tensor(sb).name, &[k, n]),
            )
        }
        None => {
            // fp16 where an operand is stored in f16 (`--dtype f16`: the activation, and the
            // weight the precision pass stores in f16): the fp16 template over f16 views.
            // A folded norm's `a` is its input's rows, in f32 (the norm's output is never
            // stored, nor rounded).
            let a_view = match (&folded, &kmajor_a) {
                (Some(f), _) => f.x.clone(),
                (None, Some(stored)) => stored.clone(),
                (None, None) => te::compute("a_view", &[("i", m), ("kk", k)], |ix| {
                    let at = if ta {
                        vec![ix[1].clone(), ix[0].clone()]
                    } else {
                        let mut at = reindex(&[m as usize], &a_rows, &ix[..1]);
                        at.push(ix[1].clone());
                        at
                    };
                    vals.at_as(a, &at, operand)
                }),
            };
            let b_view = te::compute("b_view", &[("kk", k), ("j", n)], |ix| {
                let at = if tb {
                    [ix[1].clone(), ix[0].clone()]
                } else {
                    [ix[0].clone(), ix[1].clone()]
                };
                vals.at_as(b, &at, operand)
            });
            (a_view, b_view)
        }
    };
    let c = node
        .inputs
        .get(2)
        .map(|&c| (vals.stored(c), g.tensor(c).shape.clone()));
    // The product the epilogue reads (`alpha`, `beta · C` and the chain after it).
    let set_product = |product: &Buffer| {
        let product_read = product.clone();
        let (c, lead) = (c.clone(), lead.clone());
        vals.set_root(
            node.output,
            Box::new(move |ix: &[Expr]| {
                let row = reindex(&lead, &[m as usize], &ix[..rank - 1]);
                let mut v = product_read.at(&[row[0].clone(), ix[rank - 1].clone()]);
                if alpha != 1.0 {
                    v = v * alpha as f32;
                }
                if let Some((cb, shape)) = &c
                    && beta != 0.0
                {
                    let cv = cb.at(&broadcast_index(shape, ix));
                    v = if beta == 1.0 {
                        v + cv
                    } else {
                        v + cv * beta as f32
                    };
                }
                v
            }),
        );
    };
    if let Some((p, why)) = kmajor_rule {
        // `a_view` is `kmajor_a` where that is stored, else the view.
        let a_k = a_view;
        // A folded norm's `γ` as stored where it is a `[k]` vector of the operand type
        // (16-byte loads of it). An f16 model keeps `γ` f32, whose 8 elements a piece of
        // `w` the kernel loads one by one, from L1: two 16-byte loads instead (tried) made
        // ptxas hold all 64 values of a step, 130 registers a thread against 80 (sm_90,
        // TinyLlama: gate/up's 8-warp blocks one a multiprocessor instead of three).
        let norm = folded.as_ref().map(|f| {
            let gamma = g.nodes[group.row_norm.map_or(group.root, |nn| nn).0].inputs[1];
            let t = g.tensor(gamma);
            let stored = t.shape == [k as usize]
                && t.dtype == operand
                && vals.stored_rows(gamma) == Some(gamma);
            gemv::RowNorm {
                gamma: if stored {
                    vals.buffer(gamma)
                } else {
                    f.norm.gamma.clone()
                },
                epsilon: f.norm.epsilon,
            }
        });
        // The weight's own buffer, `[N, K]` in memory, where it is stored in the operand
        // type; else read through a view of it.
        let w = if g.tensor(b).dtype == operand {
            vals.buffer(b)
        } else {
            te::compute("w_view", &[("j", n), ("kk", k)], |ix| {
                let at = if tb {
                    [ix[0].clone(), ix[1].clone()]
                } else {
                    [ix[1].clone(), ix[0].clone()]
                };
                vals.at_as(b, &at, operand)
            })
        };
        let mut what = format!(
            "{} ({why}; WEFT_GEMV_KMAJOR=1: the weight stored [N, K])",
            kmajor::describe(&p, operand)
        );
        if let Some(f) = &folded {
            what = format!("{what}, {}", f.what);
        }
        let product = te::placeholder("y_gemm", &[m, n], DType::F32);
        set_product(&product);
        let out = output(vals);
        let anchor = kmajor::template_normed(name, &a_k, &w, &product, &p, norm.as_ref())
            .map_err(|e| fail(e.into()))?;
        let fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
        return Ok((fused.func, what, None));
    }
    if skinny::takes(g, group.root, gemv::MAX_M as usize) {
        // A few rows (a decode step's batch): the skinny-product template streams B, which
        // the tiled templates' 64–128-row tiles would mostly waste. Chosen by rule, not
        // tuned (no anchor key).
        let (p, why) = match group.gated {
            // The rule's for the columns it stores (`WEFT_GEMV` selects by the
            // product's `n` still).
            Some(_) => gemv_params_or(chooser.limits, m, n, Some(k), operand, |l, m, n, d| {
                GemvParams::gated_rule(l, m, n / 2, d)
            }),
            None => gemv_params(chooser.limits, m, n, Some(k), operand),
        }
        .map_err(fail)?;
        let splits = gemv_splits(chooser.limits, &p, n, k, operand).map_err(fail)?;
        let mut what = format!("{} ({why})", gemv::describe(&p, operand));
        if chooser.choices.gemv_kmajor() {
            // Why this one is not on the K-major template with the switch on.
            what.push_str(
                "; row-major with WEFT_GEMV_KMAJOR=1: its weight is not stored K-major (read by a tiled product too, or not a constant), or the K-major rule's combine does not fit the target",
            );
        }
        let (splits, what) = match splits {
            Some((sk, why)) => (
                sk,
                format!("{what}, k split in {sk}, the last part sums ({why})"),
            ),
            None => (1, what),
        };
        let product = te::placeholder("y_gemm", &[m, n], DType::F32);
        // With a norm folded in, or its rows prefetched, `b` is the weight as it is
        // stored where the template can read it so (as the stored path does without
        // either): a prefetch needs the buffer, not a view fusion inlines.
        let lead = match chooser.choices.prefetch() {
            // Loads before the wait only of a weight (a constant of the run: no kernel
            // writes it); any other `b` waits first.
            gemv::Lead::Loads if !g.tensor(b).is_constant() => gemv::Lead::Wait,
            other => other,
        };
        let prefetch = matches!(
            lead,
            gemv::Lead::Rows | gemv::Lead::Sectors | gemv::Lead::Loads
        );
        let b_view = if (folded.is_some() || prefetch)
            && !tb
            && g.tensor(b).dtype == operand
            && g.tensor(b).shape.len() == 2
            && vals.stored_rows(b) == Some(b)
        {
            vals.buffer(b)
        } else {
            b_view
        };
        if let Some(gt) = group.gated {
            let product = super::gated::GatedProduct {
                g,
                gated: gt,
                name,
                m,
                n,
                operand,
                limits: chooser.limits,
            };
            let norm = folded.as_ref().map(|f| (&f.norm, f.what.as_str()));
            return super::gated::lower(product, vals, (&a_view, &b_view, norm), (p, why), output)
                .map_err(fail);
        }
        // A view of `b` is not prefetched (fusion inlines it): the wait alone.
        let lead = lead.over(&b_view);
        let what = match &folded {
            Some(f) => format!("{what}, {}", f.what),
            None => what,
        };
        let what = format!("{what}{}", lead.describe());
        set_product(&product);
        let out = output(vals);
        let anchor = p
            .template_prefetched(
                name,
                &a_view,
                &b_view,
                &product,
                folded.as_ref().map(|f| &f.norm),
                splits,
                lead,
            )
            .map_err(|e| fail(e.into()))?;
        let mut fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
        let bn = p.nt * gemv::vec_of(operand);
        let blocks = (n + bn - 1) / bn * splits;
        let what =
            match super::resident::gemv_resident(chooser.limits, &p, m, blocks).map_err(fail)? {
                Some((resident, why)) => {
                    match fused.func.kernel_hints.first_mut() {
                        Some(h) => h.min_blocks_per_sm = resident,
                        None => fused.func.kernel_hints.push(weft_ir::func::KernelHints {
                            min_blocks_per_sm: resident,
                            ..Default::default()
                        }),
                    }
                    format!("{what}; {why}")
                }
                None => what,
            };
        return Ok((fused.func, what, None));
    }
    if group.row_norm.is_some() {
        return Err(fail(LowerError::Refused(format!(
            "an RMS norm is folded into a product of {m} rows, past the skinny-product template's {}",
            gemv::MAX_M
        ))));
    }
    let (choice, why) = choose::anchor(chooser.limits, chooser.choices, &key);
    let (config, splits) = (choice.config, choice.splits);
    let (product_params, what) =
        Matmul::of(f16, &config).map_err(|e| fail(LowerError::Kernels(e)))?;
    // Hopper's stages are TMA-filled from stored operands, gathered from views.
    let what = if key.stored_operands() {
        what
    } else {
        what.replace(matmul_f16::TMA_FILLED, matmul_f16::GATHERED)
    };
    let last = choose::split_last(chooser.limits, chooser.choices).map_err(fail)?;
    let split = (splits > 1).then(|| Split::new(m, n, splits).on_target(last));
    // The product the epilogue reads: the template's result, or the sum of the parts.
    let product = match &split {
        Some(sp) => sp.sum.clone(),
        None => te::placeholder("y_gemm", &[m, n], DType::F32),
    };
    set_product(&product);
    let out = output(vals);
    if let Some(sp) = split {
        let func = sp
            .build(name, &a_view, &b_view, &out, &product_params)
            .map_err(|e| fail(LowerError::Kernels(e)))?;
        return Ok((
            func,
            format!("{what} ({why}), {}", sp.describe(&product_params)),
            Some(key),
        ));
    }
    let anchor = product_params
        .template_over(name, &a_view, &b_view, &product)
        .map_err(|e| fail(e.into()))?;
    let fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
    Ok((fused.func, format!("{what} ({why})"), Some(key)))
}

/// The stored tensor holding `x`'s elements as rows (itself, or what a reshape reads) in
/// `dtype`, which `group`'s template may read as an `[m, k]` placeholder of its own: no
/// buffer of it registered yet, and no epilogue node reading it (which would index the
/// buffer in its own shape).
fn stored_matrix(
    g: &Graph,
    group: &Group,
    vals: &Values,
    x: weft_graph::TensorId,
    dtype: DType,
) -> Option<weft_graph::TensorId> {
    let s = vals.stored_rows(x)?;
    let read_after = group
        .epilogue
        .iter()
        .any(|e| g.nodes[e.0].inputs.iter().any(|&t| t == s || t == x));
    let registered = vals.buffers().iter().any(|(t, _)| *t == s);
    (g.tensor(s).dtype == dtype && !read_after && !registered).then_some(s)
}

/// Whether weight `b` of a product (`[N, K]` where `tb`, else `[K, N]`) is stored
/// K-major, `[N, K]` in memory: a two-dimensional constant the layout pass stored so.
fn k_major(g: &Graph, b: weft_graph::TensorId, tb: bool) -> bool {
    let t = g.tensor(b);
    let n_k = if tb {
        t.layout == weft_graph::tensor::Layout::RowMajor
    } else {
        t.layout == weft_graph::tensor::Layout::Transposed
    };
    t.shape.len() == 2 && t.is_constant() && n_k
}

/// The environment variable that replaces the skinny-product rule's config for every
/// product it schedules (`threads=512,nt=2,unroll=8,shuffle=32`), or for the products of
/// some shapes (`n=11264:threads=512,...;n=2048,k=5632:threads=...`: entries separated
/// by `;`, the first whose selector — `m`, `n`, `k`, each optional — matches the product
/// taken; a product no entry matches keeps the rule's): a knob for measuring whole models
/// under other configs (the template has no anchor key to tune), as the rule was fitted
/// — a decode step reads its weights from memory, not from the L2 a sweep of one product
/// keeps them in. The partition's pricing of a prologue (`gemv_computes`) does not know
/// `k`: there an entry selecting on `k` matches no product.
pub const GEMV_ENV: &str = "WEFT_GEMV";

/// How many times the skinny-product template computes each element of `a` of an
/// `m × n` product over operands of `dtype` (what the partition prices `a`'s prologue
/// by: `weft_graph::partition::skinny`): its column blocks times the threads side by
/// side along a row of `b`, each reading the element. Under the config the lowering
/// takes (the rule's, or `WEFT_GEMV`'s; the rule's where that is refused, which the
/// lowering then reports).
pub(crate) fn gemv_computes(
    limits: &weft_codegen_common::TargetLimits,
    m: usize,
    n: usize,
    dtype: DType,
) -> f64 {
    let (m, n) = (m as i64, n as i64);
    let p = gemv_params(limits, m, n, None, dtype)
        .map_or_else(|_| GemvParams::rule(limits, m, n, dtype).0, |(p, _)| p);
    let bn = p.nt * gemv::vec_of(dtype);
    ((n + bn - 1) / bn * p.nt) as f64
}

/// The rule's config for an `m × n` skinny product (of `k` rows of `b`, where known), or
/// `WEFT_GEMV`'s where an entry of it selects the product.
fn gemv_params(
    limits: &weft_codegen_common::TargetLimits,
    m: i64,
    n: i64,
    k: Option<i64>,
    dtype: DType,
) -> Result<(GemvParams, String), LowerError> {
    gemv_params_or(limits, m, n, k, dtype, GemvParams::rule)
}

/// [`gemv_params`] with `rule` (`GemvParams::rule` or `gated_rule`, over the same
/// arguments) where no `WEFT_GEMV` entry selects the product.
fn gemv_params_or(
    limits: &weft_codegen_common::TargetLimits,
    m: i64,
    n: i64,
    k: Option<i64>,
    dtype: DType,
    rule: fn(&weft_codegen_common::TargetLimits, i64, i64, DType) -> (GemvParams, String),
) -> Result<(GemvParams, String), LowerError> {
    let Ok(text) = std::env::var(GEMV_ENV) else {
        return Ok(rule(limits, m, n, dtype));
    };
    let refuse = |why: String| LowerError::Refused(format!("{GEMV_ENV}=`{text}`: {why}"));
    let mut chosen = None;
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (selector, config) = match entry.split_once(':') {
            Some((sel, cfg)) => (Some(sel), cfg),
            None => (None, entry),
        };
        let config = weft_kernels::Config::parse(config).map_err(refuse)?;
        let p = GemvParams::from_config(&config).map_err(|e| refuse(e.to_string()))?;
        if !p.fits(limits) {
            return Err(refuse(format!("does not fit {}", limits.name)));
        }
        let selects = match selector {
            None => true,
            Some(sel) => {
                let mut all = true;
                for pair in sel.split(',') {
                    let (key, value) = pair
                        .split_once('=')
                        .ok_or_else(|| refuse(format!("`{pair}` is not KEY=VALUE (m, n or k)")))?;
                    let value: i64 = value
                        .trim()
                        .parse()
                        .map_err(|_| refuse(format!("`{pair}`: not a whole number")))?;
                    all &= match key.trim() {
                        "m" => value == m,
                        "n" => value == n,
                        "k" => k == Some(value),
                        other => {
                            return Err(refuse(format!("`{other}` selects nothing (m, n or k)")));
                        }
                    };
                }
                all
            }
        };
        if selects && chosen.is_none() {
            chosen = Some((p, selector.map_or(String::new(), |s| format!(" ({s})"))));
        }
    }
    let Some((p, selected)) = chosen else {
        return Ok(rule(limits, m, n, dtype));
    };
    let blocks = (n + p.nt * gemv::vec_of(dtype) - 1) / (p.nt * gemv::vec_of(dtype));
    Ok((
        p,
        format!("{GEMV_ENV}{selected}: {m} row(s), {blocks} blocks"),
    ))
}

/// The environment variable that splits the skinny-product template's k (unset or `0`:
/// never; `rule`: where [`gemv::split_rule`] says; `N`: `N` parts wherever the target
/// has a device-scope fence and `k` gives `N` parts none empty, else whole): a knob for
/// the split's A/B on whole models. Anything else is refused, naming the variable.
///
/// Whole by default: measured on the H200 (seventh session, TinyLlama-shaped fp16
/// decode, 4 layers, batch 1, three rounds), the rule's splits (q/k/v in 2, o and down
/// in 4) made the step 256.5 µs against 240.8 µs whole — these products are a round trip
/// or two of loads a thread, and the fence, the arrival and the last part's reads add
/// about as much again.
pub const GEMV_SPLIT_ENV: &str = "WEFT_GEMV_SPLIT";

/// The parts an `n`-column, `k`-long skinny product under `p` splits in, with why
/// (`None`: whole): whole unless `WEFT_GEMV_SPLIT` asks ([`GEMV_SPLIT_ENV`]).
fn gemv_splits(
    limits: &weft_codegen_common::TargetLimits,
    p: &GemvParams,
    n: i64,
    k: i64,
    dtype: DType,
) -> Result<Option<(i64, String)>, LowerError> {
    let Ok(text) = std::env::var(GEMV_SPLIT_ENV) else {
        return Ok(None);
    };
    if text.trim() == "rule" {
        return Ok(gemv::split_rule(limits, p, n, k, dtype));
    }
    let refuse = || {
        LowerError::Refused(format!(
            "{GEMV_SPLIT_ENV}=`{text}`: 0 (never split), `rule` (gemv's split rule) or the parts to split in, 1 to {}",
            gemv::MAX_SPLITS
        ))
    };
    let sk = text.trim().parse::<i64>().map_err(|_| refuse())?;
    if !(0..=gemv::MAX_SPLITS).contains(&sk) {
        return Err(refuse());
    }
    // 0 and 1: whole; more where the target has the fence and no part is empty.
    let fits = sk > 1 && limits.device_fence && gemv::split_fits(k, sk);
    let why = || {
        let rows = gemv::split_rows(k, sk);
        (sk, format!("{GEMV_SPLIT_ENV}: {rows} rows of b a part"))
    };
    Ok(fits.then(why))
}
