//! Every WGSL weft emits, validated by Tint (Chrome's WGSL compiler, stricter than naga in
//! places) as well as by naga: every op × schedule, every hand-built kernel and a sample of
//! every template's configs. Tint runs through Dawn for Node.js (the npm package `webgpu`,
//! `tests/tint/`) on its null backend, which validates and builds pipelines with no GPU.
//!
//! Needs `node` and `npm ci` in `tests/tint`; skipped with a printed reason otherwise,
//! unless `WEFT_REQUIRE` names `tint` (CI does). Cooperative-matrix WGSL is wgpu's own
//! extension, which no browser has: Tint skips it and naga alone validates it.

use std::path::{Path, PathBuf};
use std::process::Command;

use weft_codegen_common::TargetLimits;
use weft_ir::kernel::LoweredFunc;
use weft_kernels::Config;
use weft_kernels::attention::AttnParams;
use weft_kernels::rows::{RowOp, RowParams, template_over};
use weft_ops::{OPS, Shape, Workload};
use weft_runtime::Target;
use weft_testkit::devices::require_or_skip;

/// The WGSL targets checked: plain WebGPU, and (for f16 ops, which plain WebGPU lacks) a
/// WGSL device with f16 and no matrix units — what a browser with `shader-f16` runs.
fn limits_for(f16: bool) -> TargetLimits {
    TargetLimits {
        name: if f16 { "webgpu + shader-f16" } else { "webgpu" }.into(),
        f16,
        matrix_units: Vec::new(),
        ..TargetLimits::webgpu_default()
    }
}

/// `func` as `weft emit` prints it: every kernel in one module
/// ([`weft_codegen_wgsl::emit_lowered`], what `Target::emit_function` calls); and, where
/// there are several, each kernel's module alone, as the runtime compiles it.
fn emit(func: &LoweredFunc, limits: &TargetLimits, what: &str, out: &mut Vec<(String, String)>) {
    let opts = weft_codegen_wgsl::WgslOptions {
        limits: limits.clone(),
    };
    match weft_codegen_wgsl::emit_lowered(func, &opts) {
        Ok(w) => out.push((format!("{what} (as `weft emit` prints it)"), w.source)),
        Err(e) => panic!("{what}: emitting: {e}"),
    }
    if func.kernels.len() > 1 {
        for k in &func.kernels {
            match weft_codegen_wgsl::emit(k, &opts) {
                Ok(w) => out.push((format!("{what} {}", k.name), w.source)),
                Err(e) => panic!("{what}: emitting {}: {e}", k.name),
            }
        }
    }
}

/// (description, WGSL) of everything weft emits for WebGPU.
fn all_wgsl() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for op in OPS {
        let shape = Shape::defaults(op);
        let w = Workload::new(op.name, &shape).unwrap();
        let limits = limits_for(w.uses_f16());
        let res = limits.clone();
        for schedule in op.schedules {
            let config: Option<Config> = w.template(schedule).map(|t| (t.default)(&res));
            let func = w
                .lower_with(schedule, config.as_ref())
                .unwrap_or_else(|e| panic!("{e}"));
            emit(&func, &limits, &format!("{}/{schedule}", op.name), &mut out);
        }
        // Every fifth config of the op's template for this target, at a small shape.
        if let (Some(t), Some(small)) = (op.template, op.small.first()) {
            let ws = Workload::new(op.name, &Shape::from_values(op, small).unwrap()).unwrap();
            for (i, c) in (t.space)(&res)
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 5 == 0)
            {
                if let Ok(func) = ws.lower_with(t.schedule, Some(c)) {
                    emit(
                        &func,
                        &limits,
                        &format!("{}/{} config #{i} {c}", op.name, t.schedule),
                        &mut out,
                    );
                }
            }
        }
    }
    // Exactly what `weft emit --target webgpu` and `--target vulkan` print (with the
    // final newline it adds), for every op x schedule those targets take.
    for name in ["webgpu", "vulkan"] {
        let target = Target::parse(name).unwrap();
        for op in OPS {
            let w = Workload::default_for(op.name).unwrap();
            if w.uses_f16() && !target.limits().f16 {
                continue;
            }
            for schedule in op.schedules {
                let config: Option<Config> =
                    w.template(schedule).map(|t| (t.default)(&target.limits()));
                let func = w.lower_with(schedule, config.as_ref()).unwrap();
                let text = target
                    .emit_function(&func)
                    .unwrap_or_else(|e| panic!("{}/{schedule} on {name}: {e}", op.name))
                    .source;
                out.push((
                    format!(
                        "weft emit --op {} --schedule {schedule} --target {name}",
                        op.name
                    ),
                    text + "\n",
                ));
            }
        }
    }
    // The offline `vulkan` profile: f16 ops on cooperative matrices (naga only).
    let vulkan = Target::parse("vulkan").unwrap();
    for op in OPS
        .iter()
        .filter(|o| Workload::default_for(o.name).unwrap().uses_f16())
    {
        let w = Workload::default_for(op.name).unwrap();
        let res = vulkan.limits();
        for schedule in op.schedules {
            let config: Option<Config> = w.template(schedule).map(|t| (t.default)(&res));
            let func = w.lower_with(schedule, config.as_ref()).unwrap();
            emit(
                &func,
                &vulkan.limits(),
                &format!("{}/{schedule} (vulkan)", op.name),
                &mut out,
            );
        }
    }
    // The row reductions (softmax, layer norm, a sum) by the rule on adapters with
    // subgroups of 8 (lavapipe's) and 32 (NVIDIA's): their trees shuffle, which Tint
    // holds to subgroup-uniform control flow. One kernel, and the split form.
    for sub in [8, 32] {
        let limits = TargetLimits {
            name: format!("vulkan with subgroups of {sub}"),
            subgroup: Some(weft_codegen_common::SubgroupSize::fixed(sub)),
            ..TargetLimits::webgpu_default()
        };
        for (rows, n) in [(6, 129), (64, 768), (1, 20011)] {
            for op in [
                RowOp::Softmax,
                RowOp::LayerNorm { epsilon: 1e-5 },
                RowOp::Sum,
            ] {
                let (p, why) = RowParams::rule(&limits, rows, n);
                assert!(p.shuffle > 1, "{why}: {p:?}");
                let x = weft_ir::te::placeholder("x", &[rows, n], weft_ir::dtype::DType::F32);
                let y_shape = if op.per_row() {
                    vec![rows]
                } else {
                    vec![rows, n]
                };
                let y = weft_ir::te::placeholder("y", &y_shape, weft_ir::dtype::DType::F32);
                let func = template_over("rows", &x, &y, op, &p).unwrap();
                let lowered = weft_ir::lower::lower(&func).unwrap();
                emit(
                    &lowered,
                    &limits,
                    &format!("rows {op:?} {rows}x{n} {p:?}"),
                    &mut out,
                );
            }
        }
    }
    // Attention's row statistics by shuffles inside its key loop (CUDA cores: Tint
    // skips the cooperative-matrix forms), on an adapter with subgroups of 32 and f16.
    {
        let limits = TargetLimits {
            name: "webgpu + shader-f16 + subgroups".into(),
            subgroup: Some(weft_codegen_common::SubgroupSize::fixed(32)),
            ..limits_for(true)
        };
        let w = Workload::default_for("attention-f16").unwrap();
        // Four and two threads a row (16 KiB of workgroup memory hold these tiles).
        for (bq, warps) in [(16, 2), (16, 1)] {
            let p = AttnParams {
                mma: 0,
                bq,
                bkv: 16,
                warps,
                skip: false,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: true,
                shared_kv: false,
            };
            assert!(p.shuffles_on(&limits), "{p:?}");
            let func = w.lower_with("template", Some(&p.config())).unwrap();
            emit(
                &func,
                &limits,
                &format!("attention-f16 {}", p.config()),
                &mut out,
            );
        }
    }
    for (name, k) in weft_testkit::handmade::all() {
        let f16 = k.uses_dtype(weft_ir::dtype::DType::F16);
        let opts = weft_codegen_wgsl::WgslOptions {
            limits: limits_for(f16),
        };
        let wgsl = weft_codegen_wgsl::emit(&k, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((name.to_string(), wgsl.source));
    }
    out
}

