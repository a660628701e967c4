//! `cortex-bench secrets`: the secret scanner (`cortex_domain::secrets`) over real texts — the
//! project's own docs, a BEIR corpus, a conversation corpus — counting what it finds (on such
//! texts, every finding is a false positive to look at) and what it costs: CPU microseconds
//! per KB and per item, this process's own CPU time over enough passes to measure (so a busy
//! machine changes the wall time, not the figure).

use crate::bench::cpu::process_cpu;
use crate::output::line;
use cortex_domain::secrets;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct SecretsArgs {
    /// A text file or a folder (walked for its Markdown, reStructuredText and `.log` files):
    /// each file one item.
    #[arg(long = "markdown", alias = "text", value_name = "PATH")]
    markdown: Vec<PathBuf>,
    /// A BEIR-layout `corpus.jsonl`: each line's title and text one item.
    #[arg(long = "corpus", value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// The least CPU time each source is scanned for (its texts again and again).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
}

/// A source's texts: (name of the item, text).
struct Source {
    name: String,
    items: Vec<(String, String)>,
}

pub fn run(args: SecretsArgs) -> Result<ExitCode, String> {
    let mut sources = Vec::new();
    for path in &args.markdown {
        let mut items = Vec::new();
        markdown(path, &mut items)?;
        sources.push(Source { name: path.display().to_string(), items });
    }
    for path in &args.corpus {
        sources.push(Source { name: path.display().to_string(), items: corpus(path)? });
    }
    if sources.is_empty() {
        return Err("name what to scan: --markdown PATH and/or --corpus FILE".into());
    }
    line("| source | items | KB | findings | CPU µs per KB | CPU µs per item |");
    line("|---|---:|---:|---:|---:|---:|");
    let mut all = Vec::new();
    for source in &sources {
        let bytes: usize = source.items.iter().map(|(_, t)| t.len()).sum();
        let mut findings = Vec::new();
        for (name, text) in &source.items {
            for f in secrets::scan(text) {
                findings.push((name.clone(), f.rule, excerpt(text, f.start, f.end)));
            }
        }
        let (passes, cpu) = measure(&source.items, Duration::from_secs_f64(args.seconds));
        let per_pass = cpu.as_secs_f64() * 1e6 / passes as f64;
        line(&format!(
            "| {} | {} | {:.0} | {} | {:.2} | {:.2} |",
            source.name,
            source.items.len(),
            bytes as f64 / 1024.0,
            findings.len(),
            per_pass / (bytes as f64 / 1024.0),
            per_pass / source.items.len().max(1) as f64
        ));
        all.extend(findings.into_iter().map(|f| (source.name.clone(), f)));
    }
    line("");
    if all.is_empty() {
        line("no findings");
    } else {
        line("| rule | source | findings |");
        line("|---|---|---:|");
        let mut per_rule: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for (source, (_, rule, _)) in &all {
            *per_rule.entry((rule, source.as_str())).or_default() += 1;
        }
        for ((rule, source), n) in per_rule {
            line(&format!("| {rule} | {source} | {n} |"));
        }
        line("");
    }
    for (source, (item, rule, excerpt)) in all {
        line(&format!("- {source} {item}: {rule}: {excerpt}"));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every pass over `items` until `least` CPU time has gone by: (passes, CPU time).
fn measure(items: &[(String, String)], least: Duration) -> (u64, Duration) {
    let cpu = || process_cpu(std::process::id()).map_or(Duration::ZERO, |(user, system)| user + system);
    let start = cpu();
    let mut passes = 0;
    loop {
        for (_, text) in items {
            std::hint::black_box(secrets::scan(std::hint::black_box(text)));
        }
        passes += 1;
        let spent = cpu().saturating_sub(start);
        if spent >= least {
            return (passes, spent);
        }
    }
}

/// The finding in its line, the secret itself masked but for its first four characters.
fn excerpt(text: &str, start: usize, end: usize) -> String {
    let from = text[..start].rfind('\n').map_or(0, |i| i + 1).max(start.saturating_sub(60));
    let to = text[end..].find('\n').map_or(text.len(), |i| end + i).min(end + 60);
    let from = (from..=start).find(|i| text.is_char_boundary(*i)).unwrap_or(start);
    let to = (end..=to).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(end);
    let secret: String = text[start..end].chars().take(4).chain("…".chars()).collect();
    format!("{}⟦{secret}⟧{}", &text[from..start], &text[end..to]).replace('\n', " ")
}

/// The files a folder is walked for: what `cortex ingest` reads (documents, changelogs, the
/// git histories kept as test material).
const TEXT_FILES: [&str; 4] = ["md", "markdown", "rst", "log"];

fn markdown(path: &Path, out: &mut Vec<(String, String)>) -> Result<(), String> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for entry in entries {
            markdown(&entry, out)?;
        }
    } else if path.extension().is_some_and(|e| TEXT_FILES.iter().any(|t| e == *t)) {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push((path.display().to_string(), text));
    }
    Ok(())
}

fn corpus(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut items = Vec::new();
    for (n, row) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(row).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        items.push((field("_id"), format!("{}\n{}", field("title"), field("text"))));
    }
    Ok(items)
}
