//! The offline MSL check: the host C++ compiler parses emitted MSL against a shim of
//! `<metal_stdlib>` ([`SHIM`]; its header says what passing proves and what it does not).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use weft_codegen_common::testing::{Checked, skip};

/// The shim, as kept in the repository (`codegen-metal/shim/metal_stdlib_shim.h`).
pub const SHIM: &str = include_str!("../shim/metal_stdlib_shim.h");

/// The name `WEFT_REQUIRE` uses for this check.
pub const TOOL: &str = "msl";

/// The outcome of [`syntax_check`]: passed, or skipped because no C++ compiler exists.
pub type SyntaxCheck = Checked;

/// The first of `$CXX`, `g++`, `clang++` that runs.
fn compiler() -> Option<&'static str> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let env = std::env::var("CXX").ok().filter(|c| !c.is_empty());
            env.into_iter()
                .chain(["g++".to_string(), "clang++".to_string()])
                .find(|c| {
                    Command::new(c)
                        .arg("--version")
                        .output()
                        .is_ok_and(|o| o.status.success())
                })
        })
        .as_deref()
}

/// A fresh folder per call (checks run in parallel threads and processes).
fn scratch_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "weft-msl-check-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Runs `<c++> -std=c++17 -fsyntax-only` on `source`, with the shim on the include path as
/// `<metal_stdlib>`. Skipped (with a printed reason) when no C++ compiler exists, unless
/// `WEFT_REQUIRE` names `msl`; an error carries the compiler's diagnostics and the source.
pub fn syntax_check(source: &str) -> Result<SyntaxCheck, String> {
    let Some(cxx) = compiler() else {
        return skip(
            TOOL,
            "no host C++ compiler (tried $CXX, g++, clang++); `apt-get install g++`".into(),
        );
    };
    let dir = scratch_dir();
    let file = dir.join("kernel.metal.cpp");
    let run = || -> Result<std::process::Output, String> {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("metal_stdlib"), SHIM).map_err(|e| e.to_string())?;
        std::fs::write(&file, source).map_err(|e| e.to_string())?;
        Command::new(cxx)
            .args([
                "-std=c++17",
                "-fsyntax-only",
                "-Wno-attributes",
                "-Wno-unknown-pragmas",
            ])
            .arg("-I")
            .arg(&dir)
            .args(["-x", "c++"])
            .arg(&file)
            .output()
            .map_err(|e| format!("{cxx}: {e}"))
    };
    let output = run();
    // Best effort: a leftover scratch folder in the temp dir is harmless.
    let _ = std::fs::remove_dir_all(&dir);
    let output = output?;
    if output.status.success() {
        Ok(Checked::Passed)
    } else {
        Err(format!(
            "{cxx} -fsyntax-only rejected the MSL:\n{}\n--- source ---\n{source}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
