//! The find flow: parse (in `deep`, unknown words corrected: `typos`) → resolve scope →
//! lexical and dense candidates → rank (domain
//! formula, citations from the graph) → page → suggestions when recall is low → graph
//! expansion (`expand`) → cut to the response budget.

use crate::response::{ChunkView, FindResponse, Hit, ScoreBreakdown, SearchedScope};
use crate::semantic::{Compare, DenseHit, Span};
use crate::{MemoryService, Result};
use cortex_domain::limits::MAX_RESPONSE_CHARS;
use cortex_domain::query::{ParsedQuery, is_stopword, parse_query};
use cortex_domain::ranking::{self, ScoreParts};
use cortex_domain::spelling::best_correction;
use cortex_domain::text::marked_snippet;
use cortex_domain::text::truncate_chars;
use cortex_domain::time::format_instant;
use cortex_domain::{FindRequest, Mode, Scope, ScopeFilter, ScopeLevel, ScopeMatch};
use cortex_domain::{chunking, fusion};
use cortex_store::{Combine, Filters, LexicalMatch, LexicalQuery, StoredItem};
use std::collections::HashMap;
use uuid::Uuid;

/// Candidates ranked per query: enough that recency and scope can lift a hit that BM25 put
/// a little lower, few enough to stay fast.
const MIN_POOL: usize = 100;
const MAX_POOL: usize = 1_000;
/// `deep` ranks more candidates of each route: slower, and a little more recall.
const DEEP_MIN_POOL: usize = 300;
/// Counting stops here; suggestions say "1000+".
const COUNT_CAP: usize = 1_000;
/// Fewer hits than this on the first page trigger suggestions.
const SUGGEST_BELOW: usize = 3;

impl MemoryService {
    /// Handles one `memory_find` request given as raw JSON arguments.
    pub fn find(&self, args: &serde_json::Value) -> Result<FindResponse> {
        let request = FindRequest::from_json(args)?;
        self.find_request(&request)
    }

    pub fn find_request(&self, req: &FindRequest) -> Result<FindResponse> {
        let filter = ScopeFilter::resolve(&self.inferred.scope, req.scope.as_ref(), req.widen);
        let mut response = FindResponse {
            hits: Vec::new(),
            route_used: "lexical".into(),
            mode: req.mode.as_str().into(),
            confidence: 0.0,
            searched_scope: searched_scope(&filter),
            next_cursor: None,
            suggestions: Vec::new(),
            notes: Vec::new(),
            missing_ids: Vec::new(),
            truncated: false,
            graph: None,
        };
        if !req.ids.is_empty() {
            self.lookup(req, &filter, &mut response)?;
        } else if let Some(text) = &req.query {
            self.search(req, text, &filter, &mut response)?;
        }
        self.expand_hits(req, &filter, &mut response)?;
        if fit_budget(&mut response) && req.ids.is_empty() {
            // Hits were dropped to fit: the next page starts right after the last match kept.
            let matches = response.hits.iter().filter(|h| !h.expanded).count();
            response.next_cursor = Some(req.cursor_at(req.offset + matches));
        }
        Ok(response)
    }

