//! What the search indexes hold and whether they answer, for the admin page's status and
//! `cortex stats`: read cheaply, on every page load — no checksum check of the lexical index's
//! files and no catch-up with the store (`doctor` runs both).

use cortex_domain::text::byte_size;
use serde::Serialize;

/// What to do about items stored without vectors, as `doctor` and the status page say it.
pub const UNEMBEDDED_FIX: &str =
    "`cortex serve` embeds them in the background at start once the embedder works, or run `cortex reindex`";

/// Both search indexes of the whole store.
#[derive(Debug, Clone, Serialize)]
pub struct IndexSizes {
    pub lexical: LexicalSizes,
    pub vectors: VectorSizes,
}

/// The lexical (BM25) index.
#[derive(Debug, Clone, Serialize)]
pub struct LexicalSizes {
    pub health: LexicalHealth,
    /// Where it lives (`None` when there is none).
    pub place: Option<String>,
    /// Live items in the commit its searches read (changes not yet folded into a commit are
    /// not counted).
    pub items: u64,
    /// Its files' bytes on disk.
    pub bytes: u64,
}

impl LexicalSizes {
    /// Its bytes on disk, as a person reads them.
    pub fn size(&self) -> String {
        byte_size(self.bytes)
    }
}

/// Whether the lexical index answers finds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LexicalHealth {
    /// It answers lexical finds.
    Sound,
    /// Set aside as damaged and being built again; `answered_by` (the database's own text
    /// search) answers meanwhile.
    Damaged { reason: String, answered_by: String },
    /// There is none (turned off, or it could not be opened): `answered_by` answers.
    Absent { reason: String, answered_by: String },
}

impl LexicalHealth {
    pub fn sound(&self) -> bool {
        *self == LexicalHealth::Sound
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            LexicalHealth::Sound => "sound".to_string(),
            LexicalHealth::Damaged { reason, answered_by } => format!(
                "set aside as damaged ({reason}) and being built again; {answered_by} answers finds meanwhile \
                 (if it stays so, run `cortex reindex --lexical`)"
            ),
            LexicalHealth::Absent { reason, answered_by } => {
                format!("absent: finds use {answered_by} ({reason})")
            }
        }
    }
}

/// The vectors of the dense route.
#[derive(Debug, Clone, Serialize)]
pub struct VectorSizes {
    /// The model vectors are made with (`None`: no embedder, lexical search only).
    pub model: Option<String>,
    /// A local model's precision: as loaded (`int8`), or as configured while it is not loaded
    /// yet (`auto`); `None` for a remote model or none.
    pub precision: Option<String>,
    /// Whether the precision is the loaded model's (else the configured one).
    pub loaded: bool,
    /// The vectors finds search (whole texts and chunks) and their bytes: those of the
    /// in-process index (SQLite), or, when the database searches them itself (`in_database`,
    /// PostgreSQL), those it holds for live items and its vector indexes' bytes on disk.
    pub vectors: u64,
    pub bytes: u64,
    pub in_database: bool,
    /// Live items, and those of them still without vectors.
    pub items: i64,
    pub unembedded: i64,
}

impl VectorSizes {
    /// The vectors' bytes, as a person reads them.
    pub fn size(&self) -> String {
        byte_size(self.bytes)
    }

    /// What to do when items wait for vectors (`None` when none does).
    pub fn waiting(&self) -> Option<String> {
        (self.unembedded > 0).then(|| {
            format!(
                "{} items have no vectors (stored while no embedder was available), so dense search cannot find them: {UNEMBEDDED_FIX}",
                self.unembedded
            )
        })
    }

    /// Where the vectors' bytes are, for a person.
    pub fn kept(&self) -> &'static str {
        if self.in_database { "in the database's vector indexes" } else { "in memory" }
    }

    /// The model and its precision for a person: `… (int8)`, `… (auto, decided when it loads)`.
    pub fn model_line(&self) -> String {
        let Some(model) = &self.model else { return "none: lexical search only".to_string() };
        match (&self.precision, self.loaded) {
            (Some(p), true) => format!("{model} ({p})"),
            (Some(p), false) => format!("{model} ({p}, as configured: not loaded yet)"),
            (None, _) => model.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_items_name_their_count_and_the_fix_and_none_waiting_says_nothing() {
        let mut v = VectorSizes {
            model: Some("m".into()),
            precision: Some("auto".into()),
            loaded: false,
            vectors: 3,
            bytes: 10,
            in_database: false,
            items: 5,
            unembedded: 2,
        };
        let advice = v.waiting().expect("two items wait");
        assert!(
            advice.starts_with("2 items have no vectors") && advice.contains("cortex reindex"),
            "{advice}"
        );
        assert_eq!(v.model_line(), "m (auto, as configured: not loaded yet)");
        v.unembedded = 0;
        assert_eq!(v.waiting(), None);
    }
}
