//! `cortex-bench eval --recall-hook`: how well `cortex recall` (the prompt-submit hook) chooses what
//! to inject, across candidate floors. Each question is the prompt, searched as the hook
//! searches it (lexical, in the question's own scope). Per floor:
//! - injected: the share of questions for which anything is printed;
//! - precision: of those injections, the share holding a relevant item;
//! - recall: the share of all questions that get a relevant item;
//! - foreign: on a conversational set, each question asked of the next conversation, where
//!   nothing answers it — the share that still injects (lower is better);
//! - unrelated: prompts about nothing a memory holds ([`UNRELATED`]), asked in every scope —
//!   how many inject anything.

use super::dataset::Judged;
use crate::output;
use cortex_domain::recall::{self, Candidate};
use cortex_domain::{Scope, ScopeLevel};
use cortex_service::MemoryService;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The floors compared.
const FLOORS: &[f64] = &[0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.66, 0.75, 0.8, 1.0];

/// Prompts an agent gets that no memory of a project or a conversation should answer: small
/// talk, general knowledge, and generic coding requests.
pub const UNRELATED: &[&str] = &[
    "what's the weather like today?",
    "write a haiku about the sea",
    "tell me a joke",
    "thanks, that looks good",
    "ok, continue",
    "what time is it in Tokyo right now?",
    "write a python function that reverses a string",
    "explain the difference between a process and a thread",
    "convert this JSON to YAML",
    "how do I center a div with CSS?",
    "write a bash one-liner that counts lines in all .txt files",
    "what does the ? operator do in Rust?",
    "refactor this loop into a list comprehension",
    "add type hints to this function",
    "generate a regular expression that matches email addresses",
    "what is the capital of Australia?",
    "summarize the plot of Hamlet in two sentences",
    "translate 'good morning' into Spanish",
    "explain big O notation with an example",
    "write unit tests for a fibonacci function",
];

/// The questions' candidates, fetched once, scored at every floor.
struct Asked {
    /// Per question: its candidates, and whether each is relevant.
    own: Vec<Vec<(Candidate, bool)>>,
    /// Per question asked of another conversation: its candidates.
    foreign: Vec<Vec<Candidate>>,
    /// Per unrelated prompt and scope: its candidates.
    unrelated: Vec<Vec<Candidate>>,
    times: Vec<Duration>,
}

pub fn run(
    service: &MemoryService,
    queries: &[Judged],
    doc_of: &HashMap<String, String>,
) -> Result<(), String> {
    let conversations: Vec<&str> = queries
        .iter()
        .filter_map(|q| q.conversation.as_deref())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let ask = |prompt: &str, conversation: Option<&str>| -> Result<Vec<Candidate>, String> {
        let result = match conversation {
            Some(c) => {
                let scope = Scope { project: Some(c.to_string()), ..Scope::default() };
                service.lab().recall_candidates(prompt, Some(&scope), None)
            }
            None => service.lab().recall_candidates(prompt, None, Some(ScopeLevel::All)),
        };
        result.map_err(|e| e.to_string())
    };
    let mut asked = Asked { own: Vec::new(), foreign: Vec::new(), unrelated: Vec::new(), times: Vec::new() };
    for q in queries {
        let started = Instant::now();
        let found = ask(&q.text, q.conversation.as_deref())?;
        asked.times.push(started.elapsed());
        let judged = found
            .into_iter()
            .map(|c| {
                let relevant = doc_of.get(&c.id).and_then(|d| q.relevant.get(d)).is_some_and(|g| *g > 0.0);
                (c, relevant)
            })
            .collect();
        asked.own.push(judged);
        if let Some(own) = q.conversation.as_deref() {
            let at = conversations.iter().position(|c| *c == own).unwrap_or(0);
            let other = conversations[(at + 1) % conversations.len()];
            if other != own {
                asked.foreign.push(ask(&q.text, Some(other))?);
            }
        }
    }
    let scopes: Vec<Option<&str>> =
        if conversations.is_empty() { vec![None] } else { conversations.iter().map(|c| Some(*c)).collect() };
    for prompt in UNRELATED {
        for scope in &scopes {
            asked.unrelated.push(ask(prompt, *scope)?);
        }
    }
    report(&asked, queries.len());
    Ok(())
}

fn report(asked: &Asked, questions: usize) {
    let mut times = asked.times.clone();
    times.sort();
    let at = |p: f64| times.get(((p * times.len() as f64).ceil() as usize).saturating_sub(1)).copied();
    output::line(&format!(
        "\nrecall hook (lexical, top {} weighed, at most {} shown), {questions} questions; in-process p50 {:.1} ms, p95 {:.1} ms",
        recall::POOL,
        recall::MAX_RECALLED,
        at(0.5).unwrap_or_default().as_secs_f64() * 1000.0,
        at(0.95).unwrap_or_default().as_secs_f64() * 1000.0,
    ));
    output::line(
        "| floor | questions injected | precision (injections holding a relevant item) | recall (questions given one) | mean items shown | foreign questions injected | unrelated prompts injected |",
    );
    output::line("|---:|---:|---:|---:|---:|---:|---:|");
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    for &floor in FLOORS {
        let (mut injected, mut holding, mut shown) = (0, 0, 0);
        for judged in &asked.own {
            let ids: Vec<Candidate> = judged.iter().map(|(c, _)| c.clone()).collect();
            let selected = recall::select(ids, floor);
            if selected.is_empty() {
                continue;
            }
            injected += 1;
            shown += selected.len();
            let relevant = |c: &Candidate| judged.iter().any(|(j, r)| *r && j.id == c.id);
            holding += usize::from(selected.iter().any(relevant));
        }
        let injects = |lists: &[Vec<Candidate>]| {
            lists.iter().filter(|cs| !recall::select((*cs).clone(), floor).is_empty()).count()
        };
        let foreign = if asked.foreign.is_empty() {
            "–".to_string()
        } else {
            format!("{:.3}", share(injects(&asked.foreign), asked.foreign.len()))
        };
        output::line(&format!(
            "| {floor:.2} | {:.3} | {:.3} | {:.3} | {:.2} | {foreign} | {} of {} |",
            share(injected, questions),
            share(holding, injected),
            share(holding, questions),
            share(shown, injected),
            injects(&asked.unrelated),
            asked.unrelated.len(),
        ));
    }
}
