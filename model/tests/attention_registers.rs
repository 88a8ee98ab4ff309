//! The zoo transformers' fused attention in its register form (scores, probabilities
//! and output rows in mma.sync's fragments), as the models use it on CUDA: a tiny BERT
//! (padding mask) and a tiny GPT-2 (causal) at odd sequence lengths, compiled for CUDA in
//! f16 and run on the interpreter emulating CUDA's limits, against the float64 reference.

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::zoo::transformer::{Family, TransformerConfig, transformer};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::cpu::CpuDevice;

/// f16 storage, f32 accumulation, two layers: measured 0.9e-3 to 1.4e-3.
const TOLERANCE: f64 = 5e-3;

#[test]
fn zoo_attention_in_registers_is_right_on_the_interpreter() {
    let limits = TargetLimits::cuda();
    let mut dev = CpuDevice::emulating(limits.clone());
    for family in [Family::Bert, Family::Gpt2] {
        // 100 tokens: two key steps of 64, so the running maximum and sum rescale.
        for (batch, seq) in [(1, 100), (2, 20)] {
            let cfg = TransformerConfig {
                max_positions: 128,
                ..TransformerConfig::tiny(family)
            };
            let g = transformer("tiny", &cfg, batch, seq, 11).unwrap();
            let model = CompiledModel::compile(
                &g,
                &limits,
                &CompileOptions::default().with_precision(Precision::F16),
            )
            .unwrap();
            let text = model.show();
            assert!(
                text.contains("scores and output in registers"),
                "{family:?}: {text}"
            );
            let inputs = weft_graph::inputs::random_inputs(&g, 5);
            let loaded = model.load(&mut dev).unwrap();
            let got = loaded.run(&mut dev, &inputs).unwrap();
            loaded.free(&mut dev);
            let x: Vec<_> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
            let want = evaluate(&g, &x).unwrap();
            for (got, want) in got.iter().zip(&want) {
                assert_eq!(got.shape(), want.shape());
                let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                let err = got.iter().zip(want.iter()).fold(0.0f64, |m, (a, b)| {
                    let d = (f64::from(*a) - b).abs();
                    if d.is_nan() { f64::INFINITY } else { m.max(d) }
                });
                eprintln!("{family:?} {batch}x{seq}: error {:.2e}", err / scale);
                assert!(
                    err / scale <= TOLERANCE,
                    "{family:?} {batch}x{seq}: {err:.2e}"
                );
            }
        }
    }
}
