//! A target whose shared memory holds no attention tiling (plain WebGPU's 16 KiB at a
//! head size of 64 with f32 tiles, as BERT-base has; here a tiny model of one head of
//! 128): the model
//! compiles with attention unfused — two products and a softmax, as exported — the pass
//! report says why, and it is right on the interpreter against the float64 reference.

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::zoo::transformer::{Family, TransformerConfig, transformer};
use weft_model::compiled::ATTENTION_UNDONE;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::cpu::CpuDevice;

#[test]
fn attention_stays_unfused_where_no_tiling_fits() {
    let small = TargetLimits::webgpu_default();
    let mut dev = CpuDevice::emulating(small.clone());
    for family in [Family::Bert, Family::Gpt2] {
        let cfg = TransformerConfig {
            hidden: 128,
            heads: 1,
            ..TransformerConfig::tiny(family)
        };
        let g = transformer("tiny", &cfg, 1, 9, 3).unwrap();
        let model = CompiledModel::compile(
            &g,
            &small,
            &CompileOptions::default().with_precision(Precision::F32),
        )
        .unwrap();
        assert!(
            model
                .passes
                .iter()
                .any(|p| p.to_string().starts_with(ATTENTION_UNDONE)),
            "{family:?}: {:?}",
            model.passes
        );
        let text = model.show();
        assert!(!text.contains("attention template"), "{family:?}: {text}");
        assert!(text.contains("softmax template"), "{family:?}: {text}");
        let inputs = weft_graph::inputs::random_inputs(&g, 5);
        let loaded = model.load(&mut dev).unwrap();
        let got = loaded.run(&mut dev, &inputs).unwrap();
        loaded.free(&mut dev);
        let x: Vec<_> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
        let want = evaluate(&g, &x).unwrap();
        for (got, want) in got.iter().zip(&want) {
            let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let err = got
                .iter()
                .zip(want.iter())
                .fold(0.0f64, |m, (a, b)| m.max((f64::from(*a) - b).abs()));
            assert!(err / scale <= 1e-4, "{family:?}: {err:.2e}");
        }
        // Where the target holds it, the same model fuses attention.
        let cuda = CompiledModel::compile(
            &g,
            &TargetLimits::cuda(),
            &CompileOptions::default().with_precision(Precision::F32),
        )
        .unwrap();
        assert!(cuda.show().contains("attention template"));
        assert!(cuda.passes.iter().all(|p| p.note.is_none()));
    }
}
