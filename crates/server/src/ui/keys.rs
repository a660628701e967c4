//! API keys from the admin page, for admin keys (and the local user): `POST /admin/keys` makes
//! one — the token is shown on the answer page this once, never again, and never logged —
//! `POST /admin/keys/revoke` revokes one once confirmed (the admin page's Revoke button
//! answers a page asking first, whose button sends `confirm=yes`) and answers a page with an
//! Undo button, and `POST /admin/keys/restore` (that button) undoes a revocation within
//! [`RESTORE_WINDOW_TEXT`]. All are the calls `cortex keys` makes, kept inside the admin's
//! tenant bound (`cortex_service::keys`), audited by the database (`key_create`, `key_revoke`,
//! `key_restore`), behind the session's CSRF check and the admin role (403).

use super::Ui;
use super::page::{self, Chrome, Problem};
use super::signin::{Viewer, checked_form, field, split};
use crate::principal::Principal;
use askama::Template;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use cortex_domain::ErrorCode;
use cortex_domain::api_key::{RESTORE_WINDOW_MS, RESTORE_WINDOW_TEXT, Role};
use cortex_domain::time::format_instant;
use cortex_service::keys::{CreatedKey, KeyInfo, KeySpec};
use cortex_service::{Caller, MemoryService, ServiceError};

#[derive(Template)]
#[template(path = "ui/key_created.html")]
struct Created {
    chrome: Option<Chrome>,
    key: CreatedKey,
}

/// The form's values as `cortex keys create` takes them (`projects` comma-separated; the org
/// of a bound admin when left empty).
fn spec(viewer: &Viewer, fields: &[(String, String)]) -> KeySpec {
    let org = match (field(fields, "org").trim(), &viewer.principal.caller.bound) {
        ("", Some(bound)) => bound.org.clone(),
        (org, _) => org.to_string(),
    };
    let expires = field(fields, "expires").trim();
    KeySpec {
        name: field(fields, "name").to_string(),
        org,
        projects: field(fields, "projects")
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect(),
        role: field(fields, "role").to_string(),
        expires: (!expires.is_empty()).then(|| expires.to_string()),
        rate: None,
    }
}

