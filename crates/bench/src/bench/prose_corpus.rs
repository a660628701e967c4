//! The corpus and queries of `cortex-bench bench --prose` (`prose.rs`), from a BEIR dataset's
//! abstracts (e.g. SciFact): real vocabulary and term statistics, at any number of items.
//!
//! - An item is 3 sentences drawn at random (seed 42) from all the abstracts' sentences,
//!   titled with the title of the abstract its first sentence comes from. Kinds cycle over six
//!   kinds with a title and a prose field (section, decision, incident, risk, issue,
//!   assumption); half the items are at the caller's scope (acme/api@main), the others spread
//!   over the synthetic corpus's projects and branches. The items of a smaller size are the
//!   first items of a larger one.
//! - Queries: the dataset's test claims (natural language, held apart: never stored), and
//!   two-word queries: two distinct content words of a random sentence of a stored item.
//! - Vectors (`--semantic`): each distinct sentence is embedded once, and an item's vector is
//!   the normalized mean of its 3 sentences' vectors, so 100k items need 45k embeddings, not
//!   100k, and the dense route still compares real vectors of the item's words.

use crate::corpus::{BRANCHES, PROJECTS, Rng};
use crate::eval::dataset::{lines, read_queries};
use cortex_service::MemoryService;
use cortex_store::{ItemVectors, Store};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Sentences per item.
const PER_ITEM: usize = 3;

/// Words too common to make a two-word query.
const STOPWORDS: &[&str] = &[
    "about", "after", "also", "among", "been", "being", "between", "both", "could", "does", "during", "each",
    "from", "have", "here", "into", "more", "most", "much", "only", "other", "over", "same", "some", "such",
    "than", "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "thus",
    "under", "upon", "very", "were", "what", "when", "where", "whether", "which", "while", "with", "within",
    "without", "would", "whose", "however", "using", "used",
];

/// The abstracts' sentences, each with the abstract it comes from.
pub struct Prose {
    pub sentences: Vec<String>,
    source: Vec<usize>,
    titles: Vec<String>,
}

/// The sentences of an item, as indices into [`Prose::sentences`].
pub type Picks = [usize; PER_ITEM];

impl Prose {
    pub fn read(dataset: &Path) -> Result<Prose, String> {
        let mut prose = Prose { sentences: Vec::new(), source: Vec::new(), titles: Vec::new() };
        for doc in lines(&dataset.join("corpus.jsonl"))? {
            let abstract_index = prose.titles.len();
            let title: String = doc["title"].as_str().unwrap_or("").chars().take(200).collect();
            prose.titles.push(title);
            for sentence in split_sentences(doc["text"].as_str().unwrap_or("")) {
                prose.sentences.push(sentence.to_string());
                prose.source.push(abstract_index);
            }
        }
        if prose.sentences.len() < PER_ITEM {
            return Err(format!("{} holds too few sentences", dataset.display()));
        }
        Ok(prose)
    }

    /// The first `n` items' sentences (deterministic; a prefix of any larger `n`'s).
    pub fn picks(&self, n: usize) -> Vec<Picks> {
        let mut rng = Rng::new(42);
        (0..n).map(|_| [(); PER_ITEM].map(|()| rng.below(self.sentences.len()))).collect()
    }

