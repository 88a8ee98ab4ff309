//! Tuning records: what `weft tune` found, kept in a JSON file.
//!
//! The file is a JSON array of [`Record`]s. Its default place is `$WEFT_RECORDS` when
//! set, else `$XDG_CACHE_HOME/weft/tuning-records.json`, else
//! `$HOME/.cache/weft/tuning-records.json`; `--records FILE` names another. A record
//! applies to one op, schedule, shape, dtype, target, device and weft version: a record
//! for another device or version is never used.
//!
//! Several `weft tune` processes may save into one file at once: [`Records::store`] holds
//! an advisory lock on `FILE.lock` while it reads the file again, merges its record in and
//! writes the file whole (a temporary file renamed over it), so no record is lost and no
//! reader sees a torn file. A file that is not records is never overwritten: readers
//! ([`Records::load_or_empty`]) go on without it, and `store` renames it to
//! `FILE.corrupt-<unix time>` before starting a new one.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::files::{FileLock, write_whole};

/// Everything a record must match to be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordKey {
    pub op: String,
    pub schedule: String,
    /// `m=1024,n=1024,k=1024`.
    pub shape: String,
    /// `float32`.
    pub dtype: String,
    /// The target string (`cuda`, `vulkan`, `cuda -arch=sm_90`).
    pub target: String,
    /// The device's name as the runtime reports it.
    pub device: String,
    pub version: String,
}

/// The best config of one tuning run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub op: String,
    pub schedule: String,
    pub shape: String,
    pub dtype: String,
    pub target: String,
    pub device: String,
    /// weft's version.
    pub weft_version: String,
    /// The chosen config, `name=value,...`.
    pub config: String,
    /// Its kernel time (median), in microseconds.
    pub time_us: f64,
    /// The vendor library's time at the same shape, when it was measured (cuBLAS).
    #[serde(default)]
    pub reference_us: Option<f64>,
    /// How many configs the space had and how many were timed.
    pub space: usize,
    pub timed: usize,
    /// Wall-clock seconds the tuning took.
    pub tuning_seconds: f64,
    /// When, in seconds since 1970-01-01 UTC.
    pub unix_time: u64,
}

impl Record {
    /// What the record must match to be used.
    pub fn key(&self) -> RecordKey {
        RecordKey {
            op: self.op.clone(),
            schedule: self.schedule.clone(),
            shape: self.shape.clone(),
            dtype: self.dtype.clone(),
            target: self.target.clone(),
            device: self.device.clone(),
            version: self.weft_version.clone(),
        }
    }

    /// True if the record was made for `key`.
    pub fn matches(&self, key: &RecordKey) -> bool {
        self.key() == *key
    }

    /// The record's date, `YYYY-MM-DD` (UTC).
    pub fn date(&self) -> String {
        date(self.unix_time)
    }
}

/// Seconds since 1970-01-01 UTC, now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `YYYY-MM-DD` of a Unix time (the proleptic Gregorian calendar, UTC).
pub fn date(unix: u64) -> String {
    // Days to civil date: Howard Hinnant's algorithm.
    let z = (unix / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Why a record file could not be read or written.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("tuning records `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tuning records `{path}` are not a JSON array of records: {source}")]
    Format {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// [`Records::check_writable`]: a record could not be saved at `path`.
    #[error(
        "cannot save tuning records to `{path}`: {reason} (name a file weft can write with \
         --records FILE or WEFT_RECORDS, or pass --no-save)"
    )]
    Unwritable { path: PathBuf, reason: String },
}

/// What [`Records::store`] did besides adding the record.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// How many records the file holds now.
    pub count: usize,
    /// The file that was there could not be read as records: it was renamed to this path
    /// (kept, not overwritten) and a new file started. With why it was unreadable.
    pub set_aside: Option<(PathBuf, String)>,
}

/// The records of one file.
#[derive(Clone, Debug)]
pub struct Records {
    path: PathBuf,
    records: Vec<Record>,
}

