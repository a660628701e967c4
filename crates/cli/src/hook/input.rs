//! What a hook reads, bounded in bytes and in time: an agent waits on its hooks, so a hook
//! must finish whatever it is handed — stdin that never ends, a transcript path naming
//! `/dev/zero`, a FIFO no one writes to, a line with no end.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

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
pub fn stdin(max: u64, wait: Duration) -> Result<String, String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut bytes = Vec::new();
            let read = std::io::stdin().lock().take(max).read_to_end(&mut bytes).map(|_| bytes);
            let _ = sender.send(read);
        })
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    match receiver.recv_timeout(wait) {
        Ok(Ok(bytes)) => String::from_utf8(bytes).map_err(|_| "stdin is not UTF-8 text".to_string()),
        Ok(Err(e)) => Err(format!("cannot read stdin: {e}")),
        Err(_) => Err(format!("stdin did not end within {} s", wait.as_secs())),
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
) -> Result<(), String> {
    let shown = path.display();
    let not_regular = || format!("the transcript {shown} is not a regular file");
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read the transcript {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let mut file = File::options()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| format!("cannot read the transcript {shown}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read the transcript {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let start = meta.len().saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start)).map_err(|e| format!("cannot read the transcript {shown}: {e}"))?;
    let mut reader = BufReader::new(file.take(max_bytes));
    let mut skip_first = start > 0;
    let mut current = Vec::new();
    let mut overlong = false;
    loop {
        let chunk = reader.fill_buf().map_err(|e| format!("cannot read the transcript {shown}: {e}"))?;
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

    fn lines_of(path: &Path, max_bytes: u64, max_line: usize) -> Result<Vec<String>, String> {
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
            assert!(e.contains("not a regular file"), "{e}");
        }
        let link = dir.path().join("zero.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(lines_of(&link, 1 << 20, 1 << 20).unwrap_err().contains("not a regular file"));
    }
}
