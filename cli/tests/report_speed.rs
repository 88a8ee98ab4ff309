//! `weft report --corpus` and `--generation`: the corpus and generation sections of the
//! results page from the JSON `scripts/speed.py` and `scripts/generate_check.py --speed`
//! write (fixtures: excerpts of real H200 outputs, `fixtures/report/README.md`), their
//! chart, the issues' targets met or missed, `report.json` keeping them for `--no-run`,
//! and typed errors naming a file it cannot read.

mod common;

use std::path::{Path, PathBuf};

use common::{bad_input, ok};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-speed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A report.json holding only whole-model rows of weft's zoo (as `--models` writes
/// them; zoo:bert_base's time and date are the H200 row of docs/report.json): the
/// zoo-against-export check reads them.
fn zoo_report(dir: &Path) {
    let row = |model: &str, res: u32, ms: f64| {
        serde_json::json!({
            "model": model, "batch": 1, "resolution": res, "dtype": "f16", "engine": "weft",
            "target": "cuda", "device": "NVIDIA H200 (sm_90)", "ms": ms, "kernels": null,
            "compile_s": null, "unix_time": 1_795_863_612u64
        })
    };
    let data = serde_json::json!({
        "weft_version": "0.1.0", "commit": "c", "unix_time": 1, "command": "weft report",
        "runs": [], "offline": [],
        "models": [row("zoo:resnet50", 224, 0.340), row("zoo:bert_base", 128, 0.407)]
    });
    std::fs::write(dir.join("report.json"), data.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

/// The page from here to the next `## ` heading.
fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let start = page
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}` in the page:\n{page}"));
    let rest = &page[start + heading.len()..];
    let end = rest.find("\n## ").map_or(rest.len(), |e| e + 1);
    &page[start..start + heading.len() + end]
}

#[test]
fn corpus_and_generation_files_make_tables_a_chart_and_the_targets() {
    let out = scratch("page");
    zoo_report(&out);
    let corpus = [
        fixture("speed-b8.json"),
        fixture("speed-b1-vk.json"),
        fixture("speed-b1.json"),
        fixture("speed-partial.json"),
    ]
    .join(",");
    let generation = [fixture("gen-speed.json"), fixture("gen-speed-old.json")].join(",");
    let out_s = out.to_string_lossy().into_owned();
    let args = [
        "report",
        "--no-run",
        "--no-compile",
        "--corpus",
        &corpus,
        "--generation",
        &generation,
        "--out",
        &out_s,
    ];
    let printed = ok(&args);
    assert!(printed.contains("corpus-speed.svg"), "{printed}");
    let page = read(&out.join("results.md"));
    let c = section(&page, "## Corpus against PyTorch");
    for needle in [
        // Provenance; the partial file has no meta: it counts as the oldest run, and its
        // rows are on a GPU nobody recorded, apart from the H200's.
        "| 1 | `",
        "speed-partial.json` | not recorded | not recorded | not recorded |",
        "| 2 | `",
        "speed-b1.json` | 2026-11-29 09:40 UTC | NVIDIA H200 | weft 0.1.0 (a1eeb7e00000) | 2.11.0+cu130 | 5.17.0 | `speed.py --weft .dev/bin/weft --batch 1 --json speed.json` |",
        "| 4 | `",
        "`speed.py --weft .dev/bin/weft --batch 8 --json speed8.json`",
        "### GPU not recorded, batch 1",
        // reduce-overhead alone is the bar where Inductor in one graph was not timed.
        "| resnet50 | torchscript17 | 5.205 ms | 1.056 ms | 0.534 ms | — | 0.360 ms | 0.709 ms | 0.630 ms | **1.49×** | 1 |",
        // Two files of one GPU merge: run 2's PyTorch and CUDA times, run 3's Vulkan.
        "### NVIDIA H200, batch 1",
        "| model | export | PyTorch eager | PyTorch CUDA graph | torch.compile | Inductor in one graph | weft cuda f16 | weft cuda f32 | weft vulkan f16 | weft vulkan f32 | speed | run |",
        "| mobilenet_v2 | torchscript17 | 4.394 ms | 0.579 ms | 0.319 ms | 0.300 ms | 0.181 ms | 0.265 ms | 0.354 ms | 0.300 ms | **1.66×** | 2, 3 |",
        "| densenet121 | torchscript17 | 11.135 ms | 2.015 ms | 1.153 ms | 1.118 ms | 1.487 ms | 2.034 ms | 2.709 ms | — | **0.75×** | 2, 3 |",
        // A target weft refused, a PyTorch mode that failed, a model that failed, a
        // model without torch.compile.
        "| efficientnet_b0 | torchscript17 | 5.440 ms | 0.886 ms | 0.502 ms | 0.481 ms | 0.459 ms | 0.401 ms | refused [1] | — | **1.05×** | 2 |",
        "| bert_base | torchscript17 | 4.824 ms | failed [2] | 0.596 ms | 0.580 ms | 0.471 ms | 1.260 ms | 0.766 ms | — | **1.23×** | 2 |",
        "| convnext_tiny | failed [3] |",
        "| llama_shaped | torchscript17 | 5.474 ms | failed [4] | — | — | 0.304 ms | 1.692 ms | 0.697 ms | — | — | 2 |",
        "1. efficientnet_b0 batch 1, weft vulkan f16: weft: node `/features/features.1/block/block.1/avgpool/GlobalAveragePool`: refused on vulkan",
        "2. bert_base batch 1, PyTorch CUDA graph: RuntimeError: Cannot copy between CPU and CUDA tensors",
        "3. convnext_tiny batch 1, run 2: failed: TimeoutError: export took longer than 300 s",
        "Not in the mean (no weft CUDA f16 time or no torch.compile time): convnext_tiny, llama_shaped.",
        "### NVIDIA H200, batch 8",
        "| densenet121 | torchscript17 | 12.000 ms | 4.000 ms | 2.000 ms | 2.100 ms | 2.500 ms | 3.100 ms | 4.000 ms | **0.80×** | 4 |",
        "across 4 models: **1.10×**; at least as fast on 3 of 4.",
        "![weft's speed over torch.compile across the corpus](charts/corpus-speed.svg)",
        // Issue 59's targets, each with its figure, per GPU.
        "### Issue 59's targets (GPU not recorded)",
        "- Vulkan ≥ 0.5× CUDA on the CNNs (f16): **missed** — 2 of 3 model × batch rows hold; vulkan f16 against cuda f16: mobilenet_v2 batch 1 (0.354 ms vs 0.138 ms) 0.39×",
        "### Issue 59's targets (NVIDIA H200)",
        "- every model, batch 1, fp16: weft CUDA ≥ 1× torch.compile: **missed** — 4 of 5 at least 1×; slower: densenet121 0.75×; not measured: convnext_tiny, llama_shaped",
        "- geometric mean at batch 1 ≥ 1.3×: **missed** — 1.11× over 5 models",
        "- batch 8, fp16: weft CUDA ≥ 1× torch.compile on 90% of the models: **missed** — 3 of 4 (75%); slower: densenet121 0.80×",
        "- zoo and export within 10% (weft CUDA f16, batch 1): **missed** — 0 of 1 within 10% (zoo rows measured 2026-11-28 11:00 UTC); apart: bert_base zoo 0.407 ms vs export 0.471 ms (+16%); not measured: gpt2, resnet50, mobilenet_v2, inception_v3",
        "- no model slower on CUDA than on Vulkan (f16): **missed** — 8 of 9 model × batch rows hold; cuda f16 against vulkan f16: bert_base batch 8 (1.200 ms vs 1.100 ms) 0.92×",
        "- no model slower on CUDA than on Vulkan (f32): **met** — 1 of 1 model × batch rows hold",
        "- no model slower in f16 than in f32 (CUDA): **missed** — 9 of 10 model × batch rows hold; cuda f16 against cuda f32: efficientnet_b0 batch 1 (0.459 ms vs 0.401 ms) 0.87×",
        "- no model slower in f16 than in f32 (Vulkan): **missed** — 0 of 1 model × batch rows hold; vulkan f16 against vulkan f32: mobilenet_v2 batch 1 (0.354 ms vs 0.300 ms) 0.85×",
        "- Vulkan ≥ 0.5× CUDA on the CNNs (f16): **missed** — 5 of 6 model × batch rows hold; vulkan f16 against cuda f16: resnext50_32x4d batch 1 (1.140 ms vs 0.418 ms) 0.37×",
    ] {
        assert!(c.contains(needle), "`{needle}` not in the section:\n{c}");
    }
    // The mean at batch 1 is the geometric mean of the five speeds on the H200.
    let speeds: [f64; 5] = [
        0.300_376_8 / 0.1809,
        1.118_048 / 1.487,
        0.480_604_79 / 0.4591,
        0.433_739_2 / 0.4184,
        0.579_973_6 / 0.4708,
    ];
    let g = (speeds.iter().map(|s| s.ln()).sum::<f64>() / 5.0).exp();
    assert!(
        c.contains(&format!(
            "across 5 models: **{g:.2}×**; at least as fast on 4 of 5."
        )),
        "{c}"
    );

    // The chart: one bar per model and batch, marks at 1× and at the mean's target.
    let svg = read(&out.join("charts/corpus-speed.svg"));
    for needle in [
        "densenet121",
        "bert_base",
        "batch 1",
        "batch 8",
        "1.3× (the mean",
        "1.66×",
        "0.80×",
    ] {
        assert!(svg.contains(needle), "`{needle}` not in the chart");
    }
    assert!(
        !svg.contains("llama_shaped"),
        "a model without a speed is not drawn"
    );

    let g = section(&page, "## Generation against PyTorch");
    for needle in [
        // The old file has no date: it counts as the older run.
        "gen-speed-old.json` | not recorded | NVIDIA H200 | not recorded |",
        "gen-speed.json` | 2026-11-29 13:20 UTC | NVIDIA H200 | 4800 GB/s | weft 0.1.0 (6babee0a0000) |",
        // Run 2 (the new file) replaces the old file's batch-1 and batch-8 rows.
        // The bound: 4800 GB/s ÷ (2223.6 + 4.1 MiB) = 2055 steps/s.
        "| NVIDIA H200 | 1 | 128 | cuda | f16 | 1.204 ms | 831, 831 | 1939 GB/s | 40% of 2055 tok/s | 2.930 ms | 341 | **2.43×** | 2 |",
        "| NVIDIA H200 | 1 | 128 | vulkan | f16 | 1.783 ms | 561, 561 | 1310 GB/s |",
        "| NVIDIA H200 | 8 | 128 | cuda | f16 | 4.624 ms | 216, 1730 | 512 GB/s | 11% of 2029 tok/s | 3.513 ms | 285 | **0.76×** | 2 |",
        "| NVIDIA H200 | 8 | 128 | vulkan | f16 | failed [1] | — |",
        "1. weft vulkan batch 8 prompt 128: exit 2: weft: out of device memory",
        "| NVIDIA H200 | 1 | 1024 | cuda | f16 | 1.288 ms |",
        "- batch-1 decode ≥ 75% of the HBM bound (≥ 1,600 tokens/s on an H200): **missed** — prompt 128: 831 tok/s = 40% of 2055 tok/s (want ≥ 1600); prompt 1024: 776 tok/s = 38% of 2037 tok/s (want ≥ 1600)",
        "- batch-1 decode ≥ 4× PyTorch's StaticCache CUDA graph (same call): **missed** — prompt 128: 831 vs 341 tok/s = 2.43×; prompt 1024: 776 vs 314 tok/s = 2.47×",
        "- Vulkan ≥ 0.5× weft's CUDA: **met** — batch 1 prompt 128: 561 vs 831 tok/s = 0.68×",
    ] {
        assert!(g.contains(needle), "`{needle}` not in the section:\n{g}");
    }
    // The fourth session's rows the new file did not measure again are gone only where
    // replaced: none is left (it measured the same three).
    assert!(!g.contains("2.131 ms"), "{g}");

    // report.json keeps every file; a page rewritten from it alone says the same.
    let data: serde_json::Value =
        serde_json::from_str(&read(&out.join("report.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data["corpus"].as_array().map(Vec::len), Some(4));
    assert_eq!(data["generation"].as_array().map(Vec::len), Some(2));
    let again = scratch("again");
    let from = out.join("report.json").to_string_lossy().into_owned();
    let again_s = again.to_string_lossy().into_owned();
    ok(&[
        "report",
        "--no-run",
        "--no-compile",
        "--from",
        &from,
        "--out",
        &again_s,
    ]);
    let page2 = read(&again.join("results.md"));
    assert_eq!(section(&page2, "## Corpus against PyTorch"), c);
    assert_eq!(section(&page2, "## Generation against PyTorch"), g);
    assert!(again.join("charts/corpus-speed.svg").exists());

    // The same files again into the same folder: kept once, not twice.
    ok(&args);
    let data: serde_json::Value =
        serde_json::from_str(&read(&out.join("report.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data["corpus"].as_array().map(Vec::len), Some(4));
    assert_eq!(data["generation"].as_array().map(Vec::len), Some(2));
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&again);
}

#[test]
fn speed_files_it_cannot_read_are_refused_naming_the_file() {
    let dir = scratch("bad");
    let out = dir.join("out").to_string_lossy().into_owned();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        path.to_string_lossy().into_owned()
    };
    let cases = [
        (
            "--corpus",
            write("cut.json", "{\"meta\": {\"gpu\": \"H"),
            "not JSON",
        ),
        (
            "--corpus",
            write("other.json", "{\"runs\": []}"),
            "no `rows` list",
        ),
        (
            "--corpus",
            write(
                "time.json",
                r#"[{"model": "resnet50", "batch": 1, "weft_cuda_f16": {"ms": "fast"}}]"#,
            ),
            "row 1: resnet50: `weft_cuda_f16` is not a time in ms",
        ),
        (
            "--corpus",
            write("nobatch.json", r#"{"rows": [{"model": "gpt2"}]}"#),
            "row 1: gpt2: no positive `batch`",
        ),
        (
            "--generation",
            write("gen.json", "{\"device\": \"x\"}"),
            "no `speed` list",
        ),
        (
            "--generation",
            write("genrow.json", r#"{"speed": [{"batch": 1, "prompt": 128}]}"#),
            "speed row 1: no `target`",
        ),
        (
            "--generation",
            dir.join("absent.json").to_string_lossy().into_owned(),
            "absent.json",
        ),
    ];
    for (flag, file, why) in &cases {
        bad_input(
            &[
                "report",
                "--no-run",
                "--no-compile",
                flag,
                file,
                "--out",
                &out,
            ],
            &[file.as_str(), why],
        );
    }
    // Nothing was written.
    assert!(!dir.join("out").join("results.md").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// One batch in two calls, as `scripts/device-run.sh corpus torch|weft|zoo` measure it
/// (PyTorch's columns with no export, weft's four columns, the zoo rows from
/// `--models`), assembled by the README's one `weft report` line into one table, with
/// the zoo-against-export check.
#[test]
fn pytorch_only_and_weft_only_calls_assemble_into_one_table() {
    let zoo = scratch("zoo");
    zoo_report(&zoo);
    let out = scratch("split");
    let corpus = [
        fixture("speed-b1-torch.json"),
        fixture("speed-b1-weft.json"),
    ]
    .join(",");
    let from = zoo.join("report.json").to_string_lossy().into_owned();
    let out_s = out.to_string_lossy().into_owned();
    ok(&[
        "report",
        "--no-run",
        "--no-compile",
        "--from",
        &from,
        "--corpus",
        &corpus,
        "--out",
        &out_s,
    ]);
    let page = read(&out.join("results.md"));
    let c = section(&page, "## Corpus against PyTorch");
    for needle in [
        "speed-b1-torch.json` | 2026-11-29 15:26 UTC | NVIDIA H200 | not timed (--no-weft) |",
        "| model | export | PyTorch eager | PyTorch CUDA graph | torch.compile | Inductor in one graph | weft cuda f16 | weft cuda f32 | weft vulkan f16 | weft vulkan f32 | speed | run |",
        // PyTorch's figures from run 1, weft's and the exporter from run 2.
        "| resnet50 | torchscript17 | 5.538 ms | 1.030 ms | 0.533 ms | 0.497 ms | 0.348 ms | 0.709 ms | 0.630 ms | 1.276 ms | **1.43×** | 1, 2 |",
        "| mobilenet_v2 | torchscript17 | 3.994 ms | 0.587 ms | 0.314 ms | 0.294 ms | 0.138 ms | 0.266 ms | 0.354 ms | 0.451 ms | **2.14×** | 1, 2 |",
        "- zoo and export within 10% (weft CUDA f16, batch 1): **not measured in full** — 1 of 1 within 10% (zoo rows measured 2026-11-28 11:00 UTC); not measured: bert_base, gpt2, mobilenet_v2, inception_v3",
        // The four weft columns of one call feed every check between targets and dtypes.
        "- no model slower on CUDA than on Vulkan (f32): **met** — 2 of 2 model × batch rows hold",
        "- no model slower in f16 than in f32 (Vulkan): **met** — 2 of 2 model × batch rows hold",
        "- Vulkan ≥ 0.5× CUDA on the CNNs (f16): **missed** — 1 of 2 model × batch rows hold; vulkan f16 against cuda f16: mobilenet_v2 batch 1 (0.354 ms vs 0.138 ms) 0.39×",
    ] {
        assert!(c.contains(needle), "`{needle}` not in the section:\n{c}");
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&zoo);
}
