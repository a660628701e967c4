//! The recall hook's small files outside the database (a session's ledger, a project's counts):
//! JSON read, changed and written again under an exclusive lock on a `.lock` file beside it, so
//! hooks of concurrent sessions (and parallel hooks of one) each see the others' changes, and
//! written to a new file renamed into place, so a reader never sees half of one. The database
//! is not written per prompt.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fs::OpenOptions;
use std::io::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// `path`'s value, changed by `change`; a missing or unreadable file counts as `T::default()`
/// (what it holds is derived: a count or a seen id lost costs little, a hook failing costs the
/// prompt its recall).
pub(crate) fn update<T, R>(path: &Path, change: impl FnOnce(&mut T, bool) -> R) -> Result<R>
where
    T: Default + Serialize + DeserializeOwned,
{
    let dir = path.parent().ok_or_else(|| Error::new(ErrorKind::InvalidInput, "a file has a folder"))?;
    std::fs::create_dir_all(dir)?;
    let lock_path = with_suffix(path, ".lock");
    refuse_link(&lock_path)?;
    let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
    fs4::fs_std::FileExt::lock_exclusive(&lock)?;
    let existed = path.exists();
    let mut value: T = read(path);
    let result = change(&mut value, existed);
    let temp = with_suffix(path, &format!(".tmp-{}", std::process::id()));
    let bytes = serde_json::to_vec(&value).map_err(|e| Error::new(ErrorKind::InvalidData, e))?;
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path)?;
    // The lock goes with the file handle.
    Ok(result)
}

/// `path`'s value, or `T::default()` when it is missing, a link, or not a `T`.
pub(crate) fn read<T: Default + DeserializeOwned>(path: &Path) -> T {
    if refuse_link(path).is_err() {
        return T::default();
    }
    std::fs::read(path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

/// Files of `dir` (and their locks) not changed for `older_than`: a session ended long ago.
pub(crate) fn prune(dir: &Path, older_than: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        if old.is_some_and(|age| age > older_than) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A file name for `text` (a hook's session id, a project's name): its SHA-256, so no text a
/// hook is given becomes a path.
pub(crate) fn name_for(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A link where the hook keeps a file is not followed: it would write wherever it points.
fn refuse_link(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(Error::new(ErrorKind::InvalidInput, format!("{} is a link: not followed", path.display())))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_updates_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.json");
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..25 {
                        update(&path, |n: &mut u64, _| *n += 1).unwrap();
                    }
                });
            }
        });
        assert_eq!(read::<u64>(&path), 200);
    }

    #[test]
    fn an_unreadable_file_counts_as_empty_and_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, "not json").unwrap();
        assert!(
            update(&path, |n: &mut u64, existed| {
                *n += 1;
                existed
            })
            .unwrap()
        );
        assert_eq!(read::<u64>(&path), 1);
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "7").unwrap();
        let link = dir.path().join("linked.json");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert_eq!(read::<u64>(&link), 0, "a link reads as nothing");
        let lock_link = dir.path().join("other.json.lock");
        std::os::unix::fs::symlink(&elsewhere, &lock_link).unwrap();
        assert!(update(&dir.path().join("other.json"), |n: &mut u64, _| *n += 1).is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "7", "nothing written through a link");
        assert_eq!(name_for("../../etc/passwd").len(), 32);
        assert!(name_for("a").chars().all(|c| c.is_ascii_hexdigit()));
    }
}
