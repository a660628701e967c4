//! The HTTP server's and OAuth's `CORTEX_*` settings, declared with the service's machinery
//! (`cortex_service::settings`: kinds, checks, the docs' table) in a table of their own. The
//! server reads each through its constant here; [`all`] is every setting of the binary, the
//! service's first, which `cortex` checks at the start of every command, `cortex doctor`
//! shows, and docs/CONFIGURATION.md's settings table is made of.

use cortex_domain::api_key::Rate;
use cortex_domain::limits::MAX_MESSAGE_BYTES;
use cortex_service::settings::{
    Declared, Optional, Parsed, Refusal, Setting, Whole, http_url, path, scope_value, text,
};
use std::path::PathBuf;

pub const HTTP_ADDR: Setting<Optional<String>> = Setting {
    name: "CORTEX_HTTP_ADDR",
    flag: Some("--http ADDR"),
    kind: Optional { when_unset: "none: cortex serve speaks MCP on stdio", parse: text, refuses: &[] },
    doc: "`cortex serve` speaks MCP over HTTP at `http://ADDR/mcp` instead of stdio (README, Run it for a team)",
};
pub const HTTP_ALLOW_ORIGIN: Setting<Optional<String>> = Setting {
    name: "CORTEX_HTTP_ALLOW_ORIGIN",
    flag: Some("--allow-origin ORIGIN"),
    kind: Optional { when_unset: "none: requests from web pages are refused", parse: text, refuses: &[] },
    doc: "HTTP: browser origins (`scheme://host[:port]`, comma-separated in the variable) whose pages may call the server; a request with any other `Origin` gets 403",
};
pub const HTTP_RATE: Setting<Parsed<Rate>> = Setting {
    name: "CORTEX_HTTP_RATE",
    flag: None,
    kind: Parsed { default: "50/s", parse: rate, refuses: &["fast", "0/s", "10/h"] },
    doc: "HTTP: requests per key, `N/s` or `N/min`, unless the key has its own `--rate` (a burst of one second's worth)",
};
pub const HTTP_MAX_BODY_BYTES: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_BODY_BYTES",
    flag: None,
    kind: Whole { default: MAX_MESSAGE_BYTES as u64, min: 1024, max: MAX_MESSAGE_BYTES as u64 },
    doc: "HTTP: the largest request body; larger ones get 413 (the default is stdio's message limit)",
};
pub const HTTP_CALL_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_CALL_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 30_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long one tool call may run before it is answered with a `timeout` error",
};
pub const HTTP_MAX_CONCURRENT: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONCURRENT",
    flag: None,
    kind: Whole { default: 16, min: 1, max: 4096 },
    doc: "HTTP: calls one key may have running at once; more get 429",
};
pub const HTTP_HEADER_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_HEADER_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 10_000, min: 100, max: 600_000 },
    doc: "HTTP: how long a client may take for a request's headers (and the TLS handshake), from the connection's opening or the first byte after an answer; then it is closed",
};
pub const HTTP_BODY_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_BODY_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 60_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long a client may take to send a request's body; then 408",
};
pub const HTTP_IDLE_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_IDLE_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 60_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long a kept-alive connection may wait for its next request",
};
pub const HTTP_MAX_CONNECTIONS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONNECTIONS",
    flag: None,
    kind: Whole { default: 4096, min: 16, max: 1_000_000 },
    doc: "HTTP: connections open at once, lowered at start to three quarters of the open-file limit (`ulimit -n`); past it the oldest connection without a call running is closed",
};
pub const HTTP_MAX_CONNECTIONS_PER_IP: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONNECTIONS_PER_IP",
    flag: None,
    kind: Whole { default: 256, min: 1, max: 1_000_000 },
    doc: "HTTP: connections open at once from one client address, the same way (behind a proxy all clients share its address)",
};
pub const HTTP_MAX_SESSIONS_PER_KEY: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_SESSIONS_PER_KEY",
    flag: None,
    kind: Whole { default: 100, min: 1, max: 1_000_000 },
    doc: "HTTP: MCP sessions one key may hold, and as many web UI sessions; opening one more ends that key's own oldest",
};
pub const HTTP_SESSION_IDLE_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_SESSION_IDLE_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 300_000, min: 100, max: 86_400_000 },
    doc: "HTTP: how long an MCP session may go without a request before it ends and its memory is freed",
};
pub const HTTP_MAX_BYTES_IN_FLIGHT: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_BYTES_IN_FLIGHT",
    flag: None,
    kind: Whole { default: 128 * 1024 * 1024, min: 1024, max: 1 << 40 },
    doc: "HTTP: request bytes being read or worked on at once, over all keys; a body past it gets 503 with `Retry-After` (at least `CORTEX_HTTP_MAX_BODY_BYTES`)",
};
pub const HTTP_TLS_CERT: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_HTTP_TLS_CERT",
    flag: Some("--tls-cert PEM"),
    kind: Optional { when_unset: "none: plain HTTP", parse: path, refuses: &[] },
    doc: "HTTP: serve HTTPS with this certificate (chain); needs `CORTEX_HTTP_TLS_KEY`",
};
pub const HTTP_TLS_KEY: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_HTTP_TLS_KEY",
    flag: Some("--tls-key PEM"),
    kind: Optional { when_unset: "none: plain HTTP", parse: path, refuses: &[] },
    doc: "HTTP: the certificate's private key",
};
pub const OAUTH_ISSUER: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_ISSUER",
    flag: None,
    kind: Optional { when_unset: "none: API keys only", parse: http_url, refuses: &["login.example.com"] },
    doc: "HTTP: also accept OAuth 2.1 access tokens from this identity provider (Claude and ChatGPT connectors, Okta, Entra ID, Keycloak, Auth0): see [OAUTH.md](OAUTH.md)",
};
pub const PUBLIC_URL: Setting<Optional<String>> = Setting {
    name: "CORTEX_PUBLIC_URL",
    flag: None,
    kind: Optional {
        when_unset: "none (needed with CORTEX_OAUTH_ISSUER)",
        parse: http_url,
        refuses: &["memory.example.com"],
    },
    doc: "the base URL clients reach this server at: OAuth's resource URL, and the origin the web UI's forms may post from ([UI.md](UI.md))",
};
pub const OAUTH_AUDIENCE: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_AUDIENCE",
    flag: None,
    kind: Optional { when_unset: "<CORTEX_PUBLIC_URL>/mcp", parse: text, refuses: &[] },
    doc: "OAuth: what a token's `aud` must hold",
};
pub const OAUTH_ORG_CLAIM: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OAUTH_ORG_CLAIM",
    flag: None,
    kind: Parsed { default: "org", parse: text, refuses: &[] },
    doc: "OAuth: the claim naming the token holder's org",
};
pub const OAUTH_PROJECTS_CLAIM: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OAUTH_PROJECTS_CLAIM",
    flag: None,
    kind: Parsed { default: "projects", parse: text, refuses: &[] },
    doc: "OAuth: the claim naming the token holder's projects",
};
pub const OAUTH_ORG: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_ORG",
    flag: None,
    kind: Optional { when_unset: "none: each token's org claim", parse: org, refuses: &["a\tb"] },
    doc: "OAuth: every token's org, for a single-tenant server",
};
pub const OAUTH_CLIENT_ID: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_CLIENT_ID",
    flag: None,
    kind: Optional { when_unset: "none: opaque tokens are not introspected", parse: text, refuses: &[] },
    doc: "OAuth: Cortex's client at the issuer, to introspect opaque tokens with (with the secret)",
};
pub const OAUTH_CLIENT_SECRET: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_CLIENT_SECRET",
    flag: None,
    kind: Optional { when_unset: "none: opaque tokens are not introspected", parse: text, refuses: &[] },
    doc: "OAuth: that client's secret (never shown by `cortex doctor`)",
};

