//! No ONNX file makes `weft` panic or abort (issue 57, item 7): every ONNX backend node
//! test's model (onnx 1.19.1's, from `WEFT_ONNX_NODE_TESTS`; `scripts/onnx-node-tests.sh`
//! fetches them), and damaged copies of some of them (cut short, bytes overwritten), plus
//! an empty file and noise, each go through `weft model run FILE --target cpu`, which
//! imports, compiles, runs and checks it. Every exit must be 0 (ran), 1 (a wrong result
//! or a device failure) or 2 (refused: the user's input) — never 101 (a panic) or a
//! signal. Without the data the test skips, unless `WEFT_REQUIRE` names `onnx-node-tests`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rand::{RngCore, SeedableRng, rngs::StdRng};

/// Every how many node-test models one is also damaged (three copies each).
const DAMAGE_EVERY: usize = 8;

/// Three copies of `bytes`: one cut short, two with one or four bytes overwritten.
fn damaged(bytes: &[u8], rng: &mut StdRng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if bytes.is_empty() {
        return out;
    }
    let at = rng.next_u32() as usize % bytes.len();
    out.push(bytes[..at].to_vec());
    for flips in [1, 4] {
        let mut m = bytes.to_vec();
        for _ in 0..flips {
            let i = rng.next_u32() as usize % m.len();
            m[i] = rng.next_u32() as u8;
        }
        out.push(m);
    }
    out
}

#[test]
fn no_onnx_file_makes_weft_panic() {
    let Some(root) = std::env::var_os("WEFT_ONNX_NODE_TESTS").map(PathBuf::from) else {
        weft_testkit::devices::require_or_skip(
            "onnx-node-tests",
            "no ONNX node test data: set WEFT_ONNX_NODE_TESTS (scripts/onnx-node-tests.sh fetches it)",
        );
        return;
    };
    let mut models: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path().join("model.onnx"))
        .filter(|p| p.exists())
        .collect();
    models.sort();
    assert!(
        !models.is_empty(),
        "{}: no node tests there",
        root.display()
    );

    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut rng = StdRng::seed_from_u64(57);
    let mut files = models.clone();
    let mut write = |name: String, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("a damaged copy written");
        files.push(p);
    };
    write("empty.onnx".into(), b"");
    let mut noise = vec![0u8; 4096];
    rng.fill_bytes(&mut noise);
    write("noise.onnx".into(), &noise);
    for (i, m) in models.iter().enumerate().step_by(DAMAGE_EVERY) {
        let bytes = std::fs::read(m).expect("a node test model");
        for (k, d) in damaged(&bytes, &mut rng).iter().enumerate() {
            write(format!("damaged-{i}-{k}.onnx"), d);
        }
    }

    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let bad: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let counts: Mutex<[usize; 3]> = Mutex::new([0; 3]);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let run = |file: &Path| {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["model", "run"])
            .arg(file)
            .args(["--target", "cpu", "--iters", "1"])
            .output()
    };
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let out = run(file).unwrap_or_else(|e| panic!("weft could not start: {e}"));
                    match out.status.code() {
                        Some(c @ 0..=2) => {
                            counts.lock().unwrap_or_else(|e| e.into_inner())[c as usize] += 1
                        }
                        other => {
                            let err = String::from_utf8_lossy(&out.stderr);
                            let tail: Vec<&str> = err.lines().rev().take(6).collect();
                            bad.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                                "{}: exit {other:?}\n    {}",
                                file.display(),
                                tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
                            ));
                        }
                    }
                }
            });
        }
    });
    let counts = counts.into_inner().unwrap_or_else(|e| e.into_inner());
    let bad = bad.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "{} files ({} node-test models) through `weft model run` in {:.1} s on {workers} threads: exit 0 {}, exit 1 {}, exit 2 {}, other {}",
        files.len(),
        models.len(),
        start.elapsed().as_secs_f64(),
        counts[0],
        counts[1],
        counts[2],
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "{} files made weft exit otherwise than 0, 1 or 2:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
