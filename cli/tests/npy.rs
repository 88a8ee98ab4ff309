//! `weft run --save DIR` and `--inputs DIR`: a saved run re-run from its files gives the
//! same output, and a file of the wrong shape, dtype or name is an exit-2 error that names
//! the file and what was expected.

mod common;

use std::path::{Path, PathBuf};

use common::{bad_input, ok};

/// A fresh folder for one test.
fn fresh(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-cli-npy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const SHAPE: &str = "m=48,n=40,k=24";

fn run(extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--op",
        "matmul",
        "--schedule",
        "naive",
        "--shape",
        SHAPE,
        "--target",
        "cpu",
        "--iters",
        "1",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

#[test]
fn saved_inputs_rerun_to_the_same_output() {
    let first = fresh("first");
    let second = fresh("second");
    let out = run(&["--seed", "3", "--save", first.to_str().unwrap()]);
    assert!(out.contains("saved") && out.contains("C.npy"), "{out}");
    for name in ["A.npy", "B.npy", "C.npy"] {
        let bytes = read(&first.join(name));
        assert!(bytes.starts_with(b"\x93NUMPY"), "{name} is not .npy");
        assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<f4'"));
    }
    // Another seed: only the files can make the inputs, and so the output, equal.
    let out = run(&[
        "--seed",
        "99",
        "--inputs",
        first.to_str().unwrap(),
        "--save",
        second.to_str().unwrap(),
    ]);
    assert!(out.contains(": ok"), "{out}");
    for name in ["A.npy", "B.npy", "C.npy"] {
        assert_eq!(read(&first.join(name)), read(&second.join(name)), "{name}");
    }
    // Without --inputs, seed 99 gives other inputs: the comparison above can fail.
    let third = fresh("third");
    run(&["--seed", "99", "--save", third.to_str().unwrap()]);
    assert_ne!(read(&first.join("A.npy")), read(&third.join("A.npy")));
    for d in [first, second, third] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn float16_tensors_are_saved_as_float16() {
    let dir = fresh("f16");
    ok(&[
        "run",
        "--op",
        "matmul-f16",
        "--shape",
        "m=32,n=32,k=32",
        "--target",
        "cpu",
        "--iters",
        "1",
        "--save",
        dir.to_str().unwrap(),
    ]);
    for name in ["A.npy", "B.npy", "C.npy"] {
        let bytes = read(&dir.join(name));
        assert!(
            String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<f2'"),
            "{name}"
        );
    }
    let out = ok(&[
        "run",
        "--op",
        "matmul-f16",
        "--shape",
        "m=32,n=32,k=32",
        "--target",
        "cpu",
        "--iters",
        "1",
        "--inputs",
        dir.to_str().unwrap(),
    ]);
    assert!(out.contains(": ok"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn wrong_files_are_named() {
    let dir = fresh("wrong");
    run(&["--save", dir.to_str().unwrap()]);
    let dir_s = dir.to_str().unwrap();
    // B.npy of another shape: k=24 files for a k=16 run.
    bad_input(
        &[
            "run",
            "--op",
            "matmul",
            "--shape",
            "m=48,n=40,k=16",
            "--target",
            "cpu",
            "--inputs",
            dir_s,
        ],
        &["A.npy` has shape [48, 24]", "needs [48, 16]"],
    );
    // A float16 file where float32 is expected.
    let f16 = fresh("wrong-f16");
    ok(&[
        "run",
        "--op",
        "matmul-f16",
        "--shape",
        SHAPE,
        "--target",
        "cpu",
        "--iters",
        "1",
        "--save",
        f16.to_str().unwrap(),
    ]);
    std::fs::copy(f16.join("A.npy"), dir.join("A.npy")).unwrap();
    bad_input(
        &[
            "run", "--op", "matmul", "--shape", SHAPE, "--target", "cpu", "--inputs", dir_s,
        ],
        &["A.npy` holds dtype `<f2`", "needs float32"],
    );
    // Not a .npy file at all, and a missing one.
    std::fs::write(dir.join("A.npy"), b"not numpy").unwrap();
    bad_input(
        &[
            "run", "--op", "matmul", "--shape", SHAPE, "--target", "cpu", "--inputs", dir_s,
        ],
        &["A.npy` is not a valid .npy file"],
    );
    std::fs::remove_file(dir.join("B.npy")).unwrap();
    std::fs::copy(f16.join("B.npy"), dir.join("A.npy")).unwrap();
    let err = bad_input(
        &[
            "run", "--op", "matmul", "--shape", SHAPE, "--target", "cpu", "--inputs", dir_s,
        ],
        &["holds dtype"],
    );
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_file(dir.join("A.npy")).unwrap();
    bad_input(
        &[
            "run", "--op", "matmul", "--shape", SHAPE, "--target", "cpu", "--inputs", dir_s,
        ],
        &["A.npy` not found", "B.npy: float32 [24, 40]"],
    );
    bad_input(
        &["run", "--all", "--target", "cpu", "--inputs", dir_s],
        &["cannot be used with"],
    );
    for d in [dir, f16] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Standard-normal inputs from a file (what NumPy's `standard_normal` gives): the product
/// has elements near zero where its terms cancel, and the check judges them by the
/// rounding their terms carry (exit 0, not a false WRONG); the error `weft run` prints is
/// the largest |weft − ref|, the same as a float64 product computed here finds.
#[test]
fn zero_mean_inputs_are_judged_by_the_rounding_of_their_terms() {
    use ndarray::{Array2, Ix2};
    let dir = fresh("normal");
    let saved = fresh("normal-saved");
    std::fs::create_dir_all(&dir).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        // xorshift64*: reproducible without a random crate in the test.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut normal = move || {
        let (u, v) = (1.0 - uniform(), uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    };
    let a = Array2::from_shape_simple_fn((37, 29), &mut normal);
    let b = Array2::from_shape_simple_fn((29, 53), &mut normal);
    ndarray_npy::write_npy(dir.join("A.npy"), &a).unwrap();
    ndarray_npy::write_npy(dir.join("B.npy"), &b).unwrap();
    let out = ok(&[
        "run",
        "--op",
        "matmul",
        "--shape",
        "m=37,n=53,k=29",
        "--target",
        "cpu",
        "--iters",
        "1",
        "--inputs",
        dir.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert!(out.contains(": ok"), "{out}");
    let c: ndarray::ArrayD<f32> = ndarray_npy::read_npy(saved.join("C.npy")).unwrap();
    let c = c.into_dimensionality::<Ix2>().unwrap();
    let (a64, b64) = (a.mapv(f64::from), b.mapv(f64::from));
    let want = a64.dot(&b64);
    let max_abs = want
        .iter()
        .zip(c.iter())
        .map(|(w, &g)| (w - f64::from(g)).abs())
        .fold(0.0, f64::max);
    // Some element is near zero: a relative error of it would be large.
    let smallest = want.iter().map(|w| w.abs()).fold(f64::INFINITY, f64::min);
    assert!(smallest < 1e-2, "no cancelling element: {smallest}");
    let printed = out
        .lines()
        .find_map(|l| l.split("max |weft − ref| ").nth(1))
        .and_then(|rest| rest.split(':').next())
        .and_then(|x| x.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no error line:\n{out}"));
    assert!(
        (printed - max_abs).abs() <= 0.06 * max_abs,
        "printed {printed:e}, float64 here {max_abs:e}\n{out}"
    );
}
