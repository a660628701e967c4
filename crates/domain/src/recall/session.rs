//! What one agent session was shown already and what recall has spent in it: a memory in the
//! session's context (injected by recall, listed by the session-start briefing, returned by a
//! `memory_find`) is not injected again, and the session's injections stop at a ceiling of
//! tokens. A compaction empties the context, so after one both start afresh. Kept small: the
//! newest [`MAX_SEEN`] ids.

use serde::{Deserialize, Serialize};

/// Ids remembered per session; the oldest go first. A session that has seen more has long
/// since compacted what it saw first.
pub const MAX_SEEN: usize = 1_000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionState {
    /// Memories in the session's context, oldest first.
    pub seen: Vec<String>,
    /// Tokens injected since the session started or was last compacted.
    pub tokens: usize,
    /// Whether the session reached its ceiling (counted once per session).
    pub capped: bool,
    /// Whether the session was told its recall is lexical only (it is told once).
    pub told_lexical_only: bool,
}

/// What an injection did to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    /// This injection brought the session to its ceiling for the first time.
    pub reached_ceiling: bool,
}

impl SessionState {
    pub fn has_seen(&self, id: &str) -> bool {
        self.seen.iter().any(|s| s == id)
    }

    /// Notes `ids` as in the session's context.
    pub fn note(&mut self, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            if !self.has_seen(&id) {
                self.seen.push(id);
            }
        }
        if self.seen.len() > MAX_SEEN {
            let extra = self.seen.len() - MAX_SEEN;
            self.seen.drain(..extra);
        }
    }

    /// The context was compacted (or cleared): only `listed` (what the new briefing shows) is
    /// in it, and the ceiling counts from zero.
    pub fn compacted(&mut self, listed: impl IntoIterator<Item = String>) {
        self.seen.clear();
        self.tokens = 0;
        self.note(listed);
    }

    /// Tokens the session may still be given under `ceiling`.
    pub fn room(&self, ceiling: usize) -> usize {
        ceiling.saturating_sub(self.tokens)
    }

    /// Records an injection of `ids` costing `tokens`.
    pub fn injected(&mut self, ids: &[String], tokens: usize, ceiling: usize) -> Spent {
        self.note(ids.iter().cloned());
        self.tokens += tokens;
        let reached = !self.capped && self.room(ceiling) < MIN_USEFUL_TOKENS;
        self.capped |= reached;
        Spent { reached_ceiling: reached }
    }

    /// Whether a prompt found something to inject that the ceiling kept out.
    pub fn refused(&mut self) -> Spent {
        let reached = !self.capped;
        self.capped = true;
        Spent { reached_ceiling: reached }
    }
}

/// Less room than this holds no memory worth showing (the header and one short line): the
/// session has reached its ceiling.
pub const MIN_USEFUL_TOKENS: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: std::ops::Range<usize>) -> Vec<String> {
        n.map(|i| format!("m{i}")).collect()
    }

    #[test]
    fn seen_memories_are_remembered_once_and_the_oldest_go_first() {
        let mut s = SessionState::default();
        s.note(ids(0..3));
        s.note(ids(2..4));
        assert_eq!(s.seen, ids(0..4));
        s.note(ids(4..MAX_SEEN + 10));
        assert_eq!(s.seen.len(), MAX_SEEN);
        assert!(!s.has_seen("m0") && s.has_seen("m10") && s.has_seen(&format!("m{}", MAX_SEEN + 9)));
    }

    #[test]
    fn the_ceiling_is_reached_once_and_a_compaction_starts_afresh() {
        let mut s = SessionState::default();
        assert_eq!(s.room(500), 500);
        assert!(!s.injected(&ids(0..1), 300, 500).reached_ceiling);
        assert!(s.injected(&ids(1..2), 150, 500).reached_ceiling, "50 tokens left hold nothing");
        assert!(!s.refused().reached_ceiling, "counted once");
        s.compacted(ids(7..8));
        assert_eq!((s.seen.clone(), s.tokens, s.room(500)), (ids(7..8), 0, 500));
        assert!(s.capped, "the session did reach it once");
        let mut fresh = SessionState::default();
        assert!(fresh.refused().reached_ceiling);
    }
}
