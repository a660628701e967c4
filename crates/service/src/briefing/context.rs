//! The session briefing, read from the store for the caller's project (the rule of what it
//! holds and how it is cut lives in `cortex_domain::briefing`).

use super::Briefing;
use crate::Result;
use crate::git::stale::{self, Asked};
use cortex_domain::briefing::{self, Entry, SECTIONS};
use cortex_domain::{Scope, ScopeFilter, ScopeLevel};
use cortex_store::{Filters, StoredItem};

/// Items read per kind and status: enough to count what a section leaves out.
const READ_PER_QUERY: usize = 100;

impl Briefing<'_> {
    /// The briefing for the project of `scope` (else the inferred one), the caller's branch
    /// first, within `budget_tokens`.
    pub fn context(&self, scope: Option<&Scope>, budget_tokens: usize) -> Result<String> {
        if let (Some(bound), Some(scope)) = (&self.service.bound, scope) {
            bound.check_read(scope)?;
        }
        let filter = ScopeFilter::resolve(&self.service.inferred.scope, scope, Some(ScopeLevel::Project));
        let now = self.service.now()?;
        let branch = filter.caller.branch.clone();
        // Every section's items are read first: whether they may be out of date is one check.
        let mut read: Vec<(usize, StoredItem)> = Vec::new();
        for (n, section) in SECTIONS.iter().enumerate() {
            for (kind, statuses) in section.wanted {
                let statuses: Vec<Option<String>> = if statuses.is_empty() {
                    vec![None]
                } else {
                    statuses.iter().map(|s| Some(s.to_string())).collect()
                };
                for status in statuses {
                    let filters = Filters {
                        kinds: vec![*kind],
                        scope_equals: filter.equals.clone(),
                        status,
                        now,
                        ..Filters::default()
                    };
                    let items = self.service.view.recent(&filters, READ_PER_QUERY)?;
                    read.extend(items.into_iter().map(|item| (n, item)));
                }
            }
        }
        let asked: Vec<Asked<'_>> = read.iter().map(|(_, item)| Asked::of(item)).collect();
        let mut stale = stale::check(self.service.view.as_ref(), &filter.caller, &asked)?;
        let mut found: Vec<Vec<Entry>> = vec![Vec::new(); SECTIONS.len()];
        for (n, item) in read {
            let r = item.record;
            let note = stale.remove(&r.id).and_then(|(_, s)| s).map(|s| s.few_words());
            found[n].push(Entry {
                id: r.id.to_string(),
                kind: r.kind,
                title: r.title,
                status: r.status,
                other_branch: r.scope.branch.filter(|b| Some(b) != branch.as_ref()),
                at: r.occurred_at.unwrap_or(r.updated_at),
                note,
            });
        }
        let place = briefing::place(
            filter.caller.org.as_deref(),
            filter.caller.project.as_deref(),
            branch.as_deref(),
        );
        Ok(briefing::render(&place, found, budget_tokens))
    }
}
