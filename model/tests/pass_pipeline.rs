//! A compile runs each pass of the pipeline once, in order — also where the attention
//! pass leaves attention unfused for the target (which once ran every pass a second
//! time, without attention).

use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_graph::passes::{PIPELINE, Precision};
use weft_graph::zoo::transformer::{Family, TransformerConfig, transformer};
use weft_model::compiled::ATTENTION_UNDONE;
use weft_model::{CompileOptions, CompiledModel};

fn tiny_transformer() -> Graph {
    let cfg = TransformerConfig {
        hidden: 128,
        heads: 1,
        ..TransformerConfig::tiny(Family::Bert)
    };
    transformer("tiny", &cfg, 1, 9, 3).unwrap()
}

#[test]
fn every_compile_reports_each_pipeline_pass_once_in_order() {
    let g = tiny_transformer();
    let listed: Vec<&str> = PIPELINE.iter().map(|p| p.name).collect();
    for (limits, fits) in [
        (TargetLimits::webgpu_default(), false),
        (TargetLimits::cuda(), true),
    ] {
        for precision in [Precision::F32, Precision::F16] {
            if precision == Precision::F16 && !limits.f16 {
                continue;
            }
            let options = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &limits, &options).unwrap();
            let names: Vec<&str> = model.passes.iter().map(|r| r.pass).collect();
            assert_eq!(names, listed, "{} {precision:?}", limits.name);
            let undone = model
                .passes
                .iter()
                .filter(|r| r.to_string().starts_with(ATTENTION_UNDONE))
                .count();
            assert_eq!(
                undone,
                usize::from(!fits),
                "{}: {:?}",
                limits.name,
                model.passes
            );
        }
    }
    // A disabled pass is listed too, with nothing changed.
    let options = CompileOptions::default().with_disabled(&["attention".to_string()]);
    let model = CompiledModel::compile(&g, &TargetLimits::cuda(), &options).unwrap();
    let names: Vec<&str> = model.passes.iter().map(|r| r.pass).collect();
    assert_eq!(names, listed);
    assert!(!model.show().contains("attention template"));
}
