//! What the recall hook did, per project: prompts seen, injections, memories and tokens
//! injected, sessions that reached their ceiling. One small file per store and project,
//! `<recall state>/counts/<store identity>/<SHA-256 of org/project>.json`, added to by each
//! prompt's hook under a lock (`state_file`): the database is not written per prompt. Read by
//! `cortex stats` and the UI's status page through `Administration::stats`.

use super::state_file;
use crate::administration::RecallCounts;
use std::path::{Path, PathBuf};

/// One prompt's part in the counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PromptTally {
    pub memories: u64,
    pub tokens: u64,
    pub reached_ceiling: bool,
}

/// The counts of one store.
pub struct Tally {
    dir: PathBuf,
}

impl Tally {
    /// The counts of the store `store` (`cortex_store::identity`) under the recall state folder.
    pub fn at(state: &Path, store: &str) -> Tally {
        Tally { dir: state.join("counts").join(state_file::name_for(store)) }
    }

    /// Adds one prompt of `org`/`project`.
    pub fn add(&self, org: &str, project: &str, prompt: PromptTally) -> std::io::Result<()> {
        let path = self.dir.join(format!("{}.json", state_file::name_for(&format!("{org}/{project}"))));
        state_file::update(&path, |c: &mut RecallCounts, _| {
            (c.org, c.project) = (org.to_string(), project.to_string());
            c.prompts += 1;
            c.injections += u64::from(prompt.memories > 0);
            c.memories += prompt.memories;
            c.tokens += prompt.tokens;
            c.sessions_at_ceiling += u64::from(prompt.reached_ceiling);
        })
    }

    /// Every project's counts, by org and project.
    pub fn all(&self) -> Vec<RecallCounts> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut all: Vec<RecallCounts> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| state_file::read(&p))
            .filter(|c: &RecallCounts| c.prompts > 0)
            .collect();
        all.sort_by(|a, b| (&a.org, &a.project).cmp(&(&b.org, &b.project)));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_project_and_per_store() {
        let dir = tempfile::tempdir().unwrap();
        let tally = Tally::at(dir.path(), "store-a");
        let injected = PromptTally { memories: 2, tokens: 120, reached_ceiling: false };
        tally.add("acme", "api", injected).unwrap();
        tally.add("acme", "api", PromptTally::default()).unwrap();
        tally.add("acme", "web", PromptTally { reached_ceiling: true, ..injected }).unwrap();
        let all = tally.all();
        assert_eq!(all.len(), 2);
        let api = &all[0];
        assert_eq!(
            (
                api.project.as_str(),
                api.prompts,
                api.injections,
                api.memories,
                api.tokens,
                api.sessions_at_ceiling
            ),
            ("api", 2, 1, 2, 120, 0)
        );
        assert_eq!(all[1].sessions_at_ceiling, 1);
        assert!(Tally::at(dir.path(), "store-b").all().is_empty(), "another store's counts are its own");
    }
}
