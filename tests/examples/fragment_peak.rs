//! The matrix units' ceiling through weft's own fragments, on every target named: each
//! warp multiplies `fm × fn` accumulator fragments (m16n16k16, f16 inputs, f32
//! accumulators) many times, with its A and B fragments loaded once (the multiply alone),
//! or again before every multiply from shared memory (what a GEMM main loop asks of the
//! shared-memory path) or from global memory (the same few KiB every time: L1 hits). One kernel, emitted as
//! `mma.sync` on CUDA and as cooperative matrices on Vulkan, so the two targets' ceilings
//! compare directly: a GEMM cannot beat its row of this table.
//!
//! ```sh
//! cargo run --release -p weft-tests --example fragment_peak -- cuda vulkan
//! cargo run --release -p weft-tests --example fragment_peak -- --quick cpu   # checks only
//! ```
//!
//! Every result is checked: `D = iters · (A · B)` over 0/1 inputs is exact in f32.

use half::f16;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fragment::{FragLayout, FragRole, MmaShape};
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::Template;
use weft_runtime::Target;

const S16: MmaShape = MmaShape {
    m: 16,
    n: 16,
    k: 16,
};
/// Multiplies per fragment; 528 blocks (four an SM of a 132-SM GPU: every SM busy,
/// whatever the occupancy). `--quick`: 2 and 3, to check the kernel in the interpreter.
const SIZE: (i64, i64) = (2048, 528);
const QUICK: (i64, i64) = (3, 2);
/// Shared rows padded by 8 halves (16 bytes), as the fp16 template pads them.
const PAD: i64 = 8;

/// Where the A and B fragments come from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum From {
    /// Loaded from shared memory once, before the loop.
    Registers,
    /// Loaded from shared memory before every multiply.
    Shared,
    /// Loaded from global memory before every multiply.
    Global,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    warps: i64,
    frags: [i64; 2],
    from: From,
}

/// `D[warp tile] = iters · (A · B)` for every warp of `blocks` blocks.
fn kernel(case: Case, iters: i64, blocks: i64) -> weft_ir::func::Func {
    let [fm, fn_] = case.frags;
    let threads = case.warps * 32;
    let mut t = Template::new("fragment_peak");
    let a = t.input("A", &[fm * 16, 16], DType::F16);
    let b = t.input("B", &[16, fn_ * 16], DType::F16);
    let d = t.output("D", &[blocks * case.warps * fm * 16, fn_ * 16], DType::F32);
    t.kernel(blocks, threads, |kb| {
        let tx = kb.thread_x();
        let a_sh = kb.shared("A_sh", &[fm * 16, 16 + PAD], DType::F16);
        let b_sh = kb.shared("B_sh", &[16, fn_ * 16 + PAD], DType::F16);
        // Both operands into shared memory, every thread a share of the elements.
        for (src, dst, cols) in [(&a, &a_sh, 16), (&b, &b_sh, fn_ * 16)] {
            let count = src.shape()[0] * cols;
            kb.unroll("e", (count + threads - 1) / threads, |kb, e| {
                let idx = kb.let_("idx", e * threads + tx.clone());
                kb.if_(idx.clone().lt(count), |kb| {
                    let (r, c) = (idx.clone() / cols, idx % cols);
                    let v = src.at(&[r.clone(), c.clone()]);
                    kb.store(dst, [r, c], v);
                });
            });
        }
        kb.barrier();
        let row = FragLayout::RowMajor;
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, row, fm as u32);
        let fb = kb.fragment("b", FragRole::B, S16, DType::F16, row, fn_ as u32);
        let acc = kb.fragment(
            "acc",
            FragRole::Accumulator,
            S16,
            DType::F32,
            row,
            (fm * fn_) as u32,
        );
        kb.unroll("t", fm * fn_, |kb, t| kb.frag_fill(&acc, t, 0.0f32));
        let zero = || Expr::int(0);
        let load = |kb: &mut weft_ir::template::KernelBuilder, global: bool| {
            let (a_src, b_src) = if global { (&a, &b) } else { (&a_sh, &b_sh) };
            kb.unroll("i", fm, |kb, i| {
                kb.frag_load(&fa, i.clone(), a_src, [i * 16, zero()]);
            });
            kb.unroll("j", fn_, |kb, j| {
                kb.frag_load(&fb, j.clone(), b_src, [zero(), j * 16]);
            });
        };
        if case.from == From::Registers {
            load(kb, false);
        }
        kb.serial("it", iters, |kb, _| {
            if case.from != From::Registers {
                load(kb, case.from == From::Global);
            }
            kb.unroll("i", fm, |kb, i| {
                kb.unroll("j", fn_, |kb, j| {
                    let t = i.clone() * fn_ + j.clone();
                    kb.mma((&acc, t.clone()), (&fa, i.clone()), (&fb, j), (&acc, t));
                });
            });
        });
        let warp = kb.let_("warp", kb.block_x() * case.warps + tx / 32);
        kb.unroll("i", fm, |kb, i| {
            kb.unroll("j", fn_, |kb, j| {
                let t = i.clone() * fn_ + j.clone();
                let at = [(warp.clone() * fm + i) * 16, j * 16];
                kb.frag_store(&acc, t, &d, at);
            });
        });
    });
    t.finish().unwrap_or_else(|e| panic!("{case:?}: {e}"))
}

