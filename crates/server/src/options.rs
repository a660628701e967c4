//! The HTTP server's settings: where it listens, which browser origins it admits, and the
//! limits every key lives under. Read once at start from the flags and the environment (the
//! HTTP variables of `crate::settings`); a bad value stops start-up naming it.

use crate::settings;
use cortex_domain::api_key::Rate;
use cortex_service::config::ConfigError;
use cortex_service::settings::{Setting, Whole};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// How long a stopping server waits for calls in flight before it leaves anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Browser origins admitted (`scheme://host[:port]`, lowercase); a request with any other
    /// `Origin` is refused (DNS rebinding, cross-site requests). Requests without one pass.
    pub allowed_origins: Vec<String>,
    /// Per key unless the key has its own (`cortex keys create --rate`).
    pub default_rate: Rate,
    pub max_body_bytes: usize,
    pub call_timeout: Duration,
    /// Calls one key may have running at once.
    pub max_concurrent_per_key: usize,
    /// HTTPS with these files; plain HTTP when `None`.
    pub tls: Option<super::TlsFiles>,
    /// OAuth access tokens accepted beside API keys when set (`CORTEX_OAUTH_ISSUER`).
    pub oauth: Option<super::oauth::OAuthOptions>,
    /// How long a client may take to send a request's headers (and its TLS handshake),
    /// counted from the connection's opening or the first byte after an answer.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Connections open at once, in all (the descriptor limit may lower it at start).
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_ip: usize,
    /// MCP sessions one key may hold; a new one past it ends the key's oldest.
    pub max_sessions_per_key: usize,
    /// How long an MCP session may go without a request before it ends.
    pub session_idle_timeout: Duration,
    /// Request bytes being read or held by calls at once, over all keys.
    pub max_bytes_in_flight: usize,
    /// The origin of `CORTEX_PUBLIC_URL`: the web UI's forms from it pass the Origin check.
    pub public_origin: Option<String>,
}

impl HttpOptions {
    /// `addr` from `--http` / `CORTEX_HTTP_ADDR`, origins from `--allow-origin` /
    /// `CORTEX_HTTP_ALLOW_ORIGIN`; the limits from `env`.
    pub fn resolve(
        addr: &str,
        origins: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<HttpOptions, ConfigError> {
        // Each number's default and range is in the settings table; its bounds fit a usize.
        let millis = |s: &Setting<Whole>| s.get(&env).map(Duration::from_millis);
        let count = |s: &Setting<Whole>| s.get(&env).map(|n| n as usize);
        let options = HttpOptions {
            public_origin: super::ui::public_origin(settings::PUBLIC_URL.get(&env)?.as_deref()),
            addr: parse_addr("--http / CORTEX_HTTP_ADDR", addr)?,
            allowed_origins: origins.iter().map(|o| parse_origin(o)).collect::<Result<_, _>>()?,
            default_rate: settings::HTTP_RATE.get(&env)?,
            max_body_bytes: count(&settings::HTTP_MAX_BODY_BYTES)?,
            call_timeout: millis(&settings::HTTP_CALL_TIMEOUT_MS)?,
            max_concurrent_per_key: count(&settings::HTTP_MAX_CONCURRENT)?,
            tls: None,
            oauth: super::oauth::OAuthOptions::resolve(&env)?,
            header_timeout: millis(&settings::HTTP_HEADER_TIMEOUT_MS)?,
            body_timeout: millis(&settings::HTTP_BODY_TIMEOUT_MS)?,
            idle_timeout: millis(&settings::HTTP_IDLE_TIMEOUT_MS)?,
            max_connections: count(&settings::HTTP_MAX_CONNECTIONS)?,
            max_connections_per_ip: count(&settings::HTTP_MAX_CONNECTIONS_PER_IP)?,
            max_sessions_per_key: count(&settings::HTTP_MAX_SESSIONS_PER_KEY)?,
            session_idle_timeout: millis(&settings::HTTP_SESSION_IDLE_TIMEOUT_MS)?,
            max_bytes_in_flight: count(&settings::HTTP_MAX_BYTES_IN_FLIGHT)?,
        };
        // A body as large as the server accepts must fit in what may be in flight, or it
        // could never be read.
        if options.max_bytes_in_flight < options.max_body_bytes {
            return Err(ConfigError::new(
                "CORTEX_HTTP_MAX_BYTES_IN_FLIGHT",
                &options.max_bytes_in_flight.to_string(),
                format!("is below the largest body accepted ({} bytes)", options.max_body_bytes),
                "raise it, or lower CORTEX_HTTP_MAX_BODY_BYTES to at most it",
            ));
        }
        Ok(options)
    }

    /// Admits pages served by this server itself: its own origin (same scheme, address and
    /// port; on loopback also `localhost`) is no other site. Known only once the listener is
    /// bound (port 0 picks one). A DNS-rebinding page still carries its own site's origin.
    pub fn with_own_origins(mut self, scheme: &str, local: std::net::SocketAddr) -> HttpOptions {
        let mut own = Vec::new();
        if !local.ip().is_unspecified() {
            own.push(format!("{scheme}://{local}"));
        }
        if local.ip().is_loopback() {
            own.push(format!("{scheme}://localhost:{}", local.port()));
        }
        for origin in own {
            if !self.allowed_origins.contains(&origin) {
                self.allowed_origins.push(origin);
            }
        }
        self
    }

    /// Serves HTTPS with these files (`--tls-cert` / `--tls-key`, checked already).
    pub fn with_tls(self, tls: Option<super::TlsFiles>) -> HttpOptions {
        HttpOptions { tls, ..self }
    }

    /// Whether only this machine can reach the server.
    pub fn is_loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }
}