    fn lookup(&self, req: &FindRequest, filter: &ScopeFilter, response: &mut FindResponse) -> Result<()> {
        response.route_used = "ids".into();
        let now = self.now()?;
        let found = self.store.get(&req.ids)?;
        let cited = self.citations(&req.ids, now)?;
        for id in &req.ids {
            match found.iter().find(|i| i.record.id == *id && i.deleted_at.is_none()) {
                Some(item) => {
                    let mut parts = parts_for(item, 1.0, filter, now);
                    parts.citations = cited.get(id).copied().unwrap_or(0.0);
                    let snippet = item.record.body.chars().take(200).collect();
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

    fn search(
        &self,
        req: &FindRequest,
        text: &str,
        filter: &ScopeFilter,
        response: &mut FindResponse,
    ) -> Result<()> {
        let parsed = parse_query(text);
        if parsed.is_empty() {
            response.route_used = "none".into();
            response.suggestions.push(format!(
                "`{}` has no searchable word (only stopwords, symbols or exclusions): add a word made of letters or digits",
                truncate_chars(text, 60).0
            ));
            return Ok(());
        }
        let parsed = if req.mode == Mode::Deep {
            let (corrected, changes) = self.correct_typos(&parsed)?;
            for (typed, searched) in changes {
                response
                    .notes
                    .push(format!("deep: searched \"{searched}\" for \"{typed}\", which no item contains"));
            }
            corrected
        } else {
            parsed
        };
        let now = self.now()?;
        let filters = filters_for(req, filter, now);
        let wanted = req.offset + req.limit;
        let pool = match req.mode {
            Mode::Deep => (10 * wanted).clamp(DEEP_MIN_POOL, MAX_POOL),
            Mode::Fast | Mode::Auto => (3 * wanted).clamp(MIN_POOL, MAX_POOL),
        };
        // The two routes run side by side: the query's embedding costs about as much as the
        // lexical search, and neither needs the other.
        let (lexical, dense) = std::thread::scope(|routes| {
            let dense =
                (req.mode != Mode::Fast).then(|| routes.spawn(|| self.dense_matches(text, &filters, pool)));
            let lexical = self.lexical_matches(&parsed, &filters, pool, req.offset + req.limit);
            let dense =
                dense.map(|route| route.join().unwrap_or_else(|_| Err("the dense search panicked".into())));
            (lexical, dense)
        });
        let lexical = lexical?;
        let dense = match dense {
            None => None,
            Some(Ok(found)) => Some(found),
            Some(Err(reason)) => {
                response.notes.push(format!("semantic search unavailable, ran lexical only: {reason}"));
                None
            }
        };
        if dense.is_some() {
            response.route_used = "hybrid".into();
        }
        let pool_full = lexical.len() == pool || dense.as_ref().is_some_and(|d| d.len() == pool);
        let candidates = fused_candidates(&lexical, dense.as_deref(), req.lexical_weight);
        let mut ranked: Vec<(ScoreParts, &Candidate)> = candidates
            .iter()
            .map(|c| {
                let parts = ScoreParts {
                    relevance: c.relevance,
                    recency: ranking::recency(c.updated_at, now),
                    scope_proximity: ranking::scope_proximity(ScopeMatch::between(&filter.caller, &c.scope)),
                    citations: 0.0,
                };
                (parts, c)
            })
            .collect();
        let order = |a: &(ScoreParts, &Candidate), b: &(ScoreParts, &Candidate)| {
            b.0.total().total_cmp(&a.0.total()).then_with(|| a.1.id.cmp(&b.1.id))
        };
        ranked.sort_by(order);
        // Citations add at most W_CITATIONS: only candidates within that of the page's last
        // place can reach the page, so only they are counted.
        let last = (req.offset + req.limit).min(ranked.len());
        if last > 0 {
            let floor = ranked[last - 1].0.total() - ranking::W_CITATIONS;
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
        let fetched = self.fetch_page(
            &parsed,
            &words,
            &page.iter().map(|(_, c)| (c.id, c.lexical)).collect::<Vec<_>>(),
        )?;
        for (parts, c) in &page {
            // A match deleted between the two phases is simply left out.
            let Some((item, snippet)) = fetched.iter().find(|(item, _)| item.record.id == c.id) else {
                continue;
            };
            let haystack = format!("{} {}", item.record.title, item.record.body).to_lowercase();
            let coverage = ranking::term_coverage(&words, &haystack);
            // A dense-only hit may share no word with the query and still answer it.
            let coverage = if c.lexical { coverage } else { coverage.max(c.relevance) };
            let confidence = ranking::confidence(coverage, parts.relevance);
            let mut found = hit(item, *parts, snippet.clone(), confidence, filter, req.max_content_chars);
            show_chunk(&mut found, item, c, &words);
            response.hits.push(found);
        }
        let next = req.offset + page.len();
        if next < available || (pool_full && !page.is_empty() && next < MAX_POOL) {
            response.next_cursor = Some(req.cursor_at(next));
        }
        response.confidence = response.hits.iter().map(|h| h.confidence).fold(0.0, f64::max);
        if req.offset == 0 && response.hits.len() < SUGGEST_BELOW {
            response.suggestions = self.suggestions(req, &parsed, filter, &filters, available)?;
        }
        Ok(())
    }

    /// The nearest items by embedding that pass every filter; `Err` says why the dense route
    /// cannot run.
    fn dense_matches(
        &self,
        text: &str,
        filters: &Filters,
        k: usize,
    ) -> std::result::Result<Vec<DenseHit>, String> {
        let query = self.semantic.embed_query(text)?;
        let mut found = self
            .semantic
            .nearest(&*self.store, &query, k, filters, Compare::Everything)
            .map_err(|e| e.to_string())?;
        found.retain(|s| f64::from(s.score) >= fusion::MIN_DENSE_SIMILARITY);
        Ok(found)
    }

    /// Whole items and snippets for the page: FTS5 snippets for lexical matches, a marked
    /// window of the text for items only the dense route found.
    fn fetch_page(
        &self,
        parsed: &ParsedQuery,
        words: &[&str],
        page: &[(Uuid, bool)],
    ) -> Result<Vec<(StoredItem, String)>> {
        let lexical_ids: Vec<Uuid> = page.iter().filter(|(_, lexical)| *lexical).map(|(id, _)| *id).collect();
        let mut out: Vec<(StoredItem, String)> = self
            .store
            .fetch_matches(parsed, &lexical_ids)?
            .into_iter()
            .map(|c| (c.item, c.snippet))
            .collect();
        let rest: Vec<Uuid> = page
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !out.iter().any(|(item, _)| item.record.id == *id))
            .collect();
        for item in self.store.get(&rest)? {
            if item.deleted_at.is_none() {
                let snippet = marked_snippet(&item.record.body, words, 240);
                out.push((item, snippet));
            }
        }
        Ok(out)
    }

    /// Conjunctive first: items holding every query word. Only when they cannot fill the
    /// requested page does the search widen to items holding any word (ranked by BM25, so
    /// fuller matches still come first). Scoring every item that holds one common word is
    /// what makes a disjunctive search slow on a large memory; most agent queries are a few
    /// words that the wanted item holds together.
    fn lexical_matches(
        &self,
        parsed: &ParsedQuery,
        filters: &Filters,
        pool: usize,
        needed: usize,
    ) -> Result<Vec<LexicalMatch>> {
        let query = |combine| LexicalQuery { query: parsed.clone(), combine, filters: filters.clone(), pool };
        if parsed.include.len() > 1 {
            let all = self.store.search_lexical(&query(Combine::All))?;
            if all.len() >= needed {
                return Ok(all);
            }
        }
        Ok(self.store.search_lexical(&query(Combine::Any))?)
    }

    /// Hints computed from the index: hits a wider scope or fewer filters would give, and
    /// close spellings of query words the index does not know.
    fn suggestions(
        &self,
        req: &FindRequest,
        parsed: &ParsedQuery,
        filter: &ScopeFilter,
        filters: &Filters,
        found: usize,
    ) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let count = |filters: Filters| -> Result<usize> {
            let query = LexicalQuery { query: parsed.clone(), combine: Combine::Any, filters, pool: 0 };
            Ok(self.store.count_lexical(&query, COUNT_CAP)?)
        };
        let show = |n: usize| {
            if n >= COUNT_CAP { format!("{COUNT_CAP}+") } else { n.to_string() }
        };
        let mut level = filter.level;
        while let Some(wider) = level.wider() {
            level = wider;
            let wider_filter = filter.at_level(wider);
            let n = count(Filters { scope_equals: wider_filter.equals.clone(), ..filters.clone() })?;
            if n > found {
                out.push(format!(
                    "{} more hit(s) in {} scope: pass \"widen\": \"{}\"",
                    show(n - found),
                    wider.as_str(),
                    wider.as_str()
                ));
                break;
            }
        }
        if !req.types.is_empty() {
            let n = count(Filters { kinds: Vec::new(), ..filters.clone() })?;
            if n > found {
                out.push(format!("{} more hit(s) of other kinds: drop the `types` filter", show(n - found)));
            }
        }
        let narrowing: Vec<&str> = [
            (!req.tags.is_empty()).then_some("tags"),
            req.status.is_some().then_some("status"),
            req.since.is_some().then_some("since"),
            req.until.is_some().then_some("until"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !narrowing.is_empty() {
            let n = count(Filters {
                tags: Vec::new(),
                status: None,
                since: None,
                until: None,
                ..filters.clone()
            })?;
            if n > found {
                out.push(format!(
                    "{} more hit(s) without the {} filter(s)",
                    show(n - found),
                    narrowing.join(", ")
                ));
            }
        }
        let mut unknown = Vec::new();
        for word in parsed.words().into_iter().take(8) {
            if self.store.knows_word(word)? {
                continue;
            }
            unknown.push(word);
            let candidates = self.store.words_like(word)?;
            if let Some(term) = best_correction(word, candidates.iter().map(|(t, n)| (t.as_str(), *n))) {
                let surface = self.store.surface_word(term)?;
                out.push(format!("did you mean \"{surface}\" instead of \"{word}\"?"));
            }
        }
        if out.is_empty() {
            if !unknown.is_empty() {
                out.push(format!(
                    "no stored item contains {}: try the words the knowledge was written with",
                    unknown.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(", ")
                ));
            } else if filter.level != ScopeLevel::All {
                out.push(format!(
                    "only {found} hit(s) in {} scope and none elsewhere: try other words",
                    filter.level.as_str()
                ));
            }
            let common = self.common_words()?;
            if !common.is_empty() {
                out.push(format!("words common in this memory: {}", common.join(", ")));
            }
        }
        Ok(out)
    }

    fn common_words(&self) -> Result<Vec<String>> {
        let mut words = Vec::new();
        for (term, _) in self.store.top_terms(60)? {
            if term.chars().count() < 4 || is_stopword(&term) || term.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let word = self.store.surface_word(&term)?;
            if !words.contains(&word) {
                words.push(word);
            }
            if words.len() == 5 {
                break;
            }
        }
        Ok(words)
    }
}

/// One candidate of either route, with the fused relevance (0–1).
struct Candidate {
    id: Uuid,
    relevance: f64,
    updated_at: i64,
    scope: Scope,
    /// Whether the lexical route found it (and so FTS5 can cut its snippet).
    lexical: bool,
    /// The dense route's best chunk of it, and how many of its chunks matched.
    chunk: Option<Span>,
    chunks_matched: usize,
}

fn fused_candidates(
    lexical: &[LexicalMatch],
    dense: Option<&[DenseHit]>,
    lexical_weight: f64,
) -> Vec<Candidate> {
    let lex: Vec<(Uuid, f64)> = lexical.iter().map(|m| (m.id, m.score)).collect();
    let Some(dense) = dense else {
        let best = lex.iter().map(|(_, s)| *s).fold(0.0_f64, f64::max);
        return lexical
            .iter()
            .map(|m| Candidate {
                id: m.id,
                relevance: ranking::relevance(m.score, best),
                updated_at: m.updated_at,
                scope: m.scope.clone(),
                lexical: true,
                chunk: None,
                chunks_matched: 0,
            })
            .collect();
    };
    let dense_scores: Vec<(Uuid, f64)> = dense.iter().map(|d| (d.id, d.score as f64)).collect();
    let fused = fusion::fuse(&lex, &dense_scores, lexical_weight);
    let best = fused.first().map_or(0.0, |(_, s)| *s);
    let lexical_of: HashMap<Uuid, &LexicalMatch> = lexical.iter().map(|m| (m.id, m)).collect();
    let dense_of: HashMap<Uuid, &DenseHit> = dense.iter().map(|d| (d.id, d)).collect();
    fused
        .into_iter()
        .filter_map(|(id, score)| {
            let (m, d) = (lexical_of.get(&id), dense_of.get(&id));
            let (updated_at, scope) = match (m, d) {
                (Some(m), _) => (m.updated_at, &m.scope),
                (None, Some(d)) => (d.facts.updated_at, &d.facts.scope),
                (None, None) => return None,
            };
            Some(Candidate {
                id,
                relevance: ranking::relevance(score, best),
                updated_at,
                scope: scope.clone(),
                lexical: m.is_some(),
                chunk: d.and_then(|d| d.chunk),
                chunks_matched: d.map_or(0, |d| d.chunks_matched),
            })
        })
        .collect()
}

/// Points a hit found through a chunk at that chunk, with a snippet cut from it.
fn show_chunk(hit: &mut Hit, item: &StoredItem, c: &Candidate, words: &[&str]) {
    let Some((start, end)) = c.chunk else { return };
    let text = item.record.text();
    // Vectors are replaced with the text, so a chunk always fits it; the check keeps a
    // damaged store from panicking a find.
    let Some(part) = text.get(start as usize..end as usize) else { return };
    hit.snippet = marked_snippet(part, words, 240);
    hit.chunk = Some(ChunkView {
        heading_path: chunking::heading_path_at(text, start as usize),
        start: start as usize,
        end: end as usize,
    });
    hit.chunks_matched = c.chunks_matched;
}

fn filters_for(req: &FindRequest, filter: &ScopeFilter, now: i64) -> Filters {
    Filters {
        kinds: req.types.clone(),
        scope_equals: filter.equals.clone(),
        since: req.since,
        until: req.until,
        tags: req.tags.clone(),
        status: req.status.clone(),
        now,
        include_superseded: req.include_superseded,
        include_expired: req.include_expired,
    }
}

fn searched_scope(filter: &ScopeFilter) -> SearchedScope {
    let mut scope = Scope::default();
    let json: serde_json::Map<String, serde_json::Value> =
        filter.equals.iter().map(|(f, v)| (f.to_string(), serde_json::Value::String(v.clone()))).collect();
    if let Ok(s) = serde_json::from_value(serde_json::Value::Object(json)) {
        scope = s;
    }
    SearchedScope { level: filter.level.as_str().into(), filter: scope }
}

pub(crate) fn parts_for(item: &StoredItem, relevance: f64, filter: &ScopeFilter, now: i64) -> ScoreParts {
    ScoreParts {
        relevance,
        recency: ranking::recency(item.record.updated_at, now),
        scope_proximity: ranking::scope_proximity(ScopeMatch::between(&filter.caller, &item.record.scope)),
        citations: 0.0,
    }
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

pub(crate) fn hit(
    item: &StoredItem,
    parts: ScoreParts,
    snippet: String,
    confidence: f64,
    filter: &ScopeFilter,
    max_chars: usize,
) -> Hit {
    let r = &item.record;
    let text = r.text();
    let (cut, truncated) = truncate_chars(text, max_chars);
    let data = r.data.as_object().filter(|d| !d.is_empty()).map(|_| r.data.clone());
    Hit {
        id: r.id.to_string(),
        kind: r.kind.to_string(),
        title: r.title.clone(),
        snippet,
        content: (max_chars > 0).then(|| cut.to_string()),
        content_truncated: truncated,
        score: round(parts.total()),
        score_parts: ScoreBreakdown {
            relevance: round(parts.relevance),
            recency: round(parts.recency),
            scope_proximity: parts.scope_proximity,
            citations: parts.citations,
        },
        scope: r.scope.clone(),
        scope_match: ScopeMatch::between(&filter.caller, &r.scope),
        created_at: format_instant(r.created_at),
        updated_at: format_instant(r.updated_at),
        confidence: round(confidence),
        tags: r.tags.clone(),
        status: r.status.clone(),
        data,
        metadata: r.metadata.clone(),
        expires_at: r.expires_at.map(format_instant),
        superseded_by: item.superseded_by.map(|id| id.to_string()),
        stale: cortex_domain::lifecycle::is_stale(r.kind, &r.data, r.updated_at, crate::now_ms()),
        expanded: false,
        path: Vec::new(),
        relations: Vec::new(),
        observations: Vec::new(),
        chunk: None,
        chunks_matched: 0,
    }
}

/// Keeps the serialized response under [`MAX_RESPONSE_CHARS`]: first drops the content of the
/// lowest-ranked hits (their snippets stay), then the hits themselves. Returns whether any
/// hit was dropped.
fn fit_budget(response: &mut FindResponse) -> bool {
    let size = |r: &FindResponse| serde_json::to_string(r).map(|s| s.len()).unwrap_or(0);
    if size(response) <= MAX_RESPONSE_CHARS {
        return false;
    }
    response.truncated = true;
    for i in (0..response.hits.len()).rev() {
        if response.hits[i].content.take().is_some() {
            response.hits[i].content_truncated = true;
        }
        if size(response) <= MAX_RESPONSE_CHARS {
            return false;
        }
    }
    response.notes.push("response cut to stay under 25,000 tokens: the rest is on the next page".into());
    while size(response) > MAX_RESPONSE_CHARS && response.hits.pop().is_some() {}
    true
}