pub async fn create(State(ui): State<Ui>, request: Request) -> Response {
    let (viewer, fields) = match admin(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let spec = spec(&viewer, &fields);
    let bound = viewer.principal.caller.bound.clone();
    let service = as_admin(&ui, &viewer.principal);
    let made = tokio::task::spawn_blocking(move || service.keys().create_within(bound.as_ref(), &spec)).await;
    match made {
        Ok(Ok(key)) => {
            tracing::info!(target: "cortex::access", by = %viewer.principal.key, key = %key.key.name, "API key created from the web UI");
            page::html(StatusCode::OK, &Created { chrome: Some(viewer.chrome()), key })
        }
        Ok(Err(e)) => refused(&viewer, "Key not made", e),
        Err(e) => page::server_error("making a key", e.to_string(), Some(viewer.chrome())),
    }
}

#[derive(Template)]
#[template(path = "ui/key_revoke.html")]
struct RevokeFirst {
    chrome: Option<Chrome>,
    name: String,
    org: String,
    csrf: String,
    window: &'static str,
}

/// The answer to a confirmed revocation: what happened, and the Undo button for the window.
#[derive(Template)]
#[template(path = "ui/key_revoked.html")]
struct Revoked {
    chrome: Option<Chrome>,
    key: KeyInfo,
    csrf: String,
    /// The end of the window: the instant, and its time of day (UTC) for a person.
    until_iso: String,
    until_clock: String,
    window: &'static str,
}

pub async fn revoke(State(ui): State<Ui>, request: Request) -> Response {
    let (viewer, fields) = match admin(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let name = field(&fields, "name").to_string();
    let org = field(&fields, "org").to_string();
    if field(&fields, "confirm") != "yes" {
        // Asked first: the page echoes the form and reads nothing, so it tells no one which
        // keys exist.
        let ask = RevokeFirst {
            chrome: Some(viewer.chrome()),
            name,
            org,
            csrf: viewer.session.csrf.clone(),
            window: RESTORE_WINDOW_TEXT,
        };
        return page::html(StatusCode::OK, &ask);
    }
    let bound = viewer.principal.caller.bound.clone();
    let service = as_admin(&ui, &viewer.principal);
    let revoked =
        tokio::task::spawn_blocking(move || service.keys().revoke_within(bound.as_ref(), Some(&org), &name))
            .await;
    match revoked {
        Ok(Ok(key)) => {
            tracing::info!(target: "cortex::access", by = %viewer.principal.key, key = %key.name, "API key revoked from the web UI");
            let until = key
                .restorable_until
                .clone()
                .unwrap_or_else(|| format_instant(cortex_service::now_ms() + RESTORE_WINDOW_MS));
            let answer = Revoked {
                chrome: Some(viewer.chrome()),
                key,
                csrf: viewer.session.csrf.clone(),
                until_clock: format!("{} UTC", until.get(11..19).unwrap_or(&until)),
                until_iso: until,
                window: RESTORE_WINDOW_TEXT,
            };
            page::html(StatusCode::OK, &answer)
        }
        Ok(Err(e)) => refused(&viewer, "Key not revoked", e),
        Err(e) => page::server_error("revoking a key", e.to_string(), Some(viewer.chrome())),
    }
}

/// The Undo button of the revoked page: the key live again within the window, then the admin
/// page; after it, a page saying so and how to make a new key.
pub async fn restore(State(ui): State<Ui>, request: Request) -> Response {
    let (viewer, fields) = match admin(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let name = field(&fields, "name").to_string();
    let org = field(&fields, "org").to_string();
    let bound = viewer.principal.caller.bound.clone();
    let service = as_admin(&ui, &viewer.principal);
    let restored =
        tokio::task::spawn_blocking(move || service.keys().restore_within(bound.as_ref(), Some(&org), &name))
            .await;
    match restored {
        Ok(Ok(key)) => {
            tracing::info!(target: "cortex::access", by = %viewer.principal.key, key = %key.name, "API key restored from the web UI");
            page::see_other("/admin")
        }
        Ok(Err(e)) => refused(&viewer, "Key not restored", e),
        Err(e) => page::server_error("restoring a key", e.to_string(), Some(viewer.chrome())),
    }
}

/// The service over every key (keys are no tenant's items: a bounded view has none), its
/// key records naming the signed-in admin as who made or revoked a key, through the web UI.
/// The admin's bound is kept by `*_within`.
pub(super) fn as_admin(ui: &Ui, principal: &Principal) -> MemoryService {
    let caller = Caller {
        principal: principal.caller.principal.clone(),
        via: Some("web UI"),
        ..ui.app.service.local_caller()
    };
    ui.app.service.for_caller(&caller)
}

/// A live session's form with the right CSRF token, from an admin key.
async fn admin(ui: &Ui, request: Request) -> Result<(Viewer, Vec<(String, String)>), Response> {
    let (headers, body) = split(request);
    let (viewer, fields) = checked_form(ui, &headers, body).await?;
    if let Some(refused) = viewer.lacks(Role::Admin, "managing API keys") {
        return Err(refused);
    }
    Ok((viewer, fields))
}

/// A refusal of the key service as a page: what was wrong with which field, and what to do.
fn refused(viewer: &Viewer, heading: &str, e: ServiceError) -> Response {
    match e {
        ServiceError::Invalid(e) => {
            let status = if e.code == ErrorCode::NotFound {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            let field = e.field.trim_start_matches("--");
            let message =
                if field.is_empty() { e.message.clone() } else { format!("{field}: {}", e.message) };
            page::message(status, heading, Problem::new(message, e.human_hint.clone()), Some(viewer.chrome()))
        }
        other => page::server_error("managing keys", other.to_string(), Some(viewer.chrome())),
    }
}
