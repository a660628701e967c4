//! `cortex ingest`: the files and history read by the service (`cortex_service::seed`), with
//! a progress bar on a terminal and a summary per kind and status.

use crate::error::CliError;
use crate::output;
use cortex_service::ingest::report::IngestReport;
use cortex_service::{MemoryService, ServiceError};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `cortex ingest` was asked.
pub struct IngestArgs {
    pub paths: Vec<PathBuf>,
    pub git: Option<PathBuf>,
    pub since: Option<String>,
    pub dry_run: bool,
    pub json: bool,
}

pub fn run(service: &MemoryService, args: IngestArgs) -> Result<ExitCode, CliError> {
    if args.paths.is_empty() && args.git.is_none() {
        return Err(CliError::argument(
            "PATH",
            "name the files or folders to ingest (for example: cortex ingest docs CHANGELOG.md), or --git",
        ));
    }
    let mut reports = Vec::new();
    if !args.paths.is_empty() {
        let bar = bar("writing");
        let report = service.ingest().files(&args.paths, args.dry_run, &|done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
        bar.finish_and_clear();
        reports.push(("files", report.map_err(with_hint)?));
    }
    if let Some(repo) = &args.git {
        let bar = bar("writing commits");
        let report = service.ingest().commits(repo, args.since.as_deref(), args.dry_run, &|done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
        bar.finish_and_clear();
        reports.push(("git", report.map_err(with_hint)?));
    }
    let refused = reports.iter().any(|(_, r)| r.any_refused());
    if args.json {
        let value: serde_json::Map<String, serde_json::Value> = reports
            .iter()
            .map(|(name, r)| (name.to_string(), serde_json::to_value(r).unwrap_or_default()))
            .collect();
        output::json(&value);
    } else {
        for (name, report) in &reports {
            summary(name, report, args.git.as_deref());
        }
    }
    Ok(if refused { ExitCode::from(2) } else { ExitCode::SUCCESS })
}

/// A PATH that is a link, or lies below one, is read only with `--follow-links`: a link
/// committed to a repository must not turn a maintainer's ingest into a read of their files
/// elsewhere. (The walk of a folder never follows the links inside it.)
pub fn refuse_links(paths: &[PathBuf], follow_links: bool) -> Result<(), CliError> {
    if follow_links {
        return Ok(());
    }
    match paths.iter().find_map(|p| crate::confined::link_in(p)) {
        None => Ok(()),
        Some(link) => Err(CliError::argument(
            "PATH",
            format!(
                "{} is a symbolic link; cortex ingest reads it only when asked: pass --follow-links, or name the folder it points to",
                link.display()
            ),
        )),
    }
}

/// A refused argument names its flag and says what to do.
fn with_hint(error: ServiceError) -> CliError {
    match error {
        ServiceError::Invalid(e) => {
            CliError::argument(&e.field, format!("{} (hint: {})", e.message, e.human_hint))
        }
        other => CliError::Service(other),
    }
}

fn bar(what: &str) -> ProgressBar {
    // On stderr, and drawn only when it is a terminal (indicatif's default).
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} items")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

/// One line per kind (`decision: 3 inserted, 1 unchanged — accepted 3, superseded 1`), then
/// each supersede, refusal and file passed over.
fn summary(name: &str, report: &IngestReport, repo: Option<&Path>) {
    let verb = if report.dry_run { "would be " } else { "" };
    let read = match name {
        "git" => {
            format!("{} commits of {}", report.files, repo.map_or(".".into(), |r| r.display().to_string()))
        }
        _ => format!("{} files", report.files),
    };
    output::line(&format!("{read} read{}", if report.dry_run { " (dry run: nothing written)" } else { "" }));
    for (kind, c) in &report.kinds {
        let counts: Vec<String> = [
            ("inserted", c.inserted),
            ("updated", c.updated),
            ("deleted", c.deleted),
            ("refused", c.refused),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {verb}{what}"))
        .chain((c.unchanged > 0).then(|| format!("{} unchanged", c.unchanged)))
        .collect();
        let statuses: Vec<String> = c.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
        let statuses =
            if statuses.is_empty() { String::new() } else { format!(" — {}", statuses.join(", ")) };
        let counts = if counts.is_empty() { "nothing".to_string() } else { counts.join(", ") };
        output::line(&format!("  {kind}: {counts}{statuses}"));
    }
    for (new, old) in &report.superseded {
        output::line(&format!("  {new} {verb}supersedes {old}"));
    }
    for u in &report.unlinked {
        output::line(&format!("  not linked: {} → {}: {}", u.path, u.target, u.reason));
    }
    for p in &report.passed_over {
        output::line(&format!("  passed over: {} ({})", p.path, p.reason));
    }
    for r in &report.refused {
        let key = if r.key.is_empty() { String::new() } else { format!(" [{}]", r.key) };
        output::line(&format!("  refused: {}{key}: {}", r.path, r.message));
        output::line(&format!("    hint: {}", r.human_hint));
    }
}