/// The HTTP server's settings, in the docs' order.
pub static SETTINGS: [&(dyn Declared + Sync); 24] = [
    &HTTP_ADDR,
    &HTTP_ALLOW_ORIGIN,
    &HTTP_RATE,
    &HTTP_MAX_BODY_BYTES,
    &HTTP_CALL_TIMEOUT_MS,
    &HTTP_MAX_CONCURRENT,
    &HTTP_HEADER_TIMEOUT_MS,
    &HTTP_BODY_TIMEOUT_MS,
    &HTTP_IDLE_TIMEOUT_MS,
    &HTTP_MAX_CONNECTIONS,
    &HTTP_MAX_CONNECTIONS_PER_IP,
    &HTTP_MAX_SESSIONS_PER_KEY,
    &HTTP_SESSION_IDLE_TIMEOUT_MS,
    &HTTP_MAX_BYTES_IN_FLIGHT,
    &HTTP_TLS_CERT,
    &HTTP_TLS_KEY,
    &OAUTH_ISSUER,
    &PUBLIC_URL,
    &OAUTH_AUDIENCE,
    &OAUTH_ORG_CLAIM,
    &OAUTH_PROJECTS_CLAIM,
    &OAUTH_ORG,
    &OAUTH_CLIENT_ID,
    &OAUTH_CLIENT_SECRET,
];

