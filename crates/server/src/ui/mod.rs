//! The web UI on the HTTP server's port: server-rendered pages (askama templates, escaped by
//! default), one stylesheet, no script. Sign in with an API key; search as `memory_find`
//! does; an item's page with its history; curation for write keys through `memory_store`'s
//! path. Every page sees exactly what the signed-in key sees.
//!
//! - `session`: sign-in sessions (in memory, or in the database every server shares), cookies;
//!   `seal`: a session's token (and a sign-in's verifier) sealed for the database;
//!   `oauth_signin`: sign-in through the identity provider, `oauth_pending`: those under way
//! - `signin`: who a request is shown to (the gate's check), sign-in and -out, the CSRF check
//! - `search`, `item`, `graph`, `activity` (its feed: `activity_feed`), `admin`, `keys`,
//!   `curate`, `edit`, `restore`: the pages and forms; `fields`: an item's data fields by their
//!   kind's types, to read and to edit; `history`: where an item came from, its timeline and
//!   supersede chain
//! - `places`: the project picker; `status`: the admin page's status in words
//! - `markdown`: stored content as safe HTML; `page`: templates, headers, the stylesheet
//! - `rebinding`: a loopback server's pages answer only its loopback names; `same_origin`:
//!   their forms pass the Origin check from the server's public URL or the request's own Host

mod activity;
mod activity_feed;
mod admin;
mod curate;
mod edit;
mod fields;
mod graph;
mod history;
mod item;
mod keys;
mod kind_chart;
mod markdown;
mod oauth_pending;
mod oauth_signin;
mod page;
mod places;
mod rebinding;
mod restore;
mod same_origin;
mod seal;
mod search;
mod session;
mod signin;
mod status;
mod steps;

use super::App;
use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{get, post};
pub(super) use same_origin::{admits as same_origin, public_origin};
use session::Sessions;
use std::sync::Arc;

/// What the UI's handlers share: the server's parts and the sessions.
#[derive(Clone)]
pub(super) struct Ui {
    app: App,
    sessions: Arc<Sessions>,
    oauth_pending: Arc<oauth_pending::Pending>,
}

impl Ui {
    /// Cookies are `Secure` when the server speaks HTTPS.
    fn secure(&self) -> bool {
        self.app.options.tls.is_some()
    }

    fn clear_cookie(&self) -> String {
        session::clear_cookie(self.secure())
    }

    /// Whether the sign-in form offers the identity provider's sign-in: this server accepts
    /// its tokens and has a client there.
    fn offers_oauth(&self) -> bool {
        self.app.oauth.as_ref().is_some_and(|v| v.signs_in_people())
    }
}

/// The UI's routes, for the server's router to merge (behind its Origin check).
pub(super) fn routes(app: App) -> Router<App> {
    let shared = app.service.keys().shared_sessions();
    let oauth_pending = Arc::new(oauth_pending::Pending::new(shared.clone()));
    let sessions = Arc::new(Sessions::new(app.options.max_sessions_per_key, shared));
    let ui = Ui { app, sessions, oauth_pending };
    status::mark_start();
    Router::new()
        .route("/", get(search::page))
        .route("/login", post(signin::login))
        .route("/logout", post(signin::logout))
        .route("/activity", get(activity::page))
        .route("/admin", get(admin::page))
        .route("/admin/keys", post(keys::create))
        .route("/admin/keys/revoke", post(keys::revoke))
        .route("/admin/keys/restore", post(keys::restore))
        .route("/items/{id}", get(item::page))
        .route("/items/{id}/graph", get(graph::page))
        .route("/items/{id}/edit", get(edit::page).post(curate::edit))
        .route("/items/{id}/confirm", post(curate::confirm))
        .route("/new", get(edit::new_page).post(edit::create))
        .route("/items/{id}/supersede", post(curate::supersede))
        .route("/items/{id}/delete", get(curate::delete_page).post(curate::delete))
        .route("/items/{id}/restore", post(restore::restore))
        .route("/trash", get(restore::page))
        .route("/ui/style.css", get(page::style))
        .route("/ui/oauth/start", get(oauth_signin::start))
        .route("/ui/oauth/callback", get(oauth_signin::callback))
        .layer(from_fn_with_state(ui.clone(), rebinding::guard))
        .layer(from_fn(page::secure))
        .with_state(ui)
}

#[cfg(test)]
mod tests;
