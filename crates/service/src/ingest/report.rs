//! What an ingest did (or, in a dry run, would do): counts per kind and outcome, the items'
//! statuses per kind, each refusal with its file, and the files that became no item.

use serde::Serialize;
use std::collections::BTreeMap;

/// The counts of one kind.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct KindCounts {
    pub inserted: i64,
    pub updated: i64,
    pub unchanged: i64,
    pub deleted: i64,
    pub refused: i64,
    /// The items' statuses as the files give them (`accepted`, `released`, …), counting
    /// every item the run read.
    pub statuses: BTreeMap<String, i64>,
}

/// An item the memory refused, named by its file.
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    /// The file (relative to the root), or the commit.
    pub path: String,
    /// The item within the file (a version, a heading), when the file has several.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    pub code: String,
    pub message: String,
    pub human_hint: String,
}

/// A file that became no item, and why (`template`, `index`, `empty`, `unreadable`).
#[derive(Debug, Clone, Serialize)]
pub struct Passed {
    pub path: String,
    pub reason: String,
}

/// A PATH that does not exist: named, and the others read.
#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub path: String,
    pub message: String,
    pub human_hint: String,
}

/// A supersede a record names that could not be made, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unlinked {
    pub path: String,
    pub target: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    pub dry_run: bool,
    pub files: usize,
    pub kinds: BTreeMap<String, KindCounts>,
    /// Supersedes made between records (`new path → old path`).
    pub superseded: Vec<(String, String)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refusal>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<Passed>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unlinked: Vec<Unlinked>,
    /// PATHs that do not exist (the others were read).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<Missing>,
    /// Merges whose message git or a forge wrote, with nothing of their own to say: no item.
    #[serde(skip_serializing_if = "is_zero")]
    pub merges_without_message: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl IngestReport {
    pub fn kind(&mut self, kind: &str) -> &mut KindCounts {
        self.kinds.entry(kind.to_string()).or_default()
    }

    /// Whether any item was refused: the CLI exits 2, like `cortex store`.
    pub fn any_refused(&self) -> bool {
        !self.refused.is_empty()
    }

    /// All kinds' counts added up.
    pub fn total(&self) -> KindCounts {
        let mut total = KindCounts::default();
        for c in self.kinds.values() {
            total.inserted += c.inserted;
            total.updated += c.updated;
            total.unchanged += c.unchanged;
            total.deleted += c.deleted;
            total.refused += c.refused;
        }
        total
    }
}
