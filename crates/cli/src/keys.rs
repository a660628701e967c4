//! `cortex keys`: the API keys of the HTTP team server. `create` prints the token once (only
//! its hash is stored), `list` never shows one, `revoke` stops a key at once, `restore` undoes
//! a revocation within 10 minutes of it. Every command
//! prints JSON, as the CLI's other commands do; a refused value exits 2 naming its flag.

use cortex_service::keys::KeySpec;

#[derive(clap::Subcommand)]
pub enum KeysCommand {
    /// Make a key for one org (and optionally some of its projects); prints its token once.
    Create(CreateArgs),
    /// Every key with its state (active, expired, revoked); never a token.
    List,
    /// Revoke a key: every request with it is refused from now on, by every server.
    Revoke {
        /// The key's name.
        name: String,
        /// The key's org, needed when keys of several orgs have this name (names are unique
        /// within an org).
        #[arg(long)]
        org: Option<String>,
    },
    /// Undo a revocation made less than 10 minutes ago: the key works again, on every server.
    /// After that, never: make a new key.
    Restore {
        /// The key's name.
        name: String,
        /// The key's org, needed when keys of several orgs have this name.
        #[arg(long)]
        org: Option<String>,
    },
}

#[derive(clap::Args)]
pub struct CreateArgs {
    /// A name for the key, shown in logs and lists (e.g. who or what holds it).
    #[arg(long)]
    name: String,
    /// The org the key is bound to: its holder reads and writes only there.
    #[arg(long)]
    org: String,
    /// A project of the org the key may reach (repeatable) [default: every project].
    #[arg(long = "project")]
    projects: Vec<String>,
    /// read (memory_find), write (also memory_store) or admin (also /metrics from anywhere).
    #[arg(long)]
    role: String,
    /// When the key stops working: a date (2027-01-31, as that day starts, UTC) or an RFC 3339
    /// time [default: never].
    #[arg(long)]
    expires: Option<String>,
    /// Requests per second (N/s) or minute (N/min) [default: CORTEX_HTTP_RATE].
    #[arg(long)]
    rate: Option<String>,
}

impl From<CreateArgs> for KeySpec {
    fn from(a: CreateArgs) -> KeySpec {
        KeySpec {
            name: a.name,
            org: a.org,
            projects: a.projects,
            role: a.role,
            expires: a.expires,
            rate: a.rate,
        }
    }
}
