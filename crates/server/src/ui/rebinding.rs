//! DNS rebinding: a page at `http://evil.example:8787` whose name the attacker points at
//! 127.0.0.1 reads a loopback server as its own origin (no Origin header on its reads), and a
//! keyless loopback server would show it the local user's memory. A loopback server's UI
//! therefore answers only requests addressed to a loopback name (`localhost`, `127.0.0.1`,
//! `[::1]`, …), as rmcp's Host check does for `/mcp`. Beyond loopback every page needs a
//! signed-in key, whose cookie a rebinding page's name never carries.

use super::Ui;
use super::page::{self, Problem};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::net::IpAddr;

pub async fn guard(State(ui): State<Ui>, request: Request, next: Next) -> Response {
    if ui.app.options.is_loopback() {
        let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !is_loopback_name(host) {
            return page::message(
                StatusCode::FORBIDDEN,
                "Refused",
                Problem::new(
                    format!(
                        "this server answers only this machine, and the request is addressed to {host:?}"
                    ),
                    "open the UI at http://127.0.0.1:<port>/ or http://localhost:<port>/",
                ),
                None,
            );
        }
    }
    next.run(request).await
}

/// Whether a `Host` header (`name[:port]`, `[v6][:port]`) names this machine.
pub fn is_loopback_name(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback_name;

    #[test]
    fn only_loopback_names_pass() {
        for ok in ["127.0.0.1:8787", "localhost:8787", "LOCALHOST", "[::1]:8787", "127.0.0.2:1", "localhost"]
        {
            assert!(is_loopback_name(ok), "{ok}");
        }
        for bad in
            ["evil.example:8787", "evil.example", "", "10.0.0.1:8787", "[::2]:1", "localhost.evil.example:80"]
        {
            assert!(!is_loopback_name(bad), "{bad}");
        }
    }
}
