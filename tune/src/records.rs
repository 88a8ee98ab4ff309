//! Tuning records: what `weft tune` found, kept in a JSON file.
//!
//! The file is a JSON array of [`Record`]s. Its default place is `$WEFT_RECORDS` when
//! set, else `$XDG_CACHE_HOME/weft/tuning-records.json`, else
//! `$HOME/.cache/weft/tuning-records.json`; `--records FILE` names another. A record
//! applies to one op, schedule, shape, dtype, target, device and weft version: a record
//! for another device or version is never used.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

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

    /// Reads `path`; a file that does not exist holds no records.
    pub fn load(path: &Path) -> Result<Records, RecordError> {
        let records = match std::fs::read_to_string(path) {
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

    /// Adds `record`, replacing any record for the same key.
    pub fn add(&mut self, record: Record) {
        let key = record.key();
        self.records.retain(|r| r.key() != key);
        self.records.push(record);
    }

    /// Writes the file (its folder is created if missing).
    pub fn save(&self) -> Result<(), RecordError> {
        let io = |source| RecordError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text =
            serde_json::to_string_pretty(&self.records).map_err(|source| RecordError::Format {
                path: self.path.clone(),
                source,
            })?;
        std::fs::write(&self.path, text + "\n").map_err(io)
    }
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

    #[test]
    fn records_round_trip_and_match_only_their_device_and_version() {
        let dir = std::env::temp_dir().join(format!("weft-records-{}", std::process::id()));
        let path = dir.join("r.json");
        let mut r = Records::load(&path).unwrap();
        assert!(r.all().is_empty());
        r.add(record("H100", "a=1", 10));
        r.add(record("A100", "a=2", 11));
        r.add(record("H100", "a=3", 12)); // replaces the first
        r.save().unwrap();
        let back = Records::load(&path).unwrap();
        assert_eq!(back.all().len(), 2);
        assert_eq!(back.find(&key("H100", "0.1.0")).unwrap().config, "a=3");
        assert_eq!(back.find(&key("A100", "0.1.0")).unwrap().config, "a=2");
        assert!(back.find(&key("L4", "0.1.0")).is_none());
        assert!(back.find(&key("H100", "0.2.0")).is_none());
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(
            Records::load(&path),
            Err(RecordError::Format { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(1_795_305_600), "2026-11-22");
    }
}