/// Every setting of the `cortex` binary, in the docs' order: the service's, then the HTTP
/// server's.
pub fn all() -> impl Iterator<Item = &'static (dyn Declared + Sync)> + Clone {
    cortex_service::settings::SETTINGS.iter().chain(SETTINGS.iter()).copied()
}

fn rate(value: &str) -> Result<Rate, Refusal> {
    Rate::parse(value, "CORTEX_HTTP_RATE").map_err(|e| Refusal::new(e.message, e.human_hint))
}

fn org(value: &str) -> Result<String, Refusal> {
    scope_value("org", value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_service::settings::{SettingInForce, check_environment, in_force, markdown_table};

    fn find<'a>(all: &'a [SettingInForce], name: &str) -> &'a SettingInForce {
        all.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn each_value_says_where_it_came_from_and_passwords_are_masked() {
        let env = |k: &str| match k {
            "CORTEX_DB" => Some("postgres://cortex:s3cret@db:5432/memory".to_string()),
            "CORTEX_EMBEDDER" => Some("none".to_string()),
            "CORTEX_ORG" => Some("  ".to_string()),
            "CORTEX_OAUTH_CLIENT_SECRET" => Some("s3cret".to_string()),
            _ => None,
        };
        let shown = in_force(all(), env, Some("postgres://cortex:s3cret@db:5432/memory"));
        assert_eq!(shown.len(), all().count());
        let db = find(&shown, "CORTEX_DB");
        assert_eq!((db.value.as_str(), db.from), ("postgres://cortex:***@db:5432/memory", "environment"));
        assert_eq!(find(&shown, "CORTEX_EMBEDDER").from, "environment");
        assert_eq!(find(&shown, "CORTEX_ORG").from, "default", "blank counts as unset");
        assert_eq!(find(&shown, "CORTEX_LOG").value, "info");
        assert_eq!(find(&shown, "CORTEX_OAUTH_CLIENT_SECRET").value, "***");
        let flagged = in_force(all(), |_| None, Some("other.db"));
        assert_eq!(
            (find(&flagged, "CORTEX_DB").value.as_str(), find(&flagged, "CORTEX_DB").from),
            ("other.db", "--db")
        );
    }

    #[test]
    fn the_documented_settings_table_is_the_table_in_the_code() {
        let doc = include_str!("../../../docs/CONFIGURATION.md");
        let section = doc.split("## Settings\n").nth(1).unwrap();
        let documented: String = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            documented == markdown_table(all()),
            "docs/CONFIGURATION.md's settings table differs from the code's; it should read:\n{}",
            markdown_table(all())
        );
    }

    #[test]
    fn every_default_is_accepted_and_every_example_of_a_bad_value_refused() {
        for s in all() {
            if s.default_is_value() {
                s.check(&s.default_text()).unwrap_or_else(|e| panic!("the default of {}: {e}", s.name()));
            }
            for bad in s.refuses() {
                let e = s.check(&bad).expect_err(&format!("{}={bad:?} accepted", s.name()));
                assert_eq!(e.name, s.name());
            }
        }
        // The typed default the code falls back to is the one the docs show.
        assert_eq!(HTTP_RATE.get(|_| None).unwrap(), HTTP_RATE.parse("50/s").unwrap());
    }

    #[test]
    fn check_environment_refuses_the_first_bad_value_and_ignores_blank_ones() {
        let env = |k: &str| match k {
            "CORTEX_LOG" => Some(" ".to_string()),
            "CORTEX_HTTP_RATE" => Some("fast".to_string()),
            "CORTEX_DB_POOL_SIZE" => Some("8".to_string()),
            _ => None,
        };
        let e = check_environment(all(), env).unwrap_err();
        assert_eq!(e.name, "CORTEX_HTTP_RATE");
        assert!(e.to_string().starts_with("CORTEX_HTTP_RATE=\"fast\": "), "{e}");
        assert!(check_environment(all(), |_| None).is_ok());
    }

    #[test]
    fn no_code_reads_a_cortex_variable_but_through_the_table() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut direct = Vec::new();
        for path in rust_sources(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            // `.env("CORTEX_…", …)` sets a child process's variable: not a read.
            for read in ["var(\"CORTEX_", "var_os(\"CORTEX_", "env(\"CORTEX_"] {
                for (at, _) in text.match_indices(read) {
                    if text[..at].ends_with('.') && read.starts_with("env") {
                        continue;
                    }
                    let line = text[..at].lines().count();
                    let plumbing =
                        PLUMBING.iter().any(|p| text[at + read.len() - "CORTEX_".len()..].starts_with(p));
                    if !plumbing && !is_test_code(&text, at) {
                        direct.push(format!("{}:{line}", path.display()));
                    }
                }
            }
        }
        assert!(
            direct.is_empty(),
            "read these through a settings table (cortex_service::settings, cortex_server::settings): {direct:?}"
        );
    }

    /// Test and benchmark plumbing, not settings of the product.
    const PLUMBING: [&str; 5] = [
        "CORTEX_TEST_DATABASE_URL",
        "CORTEX_TEST_POOLED",
        "CORTEX_BENCH_POSTGRES",
        "CORTEX_BIN",
        "CORTEX_FUZZ",
    ];

    /// Every `.rs` file under the crates' `src` folders.
    fn rust_sources(root: &str) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for krate in std::fs::read_dir(root).unwrap() {
            let mut stack = vec![krate.unwrap().path().join("src")];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        files.push(path);
                    }
                }
            }
        }
        files
    }

    /// Whether `at` lies in a file's `#[cfg(test)]` module (by convention its last part).
    fn is_test_code(text: &str, at: usize) -> bool {
        text.find("#[cfg(test)]").is_some_and(|start| start < at)
    }

    #[test]
    fn every_cortex_variable_the_code_reads_is_declared() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut unknown = Vec::new();
        for path in rust_sources(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, _) in text.match_indices("CORTEX_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                let name = name.trim_end_matches('_');
                if name.len() > "CORTEX_".len()
                    && !is_test_code(&text, at)
                    && !all().any(|s| s.name() == name)
                    && !PLUMBING.iter().any(|p| name.starts_with(p))
                {
                    unknown.push(format!("{}: {name}", path.display()));
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "declare these in a settings table (and docs/CONFIGURATION.md) or as plumbing: {unknown:?}"
        );
    }
}
