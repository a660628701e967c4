//! `cortex`: the Cortex Memory binary. Every subcommand reaches the same service methods as
//! the MCP tools.

mod args;
mod confined;
mod context;
mod error;
mod git;
mod health;
mod hook;
mod ingest;
mod install;
mod keys;
mod markdown;
mod output;
mod progress;
mod recall;
mod report;
mod request;
mod secrets;
mod show;
mod transfer;
mod ui;

use args::{Cli, Command, ModelCommand};
use clap::Parser;
use cortex_service::administration::DoctorReport;
use cortex_service::audit::VerifyOptions;
use cortex_service::settings;
use cortex_service::{Config, MemoryService, ServiceError};
use error::CliError;
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc instead of the system's malloc: see the workspace's Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    // Every setting is parsed before any command runs, so a bad value is refused whichever
    // command meets it first. A hook still exits 0 (an agent would stop on anything else).
    if let Err(e) = settings::check_environment(cortex_server::settings::all(), env) {
        output::note(&format!("cortex: {e}"));
        return if cli.command.is_hook() { ExitCode::SUCCESS } else { CliError::Config(e).exit_code() };
    }
    init_logging(cli.verbose || cli.command.is_long_running());
    if cli.db.is_none() {
        match db_from_file() {
            Ok(db) => cli.db = db,
            Err(error) => {
                eprintln!("cortex: {error}");
                return if cli.command.is_hook() { ExitCode::SUCCESS } else { error.exit_code() };
            }
        }
    }
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            output::note(&format!("cortex: {error}"));
            if let Some(hint) = error.hint() {
                output::note(&format!("hint: {hint}"));
            }
            error.exit_code()
        }
    }
}

/// The database named in the file `CORTEX_DB_FILE` names, if it is set: a secret mounted into a
/// container, kept out of the environment and the image.
fn db_from_file() -> Result<Option<String>, CliError> {
    let Some(path) = settings::DB_FILE.get(env)? else { return Ok(None) };
    let text = std::fs::read_to_string(&path).map_err(|e| CliError::io("read CORTEX_DB_FILE", &path, e))?;
    let db = text.trim();
    if db.is_empty() {
        return Err(CliError::content(
            &path,
            "CORTEX_DB_FILE names an empty file; put the database URL in it",
        ));
    }
    Ok(Some(db.to_string()))
}

/// A variable of the process's environment, for the settings' getters.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Logs go to stderr only: in `serve`, stdout is the protocol channel. `CORTEX_LOG` sets the
/// level; unset, it is INFO when `verbose` (a server, or `-v`) and WARN otherwise, so that a
/// one-shot command prints its answer and nothing else. `CORTEX_LOG_FORMAT` sets the shape of
/// a line: `text` for people, or `json` (one object per line, its fields at the top level, for
/// a log shipper). Both were checked in `main`. A line written while a progress bar is drawn
/// lifts the bar first.
fn init_logging(verbose: bool) {
    let quiet = if verbose { tracing::Level::INFO } else { tracing::Level::WARN };
    let level = env(settings::LOG.name).and_then(|_| settings::LOG.get(env).ok()).unwrap_or(quiet);
    let json = matches!(settings::LOG_FORMAT.get(env), Ok(settings::LogFormat::Json));
    let builder =
        tracing_subscriber::fmt().with_writer(progress::log_writer).with_max_level(level).with_ansi(false);
    if json {
        builder.json().flatten_event(true).with_current_span(false).with_span_list(false).init();
        // A panic (one a find survives, say: a damaged lexical index) would otherwise print
        // plain text among the JSON lines.
        std::panic::set_hook(Box::new(|panic| tracing::error!(panic = %panic, "a thread panicked")));
    } else {
        builder.init();
    }
}

fn model_dir() -> Option<PathBuf> {
    settings::MODEL_DIR.get(env).ok().flatten()
}

fn model_location() -> cortex_embed::ModelLocation {
    cortex_embed::locate_model(model_dir())
}

fn open(db: Option<String>) -> Result<MemoryService, CliError> {
    let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = Config::resolve(db, &workdir)?;
    Ok(MemoryService::open(&config)?)
}

