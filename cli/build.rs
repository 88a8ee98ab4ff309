//! Records the commit `weft` is built from (`WEFT_COMMIT`), which benchmark JSON and
//! `weft report` print: `1a2b3c4d5e6f`, `1a2b3c4d5e6f-dirty` when the tree had
//! uncommitted changes, `unknown` outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) if !c.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{c}-dirty") } else { c }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=WEFT_COMMIT={commit}");
    // Rebuilt when HEAD moves or the index changes (a commit, a checkout, a staged edit),
    // and when any workspace crate's sources change: an unstaged edit must read `-dirty`
    // (binaries built from unstaged edits once recorded the clean commit before them).
    if let Ok(entries) = std::fs::read_dir("..") {
        for entry in entries.flatten() {
            let src = entry.path().join("src");
            if entry.path().join("Cargo.toml").is_file() && src.is_dir() {
                println!("cargo:rerun-if-changed={}", src.display());
            }
        }
    }
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={dir}/{f}");
        }
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
}