impl Records {
    /// The default file (see the module docs); `None` when neither `WEFT_RECORDS`,
    /// `XDG_CACHE_HOME` nor `HOME` is set.
    pub fn default_path() -> Option<PathBuf> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(p) = var("WEFT_RECORDS") {
            return Some(PathBuf::from(p));
        }
        let cache = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(cache.join("weft").join("tuning-records.json"))
    }

    /// Reads `path`; a file that does not exist, or holds only white space (a file
    /// emptied before writes were whole), holds no records.
    pub fn load(path: &Path) -> Result<Records, RecordError> {
        // Bounded by the file's length: `/dev/zero` as records is refused, not read
        // without end.
        let text = crate::files::read_bounded(path).and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        });
        let records = match text {
            Ok(text) if text.trim().is_empty() => Vec::new(),
            Ok(text) => serde_json::from_str(&text).map_err(|source| RecordError::Format {
                path: path.to_path_buf(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(RecordError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        Ok(Records {
            path: path.to_path_buf(),
            records,
        })
    }

    /// Reads `path` for use: a file that cannot be read or is not records (torn, hand
    /// edited) counts as holding none, so runs go on with the templates' defaults; the
    /// error says why, for the caller to warn once. The file is left as it is.
    pub fn load_or_empty(path: &Path) -> (Records, Option<RecordError>) {
        match Records::load(path) {
            Ok(r) => (r, None),
            Err(e) => (
                Records {
                    path: path.to_path_buf(),
                    records: Vec::new(),
                },
                Some(e),
            ),
        }
    }

    /// Checks, before any tuning, that [`store`](Records::store) can save at `path`: its
    /// folder exists or can be created, `path` is not a folder, and a file can be created
    /// and locked beside it. Creates the folder and the lock file; writes no records.
    pub fn check_writable(path: &Path) -> Result<(), RecordError> {
        let no = |reason: String| RecordError::Unwritable {
            path: path.to_path_buf(),
            reason,
        };
        let target = crate::files::resolved(path);
        if let Some(kind) = crate::files::not_regular(&target) {
            return Err(no(format!("it is {kind}, not a regular file")));
        }
        let dir = crate::files::folder(&target);
        std::fs::create_dir_all(dir)
            .map_err(|e| no(format!("cannot create the folder `{}`: {e}", dir.display())))?;
        let lock = FileLock::acquire(&target).map_err(|e| {
            let lock = FileLock::path_for(&target);
            no(format!("cannot create or lock `{}`: {e}", lock.display()))
        })?;
        // The save writes a temporary file in the folder and renames it: try the first half.
        tempfile::Builder::new()
            .prefix(".weft-check.")
            .tempfile_in(dir)
            .map_err(|e| no(format!("cannot create a file in `{}`: {e}", dir.display())))?;
        drop(lock);
        Ok(())
    }

    /// Adds `record` to the file at `path` (its folder is created if missing), replacing
    /// any record for the same key, without losing what other processes saved meanwhile:
    /// under the lock beside the file ([`FileLock`]) the file is read again, the record
    /// merged in and the file written whole ([`write_whole`]). A file that is there but not
    /// records is renamed to `FILE.corrupt-<unix time>` first (see [`Stored::set_aside`]),
    /// never overwritten.
    pub fn store(path: &Path, record: Record) -> Result<Stored, RecordError> {
        let target = crate::files::resolved(path);
        let io = |source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(crate::files::folder(&target)).map_err(io)?;
        let _lock = FileLock::acquire(&target).map_err(|source| RecordError::Io {
            path: FileLock::path_for(&target),
            source,
        })?;
        let (mut records, set_aside) = match Records::load(&target) {
            Ok(r) => (r, None),
            Err(RecordError::Format { source, .. }) => {
                let aside = set_aside(&target).map_err(io)?;
                let empty = Records {
                    path: target.clone(),
                    records: Vec::new(),
                };
                (empty, Some((aside, source.to_string())))
            }
            Err(e) => return Err(e),
        };
        records.add(record);
        let text = serde_json::to_string_pretty(&records.records).map_err(|source| {
            RecordError::Format {
                path: path.to_path_buf(),
                source,
            }
        })?;
        write_whole(&target, (text + "\n").as_bytes()).map_err(io)?;
        Ok(Stored {
            count: records.records.len(),
            set_aside,
        })
    }

    /// The file these records live in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record, oldest first.
    pub fn all(&self) -> &[Record] {
        &self.records
    }

    /// The newest record made for `key`.
    pub fn find(&self, key: &RecordKey) -> Option<&Record> {
        self.records
            .iter()
            .filter(|r| r.matches(key))
            .max_by_key(|r| r.unix_time)
    }

    /// Adds `record` to these records (not to the file: [`store`](Records::store) does
    /// that), replacing any record for the same key.
    pub fn add(&mut self, record: Record) {
        let key = record.key();
        self.records.retain(|r| r.key() != key);
        self.records.push(record);
    }
}

/// Renames the unreadable records file `path` to `path.corrupt-<unix time>` (`-2`, `-3`,
/// ... appended if that is taken) and returns the new name.
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let with = |tail: String| {
        let mut p = path.as_os_str().to_owned();
        p.push(tail);
        PathBuf::from(p)
    };
    let stem = format!(".corrupt-{}", unix_now());
    let mut aside = with(stem.clone());
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = with(format!("{stem}-{n}"));
    }
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(device: &str, config: &str, t: u64) -> Record {
        Record {
            op: "matmul".into(),
            schedule: "template".into(),
            shape: "m=8,n=8,k=8".into(),
            dtype: "float32".into(),
            target: "cuda".into(),
            device: device.into(),
            weft_version: "0.1.0".into(),
            config: config.into(),
            time_us: 1.0,
            reference_us: None,
            space: 2,
            timed: 2,
            tuning_seconds: 0.5,
            unix_time: t,
        }
    }

    fn key(device: &str, version: &str) -> RecordKey {
        RecordKey {
            op: "matmul".into(),
            schedule: "template".into(),
            shape: "m=8,n=8,k=8".into(),
            dtype: "float32".into(),
            target: "cuda".into(),
            device: device.into(),
            version: version.into(),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weft-records-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn records_round_trip_and_match_only_their_device_and_version() {
        let dir = scratch("round-trip");
        let path = dir.join("r.json");
        assert!(Records::load(&path).unwrap().all().is_empty());
        Records::store(&path, record("H100", "a=1", 10)).unwrap();
        Records::store(&path, record("A100", "a=2", 11)).unwrap();
        // Replaces the first.
        let stored = Records::store(&path, record("H100", "a=3", 12)).unwrap();
        assert_eq!(
            stored,
            Stored {
                count: 2,
                set_aside: None
            }
        );
        let back = Records::load(&path).unwrap();
        assert_eq!(back.all().len(), 2);
        assert_eq!(back.find(&key("H100", "0.1.0")).unwrap().config, "a=3");
        assert_eq!(back.find(&key("A100", "0.1.0")).unwrap().config, "a=2");
        assert!(back.find(&key("L4", "0.1.0")).is_none());
        assert!(back.find(&key("H100", "0.2.0")).is_none());
        // The lock file stays beside the records; no temporary file does.
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["r.json", "r.json.lock"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_file_is_ignored_for_reading_and_set_aside_before_a_store() {
        let dir = scratch("torn");
        let path = dir.join("r.json");
        Records::store(&path, record("H100", "a=1", 10)).unwrap();
        Records::store(&path, record("A100", "a=2", 11)).unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        let torn = &whole[..whole.len() / 2];
        std::fs::write(&path, torn).unwrap();
        assert!(matches!(
            Records::load(&path),
            Err(RecordError::Format { .. })
        ));
        let (records, problem) = Records::load_or_empty(&path);
        assert!(records.all().is_empty());
        let problem = problem.expect("the torn file is reported").to_string();
        assert!(
            problem.contains("r.json") && problem.contains("EOF while parsing"),
            "{problem}"
        );
        // Reading changed nothing.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), torn);

        let stored = Records::store(&path, record("L4", "a=3", 12)).unwrap();
        assert_eq!(stored.count, 1);
        let (aside, why) = stored.set_aside.expect("the torn file was set aside");
        assert!(why.contains("EOF while parsing"), "{why}");
        let name = aside.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("r.json.corrupt-"), "{name}");
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), torn);
        let fresh = Records::load(&path).unwrap();
        assert_eq!(fresh.all().len(), 1);
        assert_eq!(fresh.all()[0].device, "L4");
        // An empty file (emptied by a killed writer before writes were whole) is no
        // records, not an error.
        std::fs::write(&path, "\n").unwrap();
        assert!(Records::load(&path).unwrap().all().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unwritable_places_are_found_before_tuning() {
        let dir = scratch("unwritable");
        let path = dir.join("new/folder/r.json");
        Records::check_writable(&path).unwrap();
        assert!(path.parent().unwrap().is_dir(), "the folder is created");
        assert!(!path.exists(), "no records are written");
        let folder = dir.join("folder");
        std::fs::create_dir_all(&folder).unwrap();
        let e = Records::check_writable(&folder).unwrap_err().to_string();
        assert!(
            e.contains(&format!("`{}`", folder.display())) && e.contains("is a directory"),
            "{e}"
        );
        // A folder under a file cannot be created.
        let file = dir.join("plain");
        std::fs::write(&file, "x").unwrap();
        let e = Records::check_writable(&file.join("r.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot create the folder"), "{e}");
        assert!(Records::store(&folder, record("H100", "a=1", 1)).is_err());
        assert!(folder.is_dir(), "a folder is never replaced");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(1_795_305_600), "2026-11-22");
    }
}