    /// Item number `i`, as `memory_store` takes it.
    pub fn item(&self, i: usize, picks: &Picks) -> Value {
        let mut rng = Rng::new(0x5eed ^ i as u64);
        let title = self.titles[self.source[picks[0]]].as_str();
        let text = picks.iter().map(|&s| self.sentences[s].as_str()).collect::<Vec<_>>().join(" ");
        let (kind, data) = match i % 6 {
            0 => ("section", json!({"title": title, "body": text})),
            1 => (
                "decision",
                json!({"title": title, "component": "research", "status": "accepted", "rationale": text}),
            ),
            2 => (
                "incident",
                json!({"title": title, "severity": rng.pick(&["critical", "high", "medium", "low"]),
                       "impact": text, "resolution_status": rng.pick(&["open", "mitigated", "resolved"])}),
            ),
            3 => (
                "risk",
                json!({"title": title, "category": rng.pick(&["technical", "operational", "compliance"]),
                       "risk_level": rng.pick(&["low", "medium", "high"]), "status": "open", "mitigation": text}),
            ),
            4 => (
                "issue",
                json!({"tracker": "github", "external_id": format!("{}", 1000 + i), "title": title,
                       "status": rng.pick(&["open", "in_progress", "resolved"]), "description": text}),
            ),
            _ => (
                "assumption",
                json!({"title": title, "description": text,
                       "validation_status": rng.pick(&["unvalidated", "validated", "needs_review"])}),
            ),
        };
        let (project, branch) =
            if rng.below(2) == 0 { ("api", "main") } else { (rng.pick(PROJECTS), rng.pick(BRANCHES)) };
        json!({"kind": kind, "data": data, "scope": {"org": "acme", "project": project, "branch": branch}})
    }

    /// `n` queries of two distinct content words of a random sentence of one of `items`.
    pub fn two_word_queries(&self, items: &[Picks], n: usize, seed: u64) -> Vec<String> {
        let mut rng = Rng::new(seed);
        let mut queries = Vec::with_capacity(n);
        while queries.len() < n && !items.is_empty() {
            let item = &items[rng.below(items.len())];
            let words = content_words(&self.sentences[item[rng.below(PER_ITEM)]]);
            if words.len() < 2 {
                continue;
            }
            let first = rng.below(words.len());
            let second = (first + 1 + rng.below(words.len() - 1)) % words.len();
            queries.push(format!("{} {}", words[first], words[second]));
        }
        queries
    }
}

/// The dataset's claims judged in its test split (SciFact: 300), at most `n`.
pub fn claims(dataset: &Path, n: usize) -> Result<Vec<String>, String> {
    Ok(read_queries(dataset, "test")?.into_iter().map(|q| q.text).take(n).collect())
}

/// Sentences of an abstract: split after `.`, `?` or `!` followed by a space and a capital, a
/// digit or a bracket; fragments of fewer than 5 words are left out.
pub fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let ends = matches!(b, b'.' | b'?' | b'!')
            && bytes.get(i + 1) == Some(&b' ')
            && bytes.get(i + 2).is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'(');
        if ends {
            out.push(text[start..=i].trim());
            start = i + 1;
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| s.split_whitespace().count() >= 5);
    out
}

/// Distinct lowercase words of 4+ letters that are not stopwords.
fn content_words(sentence: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for raw in sentence.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if word.chars().count() >= 4
            && word.chars().all(char::is_alphabetic)
            && !STOPWORDS.contains(&word.as_str())
            && !words.contains(&word)
        {
            words.push(word);
        }
    }
    words
}

/// Stores the items of `picks` through `memory_store` in batches of 100 (`service` has no
/// embedder: the rate is the lexical index's), then, given the sentences' vectors, sets each
/// item's vector (their mean) in `store` directly. The time the stores took.
pub fn fill(
    service: &MemoryService,
    store: &dyn Store,
    prose: &Prose,
    picks: &[Picks],
    sentence_vectors: Option<&[Vec<f32>]>,
) -> Result<Duration, String> {
    let (time, ids) = store_from(service, prose, 0, picks)?;
    if let Some(sentence_vectors) = sentence_vectors {
        set_vectors(service, store, &ids, picks, sentence_vectors)?;
    }
    Ok(time)
}

/// Stores the items numbered from `first` (`picks` are theirs) through `memory_store` in
/// batches of 100: a database grown in steps holds the same items as one filled at once. The
/// time the stores took, and the items' ids in order.
pub fn store_from(
    service: &MemoryService,
    prose: &Prose,
    first: usize,
    picks: &[Picks],
) -> Result<(Duration, Vec<uuid::Uuid>), String> {
    let mut time = Duration::ZERO;
    let mut ids = Vec::with_capacity(picks.len());
    for (batch, chunk) in picks.chunks(100).enumerate() {
        let items: Vec<Value> =
            chunk.iter().enumerate().map(|(i, p)| prose.item(first + batch * 100 + i, p)).collect();
        let t = Instant::now();
        let response = super::store_items(service, &items)?;
        time += t.elapsed();
        for result in &response.results {
            let id = result.id.as_deref().or(result.existing_id.as_deref()).ok_or_else(|| {
                format!("item {} of batch {batch} was not stored: {:?}", result.index, result.reason)
            })?;
            ids.push(uuid::Uuid::parse_str(id).map_err(|e| e.to_string())?);
        }
    }
    Ok((time, ids))
}

