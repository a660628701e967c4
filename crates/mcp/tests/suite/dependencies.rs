//! The adapter stays thin: the HTTP server, its TLS, authentication and web UI belong to the team
//! application (`crates/server`), so none of their crates is a dependency here, nor rmcp's
//! Streamable HTTP server feature (which would bring its HTTP service stack back in).

use std::path::Path;

const HTTP_SERVER_CRATES: [&str; 12] = [
    "axum",
    "hyper",
    "hyper-util",
    "tower",
    "tower-service",
    "tokio-rustls",
    "rustls",
    "jsonwebtoken",
    "ureq",
    "askama",
    "pulldown-cmark",
    "form_urlencoded",
];

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()
}

/// The names in one `[section]` of a manifest: `name = …` and `name.workspace = true` lines.
fn names_in(manifest: &str, section: &str) -> Vec<String> {
    let header = format!("[{section}]");
    manifest
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .map(|l| l.split(['=', '.']).next().unwrap_or_default().trim().to_string())
        .collect()
}

#[test]
fn the_adapter_depends_on_no_http_server_crate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let own = manifest(dir);
    let deps = names_in(&own, "dependencies");
    assert!(deps.contains(&"rmcp".to_string()), "the section was read: {deps:?}");
    let server: Vec<_> = deps.iter().filter(|d| HTTP_SERVER_CRATES.contains(&d.as_str())).collect();
    assert!(server.is_empty(), "HTTP server crates in crates/mcp: {server:?}; they belong in crates/server");

    let workspace = manifest(&dir.join("../.."));
    let rmcp = workspace.lines().find(|l| l.starts_with("rmcp ")).expect("the workspace names rmcp");
    for manifest in [own.as_str(), rmcp] {
        assert!(
            !manifest.contains("transport-streamable-http-server"),
            "rmcp's Streamable HTTP server feature is the team application's to enable: {manifest}"
        );
    }
}
