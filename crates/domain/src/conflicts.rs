//! Possible contradictions: two decisions (or runbooks, or sections) in force in the same
//! scope that look close enough that the newer may contradict, replace or duplicate the older.
//! Nothing is refused on it: the store's result names the older one and how to supersede it.
//!
//! "Close", from what the memory holds (the words are stemmed, English stopwords and the words
//! every decision record repeats — "context", "decision", "option", "use"… — left out):
//! - the same specific component (a decision's `component`, a runbook's `service`; not the
//!   project's own name, which the ingest of a project's records gives them all) and titles
//!   sharing a word: two answers to one question;
//! - titles sharing half their words, two at least (Jaccard ≥ 0.5): one question answered
//!   again, however differently the texts argue;
//! - titles sharing a third of their words (Jaccard ≥ 0.3) and texts alike (the cosine of
//!   their word counts ≥ 0.55);
//! - or texts alike whatever their titles (≥ 0.7): the same decision written twice.
//!
//! Two sections of one document are its parts, not rivals: never close. The thresholds were
//! set on the real decision records of five projects (`crates/service/tests/suite/conflicts.rs`),
//! which also measures the rule: BENCHMARKS.md has the figures.

use crate::kind::Kind;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::{BTreeSet, HashMap};

/// Titles sharing this share of their words (with similar texts) are close.
pub const TITLE_SHARE: f64 = 0.3;
/// Titles sharing this share of their words (two at least) are close whatever their texts:
/// one question answered again ("Use the ADR number as its unique ID", "… slug …").
pub const TITLE_ALONE: f64 = 0.5;
/// The text cosine that goes with [`TITLE_SHARE`].
pub const TEXT_WITH_TITLE: f64 = 0.55;
/// Texts this similar are close whatever their titles.
pub const TEXT_ALONE: f64 = 0.7;
/// The characters of a text its profile reads (its opening); longer texts are compared by it.
pub const PROFILED_CHARS: usize = 16_384;

/// The words decision records (and their templates) all use, which say nothing of the topic
/// (compared stemmed).
const BOILERPLATE: &[&str] = &[
    "accepted",
    "adr",
    "alternatives",
    "bad",
    "because",
    "chosen",
    "cons",
    "consequences",
    "considered",
    "context",
    "date",
    "decided",
    "decision",
    "description",
    "drivers",
    "example",
    "good",
    "information",
    "links",
    "more",
    "negative",
    "neutral",
    "option",
    "outcome",
    "positive",
    "pros",
    "problem",
    "proposed",
    "rationale",
    "record",
    "statement",
    "status",
    "story",
    "technical",
    "title",
    "use",
];

/// [`BOILERPLATE`], stemmed.
fn boilerplate() -> &'static std::collections::HashSet<String> {
    static STEMS: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    STEMS.get_or_init(|| {
        let stemmer = Stemmer::create(Algorithm::English);
        BOILERPLATE.iter().map(|w| stemmer.stem(w).into_owned()).collect()
    })
}

/// The kinds checked: knowledge that is in force until replaced.
pub fn checked(kind: Kind) -> bool {
    matches!(kind, Kind::Decision | Kind::Runbook | Kind::Section)
}

/// Whether an item of `kind` with `status` is in force: a decision neither rejected, deprecated
/// nor superseded; a section not archived; any runbook.
pub fn in_force(kind: Kind, status: Option<&str>) -> bool {
    match kind {
        Kind::Decision => !matches!(status, Some("rejected" | "deprecated" | "superseded")),
        Kind::Section => status != Some("archived"),
        Kind::Runbook => true,
        _ => false,
    }
}

/// The field of a kind's data that names what it is about.
pub fn topic_field(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Decision => Some("component"),
        Kind::Runbook => Some("service"),
        Kind::Section => Some("document"),
        _ => None,
    }
}

/// An item as the check reads it, its words counted once.
#[derive(Debug, Clone)]
pub struct Profile {
    kind: Kind,
    title: BTreeSet<String>,
    words: HashMap<String, f64>,
    norm: f64,
    topic: Option<String>,
}

impl Profile {
    /// `topic`: the item's component (service, document), if any; `text`: its searchable body.
    pub fn of(kind: Kind, title: &str, text: &str, topic: Option<&str>) -> Profile {
        let stemmer = Stemmer::create(Algorithm::English);
        let title: BTreeSet<String> = content_words(&stemmer, title).collect();
        // Each distinct word is stemmed once, however often a long text repeats it; a text's
        // opening says what it is about, so only the first [`PROFILED_CHARS`] are read, which
        // bounds the check's cost per item whatever the item's length.
        let (text, _) = crate::text::truncate_chars(text, PROFILED_CHARS);
        let mut seen: HashMap<String, f64> = HashMap::new();
        for w in crate::query::words_of(text) {
            *seen.entry(w).or_default() += 1.0;
        }
        let mut words: HashMap<String, f64> = HashMap::new();
        for (w, n) in seen {
            if let Some(stem) = content_word(&stemmer, &w) {
                *words.entry(stem).or_default() += n;
            }
        }
        let norm = words.values().map(|n| n * n).sum::<f64>().sqrt();
        let topic = topic.map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty());
        Profile { kind, title, words, norm, topic }
    }
}

fn content_words<'a>(stemmer: &'a Stemmer, text: &'a str) -> impl Iterator<Item = String> + 'a {
    crate::query::words_of(text).into_iter().filter_map(move |w| content_word(stemmer, &w))
}

