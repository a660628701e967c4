//! `cortex-bench bench --ingest REPO`: `cortex ingest --git REPO --max-commits N` run by the
//! `cortex` binary as a user runs it, on a fresh SQLite file, for each N of `--sizes`: wall
//! time, CPU time (user + system, from `/proc`), peak resident memory (VmHWM) and commits per
//! second; then the same command again, which finds every commit stored and writes nothing.
//! Lexical only unless `--semantic` (then the installed model embeds each change).

use super::cortex::exe;
use super::cpu::process_cpu;
use super::peak_rss_kib;
use crate::output;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of `cortex ingest --git`.
struct Run {
    wall: Duration,
    cpu: Duration,
    peak_rss_kib: u64,
    inserted: u64,
    unchanged: u64,
}

pub fn run(repo: &Path, sizes: &[usize], dir: &Path, semantic: bool) -> Result<(), String> {
    let exe = exe()?;
    output::line(
        "| commits | first run: wall / CPU | commits/s (wall) | CPU µs per commit | peak RSS | again: wall / CPU | again: peak RSS |",
    );
    output::line("|---:|---:|---:|---:|---:|---:|---:|");
    for &size in sizes {
        let db = dir.join(format!("bench-ingest-{size}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
        let _ = std::fs::remove_dir_all(format!("{}.lexical", db.display()));
        tracing::info!(size, "ingest benchmark: first run");
        let first = ingest(&exe, &db, repo, size, semantic)?;
        tracing::info!(size, "ingest benchmark: again");
        let again = ingest(&exe, &db, repo, size, semantic)?;
        if again.inserted != 0 || again.unchanged != first.inserted {
            return Err(format!(
                "the second run wrote {} and found {} of the {} stored: not a re-run",
                again.inserted, again.unchanged, first.inserted
            ));
        }
        output::line(&format!(
            "| {} ({} stored) | {:.1} s / {:.1} s | {:.0} | {:.0} | {:.1} MiB | {:.1} s / {:.1} s | {:.1} MiB |",
            size,
            first.inserted,
            first.wall.as_secs_f64(),
            first.cpu.as_secs_f64(),
            size as f64 / first.wall.as_secs_f64(),
            first.cpu.as_secs_f64() * 1e6 / size.max(1) as f64,
            first.peak_rss_kib as f64 / 1024.0,
            again.wall.as_secs_f64(),
            again.cpu.as_secs_f64(),
            again.peak_rss_kib as f64 / 1024.0,
        ));
    }
    Ok(())
}

/// Runs the command, sampling the process's memory and CPU until it ends (the last sample,
/// at most 20 ms before its end, is what is reported: both only grow).
fn ingest(exe: &Path, db: &Path, repo: &Path, commits: usize, semantic: bool) -> Result<Run, String> {
    let mut command = Command::new(exe);
    command
        .args(["--db", &db.display().to_string(), "ingest", "--git"])
        .arg(repo)
        .args(["--max-commits", &commits.to_string(), "--json"])
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if !semantic {
        command.env("CORTEX_EMBEDDER", "none");
    }
    let start = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let pid = child.id();
    let (mut rss, mut cpu) = (0, Duration::ZERO);
    let status = loop {
        rss = rss.max(peak_rss_kib(pid));
        if let Some((user, system)) = process_cpu(pid) {
            cpu = cpu.max(user + system);
        }
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().ok_or("no output")?, &mut stdout)
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("cortex ingest --git failed ({status}): {stdout}"));
    }
    let report: Value = serde_json::from_str(&stdout).map_err(|e| format!("not a report: {e}: {stdout}"))?;
    let change = &report["git"]["kinds"]["change"];
    Ok(Run {
        wall,
        cpu,
        peak_rss_kib: rss,
        inserted: change["inserted"].as_u64().unwrap_or(0),
        unchanged: change["unchanged"].as_u64().unwrap_or(0),
    })
}
