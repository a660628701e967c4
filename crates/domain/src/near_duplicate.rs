//! Near-duplicates: a new item whose meaning is already stored.
//!
//! An item is a near-duplicate of a live item of the same kind and the same full scope, updated
//! within the window, when the cosine of their embeddings is at least the threshold. Exact
//! duplicates (same normalized text) are caught before this, by hash.
//!
//! Defaults: threshold 0.85 — for all-MiniLM-L6-v2, rewordings of one fact score about 0.85–0.95
//! while different facts about the same component score 0.5–0.8. Window 30 days — an agent
//! re-storing what a recent session stored is the case to catch; a similar item months later is
//! more often a new event (a recurring incident, a revisited decision) that deserves its own
//! record.
//!
//! Entities, relations and observations are never checked: their identity is structural (a
//! name, two ends, an entity and a text), kept by natural keys, and two relations of one type
//! between different items read almost the same to an embedding model.

use crate::kind::Kind;
use crate::time::MILLIS_PER_DAY;

/// Whether items of `kind` are checked for near-duplicates at all.
pub fn applies_to(kind: Kind) -> bool {
    !matches!(kind, Kind::Entity | Kind::Relation | Kind::Observation)
}

/// The default threshold: rewordings of one fact score above it for all-MiniLM-L6-v2,
/// different facts about the same component below it (see the module doc).
pub const DEFAULT_THRESHOLD: f64 = 0.85;
/// The default window, in days (see the module doc).
pub const DEFAULT_WINDOW_DAYS: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearDuplicatePolicy {
    pub threshold: f64,
    pub window_days: i64,
}

impl Default for NearDuplicatePolicy {
    fn default() -> Self {
        NearDuplicatePolicy { threshold: DEFAULT_THRESHOLD, window_days: DEFAULT_WINDOW_DAYS }
    }
}

impl NearDuplicatePolicy {
    /// The oldest update time still inside the window, for an item stored at `now`.
    pub fn window_start(&self, now: i64) -> i64 {
        now - self.window_days * MILLIS_PER_DAY
    }

    pub fn is_near_duplicate(&self, cosine: f64) -> bool {
        cosine >= self.threshold
    }
}
