//! Tuning records shared by processes: several processes storing records into one file at
//! once lose none, and a reader never sees a torn file.
//!
//! The writers are this test binary run again (`concurrent_writer`, which does nothing
//! unless [`CHILD`] is set), so they are separate processes with separate descriptors, as
//! concurrent `weft tune` runs are.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use weft_tune::{Record, RecordKey, Records};

/// Set for a child process: `WRITER,COUNT,PATH`.
const CHILD: &str = "WEFT_RECORDS_TEST_WRITER";
const WRITERS: usize = 6;
const EACH: usize = 8;
/// Records already in the file: about the size (1.3 MB) where unlocked writers were seen
/// to lose records, so reading and writing take a while.
const PREFILLED: usize = 3000;

fn record(writer: &str, n: usize) -> Record {
    Record {
        op: "matmul".into(),
        schedule: "template".into(),
        shape: format!("m={n},n=8,k=8"),
        dtype: "float32".into(),
        target: "cpu".into(),
        device: writer.into(),
        weft_version: weft_tune::VERSION.into(),
        config: format!("wm={n}"),
        time_us: 1.0,
        reference_us: None,
        space: 2,
        timed: 2,
        tuning_seconds: 0.5,
        unix_time: 1_795_000_000 + n as u64,
    }
}

fn key(writer: &str, n: usize) -> RecordKey {
    record(writer, n).key()
}

/// The child side of `processes_storing_at_once_lose_nothing`; a no-op in a normal run.
#[test]
fn concurrent_writer() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.splitn(3, ',');
    let (Some(writer), Some(count), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{CHILD}={spec}: expected WRITER,COUNT,PATH");
    };
    let count: usize = count.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
    let path = Path::new(path);
    for n in 0..count {
        Records::store(path, record(writer, n)).unwrap_or_else(|e| panic!("{writer}: {e}"));
        // Between writes, read as `weft run` does: never a torn file.
        let (_, problem) = Records::load_or_empty(path);
        assert!(problem.is_none(), "{writer} read a torn file: {problem:?}");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-tune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

#[test]
fn processes_storing_at_once_lose_nothing() {
    let dir = scratch("concurrent");
    let path = dir.join("records.json");
    let old: Vec<Record> = (0..PREFILLED).map(|n| record("earlier", n)).collect();
    let text = serde_json::to_string_pretty(&old).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));

    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            Command::new(&exe)
                .args(["concurrent_writer", "--exact", "--nocapture"])
                .env(CHILD, format!("writer-{w},{EACH},{}", path.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()))
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "writer {w} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let records = Records::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let missing: Vec<String> = (0..WRITERS)
        .flat_map(|w| (0..EACH).map(move |n| (format!("writer-{w}"), n)))
        .filter(|(w, n)| records.find(&key(w, *n)).is_none())
        .map(|(w, n)| format!("{w}#{n}"))
        .collect();
    assert!(missing.is_empty(), "records lost: {missing:?}");
    assert!(
        (0..PREFILLED).all(|n| records.find(&key("earlier", n)).is_some()),
        "earlier records lost"
    );
    assert_eq!(records.all().len(), PREFILLED + WRITERS * EACH);
    let _ = std::fs::remove_dir_all(&dir);
}
