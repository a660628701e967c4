//! What a hook reads, bounded in bytes and in time: an agent waits on its hooks, so a hook
//! must finish whatever it is handed — stdin that never ends, a transcript path naming
//! `/dev/zero`, a FIFO no one writes to, a line with no end.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Why stdin or a transcript was not read; the message names which and why.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read stdin: {0}")]
    Stdin(std::io::Error),
    #[error("stdin is not UTF-8 text")]
    NotUtf8,
    /// Stdin was still open after the wait: not an agent's input.
    #[error("stdin did not end within {} s", .0.as_secs())]
    StdinOpen(Duration),
    #[error("the transcript {} is not a regular file", .0.display())]
    NotRegular(PathBuf),
    #[error("cannot read the transcript {}: {source}", path.display())]
    Transcript { path: PathBuf, source: std::io::Error },
}

/// How long a hook waits for its stdin to end: an agent writes the input and closes it at
/// once, so a stdin still open after this is not an agent's.
pub const STDIN_WAIT: Duration = Duration::from_secs(5);
/// The transcript's last this many bytes are read (its start, past this, is not): the
/// reminder it looks for and the session's latest work are at its end.
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 << 20;
/// A transcript line longer than this (a huge tool result) is passed over, not kept.
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// At most `max` bytes of stdin, read until it ends or for at most `wait`. The read runs on a
/// thread of its own: one blocked on a stdin that never ends is left behind when the hook
/// exits.
pub fn stdin(max: u64, wait: Duration) -> Result<String, ReadError> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut bytes = Vec::new();
            let read = std::io::stdin().lock().take(max).read_to_end(&mut bytes).map(|_| bytes);
            let _ = sender.send(read);
        })
        .map_err(ReadError::Stdin)?;
    match receiver.recv_timeout(wait) {
        Ok(Ok(bytes)) => String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8),
        Ok(Err(e)) => Err(ReadError::Stdin(e)),
        Err(_) => Err(ReadError::StdinOpen(wait)),
    }
}

/// The lines of the regular file at `path`, at most its last `max_bytes` (the first line cut
/// there is skipped), each passed to `line` unless longer than `max_line`. Anything but a
/// regular file (a FIFO, a device, a folder) is refused without being opened for reading
/// through: the type is checked first, the open does not wait (`O_NONBLOCK`), and the
/// descriptor's own type is checked again.
pub fn file_lines(
    path: &Path,
    max_bytes: u64,
    max_line: usize,
    mut line: impl FnMut(&[u8]),
) -> Result<(), ReadError> {
    let not_regular = || ReadError::NotRegular(path.to_path_buf());
    let unreadable = |source| ReadError::Transcript { path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let mut file = File::options()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let start = meta.len().saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start)).map_err(unreadable)?;
    let mut reader = BufReader::new(file.take(max_bytes));
    let mut skip_first = start > 0;
    let mut current = Vec::new();
    let mut overlong = false;
    loop {
        let chunk = reader.fill_buf().map_err(unreadable)?;
        if chunk.is_empty() {
            break;
        }
        let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (&chunk[..at], Some(at + 1)),
            None => (chunk, None),
        };
        if !overlong && !skip_first {
            if current.len() + part.len() > max_line {
                overlong = true;
                current = Vec::new();
            } else {
                current.extend_from_slice(part);
            }
        }
        let used = ends.unwrap_or(chunk.len());
        reader.consume(used);
        if ends.is_some() {
            if !overlong && !skip_first {
                line(&current);
            }
            current.clear();
            overlong = false;
            skip_first = false;
        }
    }
    if !overlong && !skip_first && !current.is_empty() {
        line(&current);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(path: &Path, max_bytes: u64, max_line: usize) -> Result<Vec<String>, ReadError> {
        let mut out = Vec::new();
        file_lines(path, max_bytes, max_line, |l| out.push(String::from_utf8_lossy(l).into_owned()))?;
        Ok(out)
    }

    #[test]
    fn lines_are_read_from_the_tail_and_long_ones_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, format!("first\n{}\nthird\nlast", "x".repeat(100))).unwrap();
        assert_eq!(lines_of(&path, 1 << 20, 1 << 20).unwrap(), ["first", &"x".repeat(100), "third", "last"]);
        assert_eq!(lines_of(&path, 1 << 20, 50).unwrap(), ["first", "third", "last"]);
        // The tail cuts the long line: what is left of it is skipped, not read as a line.
        assert_eq!(lines_of(&path, 15, 1 << 20).unwrap(), ["third", "last"]);
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        for path in [Path::new("/dev/zero"), fifo.as_path(), dir.path()] {
            let e = lines_of(path, 1 << 20, 1 << 20).unwrap_err();
            assert!(matches!(&e, ReadError::NotRegular(p) if p == path), "{e}");
            assert_eq!(e.to_string(), format!("the transcript {} is not a regular file", path.display()));
        }
        let link = dir.path().join("zero.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(lines_of(&link, 1 << 20, 1 << 20), Err(ReadError::NotRegular(_))));
    }
}
