//! `cortex-bench eval --recall-hook`: how well `cortex recall` (the prompt-submit hook) chooses
//! what to inject, lexical-only and hybrid, on one memory. Each prompt is weighed as the hook
//! weighs it (`Lab::recall_weighed`: the same candidates and rule), in its own scope:
//! - the dataset's questions: **answer hit** (questions whose injection holds a relevant
//!   item), **precision** (injected items that are relevant; and injections holding one),
//!   questions with any injection, items and tokens per injection;
//! - **unrelated prompts**, which nothing stored answers: the everyday coding asks of
//!   `data/coding-asks` asked in every scope, and another dataset's queries
//!   (`--unrelated-dataset`: SciFact's claims against a conversation, a conversation's
//!   questions against SciFact) each asked in one scope — the share that injects anything.
//!
//! Rules are replayed over candidates fetched once per prompt and mode: the tuned rule, the
//! lexical floors, and the hybrid rule with its constants varied. `--dump` writes every
//! prompt's candidates (doc ids, relevance, cosine, strength) for offline study.

use super::dataset::Judged;
use crate::output;
use cortex_domain::recall::{self, Candidate, Hybrid, Rule};
use cortex_domain::{Scope, ScopeLevel};
use cortex_service::MemoryService;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The everyday coding asks (see `data/coding-asks/README.md`).
const CODING_ASKS: &str = include_str!("../../data/coding-asks/queries.csv");

