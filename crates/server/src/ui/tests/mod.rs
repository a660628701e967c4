//! The web UI as a browser meets it, through its routes and the HTML it answers only (other
//! modules' pages change often; these tests hold what a person notices): what each page shows
//! and its security headers, sign-in and sessions, forms refused without their session's CSRF
//! token or from another site, what a key's role and tenant let it see and change.

mod forms;
mod key_undo;
mod pages;
mod reach;
mod signin;
mod steps;

use crate::test_support::{Answer, TestServer};
use axum::http::StatusCode;

/// A section whose title and body are the test's, in acme/api/main.
fn section(server: &TestServer, title: &str) -> String {
    server.item("acme", title, &format!("{title}: what the team agreed, written down once."))
}

fn assert_status(answer: &Answer, status: StatusCode) {
    assert_eq!(answer.status, status, "{}", answer.text);
}
