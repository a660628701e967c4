//! Recall for a prompt (`cortex recall`, an agent's prompt-submit hook): the prompt's best
//! candidates in the caller's project — the find's routes and fusion when the embedding model
//! is there (`MemoryFind::prompt_candidates`), the lexical route alone otherwise — chosen by
//! `cortex_domain::recall::select`, less what the session has seen, cut to the prompt's budget
//! and what is left of the session's, and counted per project (`tally`).
//!
//! A fresh process runs per prompt: the lexical index and the vector index file are mapped,
//! not loaded (BENCHMARKS.md has the time from spawn to exit).

use super::Briefing;
use super::sessions::Sessions;
use super::tally::{PromptTally, Tally};
use crate::Result;
use cortex_domain::query::parse_query;
use cortex_domain::recall::session::SessionState;
use cortex_domain::recall::{self, Candidate, Hybrid, Injection, Rule};
use cortex_domain::snippet::{SnippetTerms, best_passage};
use cortex_domain::text::truncate_chars;
use cortex_domain::{Scope, ScopeFilter, ScopeLevel};
use cortex_store::Filters;

/// One prompt to recall for.
#[derive(Debug, Clone, Default)]
pub struct RecallRequest {
    pub prompt: String,
    /// Tokens this prompt may be given; `None`: the setting (`CORTEX_RECALL_BUDGET_TOKENS`).
    pub budget_tokens: Option<usize>,
    /// The lexical rule's floor when the lexical route runs alone; `None`: the default.
    pub floor: Option<f64>,
    /// The hook's `session_id`: what the session has seen is not injected again, and its
    /// ceiling holds. `None`: the prompt stands alone.
    pub session: Option<String>,
}

/// What a prompt's recall printed, and what to tell the user on the side.
#[derive(Debug, Clone, Default)]
pub struct Recalled {
    pub injection: Injection,
    /// Said once per session: why the recall is lexical only.
    pub notice: Option<String>,
}

/// How a prompt's candidates were weighed: the candidates best first, the rule for them, and
/// why the lexical route ran alone when it did.
pub struct Weighed {
    pub candidates: Vec<Candidate>,
    pub rule: Rule,
    pub lexical_only: Option<String>,
}