/// An address to serve on, given as `field`: IP:PORT or a name with a port (`localhost:9000`),
/// the name's first address.
pub fn parse_addr(field: &'static str, text: &str) -> Result<SocketAddr, ConfigError> {
    const HINT: &str = "give host:port, e.g. 127.0.0.1:8787 or localhost:8787 (this machine only), [::1]:8787, or 0.0.0.0:8787 (every interface; API keys are then required)";
    let trimmed = text.trim();
    if !trimmed.contains(':') {
        return Err(ConfigError::new(field, text, "has no port", HINT));
    }
    trimmed
        .to_socket_addrs()
        .map_err(|e| ConfigError::new(field, text, format!("is not an address ({e})"), HINT))?
        .next()
        .ok_or_else(|| ConfigError::new(field, text, "names no address", HINT))
}

/// An origin as browsers send it: `scheme://host[:port]`, compared lowercase.
fn parse_origin(text: &str) -> Result<String, ConfigError> {
    let origin = text.trim().trim_end_matches('/').to_ascii_lowercase();
    let ok = origin.split_once("://").is_some_and(|(scheme, host)| {
        matches!(scheme, "http" | "https") && !host.is_empty() && !host.contains('/')
    });
    if !ok || origin.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ConfigError::new(
            "--allow-origin / CORTEX_HTTP_ALLOW_ORIGIN",
            text,
            "is not an origin",
            "give scheme://host[:port] as a browser sends it, e.g. https://app.example.com or http://localhost:3000",
        ));
    }
    Ok(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(addr: &str, origins: &[&str], vars: &[(&str, &str)]) -> Result<HttpOptions, ConfigError> {
        let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
        HttpOptions::resolve(addr, &origins, |k| {
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults_and_loopback() {
        let o = resolve("127.0.0.1:8787", &[], &[]).unwrap();
        assert!(o.is_loopback());
        assert_eq!(o.default_rate.per_second, 50.0);
        let local: std::net::SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let own = o.clone().with_own_origins("http", local).allowed_origins;
        assert!(
            own.contains(&"http://127.0.0.1:8787".to_string())
                && own.contains(&"http://localhost:8787".to_string())
        );
        let anywhere: std::net::SocketAddr = "0.0.0.0:8787".parse().unwrap();
        assert!(
            o.clone().with_own_origins("https", anywhere).allowed_origins.is_empty(),
            "no own name is known"
        );
        assert_eq!(o.max_body_bytes, cortex_domain::limits::MAX_MESSAGE_BYTES);
        assert_eq!(o.call_timeout, Duration::from_secs(30));
        assert_eq!(
            (o.header_timeout, o.body_timeout, o.idle_timeout),
            (Duration::from_secs(10), Duration::from_secs(60), Duration::from_secs(60))
        );
        assert_eq!((o.max_connections, o.max_connections_per_ip, o.max_sessions_per_key), (4096, 256, 100));
        assert!(o.max_bytes_in_flight >= o.max_body_bytes);
        assert!(!resolve("0.0.0.0:8787", &[], &[]).unwrap().is_loopback());
        assert!(resolve("localhost:0", &[], &[]).unwrap().is_loopback());
    }

    #[test]
    fn bad_values_name_their_setting() {
        assert_eq!(resolve("8787", &[], &[]).unwrap_err().name, "--http / CORTEX_HTTP_ADDR");
        assert_eq!(resolve("nowhere.invalid:x", &[], &[]).unwrap_err().name, "--http / CORTEX_HTTP_ADDR");
        assert_eq!(
            resolve("127.0.0.1:1", &["evil.com"], &[]).unwrap_err().name,
            "--allow-origin / CORTEX_HTTP_ALLOW_ORIGIN"
        );
        assert_eq!(
            resolve("127.0.0.1:1", &[], &[("CORTEX_HTTP_RATE", "fast")]).unwrap_err().name,
            "CORTEX_HTTP_RATE"
        );
        assert_eq!(
            resolve("127.0.0.1:1", &[], &[("CORTEX_HTTP_MAX_CONCURRENT", "0")]).unwrap_err().name,
            "CORTEX_HTTP_MAX_CONCURRENT"
        );
        assert_eq!(
            resolve("127.0.0.1:1", &[], &[("CORTEX_HTTP_CALL_TIMEOUT_MS", "1e3")]).unwrap_err().name,
            "CORTEX_HTTP_CALL_TIMEOUT_MS"
        );
        for name in [
            "CORTEX_HTTP_HEADER_TIMEOUT_MS",
            "CORTEX_HTTP_BODY_TIMEOUT_MS",
            "CORTEX_HTTP_IDLE_TIMEOUT_MS",
            "CORTEX_HTTP_MAX_CONNECTIONS",
            "CORTEX_HTTP_MAX_CONNECTIONS_PER_IP",
            "CORTEX_HTTP_MAX_SESSIONS_PER_KEY",
            "CORTEX_HTTP_MAX_BYTES_IN_FLIGHT",
            "CORTEX_HTTP_SESSION_IDLE_TIMEOUT_MS",
        ] {
            assert_eq!(resolve("127.0.0.1:1", &[], &[(name, "0")]).unwrap_err().name, name);
        }
        let below_body = resolve(
            "127.0.0.1:1",
            &[],
            &[("CORTEX_HTTP_MAX_BYTES_IN_FLIGHT", "4096"), ("CORTEX_HTTP_MAX_BODY_BYTES", "8192")],
        )
        .unwrap_err();
        assert_eq!(below_body.name, "CORTEX_HTTP_MAX_BYTES_IN_FLIGHT");
        assert!(below_body.hint.contains("CORTEX_HTTP_MAX_BODY_BYTES"), "{}", below_body.hint);
        let o =
            resolve("127.0.0.1:1", &["HTTPS://App.Example.com/"], &[("CORTEX_HTTP_MAX_BODY_BYTES", "2048")])
                .unwrap();
        assert_eq!((o.allowed_origins[0].as_str(), o.max_body_bytes), ("https://app.example.com", 2048));
    }
}