/// [`open`], trying again once a second while the database cannot be reached yet, for up to
/// `CORTEX_DB_WAIT_SECS`: a server started beside its database (a container, a machine's boot)
/// waits for it instead of exiting.
fn open_waiting(db: Option<String>) -> Result<MemoryService, CliError> {
    let wait = std::time::Duration::from_secs(settings::DB_WAIT_SECS.get(env)?);
    let started = std::time::Instant::now();
    loop {
        match open(db.clone()) {
            Err(CliError::Service(ServiceError::Internal(cortex_store::StoreError::Unreachable {
                reason,
                ..
            }))) if started.elapsed() < wait => {
                tracing::warn!(
                    waited_s = started.elapsed().as_secs(),
                    "waiting for the database ({reason}); CORTEX_DB_WAIT_SECS={} sets how long",
                    wait.as_secs()
                );
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// What `audit --verify` and `doctor` check: `full` walks everything.
fn verify_options(full: bool, anchor: Option<String>) -> Result<VerifyOptions, CliError> {
    let anchor = anchor
        .as_deref()
        .map(cortex_service::audit::parse_anchor)
        .transpose()
        .map_err(|e| CliError::argument("--anchor", e.to_string()))?;
    Ok(VerifyOptions { full, anchor })
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Serve { http, allow_origin, tls_cert, tls_key } => {
            let tls = cortex_server::TlsFiles::resolve(tls_cert, tls_key)?;
            let http = http
                .map(|addr| {
                    cortex_server::HttpOptions::resolve(&addr, &allow_origin, env)
                        .map(|options| options.with_tls(tls))
                })
                .transpose()?;
            serve(cli.db, http, |_| {})
        }
        Command::Health { http } => {
            output::line(&health::check(&http)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Ui { addr } => ui::run(cli.db, &addr),
        Command::Store { json, file } => {
            let text = match (json, file) {
                (Some(text), _) => text,
                (None, Some(path)) => {
                    std::fs::read_to_string(&path).map_err(|e| CliError::io("read", &path, e))?
                }
                (None, None) => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .map_err(|e| CliError::io("read", std::path::Path::new("stdin"), e))?;
                    text
                }
            };
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| CliError::argument("json", format!("the input is not JSON: {e}")))?;
            let service = open(cli.db)?;
            service.indexes().ensure_embedder_fits()?;
            let stored = request::store_request(&value)
                .map_err(ServiceError::from)
                .and_then(|request| service.memory_store().store(&request));
            respond(stored, |r| {
                output::json(r);
                if r.summary.validation_error > 0 || r.summary.business_rule_blocked > 0 {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                }
            })
        }
        Command::Find { flags, json } => {
            let service = open(cli.db)?;
            service.indexes().ensure_embedder_fits()?;
            let found = request::find_request(&flags)
                .map_err(ServiceError::from)
                .and_then(|request| service.memory_find().find(&request));
            if json {
                return respond(found, |r| {
                    output::json(r);
                    ExitCode::SUCCESS
                });
            }
            let response = found.map_err(|e| match e {
                ServiceError::Invalid(e) => CliError::argument(
                    &output::flag(&e.field),
                    format!("{} (hint: {})", e.message, e.human_hint),
                ),
                other => CliError::Service(other),
            })?;
            output::find_table(&response);
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { json } => {
            let service = open(cli.db)?;
            respond(service.administration().stats_in_full(), |r| {
                if json {
                    output::json(r)
                } else {
                    report::stats(r)
                }
                ExitCode::SUCCESS
            })
        }
        Command::Show { ids, json } => show::run(&open(cli.db)?, &ids, json),
        Command::Doctor { conflicts: true, .. } => respond(open(cli.db)?.contradictions().scan(None), |r| {
            output::json(r);
            ExitCode::SUCCESS
        }),
        Command::Doctor { full, anchor, conflicts: false } => {
            let options = verify_options(full, anchor)?;
            let settings = settings::in_force(cortex_server::settings::all(), env, cli.db.as_deref());
            let service = open(cli.db)?;
            let report = service.administration().doctor(&options).map(|r| DoctorReport { settings, ..r });
            respond(report, |r| {
                output::json(r);
                if r.healthy() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            })
        }
        Command::Audit { verify: true, anchor, item: None, since: None, .. } => {
            let options = verify_options(true, anchor)?;
            let service = open(cli.db)?;
            respond(service.audit().verify(&options), |r| {
                output::json(r);
                if r.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            })
        }
        Command::Audit { verify: true, .. } => {
            Err(CliError::argument("--verify", "checks the whole trail: it takes no --item or --since"))
        }
        Command::Audit { item, since, limit, json, .. } => {
            let item = item
                .map(|text| {
                    uuid::Uuid::parse_str(text.trim())
                        .map_err(|e| CliError::argument("--item", format!("{text:?} is not an item id: {e}")))
                })
                .transpose()?;
            let since = since
                .map(|text| {
                    cortex_domain::time::parse_moment(&text)
                        .map(|m| m.resolve(cortex_service::now_ms()))
                        .map_err(|hint| {
                            CliError::argument("--since", format!("`{text}` is not a moment: {hint}"))
                        })
                })
                .transpose()?;
            let service = open(cli.db)?;
            if json {
                return respond(service.audit().records(item, since, limit), |records| {
                    output::json(&json!({ "records": records }));
                    ExitCode::SUCCESS
                });
            }
            respond(service.audit().newest_records(item, since, limit), |records| {
                report::audit(records, limit);
                ExitCode::SUCCESS
            })
        }
        Command::Purge { dry_run } => {
            let service = open(cli.db)?;
            respond(service.lifecycle().purge(dry_run), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Reindex { lexical: false } => {
            let service = open(cli.db)?;
            let report = transfer::reindex(&service)?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        Command::Reindex { lexical: true } => {
            let service = open(cli.db)?;
            let report = transfer::reindex_lexical(&service)?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let service = open(cli.db)?;
            respond(service.administration().stats(), |r| {
                output::json(&json!({ "database": r.database, "schema_version": r.schema_version }));
                ExitCode::SUCCESS
            })
        }
        Command::Export { markdown: Some(dir), org, project, branch, .. } => {
            let service = open(cli.db)?;
            let scope = cortex_domain::Scope { org, project, branch, ..Default::default() };
            let files = service.ingest().export_markdown(&scope)?;
            output::json(&markdown::write(&dir, &files)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Export { out, .. } => {
            let service = open(cli.db)?;
            let count = transfer::export(&service, out.as_deref())?;
            tracing::info!(items = count, "exported");
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { paths, git, since, author, max_commits, dry_run, follow_links, json } => {
            ingest::refuse_links(&paths, follow_links)?;
            let (service, scratch) =
                if dry_run { ingest::open_for_dry_run(cli.db)? } else { (open(cli.db)?, None) };
            service.indexes().ensure_embedder_fits()?;
            let select = cortex_service::ingest::Selection { since, author, max_commits };
            let args = ingest::IngestArgs { paths, git, select, dry_run, json };
            let code = ingest::run(&service, args);
            // The stand-in goes after the service that holds it open.
            drop(service);
            drop(scratch);
            code
        }
        Command::Import { file } => {
            let service = open(cli.db)?;
            let report = transfer::import(&service, &file)?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        Command::Context(args) => Ok(context::run(open(cli.db), args)),
        Command::Recall(args) => Ok(recall::run(cli.db, args)),
        Command::Install(args) => install::run(args, cli.db),
        Command::Hook(command) => Ok(hook::run(command)),
        Command::Git(command) => git::run(open(cli.db), command),
        Command::Bench(_) => Err(moved("bench")),
        Command::Eval(_) => Err(moved("eval")),
        Command::Secrets(command) => secrets::run(&open(cli.db)?, command),
        Command::Keys(keys::KeysCommand::List) => respond(open(cli.db)?.keys().list(), |r| {
            output::json(&json!({ "keys": r }));
            ExitCode::SUCCESS
        }),
        Command::Keys(keys::KeysCommand::Revoke { name, org }) => {
            respond(open(cli.db)?.keys().revoke(org.as_deref(), &name), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Keys(keys::KeysCommand::Restore { name, org }) => {
            respond(open(cli.db)?.keys().restore(org.as_deref(), &name), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Keys(keys::KeysCommand::Create(spec)) => {
            respond(open(cli.db)?.keys().create(&spec.into()), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Model(ModelCommand::Install { from, to }) => {
            let to = to.unwrap_or_else(|| cortex_embed::model_install_dir(model_dir()));
            let installed = cortex_embed::install_model(&from, &to, &cortex_embed::default_pack_dir())?;
            output::json(&json!({ "installed": installed, "model": cortex_embed::MINILM_ID }));
            Ok(ExitCode::SUCCESS)
        }
        Command::Model(ModelCommand::Status) => {
            let location = model_location();
            let (status, precision, pack) = match cortex_embed::LocalModel::load(&location.dir) {
                Ok(model) => (
                    "ready".to_string(),
                    Some(model.precision().name()),
                    model.pack_path().map(PathBuf::from),
                ),
                Err(e) => (e.to_string(), None, None),
            };
            output::json(&json!({
                "dir": location.dir,
                "from": location.from,
                "status": status,
                "precision_auto": precision,
                "pack": pack,
            }));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Serves MCP over stdio, or over HTTP with `http` (calling `listening` once its port is
/// bound), until stopped.
fn serve(
    db: Option<String>,
    http: Option<cortex_server::HttpOptions>,
    listening: impl FnOnce(std::net::SocketAddr) + Send,
) -> Result<ExitCode, CliError> {
    let service = Arc::new(open_waiting(db)?);
    service.indexes().ensure_embedder_fits()?;
    service.indexes().prepare_lexical();
    service.indexes().embed_missing_in_background();
    service.git().sync_in_background();
    let scope = &service.inferred_scope().scope;
    tracing::info!(
        org = scope.org.as_deref(),
        project = scope.project.as_deref(),
        branch = scope.branch.as_deref(),
        "cortex serving MCP on {}",
        if http.is_some() { "HTTP" } else { "stdio" }
    );
    if let Some(every) = cortex_service::lifecycle::interval_from_env()? {
        spawn_periodic_purge(service.clone(), every);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Run(format!("cannot start the async runtime: {e}")))?;
    let result: Result<(), CliError> = match http {
        Some(options) => runtime
            .block_on(cortex_server::serve_announced(service.clone(), options, listening))
            .map_err(Into::into),
        None => runtime.block_on(cortex_mcp::serve_stdio(service.clone())).map_err(Into::into),
    };
    // A blocked stdin read must not hold the process after the client is gone.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    // The last reference is dropped here, outside the runtime: closing PostgreSQL
    // connections blocks, which is forbidden on an async worker thread.
    drop(service);
    result.map(|()| ExitCode::SUCCESS)
}

/// The benchmarks and the evaluation are not shipped in `cortex`: the refusal names the
/// binary that runs them now.
fn moved(command: &str) -> CliError {
    CliError::argument(
        &format!("cortex {command}"),
        format!(
            "the benchmarks and the evaluation are their own binary: run `cortex-bench {command}` with the same arguments (`cargo build --release` builds it beside cortex)"
        ),
    )
}

/// Purges expired items every `every` on a thread of its own (the first run right away), for
/// as long as the server runs. Failures are logged and retried next time.
fn spawn_periodic_purge(service: Arc<MemoryService>, every: std::time::Duration) {
    let spawned = std::thread::Builder::new().name("purge".into()).spawn(move || {
        loop {
            match service.lifecycle().purge(false) {
                Ok(report) if report.purged > 0 => {
                    tracing::info!(purged = report.purged, by_kind = ?report.by_kind, "purged expired items")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("periodic purge failed (retried in {}s): {e}", every.as_secs()),
            }
            std::thread::sleep(every);
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the periodic purge: {e}");
    }
}

/// Prints a service answer; a caller mistake prints the error JSON and exits 2.
fn respond<T>(
    result: Result<T, ServiceError>,
    print: impl FnOnce(&T) -> ExitCode,
) -> Result<ExitCode, CliError> {
    match result {
        Ok(value) => Ok(print(&value)),
        Err(ServiceError::Invalid(e)) => {
            output::json(&json!({ "error": cortex_service::response::ErrorBody::from(&e) }));
            Ok(ExitCode::from(2))
        }
        Err(e) => Err(CliError::Service(e)),
    }
}
