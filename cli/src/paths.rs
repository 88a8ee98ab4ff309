//! Output paths (`--json FILE`, `--save DIR`, `--out DIR`) checked before the work that
//! fills them: a benchmark of minutes must not end in "cannot write". Each check names the
//! path and what is wrong with it: a folder where a file goes (or the reverse), a folder
//! that does not exist, or one that cannot be written.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Checks that `flag`'s file `path` can be written: it is not a folder, its folder exists,
/// and the file can be opened (it is left as it was) or created there (the probe is
/// removed again).
pub fn output_file(flag: &'static str, path: &Path) -> Result<(), CliError> {
    let bad = |problem: String| CliError::OutputPath {
        flag,
        path: path.to_path_buf(),
        problem,
    };
    if path.is_dir() {
        return Err(bad(format!(
            "it is a folder, and {flag} writes a file: name a file in it"
        )));
    }
    // Before any open: opening a FIFO to write waits for a reader, and a device node
    // must not be replaced by the rename that writes the file whole.
    if let Some(kind) = weft_tune::not_regular(path) {
        return Err(bad(format!(
            "it is {kind}, and weft writes only over a regular file or a new path: name one"
        )));
    }
    let folder = folder_of(path);
    if !folder.exists() {
        return Err(bad(format!(
            "its folder `{}` does not exist",
            folder.display()
        )));
    }
    if !folder.is_dir() {
        return Err(bad(format!("`{}` is not a folder", folder.display())));
    }
    if path.exists() {
        // Append mode: opening checks permission without truncating what is there.
        return File::options()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(format!("it cannot be written: {e}")));
    }
    probe(&folder).map_err(bad)
}

/// Checks that `flag`'s folder `path` can be written: it is not a file, and it (or, when it
/// does not exist yet, the nearest folder above it, where it will be created) takes a new
/// file.
pub fn output_dir(flag: &'static str, path: &Path) -> Result<(), CliError> {
    let bad = |problem: String| CliError::OutputPath {
        flag,
        path: path.to_path_buf(),
        problem,
    };
    if path.exists() && !path.is_dir() {
        return Err(bad(format!(
            "it is a file, and {flag} writes files into a folder"
        )));
    }
    // The nearest existing folder: the one `create_dir_all` will create `path` in.
    let mut existing = path.to_path_buf();
    while !existing.exists() {
        let up = folder_of(&existing);
        if up == existing {
            // `.` itself is gone (the working folder was removed).
            return Err(bad(format!("`{}` does not exist", up.display())));
        }
        existing = up;
    }
    if !existing.is_dir() {
        return Err(bad(format!(
            "`{}` is a file, so the folder cannot be created",
            existing.display()
        )));
    }
    probe(&existing).map_err(bad)
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Creates and removes a file in `dir`: the only test of writability that holds for
/// every file system, ACL and read-only mount.
fn probe(dir: &Path) -> Result<(), String> {
    let file = dir.join(format!(".weft-write-check-{}", std::process::id()));
    match File::options().write(true).create_new(true).open(&file) {
        Ok(f) => {
            drop(f);
            // Left behind only if removal fails right after creation; harmless.
            let _ = std::fs::remove_file(&file);
            Ok(())
        }
        Err(e) => Err(format!("cannot write in `{}`: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weft-paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn problem(r: Result<(), CliError>) -> String {
        match r {
            Err(e @ CliError::OutputPath { .. }) => e.to_string(),
            other => panic!("expected an output path error, got {other:?}"),
        }
    }

    #[test]
    fn files() {
        let dir = scratch("files");
        let e = problem(output_file("--json", &dir));
        assert!(
            e.starts_with("--json `") && e.contains("it is a folder"),
            "{e}"
        );
        let e = problem(output_file("--json", &dir.join("no/such/x.json")));
        assert!(e.contains("no/such` does not exist"), "{e}");
        std::fs::write(dir.join("f"), "x").unwrap();
        let e = problem(output_file("--json", &dir.join("f/x.json")));
        assert!(e.contains("is not a folder"), "{e}");
        // A new file and an existing one are fine, and neither is changed.
        output_file("--json", &dir.join("new.json")).unwrap();
        output_file("--json", &dir.join("f")).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("f")).unwrap(), "x");
        let mut left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        left.retain(|e| e.file_name() != "f");
        assert!(left.is_empty(), "probe files left: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dirs() {
        let dir = scratch("dirs");
        output_dir("--out", &dir).unwrap();
        // Not there yet: created later under a folder that exists.
        output_dir("--out", &dir.join("a/b")).unwrap();
        assert!(
            !dir.join("a").exists(),
            "the check must not create the folder"
        );
        std::fs::write(dir.join("f"), "x").unwrap();
        let e = problem(output_dir("--save", &dir.join("f")));
        assert!(e.contains("it is a file"), "{e}");
        let e = problem(output_dir("--out", &dir.join("f/sub")));
        assert!(
            e.contains("is a file, so the folder cannot be created"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
