//! The `memory_find` flow ([`MemoryFind`]): parse (in `deep`, unknown words corrected: `typos`) → resolve scope →
//! lexical and dense candidates → rank (domain formula, citations from the graph) → page →
//! suggestions when recall is low → graph expansion (`expand`) → cut to the response budget.
//!
//! - [`candidates`]: both routes fused into one relevance per item
//! - [`hits`]: the page's hits
//! - [`budget`]: the response cut to its size budget, saying what was left out
//! - [`suggest`]: hints when recall is low
//! - [`deadline`]: the find's deadline, and the dense route left behind at it
//! - [`dense_pool`]: the threads dense routes run on
//! - [`explain`]: each route's raw candidates, for tuning the fusion offline
//! - [`typos`]: `deep`'s typo correction; [`vocabulary`]: the index's words as the caller may
//!   see them (for the hints and the corrections)
//! - [`expand`]: graph expansion from the hits, citations, the links of items read by id
//! - [`chunks`]: a long item's chunks as the store keeps them (the UI's item page)
//! - [`merged`]: the branches merged into the caller's, whose items it sees
//! - [`staleness`]: hits whose files changed since they were written
//! - [`prompt`]: a prompt's candidates for the recall hook, ranked as `auto` ranks them

mod budget;
mod candidates;
mod chunks;
mod deadline;
mod dense_pool;
mod expand;
mod explain;
mod hits;
mod merged;
mod prompt;
mod staleness;
mod suggest;
mod typos;
mod vocabulary;

pub use chunks::{ChunkView, ItemChunks, SHOWN_CHARS};
pub(crate) use dense_pool::DensePool;
pub use dense_pool::dense_route_threads;
pub use explain::RouteLists;
use hits::{hit, parts_for};

use crate::lexical_index::Cores;
use crate::response::{FindResponse, Hit, Route, SearchedScope, Suggestion};
use crate::semantic::EmbedderChoice;
use crate::{MemoryService, Result};
use candidates::{Candidate, fused_candidates, with_neighbours};
use cortex_domain::find::Detail;
use cortex_domain::fusion::Fusion;
use cortex_domain::neighbours;
use cortex_domain::query::{ParsedQuery, parse_query};
use cortex_domain::ranking::{self, ScoreParts};
use cortex_domain::snippet::{SnippetTerms, best_passage};
use cortex_domain::tenant::Bound;
use cortex_domain::text::truncate_chars;
use cortex_domain::{FindRequest, Mode, Scope, ScopeFilter};
use cortex_store::{Combine, Filters, LexicalMatch, LexicalQuery, StoredItem};
use deadline::{Deadline, DenseOutcome, DenseRoute};
use hits::show_match;
use uuid::Uuid;

/// The `memory_find` flow as one caller is served (see the module doc); made by
/// [`MemoryService::memory_find`].
pub struct MemoryFind<'a> {
    pub(crate) service: &'a MemoryService,
}

/// Candidates ranked per query: enough that recency and scope can lift a hit that BM25 put
/// a little lower, few enough to stay fast.
const MIN_POOL: usize = 100;
const MAX_POOL: usize = 1_000;
/// Counting stops here; suggestions say "1000+".
const COUNT_CAP: usize = 1_000;
/// Fewer hits than this on the first page trigger suggestions.
const SUGGEST_BELOW: usize = 3;

