//! A folder the CLI writes inside without ever following a symbolic link: every name is
//! opened relative to the folder's open descriptor with `O_NOFOLLOW`, files are replaced
//! through a temporary file and a rename inside the folder, and only regular files are read
//! or removed. A link planted in the folder (or a folder swapped for one meanwhile) is
//! refused by the system call itself, so no check can be raced into writing elsewhere.

use crate::error::CliError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// What a name inside a folder is, the name itself (a link is a link, whatever it points at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File,
    Folder,
    Link,
    /// A FIFO, a socket, a device: never read nor written.
    Other,
}

/// An open folder; names inside it are reached from its descriptor, never by path.
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

impl Folder {
    /// The folder `path` names, made when missing. `path` itself, and each folder of a
    /// relative `path`, must not be a link (a link planted in a repository must not send a
    /// write elsewhere); the folders above an absolute path are the user's to choose.
    pub fn open_root(path: &Path) -> Result<Folder, CliError> {
        if let Some(link) = link_in(path) {
            return Err(link_refused(&link));
        }
        std::fs::create_dir_all(path).map_err(|e| CliError::io("create", path, e))?;
        let fd = rustix::fs::open(path, dir_flags(), Mode::empty())
            .map_err(|e| opened(path, e, std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink())))?;
        Ok(Folder { fd, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `name` is, without following it.
    pub fn entry(&self, name: &str) -> Result<Entry, CliError> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => Entry::File,
                FileType::Directory => Entry::Folder,
                FileType::Symlink => Entry::Link,
                _ => Entry::Other,
            }),
            Err(rustix::io::Errno::NOENT) => Ok(Entry::Missing),
            Err(e) => Err(CliError::io("read", &self.path.join(name), e.into())),
        }
    }

    /// The folder `name` inside this one, made when missing and `create`; `None` when missing
    /// and not `create`. A link or anything but a folder there is refused.
    pub fn child(&self, name: &str, create: bool) -> Result<Option<Folder>, CliError> {
        let path = self.path.join(name);
        match self.entry(name)? {
            Entry::Missing if !create => return Ok(None),
            Entry::Missing => match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(CliError::io("create", &path, e.into())),
            },
            Entry::Folder => {}
            Entry::Link => return Err(link_refused(&path)),
            Entry::File | Entry::Other => {
                return Err(CliError::content(&path, "is in the way of a folder; move it elsewhere"));
            }
        }
        let fd = rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty())
            .map_err(|e| opened(&path, e, self.entry(name).is_ok_and(|k| k == Entry::Link)))?;
        Ok(Some(Folder { fd, path }))
    }

    /// The bytes of the regular file `name`, or `None` when there is none. A link or a FIFO
    /// there is refused (never opened through, never waited on).
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>, CliError> {
        let path = self.path.join(name);
        match self.entry(name)? {
            Entry::Missing => return Ok(None),
            Entry::File => {}
            Entry::Link => return Err(link_refused(&path)),
            Entry::Folder | Entry::Other => {
                return Err(CliError::content(&path, "is not a regular file; move it elsewhere"));
            }
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| opened(&path, e, self.entry(name).is_ok_and(|k| k == Entry::Link)))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| CliError::io("read", &path, e.into()))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(CliError::content(&path, "is not a regular file; move it elsewhere"));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd).read_to_end(&mut bytes).map_err(|e| CliError::io("read", &path, e))?;
        Ok(Some(bytes))
    }

    /// Writes `bytes` as the file `name`: into a new temporary file in this folder, then
    /// renamed over `name`, so a reader sees the old file or the new one, and what stood at
    /// `name` is replaced itself, never written through. A link at `name` is refused.
    pub fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), CliError> {
        let path = self.path.join(name);
        match self.entry(name)? {
            Entry::Missing | Entry::File => {}
            Entry::Link => return Err(link_refused(&path)),
            Entry::Folder | Entry::Other => {
                return Err(CliError::content(&path, "is not a regular file; move it elsewhere"));
            }
        }
        let temporary = format!(".{name}.cortex-{}-{}", std::process::id(), unique());
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, temporary.as_str(), flags, Mode::from_raw_mode(0o666))
            .map_err(|e| CliError::io("write", &self.path.join(&temporary), e.into()))?;
        let written = std::fs::File::from(fd).write_all(bytes);
        let renamed = written.map_err(|e| CliError::io("write", &path, e)).and_then(|()| {
            rustix::fs::renameat(&self.fd, temporary.as_str(), &self.fd, name)
                .map_err(|e| CliError::io("write", &path, e.into()))
        });
        if renamed.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, temporary.as_str(), AtFlags::empty());
        }
        renamed
    }

    /// Removes the regular file `name` (a link there is left alone and refused).
    pub fn remove(&self, name: &str) -> Result<(), CliError> {
        let path = self.path.join(name);
        match self.entry(name)? {
            Entry::File => rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
                .map_err(|e| CliError::io("remove", &path, e.into())),
            Entry::Missing => Ok(()),
            Entry::Link => Err(link_refused(&path)),
            Entry::Folder | Entry::Other => Err(CliError::content(&path, "is not a regular file")),
        }
    }

    /// The names in this folder with what each is, sorted; hidden ones left out.
    pub fn entries(&self) -> Result<Vec<(String, Entry)>, CliError> {
        let read = |e: rustix::io::Errno| CliError::io("read", &self.path, e.into());
        let dir = rustix::fs::Dir::read_from(&self.fd).map_err(read)?;
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry.map_err(read)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            out.push((name.clone(), self.entry(&name)?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// The first link among the folders `path` names: `path` itself, and for a relative path
/// each of its components below the current folder.
pub fn link_in(path: &Path) -> Option<PathBuf> {
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink());
    if path.is_absolute() {
        return is_link(path).then(|| path.to_path_buf());
    }
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        if matches!(component, Component::Normal(_)) && is_link(&prefix) {
            return Some(prefix);
        }
    }
    None
}

/// The refusal of a link: exit 2, naming it.
pub fn link_refused(path: &Path) -> CliError {
    CliError::content(
        path,
        "is a symbolic link, and cortex never writes through one: remove the link, or give the folder's own path",
    )
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The error of an open refused by the system: a link shows as `ELOOP` (or `ENOTDIR` for a
/// folder's open), and is named as a link.
fn opened(path: &Path, e: rustix::io::Errno, is_link: bool) -> CliError {
    if is_link || e == rustix::io::Errno::LOOP {
        link_refused(path)
    } else {
        CliError::io("open", path, e.into())
    }
}

/// A number no other temporary file of this process has.
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_are_refused_and_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret.md"), "keep").unwrap();
        let root = Folder::open_root(&dir.path().join("out")).unwrap();
        symlink(outside.join("secret.md"), dir.path().join("out/file.md")).unwrap();
        symlink(&outside, dir.path().join("out/sub")).unwrap();

        assert_eq!(root.entry("file.md").unwrap(), Entry::Link);
        assert!(root.replace("file.md", b"x").unwrap_err().to_string().contains("symbolic link"));
        assert!(root.read("file.md").is_err() && root.remove("file.md").is_err());
        assert!(root.child("sub", true).is_err());
        assert_eq!(std::fs::read_to_string(outside.join("secret.md")).unwrap(), "keep");
        assert!(Folder::open_root(&dir.path().join("out/sub")).is_err(), "a link as the root itself");

        root.replace("new.md", b"one").unwrap();
        root.replace("new.md", b"two").unwrap();
        assert_eq!(root.read("new.md").unwrap().unwrap(), b"two");
        let names: Vec<String> = root.entries().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["file.md", "new.md", "sub"], "no temporary file is left");
        root.remove("new.md").unwrap();
        assert_eq!(root.read("new.md").unwrap(), None);
    }

    #[test]
    fn a_fifo_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = Folder::open_root(dir.path()).unwrap();
        let made = std::process::Command::new("mkfifo").arg(dir.path().join("pipe.md")).status().unwrap();
        assert!(made.success());
        assert_eq!(root.entry("pipe.md").unwrap(), Entry::Other);
        assert!(root.read("pipe.md").is_err() && root.replace("pipe.md", b"x").is_err());
    }

    #[test]
    fn a_link_among_the_folders_of_a_relative_path_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let absolute = dir.path().join("link/below");
        assert_eq!(link_in(&absolute), None, "above an absolute path: the user's choice");
        assert_eq!(link_in(&dir.path().join("link")), Some(dir.path().join("link")));
    }
}
