//! Recall for a prompt (`cortex recall`, an agent's prompt-submit hook): the prompt's best
//! lexical matches in the caller's project, each with how strongly it matches. Which are shown
//! and how they are cut is `cortex_domain::recall`.
//!
//! Lexical only: the hook runs as a fresh process before every prompt, and loading the model
//! alone takes about twice the time it may spend (BENCHMARKS.md has both figures).

use super::Briefing;
use crate::Result;
use crate::git::stale::{self, Asked};
use crate::lexical_index::Cores;
use cortex_domain::query::parse_query;
use cortex_domain::recall::{self, Candidate};
use cortex_domain::snippet::{SnippetTerms, best_passage};
use cortex_domain::{Scope, ScopeFilter, ScopeLevel};
use cortex_store::{Combine, Filters, LexicalQuery};

impl Briefing<'_> {
    /// The text to put before the agent for `prompt` (empty when nothing matches strongly
    /// enough): matches in the inferred project, kept at `floor` and cut to `budget_tokens`.
    pub fn recall(&self, prompt: &str, floor: f64, budget_tokens: usize) -> Result<String> {
        let candidates = self.recall_candidates(prompt, None, Some(ScopeLevel::Project))?;
        Ok(recall::render(&recall::select(candidates, floor), budget_tokens))
    }

    /// The prompt's best lexical matches (at most [`recall::POOL`], in lexical order), each
    /// with its strength, in `scope` (else the inferred one) widened to `level`.
    pub(crate) fn recall_candidates(
        &self,
        prompt: &str,
        scope: Option<&Scope>,
        level: Option<ScopeLevel>,
    ) -> Result<Vec<Candidate>> {
        if let (Some(bound), Some(scope)) = (&self.service.bound, scope) {
            bound.check_read(scope)?;
        }
        let parsed = parse_query(&recall::prompt_query(prompt));
        if parsed.is_empty() {
            return Ok(Vec::new());
        }
        let filter = ScopeFilter::resolve(&self.service.inferred.scope, scope, level);
        let filters = Filters {
            scope_equals: filter.equals.clone(),
            now: self.service.now()?,
            bound: self.service.bound.clone(),
            ..Filters::default()
        };
        let query =
            LexicalQuery { query: parsed.clone(), combine: Combine::Any, filters, pool: recall::POOL };
        let matches = self.service.shared.lexical.search(&query, self.service.view.as_ref(), Cores::Any)?;
        let ids: Vec<_> = matches.iter().map(|m| m.id).collect();
        let items = self.service.view.get(&ids)?;
        let words = parsed.words();
        let terms = SnippetTerms::of(&parsed);
        let asked: Vec<Asked<'_>> = items.iter().map(Asked::of).collect();
        let checked = stale::check(self.service.view.as_ref(), &filter.caller, &asked)?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // A match deleted since the search is left out.
            let Some(item) = items.iter().find(|i| i.record.id == id && i.deleted_at.is_none()) else {
                continue;
            };
            let r = &item.record;
            let haystack = format!("{} {}", r.title, r.body).to_lowercase();
            out.push(Candidate {
                id: r.id.to_string(),
                kind: r.kind.as_str().to_string(),
                title: r.title.clone(),
                passage: best_passage(&r.body, &terms),
                strength: recall::strength(&words, &haystack),
                note: checked.get(&r.id).and_then(|(_, stale)| stale.as_ref()).map(|s| s.few_words()),
            });
        }
        Ok(out)
    }
}
