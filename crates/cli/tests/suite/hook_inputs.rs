//! Every hook (`cortex hook stop`, `hook pre-compact`, `recall`, `context`) handed what no
//! agent sends: `/dev/zero` and a FIFO as stdin and as the transcript, a transcript of
//! gigabytes on one line. Each must exit 0, having read a bounded number of bytes, while what
//! it was handed is still open and endless.

use crate::common::cortex;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Far longer than a hook may take: a hook still running then has hung.
const HUNG: Duration = Duration::from_secs(60);

/// The hook commands, as `cortex install` writes them.
const HOOKS: [&[&str]; 4] = [&["hook", "stop"], &["hook", "pre-compact"], &["recall"], &["context"]];

fn spawn(dir: &Path, args: &[&str], stdin: Stdio) -> Child {
    cortex(dir, &dir.join("memory.db"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child`; a child still running after [`HUNG`] is killed and the test fails.
fn finished(mut child: Child, what: &str) -> (ExitStatus, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (status, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if start.elapsed() > HUNG {
            let _ = child.kill();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// A FIFO opened for reading and writing: the hook reading it never sees its end, and opening
/// it does not wait for a writer.
fn endless_fifo(path: &Path) -> File {
    mkfifo(path);
    File::options().read(true).write(true).open(path).unwrap()
}

#[test]
fn dev_zero_and_a_silent_fifo_on_stdin_end_every_hook_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = endless_fifo(&dir.path().join("stdin"));
    let mut running = Vec::new();
    for args in HOOKS {
        let zero = Stdio::from(File::open("/dev/zero").unwrap());
        running.push((format!("{args:?} < /dev/zero"), spawn(dir.path(), args, zero)));
        let silent = Stdio::from(fifo.try_clone().unwrap());
        running.push((format!("{args:?} < fifo"), spawn(dir.path(), args, silent)));
    }
    for (what, child) in running {
        let (status, stderr) = finished(child, &what);
        assert!(status.success(), "{what}: {status:?} {stderr}");
        assert!(stderr.lines().count() <= 1, "{what}: at most one line: {stderr}");
    }
    // The FIFO's writer is still open: the hooks ended without its end.
    drop(fifo);
}

#[test]
fn a_transcript_that_is_a_device_a_fifo_or_one_endless_line_is_refused_or_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("transcript.fifo");
    let _writer = endless_fifo(&fifo);
    let linked = dir.path().join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &linked).unwrap();
    // Four gigabytes of one line (sparse: no disk used), then an edit.
    let huge = dir.path().join("huge.jsonl");
    let file = File::create(&huge).unwrap();
    file.set_len(4 << 30).unwrap();
    drop(file);
    for (transcript, says) in [
        (Path::new("/dev/zero"), Some("not a regular file")),
        (fifo.as_path(), Some("not a regular file")),
        (linked.as_path(), Some("not a regular file")),
        (huge.as_path(), None),
    ] {
        for event in ["stop", "pre-compact"] {
            let input = serde_json::json!({"session_id": "s", "transcript_path": transcript, "stop_hook_active": false});
            let input_file = dir.path().join("input.json");
            std::fs::write(&input_file, input.to_string()).unwrap();
            // Under a data limit far below what reading the whole transcript would take.
            let child = Command::new("prlimit")
                .arg(format!("--data={}", 512u64 << 20))
                .arg(env!("CARGO_BIN_EXE_cortex"))
                .args(["hook", event])
                .stdin(File::open(&input_file).unwrap())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let what = format!("hook {event} with {}", transcript.display());
            let (status, stderr) = finished(child, &what);
            assert!(status.success(), "{what}: {status:?} {stderr}");
            match says {
                Some(text) => assert!(stderr.contains(text), "{what}: {stderr}"),
                None => assert!(stderr.is_empty(), "{what}: {stderr}"),
            }
        }
    }
}
