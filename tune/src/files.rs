//! Files written whole and the lock that serialises their writers.
//!
//! A file weft keeps (tuning records, a report's page and data) is never written in place:
//! [`write_whole`] writes a temporary file in the same folder, flushes it to disk and
//! renames it over the old one, so a reader sees the old file or the new one, never a
//! torn one, and a process killed mid-write leaves the old file as it was.
//! [`FileLock`] is an advisory lock on a `FILE.lock` beside a file, held by whoever
//! reads, changes and writes that file back, so that concurrent writers merge instead of
//! overwriting each other.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole: into a temporary file in the same folder, flushed,
/// then renamed over `path` (atomic on POSIX file systems). A symbolic link at `path` is
/// followed, so the file it points to is replaced and the link stays. An existing file's
/// permissions are kept; a new one gets the usual ones (`0o666` less the umask).
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = resolved(path);
    // A rename over a device node, a FIFO or a folder would replace it (as root, the
    // system's `/dev/null` itself): only a regular file or a new path is written.
    if let Some(kind) = not_regular(&path) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "it is {kind}, not a regular file: weft writes only over a regular file or a new path"
            ),
        ));
    }
    let dir = folder(&path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut builder = tempfile::Builder::new();
    // A dot file, so a directory listing mid-write does not show it as a result.
    let prefix = format!(".{name}.");
    builder.prefix(&prefix).suffix(".tmp");
    // tempfile's files are 0o600; a replaced file keeps its mode, a new one gets the
    // mode `fs::write` would give it.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let permissions = std::fs::metadata(&path)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o666));
        builder.permissions(permissions);
    }
    // Dropped on any error below: the temporary file is removed.
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // On disk before the rename, so a crash cannot leave the new name on empty data.
    tmp.as_file().sync_all()?;
    tmp.persist(&path).map_err(|e| e.error)?;
    // The rename itself reaches the disk with the folder's entry; best effort (not every
    // platform can open a folder for syncing).
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// What `path` is where it exists and is not a regular file (links followed): `a
/// character device`, `a FIFO`, ...; `None` for a regular file or nothing at all.
pub fn not_regular(path: &Path) -> Option<&'static str> {
    let kind = std::fs::metadata(path).ok()?.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The bytes of the regular file `path`, read no further than the length it had when
/// opened: a device (`/dev/zero`), a FIFO or a folder is refused, not read without end.
pub fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let kind = not_regular(path).unwrap_or("not a regular file");
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {kind}, not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(meta.len()).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `path`, or the file it links to: renaming over a symbolic link would replace the link.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// The folder `path` is in (`.` for a bare file name).
pub(crate) fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// An exclusive advisory lock on `FILE.lock`, released when dropped (or when the process
/// dies: the kernel drops it with the descriptor).
///
/// The lock is on a file of its own because [`write_whole`] replaces the data file: a lock
/// on the old file's inode would not stop a process that opened the new one. The lock file
/// is left in place; removing it would let two processes lock two different inodes.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

impl FileLock {
    /// Waits for and takes the lock beside `path` (`path` + `.lock`, created if missing).
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let lock_path = Self::path_for(path);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        file.lock()?;
        Ok(FileLock {
            _file: file,
            path: lock_path,
        })
    }

    /// The lock file of `path`: `path` with `.lock` appended.
    pub fn path_for(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".lock");
        PathBuf::from(p)
    }

    /// The lock file held.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weft-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_whole_keeps_mode_follows_links_and_leaves_no_temporaries() {
        let dir = scratch("whole");
        let path = dir.join("data.json");
        write_whole(&path, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_whole(&path, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two, longer");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            // Not tempfile's 0o600: a file others could read stays readable.
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_ne!(mode & 0o044, 0, "mode {mode:o}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            write_whole(&path, b"three").unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
            let link = dir.join("link.json");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            write_whole(&link, b"through the link").unwrap();
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(std::fs::read(&path).unwrap(), b"through the link");
        }
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        // A folder that does not exist is an error, not a panic, and nothing is written.
        assert!(write_whole(&dir.join("no/such/folder/x"), b"x").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lock_excludes_a_second_holder_until_dropped() {
        let dir = scratch("lock");
        let path = dir.join("data.json");
        let held = FileLock::acquire(&path).unwrap();
        assert_eq!(held.path(), dir.join("data.json.lock"));
        // Another open file description of the same lock file cannot take it.
        let other = std::fs::File::open(held.path()).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
