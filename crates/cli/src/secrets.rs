//! `cortex secrets scan [--redact]`: credentials already stored, listed (id, kind, title,
//! field, rule — never the secret) and, with `--redact`, replaced by their markers as an
//! audited update.

use crate::error::CliError;
use crate::output;
use cortex_service::MemoryService;
use cortex_service::secrets::StoredScan;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum SecretsCommand {
    /// List the stored items that hold a secret (exit 1 when one does); with --redact,
    /// replace each secret in the live ones by its marker (`[redacted:github-pat]`), an
    /// audited update. SQLite keeps the freed pages until `VACUUM` (docs/CLI.md).
    Scan {
        /// Replace the secrets found in live items (deleted items are listed, not changed:
        /// purge them).
        #[arg(long)]
        redact: bool,
        /// Only this org's items [default: every org].
        #[arg(long)]
        org: Option<String>,
        /// Only this project's items.
        #[arg(long)]
        project: Option<String>,
        /// Only this branch's items.
        #[arg(long)]
        branch: Option<String>,
        /// Only this tenant's items.
        #[arg(long)]
        tenant: Option<String>,
        /// JSON for machines instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(service: &MemoryService, command: SecretsCommand) -> Result<ExitCode, CliError> {
    let SecretsCommand::Scan { redact, org, project, branch, tenant, json } = command;
    let scope = cortex_domain::Scope { org, project, branch, tenant, ..Default::default() };
    let report = service.secrets().scan(&scope, redact)?;
    if json {
        output::json(&report);
    } else {
        human(&report, redact);
    }
    // Found and not all replaced: the memory still holds secrets.
    let left = report.items.iter().any(|i| !i.redacted);
    Ok(if left { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn human(report: &StoredScan, redact: bool) {
    for item in &report.items {
        let state = match (item.redacted, item.deleted) {
            (true, _) => " (redacted)",
            (false, true) => " (deleted: purge it to remove it)",
            (false, false) => "",
        };
        output::line(&format!("{} {} {}{state}", item.id, item.kind, item.title.replace('\n', " ")));
        for f in &item.found {
            output::line(&format!("    {}: {}", f.field, f.rule));
        }
    }
    let mut summary = format!("{} items scanned, {} holding secrets", report.scanned, report.items.len());
    if redact {
        summary.push_str(&format!(", {} redacted", report.redacted));
    } else if !report.items.is_empty() {
        summary.push_str("; `cortex secrets scan --redact` replaces them");
    }
    output::line(&summary);
}
