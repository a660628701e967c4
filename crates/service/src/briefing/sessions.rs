//! The agent sessions' ledgers (`cortex_domain::recall::session`): one small file per session,
//! `<recall state>/sessions/<SHA-256 of the hook's session_id>.json`, written by the hooks —
//! the prompt's recall, the session-start briefing, and the tool hook that sees a
//! `memory_find`'s result — never by the database. A session's file not touched for a week
//! is removed when a new session starts.

use super::state_file;
use cortex_domain::recall::session::SessionState;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A session file unchanged this long belongs to a session long over.
const KEPT_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// The ledgers under one recall state folder.
pub struct Sessions {
    dir: PathBuf,
}

impl Sessions {
    /// The ledgers kept under `state` (`Config::recall`'s folder).
    pub fn at(state: &Path) -> Sessions {
        Sessions { dir: state.join("sessions") }
    }

    /// `change` applied to `session`'s ledger, under its lock.
    pub fn update<R>(
        &self,
        session: &str,
        change: impl FnOnce(&mut SessionState) -> R,
    ) -> std::io::Result<R> {
        let path = self.dir.join(format!("{}.json", state_file::name_for(session)));
        let (result, new) =
            state_file::update(&path, |state: &mut SessionState, existed| (change(state), !existed))?;
        if new {
            state_file::prune(&self.dir, KEPT_FOR);
        }
        Ok(result)
    }

    /// `session`'s ledger as it stands.
    pub fn read(&self, session: &str) -> SessionState {
        state_file::read(&self.dir.join(format!("{}.json", state_file::name_for(session))))
    }

    /// Notes `ids` as in `session`'s context (a briefing listed them, a find returned them).
    pub fn seen(&self, session: &str, ids: Vec<String>) -> std::io::Result<()> {
        self.update(session, |state| state.note(ids))
    }

    /// `session` was compacted or cleared: only `listed` is in its context now.
    pub fn compacted(&self, session: &str, listed: Vec<String>) -> std::io::Result<()> {
        self.update(session, |state| state.compacted(listed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_session_has_its_own_ledger() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = Sessions::at(dir.path());
        sessions.seen("s-1", vec!["a".into(), "b".into()]).unwrap();
        sessions.seen("s-2", vec!["c".into()]).unwrap();
        assert!(sessions.read("s-1").has_seen("a") && !sessions.read("s-1").has_seen("c"));
        sessions.compacted("s-1", vec!["b".into()]).unwrap();
        assert_eq!(sessions.read("s-1").seen, ["b"]);
        assert_eq!(sessions.read("s-2").seen, ["c"]);
        assert_eq!(sessions.read("never").seen, Vec::<String>::new());
        let files: Vec<String> = std::fs::read_dir(dir.path().join("sessions"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(files.iter().all(|f| !f.contains("s-1")), "names are hashes: {files:?}");
    }
}
