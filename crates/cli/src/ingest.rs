//! `cortex ingest`: the files and history read by the service (`cortex_service::seed`), with
//! a progress bar on a terminal and a summary per kind and status.

use crate::error::CliError;
use crate::output;
use crate::progress::Progress;
use cortex_domain::ErrorCode;
use cortex_service::ingest::Selection;
use cortex_service::ingest::report::IngestReport;
use cortex_service::{MemoryService, ServiceError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `cortex ingest` was asked.
pub struct IngestArgs {
    pub paths: Vec<PathBuf>,
    pub git: Option<PathBuf>,
    pub select: Selection,
    pub dry_run: bool,
    pub json: bool,
}

/// A dry run's stand-in database, removed when dropped (after the service that used it).
pub struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The service a dry run reads: the memory as configured when it exists; otherwise an empty
/// stand-in in a temporary folder (every item would be new), so that a dry run makes no
/// database where the real run would.
pub fn open_for_dry_run(db: Option<String>) -> Result<(MemoryService, Option<Scratch>), CliError> {
    let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = cortex_service::Config::resolve(db, &workdir)?;
    if config.new_sqlite_file().is_none() {
        return Ok((MemoryService::open(&config)?, None));
    }
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let dir = std::env::temp_dir().join(format!("cortex-dry-run-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| CliError::io("create", &dir, e))?;
    let scratch = Scratch(dir.clone());
    let service = MemoryService::open(&config.on_scratch_file(dir.join("memory.db")))?;
    Ok((service, Some(scratch)))
}

/// Ingests, prints the report, and exits 0 — or 2 when an item was refused, or when nothing
/// named could be read (every PATH missing, and no history).
pub fn run(service: &MemoryService, args: IngestArgs) -> Result<ExitCode, CliError> {
    if args.paths.is_empty() && args.git.is_none() {
        return Err(CliError::argument(
            "PATH",
            "name the files or folders to ingest (for example: cortex ingest docs CHANGELOG.md), or --git",
        ));
    }
    let mut reports = Vec::new();
    if !args.paths.is_empty() {
        let progress = Progress::start("writing");
        let report =
            service.ingest().files(&args.paths, args.dry_run, &|done, total| progress.set(done, total));
        progress.finish();
        let report = report.map_err(with_hint)?;
        for missing in &report.missing {
            tracing::warn!(path = %missing.path, "{} (hint: {}); the other paths were read", missing.message, missing.human_hint);
        }
        let nothing_read = report.missing.len() == args.paths.len();
        if nothing_read && args.git.is_none() {
            let first = &report.missing[0];
            return Err(CliError::argument(
                "PATH",
                format!("{} (hint: {})", first.message, first.human_hint),
            ));
        }
        reports.push(("files", report));
    }
    if let Some(repo) = &args.git {
        let progress = Progress::start("writing commits");
        let report = service
            .ingest()
            .commits(repo, &args.select, args.dry_run, &|done, total| progress.set(done, total));
        progress.finish();
        match report {
            // Beside files read, a folder that is no repository is a missing source, as a
            // missing PATH is: named, and the files' report stands.
            Err(ServiceError::Invalid(e)) if e.code == ErrorCode::NotFound && !reports.is_empty() => {
                tracing::warn!("{} (hint: {}); the files were read", e.message, e.human_hint);
            }
            report => reports.push(("git", report.map_err(with_hint)?)),
        }
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
    if report.merges_without_message > 0 {
        output::line(&format!(
            "  merges passed over: {} (a generated merge message, nothing of their own to say)",
            report.merges_without_message
        ));
    }
    for m in &report.missing {
        output::line(&format!("  missing: {} ({})", m.path, m.message));
    }
    for r in &report.refused {
        let key = if r.key.is_empty() { String::new() } else { format!(" [{}]", r.key) };
        output::line(&format!("  refused: {}{key}: {}", r.path, r.message));
        output::line(&format!("    hint: {}", r.human_hint));
    }
}