impl MemoryFind<'_> {
    /// Every org, project and branch within the caller's reach that holds live items, with
    /// how many: where a find can look (a key's bound leaves out what it may not see).
    pub fn places(&self) -> Result<Vec<cortex_store::Place>> {
        let shared = &self.service.shared;
        let places = shared.places.current(shared.store.as_ref())?;
        let bound = self.service.bound.as_ref();
        Ok(places.iter().filter(|p| bound.is_none_or(|b| b.admits(&p.scope))).cloned().collect())
    }

    /// Handles one `memory_find` request, parsed at the MCP edge or built in the process;
    /// either is held to the arguments' limits first.
    pub fn find(&self, req: &FindRequest) -> Result<FindResponse> {
        self.find_with_fusion(req, &Fusion::TUNED)
    }

    /// A find whose routes are fused by `fusion` instead of the tuned rule: for the evaluation
    /// harness, which compares rules. No agent chooses the fusion, so it is no part of the
    /// request.
    pub(crate) fn find_with_fusion(&self, req: &FindRequest, fusion: &Fusion) -> Result<FindResponse> {
        req.check()?;
        if let (Some(bound), Some(scope)) = (&self.service.bound, &req.scope) {
            bound.check_read(scope)?;
        }
        let filter = ScopeFilter::resolve(&self.service.inferred.scope, req.scope.as_ref(), req.widen);
        let filter = self.with_merged_branches(filter)?;
        let mut response = FindResponse {
            hits: Vec::new(),
            route_used: Route::Lexical,
            mode: req.mode,
            confidence: 0.0,
            searched_scope: searched_scope(&filter),
            next_cursor: None,
            suggestions: Vec::new(),
            notes: Vec::new(),
            missing_ids: Vec::new(),
            omitted_ids: Vec::new(),
            truncated: false,
            graph: None,
        };
        let deadline = Deadline::start(self.service.shared.find_deadline);
        if !req.ids.is_empty() {
            self.lookup(req, &filter, &mut response)?;
        } else if let Some(text) = &req.query {
            self.search(req, text, &filter, fusion, &deadline, &mut response)?;
        } else {
            self.list_newest(req, &filter, &mut response)?;
        }
        if deadline.passed()
            && req.expansion() != cortex_domain::graph::Expand::None
            && !response.hits.is_empty()
        {
            response.notes.push(deadline.note("linked items were not expanded"));
        } else {
            self.expand_hits(req, &filter, &mut response)?;
        }
        self.flag_stale(&filter, &mut response)?;
        if req.detail == Detail::Brief {
            response.hits.iter_mut().for_each(Hit::make_brief);
        }
        if let Some(cut) = budget::fit_budget(&mut response)
            && !cut.left_out.is_empty()
            && req.ids.is_empty()
        {
            // The next page starts right after the last match kept.
            response.next_cursor = Some(req.cursor_at(req.offset + cut.kept_matches));
        }
        Ok(response)
    }

    fn lookup(&self, req: &FindRequest, filter: &ScopeFilter, response: &mut FindResponse) -> Result<()> {
        response.route_used = Route::Ids;
        let now = self.service.now()?;
        let found = self.service.view.get(&req.ids)?;
        let cited = self.citations(&req.ids, now)?;
        for id in &req.ids {
            match found.iter().find(|i| i.record.id == *id && i.deleted_at.is_none()) {
                Some(item) => {
                    let mut parts = parts_for(item, 1.0, filter, now);
                    parts.citations = cited.get(id).copied().unwrap_or(0.0);
                    let snippet = best_passage(&item.record.body, &SnippetTerms::none());
                    response.hits.push(hit(item, parts, snippet, 1.0, filter, req.max_content_chars));
                }
                None => response.missing_ids.push(id.to_string()),
            }
        }
        self.attach_links(&mut response.hits)?;
        response.confidence = if response.hits.is_empty() { 0.0 } else { 1.0 };
        if req.query.is_some() {
            response.notes.push("`ids` given: returned those items and ignored `query`".into());
        }
        Ok(())
    }

    /// Kinds without a query: the newest items of those kinds that pass every filter, newest
    /// first (what the session briefing points to when a section has more than it shows).
    fn list_newest(
        &self,
        req: &FindRequest,
        filter: &ScopeFilter,
        response: &mut FindResponse,
    ) -> Result<()> {
        response.route_used = Route::Recent;
        let now = self.service.now()?;
        let filters = filters_for(req, filter, now, self.service.bound.as_ref());
        let wanted = (req.offset + req.limit + 1).min(MAX_POOL);
        let items = self.service.view.recent(&filters, wanted)?;
        for item in items.iter().skip(req.offset).take(req.limit) {
            let parts = parts_for(item, 1.0, filter, now);
            let snippet = best_passage(&item.record.body, &SnippetTerms::none());
            response.hits.push(hit(item, parts, snippet, 1.0, filter, req.max_content_chars));
        }
        if items.len() > req.offset + req.limit {
            response.next_cursor = Some(req.cursor_at(req.offset + req.limit));
        } else if items.len() == MAX_POOL {
            response
                .notes
                .push(format!("a listing reaches the newest {MAX_POOL} items: add a query to go further"));
        }
        response.confidence = if response.hits.is_empty() { 0.0 } else { 1.0 };
        Ok(())
    }

    fn search(
        &self,
        req: &FindRequest,
        text: &str,
        filter: &ScopeFilter,
        fusion: &Fusion,
        deadline: &Deadline,
        response: &mut FindResponse,
    ) -> Result<()> {
        let parsed = parse_query(text);
        if parsed.is_empty() {
            response.route_used = Route::None;
            response.suggestions.push(Suggestion::Text(format!(
                "`{}` has no searchable word (only stopwords, symbols or exclusions): add a word made of letters or digits",
                truncate_chars(text, 60).0
            )));
            return Ok(());
        }
        let mut dense_text = text.to_string();
        let parsed = if req.mode == Mode::Deep {
            let (corrected, changes) = self.correct_typos(&parsed)?;
            // The dense route reads the corrected words too: the model has seldom seen a
            // typo's pieces ("fesetival"), and embedding the query as typed left `deep`'s
            // dense list as `auto`'s (it scored a little higher on both dev sets this way).
            dense_text = typos::with_words_replaced(text, &changes);
            for (typed, searched) in changes {
                response
                    .notes
                    .push(format!("deep: searched \"{searched}\" for \"{typed}\", which no item contains"));
            }
            corrected
        } else {
            parsed
        };
        let text = dense_text.as_str();
        let now = self.service.now()?;
        let filters = filters_for(req, filter, now, self.service.bound.as_ref());
        let wanted = req.offset + req.limit;
        // `deep` ranks the same pools as `auto`: since every lexical candidate is fused at its
        // own cosine, pools of 300 only reordered near-ties (they lost as many queries as they
        // won on both dev sets and put `deep` below `auto` on some measures); what `deep` adds is
        // typo correction and graph expansion.
        let pool = (3 * wanted).clamp(MIN_POOL, MAX_POOL);
        // The two routes run side by side: the query's embedding costs about as much as the
        // lexical search, and neither needs the other. The dense route counts only if it
        // answers by the deadline.
        let dense = (req.mode != Mode::Fast).then(|| {
            DenseRoute::start(
                &self.service.shared.dense_routes,
                deadline,
                self.service.shared.semantic.clone(),
                self.service.view.clone(),
                text,
                &filters,
                pool,
            )
        });
        let cores = if dense.is_some() { Cores::One } else { Cores::Any };
        let lexical = self.lexical_matches(&parsed, &filters, pool, req.offset + req.limit, cores)?;
        if let Some(note) = self.service.shared.lexical.unavailable() {
            response.notes.push(note);
        }
        // Read while the dense route is still embedding the query; not at all without an
        // embedder (a lexical-only memory), whose dense route answers "unavailable".
        let embeds = !matches!(self.service.shared.semantic.choice(), EmbedderChoice::None);
        let lexical_vectors =
            (dense.is_some() && embeds && fusion.fill_dense).then(|| self.lexical_vectors(&lexical));
        let dense = match dense.map(|route| route.wait(deadline)) {
            None => None,
            Some(DenseOutcome::Found(found)) => Some(found),
            Some(DenseOutcome::Unavailable(reason)) => {
                response.notes.push(format!("semantic search unavailable, ran lexical only: {reason}"));
                None
            }
            Some(DenseOutcome::TimedOut) => {
                response.notes.push(deadline.note("semantic search did not finish, ran lexical only"));
                None
            }
        };
        self.service.shared.semantic.resume_backfill();
        if dense.is_some() {
            response.route_used = Route::Hybrid;
            let waiting = self.service.shared.semantic.waiting_for_vectors();
            if waiting > 0 {
                // A caller bounded to some projects is not told a count of the whole store.
                let items = if self.service.bound.is_some() {
                    "some items".to_string()
                } else {
                    format!("{waiting} items")
                };
                response.notes.push(format!(
                    "semantic results are partial: {items} stored without vectors are being embedded in the background"
                ));
            }
        }
        let pool_full = lexical.len() == pool || dense.as_ref().is_some_and(|d| d.hits.len() == pool);
        let dense_of_lexical = match (&dense, &lexical_vectors) {
            (Some(found), Some(vectors)) => vectors.dense_of_lexical(found),
            _ => Vec::new(),
        };
        let dense_hits = dense.as_ref().map(|d| d.hits.as_slice());
        let mut candidates = fused_candidates(&lexical, dense_hits, &dense_of_lexical, fusion);
        // `fast` stays the lexical route alone; `auto` and `deep` bring the best hits' session
        // neighbours (the reply to the turn that matched).
        if req.mode != Mode::Fast && fusion.neighbours && !candidates.is_empty() {
            if deadline.passed() {
                response.notes.push(deadline.note("session neighbours were not looked up"));
            } else {
                let anchors: Vec<Uuid> =
                    candidates.iter().take(neighbours::anchors(wanted)).map(|c| c.id).collect();
                let found =
                    self.service.view.session_neighbours(&anchors, &filters, neighbours::NEIGHBOUR_WINDOW)?;
                candidates = with_neighbours(candidates, &found);
            }
        }
        // A question weighs down what only records that something happened.
        let question = cortex_domain::query::is_question(text);
        let mut ranked: Vec<(ScoreParts, &Candidate)> = candidates
            .iter()
            .map(|c| {
                let fit = c.kind.map_or(1.0, |kind| ranking::kind_fit(question, kind));
                let parts = ScoreParts {
                    relevance: c.relevance * fit,
                    recency: ranking::recency(c.updated_at, now),
                    scope_proximity: ranking::scope_proximity(filter.match_of(&c.scope)),
                    citations: 0.0,
                };
                (parts, c)
            })
            .collect();
        let order = |a: &(ScoreParts, &Candidate), b: &(ScoreParts, &Candidate)| {
            b.0.total().total_cmp(&a.0.total()).then_with(|| a.1.id.cmp(&b.1.id))
        };
        ranked.sort_by(order);
        // Citations are counted only for candidates that could still reach the page.
        let last = (req.offset + req.limit).min(ranked.len());
        if last > 0 {
            let floor = ranking::citation_floor(ranked[last - 1].0.total());
            let contenders: Vec<Uuid> =
                ranked.iter().take_while(|(p, _)| p.total() >= floor).map(|(_, c)| c.id).collect();
            let cited = self.citations(&contenders, now)?;
            if !cited.is_empty() {
                for (parts, c) in &mut ranked {
                    parts.citations = cited.get(&c.id).copied().unwrap_or(0.0);
                }
                ranked.sort_by(order);
            }
        }
        let available = ranked.len();
        let page: Vec<(ScoreParts, &Candidate)> =
            ranked.into_iter().skip(req.offset).take(req.limit).collect();
        let words = parsed.words();
        let terms = SnippetTerms::of(&parsed);
        let ids: Vec<Uuid> = page.iter().map(|(_, c)| c.id).collect();
        let fetched: Vec<StoredItem> =
            self.service.view.get(&ids)?.into_iter().filter(|item| item.deleted_at.is_none()).collect();
        for (parts, c) in &page {
            // A match deleted between the two phases is simply left out.
            let Some(item) = fetched.iter().find(|item| item.record.id == c.id) else {
                continue;
            };
            let haystack = format!("{} {}", item.record.title, item.record.body).to_lowercase();
            let coverage = ranking::term_coverage(&words, &haystack);
            // A dense-only hit may share no word with the query and still answer it: how near
            // in meaning it is then stands for the words it holds.
            let coverage = match (c.lexical, c.cosine) {
                (true, _) => coverage,
                (false, Some(cosine)) => coverage.max(ranking::nearness(cosine)),
                (false, None) => coverage.max(c.relevance),
            };
            let confidence = ranking::confidence(coverage, parts.relevance);
            let mut found = hit(item, *parts, String::new(), confidence, filter, req.max_content_chars);
            show_match(&mut found, item, c, &terms);
            response.hits.push(found);
        }
        let next = req.offset + page.len();
        if next < available || (pool_full && !page.is_empty() && next < MAX_POOL) {
            response.next_cursor = Some(req.cursor_at(next));
        }
        response.confidence = response.hits.iter().filter_map(|h| h.confidence).fold(0.0, f64::max);
        if req.offset == 0 && response.hits.len() < SUGGEST_BELOW {
            if deadline.passed() {
                response.notes.push(deadline.note("no suggestions were computed"));
            } else {
                response.suggestions = self.suggestions(req, &parsed, filter, &filters, available)?;
            }
        }
        Ok(())
    }

    /// With the lexical index: one pass of BM25 over any word (block-max WAND ranks the top of
    /// the union without scoring every item that holds a common word; fuller matches score
    /// higher). Without it, the database's search, conjunctive first: only when items holding
    /// every word cannot fill the page does it widen to items holding any word, since scoring
    /// every item that holds one common word is what makes its disjunctive search slow.
    fn lexical_matches(
        &self,
        parsed: &ParsedQuery,
        filters: &Filters,
        pool: usize,
        needed: usize,
        cores: Cores,
    ) -> Result<Vec<LexicalMatch>> {
        let query = |combine| LexicalQuery { query: parsed.clone(), combine, filters: filters.clone(), pool };
        if !self.service.shared.lexical.indexed() && parsed.include.len() > 1 {
            let all = self.service.shared.lexical.search(
                &query(Combine::All),
                self.service.view.as_ref(),
                cores,
            )?;
            if all.len() >= needed {
                return Ok(all);
            }
        }
        Ok(self.service.shared.lexical.search(&query(Combine::Any), self.service.view.as_ref(), cores)?)
    }
}

fn filters_for(req: &FindRequest, filter: &ScopeFilter, now: i64, bound: Option<&Bound>) -> Filters {
    Filters {
        scope_equals: filter.equals.clone(),
        now,
        bound: bound.cloned(),
        merged: filter.merged.clone(),
        ..Filters::default()
    }
    .with_find_filter(&req.filter)
}

fn searched_scope(filter: &ScopeFilter) -> SearchedScope {
    let mut scope = Scope::default();
    for (field, value) in &filter.equals {
        scope.set(field, value.clone());
    }
    SearchedScope { level: filter.level, filter: scope }
}
