//! Pure domain logic of Cortex Memory. Nothing here does I/O: every function is a
//! computation on values, so the rules are tested fast and exhaustively.
//!
//! - [`briefing`]: the session briefing: which items, in which order, within a budget
//! - [`kind`]: the 16 knowledge kinds and their field rules (one table)
//! - [`item`]: parsing a `memory_store` request into validated item operations
//! - [`args`]: one definition per tool argument: its schema and its parse
//! - [`find`]: a `memory_find` request, its arguments and its cursor
//! - [`scope`]: scope values, find scope resolution, scope matching
//! - [`query`]: the lexical query parser
//! - [`ranking`]: the score formula and its parts
//! - [`recall`]: which matches of a prompt are worth recalling unasked, cut to a budget
//! - [`fusion`]: lexical and dense relevance into one, trusting dense per query
//! - [`neighbours`]: the best hits' session neighbours share their relevance
//! - [`snippet`]: the passage of a hit shown around its best match
//! - [`spelling`]: close-spelling suggestions
//! - [`governance`]: what may not change once accepted
//! - [`lifecycle`]: when items expire, when runbooks are stale
//! - [`natural_key`]: issues, PRs, DDL, changes, entities, relations that are the same thing
//! - [`dedupe`]: which stored item a new one duplicates, and which check wins
//! - [`graph`]: which links an expansion follows, and the walk
//! - [`sources`]: decision records, changelogs, docs and commits read into items (`cortex ingest`)
//! - [`tenant`]: how far an API key's holder may reach (one org, some projects)
//! - [`principal`]: who made a change, as the server established it (the audit trail's)
//! - [`api_key`]: what a key may do (role), how fast (rate), its name and token shape
//! - [`tool`]: the tools the server offers and the role each needs
//! - [`text`], [`time`], [`ttl`], [`limits`], [`git_remote`]: small shared rules

pub mod api_key;
pub mod args;
pub mod briefing;
pub mod chunking;
pub mod dedupe;
pub mod error;
pub mod find;
pub mod fusion;
pub mod git_remote;
pub mod governance;
pub mod graph;
pub mod item;
pub mod kind;
pub mod lifecycle;
pub mod limits;
pub mod natural_key;
pub mod near_duplicate;
pub mod neighbours;
pub mod principal;
pub mod query;
pub mod ranking;
pub mod recall;
pub mod scope;
pub mod secrets;
pub mod snippet;
pub mod sources;
pub mod spelling;
pub mod tenant;
pub mod text;
pub mod time;
pub mod tool;
pub mod ttl;

pub use error::{ErrorCode, ValidationError};
pub use find::{FindRequest, Mode};
pub use item::{ItemOp, NewItem};
pub use kind::Kind;
pub use scope::{Scope, ScopeFilter, ScopeLevel, ScopeMatch};
pub use tool::Tool;
