//! Who an HTTP request comes from, as the gate found it, and the note the MCP server leaves
//! on the request for its access-log line. Both travel in the request's extensions: rmcp
//! hands the request's `http::request::Parts` to every handler in its `RequestContext`.

use crate::metrics::CallOutcome;
use cortex_domain::api_key::{Rate, Role};
use cortex_service::Caller;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use std::sync::{Arc, Mutex};

/// The holder of a key (or, on a loopback server with no keys, the local user).
#[derive(Debug, Clone)]
pub struct Principal {
    /// Who this is among every key, token holder and the local user, for what is kept per
    /// principal (rate, calls at once, sessions): `key:<lookup id>`, `oauth:<subject>`, `local`.
    /// A key's name is not enough: names are unique only within an org.
    pub id: String,
    /// The key's name (`oauth:<subject>` for a token's holder); `local` for the local user.
    pub key: String,
    pub role: Role,
    pub caller: Caller,
    pub rate: Rate,
}

/// What the MCP server says about a request, read when its answer has been sent.
#[derive(Debug, Default)]
pub struct Note {
    pub key: Option<String>,
    pub tool: Option<String>,
    /// A find's mode (`fast`, `auto`, `deep`), or `store`.
    pub mode: Option<&'static str>,
    pub outcome: Option<CallOutcome>,
    /// The items a call handled: a store's items, a find's hits.
    pub items: Option<u64>,
    /// How long the tool call itself took.
    pub call_ms: Option<u128>,
}

#[derive(Debug, Clone, Default)]
pub struct AccessNote(pub Arc<Mutex<Note>>);

impl AccessNote {
    pub fn update(&self, f: impl FnOnce(&mut Note)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub fn take(&self) -> Note {
        std::mem::take(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Where a request to the MCP server came from.
pub enum Source<'a> {
    /// stdio: the local user, no HTTP request.
    Stdio,
    Http {
        principal: Option<&'a Principal>,
        note: Option<&'a AccessNote>,
    },
}

pub fn of(context: &RequestContext<RoleServer>) -> Source<'_> {
    match context.extensions.get::<http::request::Parts>() {
        None => Source::Stdio,
        Some(parts) => Source::Http { principal: parts.extensions.get(), note: parts.extensions.get() },
    }
}