/// `tests/tint`, if Dawn for Node.js is installed there and `node` runs.
fn tint_dir() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tint");
    if !dir.join("node_modules/webgpu/package.json").exists() {
        return Err(format!(
            "Dawn for Node.js is not installed: run `npm ci` in {}",
            dir.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(dir),
        Ok(o) => Err(format!(
            "`node --version` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("no `node` on PATH: {e}")),
    }
}

#[test]
fn every_emitted_wgsl_passes_naga_and_tint() {
    let all = all_wgsl();
    assert!(all.len() > 50, "only {} WGSL modules", all.len());
    // naga, in process.
    let naga_errors: Vec<String> = all
        .iter()
        .filter_map(|(what, src)| {
            weft_codegen_wgsl::validate(src)
                .err()
                .map(|e| format!("{what}: {e}"))
        })
        .collect();
    assert!(
        naga_errors.is_empty(),
        "naga rejects:\n{}",
        naga_errors.join("\n")
    );

    let dir = match tint_dir() {
        Ok(d) => d,
        Err(reason) => return require_or_skip("tint", &reason),
    };
    let tmp = std::env::temp_dir().join(format!("weft-tint-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut files = Vec::new();
    for (i, (_, src)) in all.iter().enumerate() {
        let path = tmp.join(format!("{i}.wgsl"));
        std::fs::write(&path, src).unwrap();
        files.push(path);
    }
    let out = Command::new("node")
        .arg(dir.join("validate.mjs"))
        .args(&files)
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("running node: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let what = |line: &str| -> String {
        // `error /tmp/.../12.wgsl: ...` → the module's description.
        let file = line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .trim_end_matches(':');
        let i: Option<usize> = Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok());
        i.and_then(|i| all.get(i))
            .map(|(w, _)| w.clone())
            .unwrap_or_default()
    };
    let errors: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("error "))
        .map(|l| format!("{}: {l}", what(l)))
        .collect();
    let checked = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    let skipped = stdout.lines().filter(|l| l.starts_with("skip ")).count();
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        errors.is_empty() && out.status.success(),
        "Tint rejects {} of {} modules:\n{}\nstderr:\n{}",
        errors.len(),
        all.len(),
        errors.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    // Only the cooperative-matrix modules are skipped.
    let coop = all
        .iter()
        .filter(|(_, s)| s.contains("enable wgpu_cooperative_matrix;"))
        .count();
    assert_eq!(skipped, coop, "{stdout}");
    assert_eq!(checked + skipped, all.len(), "{stdout}");
    eprintln!("Tint accepted {checked} modules ({skipped} cooperative-matrix modules: naga only)");
}
