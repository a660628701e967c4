//! The UI's own forms beyond loopback: a browser posting a form of this server sends the
//! origin it loaded the page from, a name the server was not told about when it is reached by
//! a DNS name or through a proxy. For the UI's pages (not `/mcp`, whose origins stay the
//! allow-list's), the Origin check also admits the origin of `CORTEX_PUBLIC_URL` (the address
//! a proxy publishes) and the request's own `scheme://Host`. Neither lets another site in: a
//! cross-site page sends its own origin, not this Host; a DNS-rebinding page does send its
//! name as Host, but a loopback server's UI answers only loopback names
//! ([`super::rebinding`]), and beyond loopback the page carries no session of this server (its
//! cookie belongs to the server's real name), so every form of it fails the CSRF check.

use crate::App;
use axum::http::{HeaderMap, header};

/// `scheme://host[:port]` of `CORTEX_PUBLIC_URL`, lowercase; `None` when unset or not an
/// http(s) URL (the OAuth settings refuse such a value at start).
pub fn public_origin(public_url: Option<&str>) -> Option<String> {
    let url = public_url?.trim().to_ascii_lowercase();
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    (matches!(scheme, "http" | "https") && !authority.is_empty() && !authority.contains('@'))
        .then(|| format!("{scheme}://{authority}"))
}

/// Whether `origin` (lowercase, no trailing slash) is the UI's own for a request to `path`.
pub fn admits(app: &App, headers: &HeaderMap, path: &str, origin: &str) -> bool {
    if path == "/mcp" || path.starts_with("/mcp/") {
        return false;
    }
    if app.options.public_origin.as_deref() == Some(origin) {
        return true;
    }
    let scheme = if app.options.tls.is_some() { "https" } else { "http" };
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| !host.is_empty() && format!("{scheme}://{}", host.to_ascii_lowercase()) == origin)
}

#[cfg(test)]
mod tests {
    use super::public_origin;

    #[test]
    fn the_public_urls_origin_is_its_scheme_and_authority() {
        let of = |v: &str| public_origin(Some(v));
        assert_eq!(of("https://Memory.example.com/base/"), Some("https://memory.example.com".into()));
        assert_eq!(of("http://10.0.0.5:8787"), Some("http://10.0.0.5:8787".into()));
        assert_eq!(of("ftp://x"), None);
        assert_eq!(of("https://user@x"), None);
        assert_eq!(public_origin(None), None);
    }
}
