//! One real `cortex serve` session over stdio, as an agent's client holds it: requests are
//! written to its stdin, and a reader thread timestamps every answer as it arrives, so a
//! benchmark can time calls end to end (`adversarial.rs`, `prose.rs`).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the benchmark waits for any answer before it calls the session stalled.
const ANSWER_WAIT: Duration = Duration::from_secs(120);

/// One `cortex serve` session; a reader thread timestamps every answer as it arrives.
pub(super) struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: mpsc::Receiver<(Instant, Value)>,
    next_id: i64,
}

impl Session {
    /// Starts the server on `db` and initializes the session; without `semantic`, the server
    /// runs with no embedder (`CORTEX_EMBEDDER=none`), else with the one the environment names.
    pub(super) fn start(db: &str, semantic: bool) -> Result<Session, String> {
        let exe = super::cortex::exe()?;
        let mut command = super::serve_command(&exe, db);
        if !semantic {
            command.env("CORTEX_EMBEDDER", "none");
        }
        let mut child = command.spawn().map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Ok(value) = serde_json::from_str::<Value>(&line) else { continue };
                if tx.send((Instant::now(), value)).is_err() {
                    break;
                }
            }
        });
        let mut session = Session { child, stdin, answers, next_id: 1 };
        let init = session.send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        session.wait_for(&[init])?;
        writeln!(session.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .map_err(|e| e.to_string())?;
        Ok(session)
    }

    pub(super) fn send(&mut self, method: &str, params: Value) -> Result<i64, String> {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .map_err(|e| e.to_string())?;
        Ok(id)
    }

    pub(super) fn send_find(&mut self, arguments: &Value) -> Result<i64, String> {
        self.send("tools/call", json!({"name": "memory_find", "arguments": arguments}))
    }

    /// The answers to `ids`, in that order, each with the instant it arrived.
    pub(super) fn wait_for(&mut self, ids: &[i64]) -> Result<Vec<(Instant, Value)>, String> {
        let mut got: Vec<Option<(Instant, Value)>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let (at, value) = self
                .answers
                .recv_timeout(ANSWER_WAIT)
                .map_err(|_| format!("no answer to requests {ids:?} within {} s", ANSWER_WAIT.as_secs()))?;
            if let Some(i) = ids.iter().position(|id| value["id"] == json!(id)) {
                if value.get("error").is_some() {
                    return Err(format!("request {} failed: {}", ids[i], value["error"]));
                }
                got[i] = Some((at, value));
            }
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// One `memory_find` with these arguments, sent and waited for: its time and answer.
    pub(super) fn find(&mut self, arguments: &Value) -> Result<(Duration, Value), String> {
        let sent = Instant::now();
        let id = self.send_find(arguments)?;
        let (at, answer) = self.wait_for(&[id])?.pop().ok_or("no answer")?;
        if answer["result"]["isError"] == json!(true) {
            return Err(format!("memory_find {arguments} failed: {}", answer["result"]));
        }
        Ok((at.duration_since(sent), answer))
    }

    /// The server's process id (for its peak RSS).
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn close(mut self) -> Result<(), String> {
        drop(self.stdin);
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.success() { Ok(()) } else { Err(format!("cortex serve exited with {status}")) }
    }
}