impl Briefing<'_> {
    /// The text to put before the agent for `req` (empty when nothing is relevant enough,
    /// or all of it is in the session already, or the session's ceiling is reached).
    pub fn recall(&self, req: &RecallRequest) -> Result<Recalled> {
        let settings = &self.service.shared.recall;
        let budget = req.budget_tokens.unwrap_or(settings.budget_tokens);
        if budget == 0 {
            return Ok(Recalled::default());
        }
        let weighed = self.weigh(&req.prompt, None, Some(ScopeLevel::Project), true)?;
        let rule = match (weighed.rule, req.floor) {
            (Rule::Lexical { .. }, Some(floor)) => Rule::Lexical { floor },
            (rule, _) => rule,
        };
        let selected = recall::select(weighed.candidates, &rule);
        let now = self.service.now()?;
        let sessions = settings.state.as_deref().map(Sessions::at);
        let (recalled, spent) = match (&sessions, req.session.as_deref()) {
            (Some(sessions), Some(session)) => sessions
                .update(session, |state| {
                    in_session(
                        state,
                        selected,
                        budget,
                        settings.session_budget_tokens,
                        now,
                        weighed.lexical_only,
                    )
                })
                .unwrap_or_else(|e| {
                    tracing::warn!("the session's ledger cannot be written, nothing recalled: {e}");
                    (Recalled::default(), false)
                }),
            _ => {
                let injection = recall::render(&selected, budget, now);
                (Recalled { injection, notice: weighed.lexical_only.map(lexical_notice) }, false)
            }
        };
        self.count(&recalled.injection, spent);
        Ok(recalled)
    }

    /// Adds this prompt to its project's counts, when counts are kept. A failure is logged:
    /// counting never costs a prompt its recall.
    fn count(&self, injection: &Injection, reached_ceiling: bool) {
        let Some(state) = &self.service.shared.recall.state else { return };
        let scope = &self.service.inferred.scope;
        let store = match cortex_store::identity(self.service.shared.store.as_ref()) {
            Ok(id) => id,
            Err(e) => return tracing::warn!("recall not counted: {e}"),
        };
        let prompt = PromptTally {
            memories: injection.ids.len() as u64,
            tokens: injection.tokens as u64,
            reached_ceiling,
        };
        let (org, project) = (scope.org.as_deref().unwrap_or(""), scope.project.as_deref().unwrap_or(""));
        if let Err(e) = Tally::at(state, &store).add(org, project, prompt) {
            tracing::warn!("recall not counted: {e}");
        }
    }

    /// The prompt's candidates (at most [`recall::POOL`], best first) in `scope` (else the
    /// inferred one) widened to `level`, and the rule for them: hybrid when `dense` and the
    /// model answers, else lexical.
    pub(crate) fn weigh(
        &self,
        prompt: &str,
        scope: Option<&Scope>,
        level: Option<ScopeLevel>,
        dense: bool,
    ) -> Result<Weighed> {
        if let (Some(bound), Some(scope)) = (&self.service.bound, scope) {
            bound.check_read(scope)?;
        }
        let parsed = parse_query(&recall::prompt_query(prompt));
        let filter = ScopeFilter::resolve(&self.service.inferred.scope, scope, level);
        let filters = Filters {
            scope_equals: filter.equals.clone(),
            now: self.service.now()?,
            bound: self.service.bound.clone(),
            ..Filters::default()
        };
        let text = truncate_chars(prompt, recall::MAX_PROMPT_CHARS).0;
        let found = if dense {
            self.service.memory_find().prompt_candidates(&parsed, text, &filters, recall::POOL)?
        } else {
            self.service.memory_find().prompt_candidates_lexical(&parsed, &filters, recall::POOL)?
        };
        let rule = match found.lexical_only {
            Some(_) => Rule::Lexical { floor: recall::DEFAULT_FLOOR },
            None => Rule::Hybrid(Hybrid::TUNED),
        };
        let ranked: Vec<_> = found.ranked.into_iter().take(recall::POOL).collect();
        let ids: Vec<_> = ranked.iter().map(|c| c.id).collect();
        let items = self.service.view.get(&ids)?;
        let words = parsed.words();
        let terms = SnippetTerms::of(&parsed);
        let mut candidates = Vec::with_capacity(ranked.len());
        for c in ranked {
            // A match deleted since the search is left out.
            let Some(item) = items.iter().find(|i| i.record.id == c.id && i.deleted_at.is_none()) else {
                continue;
            };
            let r = &item.record;
            let haystack = format!("{} {}", r.title, r.body).to_lowercase();
            // The chunk the dense route matched, when it matched one; a damaged span reads as
            // the whole body.
            let text = r.text();
            let part = c.chunk.and_then(|(start, end)| text.get(start as usize..end as usize));
            candidates.push(Candidate {
                id: r.id.to_string(),
                kind: r.kind.as_str().to_string(),
                title: r.title.clone(),
                passage: best_passage(part.unwrap_or(&r.body), &terms),
                strength: recall::strength(&words, &haystack),
                relevance: c.relevance,
                cosine: c.cosine,
                updated_at: r.updated_at,
            });
        }
        Ok(Weighed { candidates, rule, lexical_only: found.lexical_only })
    }
}

/// `selected` less what the session has seen, within the prompt's budget and what is left of
/// the session's; the session's ledger updated. Also whether this prompt brought the session
/// to its ceiling.
fn in_session(
    state: &mut SessionState,
    mut selected: Vec<Candidate>,
    budget: usize,
    ceiling: usize,
    now: i64,
    lexical_only: Option<String>,
) -> (Recalled, bool) {
    selected.retain(|c| !state.has_seen(&c.id));
    let notice = match lexical_only {
        Some(reason) if !state.told_lexical_only => {
            state.told_lexical_only = true;
            Some(lexical_notice(reason))
        }
        _ => None,
    };
    if selected.is_empty() {
        return (Recalled { injection: Injection::default(), notice }, false);
    }
    let injection = recall::render(&selected, budget.min(state.room(ceiling)), now);
    let spent = if injection.ids.is_empty() {
        state.refused()
    } else {
        state.injected(&injection.ids, injection.tokens, ceiling)
    };
    (Recalled { injection, notice }, spent.reached_ceiling)
}

fn lexical_notice(reason: String) -> String {
    format!("recall is lexical only (a prompt's words must match a memory's): {reason}")
}