/// A word's stem, unless the word says nothing (a stopword, a number, boilerplate).
fn content_word(stemmer: &Stemmer, word: &str) -> Option<String> {
    if crate::query::is_stopword(word) || word.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let stem = stemmer.stem(word).into_owned();
    (stem.len() > 1 && !boilerplate().contains(&stem)).then_some(stem)
}

/// Why two items look close.
#[derive(Debug, Clone, PartialEq)]
pub struct Closeness {
    pub why: String,
    /// The texts' cosine, 0–1.
    pub text: f64,
}

/// Whether `a` and `b` (of one kind, in force, in one scope) are close, and why. `project` is
/// the scope's project: a component that only names it says nothing.
pub fn closeness(a: &Profile, b: &Profile, project: Option<&str>) -> Option<Closeness> {
    let shared: Vec<&String> = a.title.intersection(&b.title).collect();
    let union = a.title.union(&b.title).count();
    let title = if union == 0 { 0.0 } else { shared.len() as f64 / union as f64 };
    let text = cosine(a, b);
    let project = project.map(str::to_lowercase);
    let same_topic = a.topic.is_some() && a.topic == b.topic && a.topic != project;
    if same_topic && a.kind == Kind::Section && b.kind == Kind::Section {
        return None;
    }
    let shared_words = || shared.iter().map(|w| w.as_str()).collect::<Vec<_>>().join(", ");
    let why = if same_topic && !shared.is_empty() {
        format!("same component {}; titles share {}", a.topic.as_deref().unwrap_or_default(), shared_words())
    } else if title >= TITLE_ALONE && shared.len() >= 2 {
        format!("titles share {}", shared_words())
    } else if title >= TITLE_SHARE && text >= TEXT_WITH_TITLE {
        format!("titles share {}; texts {:.0}% alike", shared_words(), text * 100.0)
    } else if text >= TEXT_ALONE {
        format!("texts {:.0}% alike", text * 100.0)
    } else {
        return None;
    };
    Some(Closeness { why, text })
}

fn cosine(a: &Profile, b: &Profile) -> f64 {
    if a.norm == 0.0 || b.norm == 0.0 {
        return 0.0;
    }
    let (small, large) = if a.words.len() <= b.words.len() { (a, b) } else { (b, a) };
    let dot: f64 = small.words.iter().filter_map(|(w, n)| large.words.get(w).map(|m| n * m)).sum();
    dot / (a.norm * b.norm)
}

/// The one line a result carries: how to make `new` replace `old`.
pub fn supersede_hint(new: &str, old: &str) -> String {
    format!(
        "if it replaces {old}: {{\"items\": [{{\"operation\": \"delete\", \"id\": \"{new}\"}}, <this item with \"supersedes\": \"{old}\">]}}; if both hold, nothing to do"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(component: &str, title: &str, rationale: &str) -> Profile {
        Profile::of(Kind::Decision, title, &format!("{title}\n{component}\n{rationale}"), Some(component))
    }

    #[test]
    fn two_answers_to_one_components_question_are_close() {
        let jwt = decision("auth", "Use JWT for sessions", "stateless tokens");
        let opaque = decision("auth", "Use opaque session tokens", "revocable on logout");
        let why = closeness(&opaque, &jwt, Some("api")).unwrap().why;
        assert_eq!(why, "same component auth; titles share session");
        // Another question of the same component, or the same words for another component.
        let hashing = decision("auth", "Hash passwords with argon2", "memory-hard");
        assert_eq!(closeness(&hashing, &jwt, Some("api")), None);
        let cache = decision("cache", "Cache sessions in memory", "fast");
        assert_eq!(closeness(&cache, &jwt, Some("api")), None);
        // A component naming the whole project is no component.
        let a = decision("api", "Use JWT for sessions", "x");
        let b = decision("api", "Sessions expire after an hour", "y");
        assert_eq!(closeness(&a, &b, Some("api")), None);
    }

    #[test]
    fn the_same_decision_written_twice_is_close_whatever_its_title() {
        let text = "Store the audit trail in an append-only table written by database triggers";
        let a = decision("audit", "Audit in the database", text);
        let b = decision("storage", "Triggers write the trail", text);
        assert!(closeness(&a, &b, None).unwrap().why.starts_with("texts"));
        // Two sections of one document are parts of it.
        let part = |title: &str| Profile::of(Kind::Section, title, text, Some("README.md"));
        assert_eq!(closeness(&part("Setup"), &part("Install"), None), None);
    }

    #[test]
    fn one_question_answered_again_is_close_whatever_the_texts_say() {
        let number = decision("adr", "Use the ADR number as its unique ID", "sequential, short to cite");
        let slug = decision("adr", "Use the ADR slug as its unique ID", "no merge conflicts on numbers");
        assert_eq!(closeness(&slug, &number, Some("adr")).unwrap().why, "titles share id, uniqu");
        // One shared word of two short titles is not enough on its own.
        let help = decision("cli", "Help scripts", "x");
        assert_eq!(closeness(&help, &decision("cli2", "Help comments", "y"), None), None);
    }

    #[test]
    fn in_force_leaves_out_what_was_replaced() {
        assert!(in_force(Kind::Decision, Some("accepted")) && in_force(Kind::Decision, Some("proposed")));
        assert!(!in_force(Kind::Decision, Some("superseded")) && !in_force(Kind::Decision, Some("rejected")));
        assert!(!in_force(Kind::Section, Some("archived")) && in_force(Kind::Runbook, None));
        assert!(!in_force(Kind::Todo, None));
    }
}