/// The coding asks, one per line after the header.
pub fn coding_asks() -> Vec<String> {
    CODING_ASKS.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Which prompts a prompt is: a judged question, or one of a set of unrelated prompts.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Set {
    Question,
    Coding,
    Other,
}

/// One prompt asked in one scope.
struct Ask {
    set: Set,
    text: String,
    /// The conversation it is asked in; `None`: every scope.
    scope: Option<String>,
    /// Relevant doc ids (questions only).
    relevant: Vec<String>,
}

/// One prompt's candidates under one mode.
struct Weighed {
    candidates: Vec<Candidate>,
    rule: Rule,
    time: Duration,
}

/// A mode: whether the dense route may run.
const MODES: [(&str, bool); 2] = [("lexical", false), ("hybrid", true)];

pub fn run(
    service: &MemoryService,
    questions: &[Judged],
    other: &[Judged],
    doc_of: &HashMap<String, String>,
    dump: Option<&std::path::Path>,
) -> Result<(), String> {
    let asks = asks(questions, other);
    let mut by_mode: Vec<Vec<Weighed>> = Vec::new();
    let mut lines = String::new();
    for (mode, dense) in MODES {
        let mut weighed = Vec::with_capacity(asks.len());
        for (n, ask) in asks.iter().enumerate() {
            if n % 500 == 0 {
                tracing::info!(mode, n, of = asks.len(), "recall hook: weighing prompts");
            }
            let scope = ask.scope.as_ref().map(|c| Scope { project: Some(c.clone()), ..Scope::default() });
            let level = if scope.is_some() { None } else { Some(ScopeLevel::All) };
            let started = Instant::now();
            let w = service
                .lab()
                .recall_weighed(&ask.text, scope.as_ref(), level, dense)
                .map_err(|e| e.to_string())?;
            let time = started.elapsed();
            if dense && w.lexical_only.is_some() {
                return Err(format!(
                    "the hybrid mode ran lexical only ({}): set CORTEX_MODEL_DIR",
                    w.lexical_only.unwrap_or_default()
                ));
            }
            if dump.is_some() {
                let docs: Vec<serde_json::Value> = w
                    .candidates
                    .iter()
                    .map(|c| json!([doc_of.get(&c.id), c.relevance, c.cosine, c.strength]))
                    .collect();
                let set = ["question", "coding", "other"][ask.set as usize];
                lines.push_str(
                    &json!({"mode": mode, "set": set, "text": ask.text, "scope": ask.scope,
                            "relevant": ask.relevant, "candidates": docs})
                    .to_string(),
                );
                lines.push('\n');
            }
            weighed.push(Weighed { candidates: w.candidates, rule: w.rule, time });
        }
        by_mode.push(weighed);
    }
    if let Some(path) = dump {
        std::fs::write(path, lines).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    report(&asks, &by_mode, doc_of);
    Ok(())
}

/// The questions, each in its own scope; the coding asks in every scope; the other dataset's
/// queries each in one scope, taking the scopes in turn.
fn asks(questions: &[Judged], other: &[Judged]) -> Vec<Ask> {
    let conversations: Vec<String> = questions
        .iter()
        .filter_map(|q| q.conversation.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let scopes: Vec<Option<String>> =
        if conversations.is_empty() { vec![None] } else { conversations.into_iter().map(Some).collect() };
    let mut asks: Vec<Ask> = questions
        .iter()
        .map(|q| Ask {
            set: Set::Question,
            text: q.text.clone(),
            scope: q.conversation.clone(),
            relevant: q.relevant.iter().filter(|(_, g)| **g > 0.0).map(|(d, _)| d.clone()).collect(),
        })
        .collect();
    for text in coding_asks() {
        for scope in &scopes {
            asks.push(Ask {
                set: Set::Coding,
                text: text.clone(),
                scope: scope.clone(),
                relevant: Vec::new(),
            });
        }
    }
    for (i, q) in other.iter().enumerate() {
        let scope = scopes[i % scopes.len()].clone();
        asks.push(Ask { set: Set::Other, text: q.text.clone(), scope, relevant: Vec::new() });
    }
    asks
}

/// What one rule does over every prompt of one mode.
#[derive(Default)]
struct Tally {
    questions: usize,
    injected: usize,
    holding: usize,
    shown: usize,
    relevant_shown: usize,
    tokens: usize,
    coding: (usize, usize),
    other: (usize, usize),
}

fn tally(asks: &[Ask], weighed: &[Weighed], rule: Option<&Rule>, doc_of: &HashMap<String, String>) -> Tally {
    let mut t = Tally::default();
    for (ask, w) in asks.iter().zip(weighed) {
        let rule = rule.unwrap_or(&w.rule);
        let selected = recall::select(w.candidates.clone(), rule);
        let injection = recall::render(&selected, recall::DEFAULT_BUDGET_TOKENS, 0);
        let injects = !injection.ids.is_empty();
        match ask.set {
            Set::Question => {
                t.questions += 1;
                if injects {
                    t.injected += 1;
                    t.shown += injection.ids.len();
                    t.tokens += injection.tokens;
                    let relevant = injection
                        .ids
                        .iter()
                        .filter(|id| doc_of.get(*id).is_some_and(|d| ask.relevant.contains(d)))
                        .count();
                    t.relevant_shown += relevant;
                    t.holding += usize::from(relevant > 0);
                }
            }
            Set::Coding => t.coding = (t.coding.0 + usize::from(injects), t.coding.1 + 1),
            Set::Other => t.other = (t.other.0 + usize::from(injects), t.other.1 + 1),
        }
    }
    t
}

fn report(asks: &[Ask], by_mode: &[Vec<Weighed>], doc_of: &HashMap<String, String>) {
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let unrelated = |(n, of): (usize, usize)| {
        if of == 0 { "–".to_string() } else { format!("{n} of {of} ({:.1}%)", 100.0 * share(n, of)) }
    };
    let row = |label: &str, t: &Tally| {
        output::line(&format!(
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.0} | {} | {} |",
            share(t.holding, t.questions),
            share(t.relevant_shown, t.shown),
            share(t.holding, t.injected),
            share(t.injected, t.questions),
            share(t.shown, t.injected),
            share(t.tokens, t.injected),
            unrelated(t.coding),
            unrelated(t.other),
        ))
    };
    output::line(&format!(
        "\nrecall hook, {} questions; unrelated: {} coding asks, {} other prompts (each in its scope)",
        asks.iter().filter(|a| a.set == Set::Question).count(),
        asks.iter().filter(|a| a.set == Set::Coding).count(),
        asks.iter().filter(|a| a.set == Set::Other).count(),
    ));
    output::line(
        "| rule | answer hit | precision (items) | precision (injections) | questions injected | items per injection | tokens per injection | coding asks injected | other prompts injected |",
    );
    output::line("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ((mode, _), weighed) in MODES.iter().zip(by_mode) {
        row(&format!("**{mode} (the hook's rule)**"), &tally(asks, weighed, None, doc_of));
    }
    let (lexical, hybrid) = (&by_mode[0], &by_mode[1]);
    for floor in [0.5, 0.6, 0.75, 1.0] {
        row(
            &format!("lexical, floor {floor:.2}"),
            &tally(asks, lexical, Some(&Rule::Lexical { floor }), doc_of),
        );
    }
    let tuned = Hybrid::TUNED;
    for gate in [0.3, 0.35, 0.45, 0.5] {
        let rule = Rule::Hybrid(Hybrid { gate, ..tuned });
        row(&format!("hybrid, gate {gate:.2}"), &tally(asks, hybrid, Some(&rule), doc_of));
    }
    for more_relevance in [0.8, 0.9, 1.01] {
        let rule = Rule::Hybrid(Hybrid { more_relevance, ..tuned });
        row(
            &format!("hybrid, more at {more_relevance:.2} of the best"),
            &tally(asks, hybrid, Some(&rule), doc_of),
        );
    }
    for more_strength in [0.0, 0.6, 1.01] {
        let rule = Rule::Hybrid(Hybrid { more_strength, ..tuned });
        row(
            &format!("hybrid, more holding {more_strength:.2} of the words"),
            &tally(asks, hybrid, Some(&rule), doc_of),
        );
    }
    for ((mode, _), weighed) in MODES.iter().zip(by_mode) {
        let mut times: Vec<Duration> = weighed.iter().map(|w| w.time).collect();
        times.sort();
        let at =
            |p: f64| times[((p * times.len() as f64).ceil() as usize).saturating_sub(1).min(times.len() - 1)];
        output::line(&format!(
            "{mode}: candidates in-process p50 {:.1} ms, p95 {:.1} ms (the process's start, the model's load and the index's opening not counted: `bench --recall`)",
            at(0.5).as_secs_f64() * 1000.0,
            at(0.95).as_secs_f64() * 1000.0
        ));
    }
}