/// Sets each item's vector (the mean of its sentences' vectors) in `store` directly, the
/// embedding model recorded first.
pub fn set_vectors(
    service: &MemoryService,
    store: &dyn Store,
    ids: &[uuid::Uuid],
    picks: &[Picks],
    sentence_vectors: &[Vec<f32>],
) -> Result<(), String> {
    let model = format!("{}:{}", cortex_embed::MINILM_ID, cortex_embed::MINILM_DIMENSION);
    service
        .transfer()
        .accept_embedding_model(Some(&model))
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    for (ids, picks) in ids.chunks(1_000).zip(picks.chunks(1_000)) {
        let rows: Vec<ItemVectors> = ids
            .iter()
            .zip(picks)
            .map(|(&id, p)| ItemVectors { id, vector: item_vector(sentence_vectors, p), chunks: vec![] })
            .collect();
        store.set_vectors(&rows).map_err(|e| e.to_string())?;
    }
    tracing::info!(seconds = t.elapsed().as_secs_f64(), "item vectors set");
    Ok(())
}

/// The unit-length mean of an item's sentence vectors.
pub fn item_vector(sentence_vectors: &[Vec<f32>], picks: &Picks) -> Vec<f32> {
    let dimension = sentence_vectors[picks[0]].len();
    let mut mean = vec![0.0f32; dimension];
    for &s in picks {
        for (m, v) in mean.iter_mut().zip(&sentence_vectors[s]) {
            *m += v;
        }
    }
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    mean.iter().map(|x| x / norm).collect()
}

/// Every sentence's vector by the local model, read from `<dir>/prose-sentences-<n>x<d>.f32`
/// when an earlier run left it there (little-endian f32s, sentence after sentence).
pub fn sentence_vectors(prose: &Prose, model_dir: &Path, dir: &Path) -> Result<Vec<Vec<f32>>, String> {
    let dimension = cortex_embed::MINILM_DIMENSION;
    let n = prose.sentences.len();
    let cache = dir.join(format!("prose-sentences-{n}x{dimension}.f32"));
    if let Ok(bytes) = std::fs::read(&cache)
        && bytes.len() == n * dimension * 4
    {
        let floats: Vec<f32> =
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        return Ok(floats.chunks(dimension).map(<[f32]>::to_vec).collect());
    }
    let model = cortex_embed::LocalModel::load(model_dir).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let mut vectors = Vec::with_capacity(n);
    for batch in prose.sentences.chunks(256) {
        let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
        vectors.extend(model.embed(&texts).map_err(|e| e.to_string())?);
        if vectors.len() % 5_120 < 256 {
            tracing::info!(done = vectors.len(), of = n, "embedding the sentences");
        }
    }
    tracing::info!(seconds = started.elapsed().as_secs(), sentences = n, "sentences embedded");
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&cache, bytes).map_err(|e| e.to_string())?;
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_full_stops_before_a_capital() {
        let text = "Cells grow in culture media. Too short. 15 mice were tested, e.g. in vivo. \
                    The rate rose by 3.5 percent.";
        assert_eq!(
            split_sentences(text),
            [
                "Cells grow in culture media.",
                "15 mice were tested, e.g. in vivo.",
                "The rate rose by 3.5 percent."
            ]
        );
    }

    #[test]
    fn content_words_skip_short_words_numbers_and_stopwords() {
        assert_eq!(
            content_words("The p53 protein binds with DNA, which regulates apoptosis."),
            ["protein", "binds", "regulates", "apoptosis"]
        );
    }
}