/// 0/1 inputs from a fixed pattern (no generator needed: any pattern checks the result).
fn bits(n: usize, salt: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (i * 7 + salt).is_multiple_of(3) as u8 as f32)
        .collect()
}

fn halves(v: &[f32]) -> TensorData {
    TensorData::F16(v.iter().map(|&x| f16::from_f32(x)).collect())
}

fn run(target: &str, (iters, blocks): (i64, i64)) -> Result<(), Box<dyn std::error::Error>> {
    let mut device = weft_runtime::open(&Target::parse(target)?)?;
    println!("{target}: {}", device.name());
    println!("  warps  frags  fragments from      TFLOP/s   time");
    let mut cases = Vec::new();
    for from in [From::Registers, From::Shared, From::Global] {
        for (warps, frags) in [(4, [2, 2]), (8, [2, 2]), (8, [2, 4]), (8, [4, 4])] {
            cases.push(Case { warps, frags, from });
        }
    }
    for case in cases {
        let [fm, fn_] = case.frags;
        let lowered = lower(&kernel(case, iters, blocks))?;
        let (a, b) = (bits((fm * 256) as usize, 1), bits((fn_ * 256) as usize, 2));
        let mut args = vec![
            Arg::Tensor(halves(&a)),
            Arg::Tensor(halves(&b)),
            Arg::Tensor(TensorData::poisoned(
                DType::F32,
                (blocks * case.warps * fm * fn_ * 256) as usize,
            )),
        ];
        device.run(&lowered, &mut args)?;
        // Every warp's tile (i, j) is iters · (A_i · B_j).
        let Some(Arg::Tensor(TensorData::F32(got))) = args.last() else {
            return Err("no f32 output".into());
        };
        let cols = (fn_ * 16) as usize;
        let want = |r: usize, c: usize| {
            let r = r % (fm as usize * 16);
            iters as f32
                * (0..16)
                    .map(|p| a[r * 16 + p] * b[p * cols + c])
                    .sum::<f32>()
        };
        if let Some(q) = (0..got.len()).find(|&q| got[q] != want(q / cols, q % cols)) {
            return Err(format!(
                "{case:?}: D[{}, {}] = {} is wrong",
                q / cols,
                q % cols,
                got[q]
            )
            .into());
        }
        let timing = device.time(&lowered, &args, 3, 10)?;
        let secs = timing.median.as_secs_f64();
        let flops = (blocks * case.warps * fm * fn_ * iters) as f64 * 2.0 * 4096.0;
        println!(
            "  {:>5}  {}x{}    {:<16} {:>8.1}  {:.1} us",
            case.warps,
            fm,
            fn_,
            match case.from {
                From::Registers => "registers",
                From::Shared => "shared, each time",
                From::Global => "global, each time",
            },
            flops / secs / 1e12,
            secs * 1e6
        );
    }
    Ok(())
}

fn main() {
    let mut targets: Vec<String> = std::env::args().skip(1).collect();
    let quick = targets.iter().any(|t| t == "--quick");
    targets.retain(|t| t != "--quick");
    let targets = if targets.is_empty() {
        vec!["cuda".to_string(), "vulkan".to_string()]
    } else {
        targets
    };
    let mut failed = false;
    for t in &targets {
        if let Err(e) = run(t, if quick { QUICK } else { SIZE }) {
            eprintln!("{t}: {e}");
            failed = true;
        }
    }
    std::process::exit(failed as i32);
}
