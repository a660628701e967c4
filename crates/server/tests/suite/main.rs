//! The team application's integration tests, one binary (one link): the HTTP gate and the web
//! UI's sign-in form, for what a test over loopback cannot show (tests/e2e drives the rest
//! through the real binary).

mod http_gate;
mod ui_browse;
mod ui_curation;
mod ui_limits;
mod ui_signin;
