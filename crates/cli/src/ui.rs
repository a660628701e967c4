//! `cortex ui [ADDR]`: the web UI for one person on their own machine — `cortex serve --http
//! ADDR` on the embedded store (or `--db`), announced with the URL to open; the browser named
//! by `$BROWSER` is started on it once the server answers. Loopback addresses only: a server
//! others can reach is `cortex serve --http`'s, with API keys.

use crate::error::CliError;
use crate::output;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub const DEFAULT_ADDR: &str = "127.0.0.1:8787";
/// How long the browser waits for the server to answer before it is started anyway.
const BROWSER_WAIT: Duration = Duration::from_secs(30);

/// Checks `addr`, prints the URL, and starts `$BROWSER` on it in the background.
pub fn announce(addr: &str) -> Result<(), CliError> {
    let socket: SocketAddr = addr.trim().parse().map_err(|_| {
        CliError::argument("ADDR", format!("`{addr}` is not an address; give IP:PORT, e.g. {DEFAULT_ADDR}"))
    })?;
    if !socket.ip().is_loopback() {
        return Err(CliError::argument(
            "ADDR",
            format!(
                "`{addr}` is not a loopback address: `cortex ui` serves one person on this machine; \
                 for a team use `cortex serve --http {addr}` with API keys (docs/UI.md)"
            ),
        ));
    }
    let url = format!("http://{socket}/");
    output::line(&format!("Cortex Memory's web UI: {url} (Ctrl-C stops it)"));
    if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        std::thread::spawn(move || open_when_ready(browser, socket, url));
    }
    Ok(())
}

/// Starts the browser on `url` once `socket` accepts connections (or after [`BROWSER_WAIT`]).
fn open_when_ready(browser: std::ffi::OsString, socket: SocketAddr, url: String) {
    let started = Instant::now();
    while TcpStream::connect_timeout(&socket, Duration::from_millis(200)).is_err()
        && started.elapsed() < BROWSER_WAIT
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Err(e) = std::process::Command::new(&browser).arg(&url).spawn() {
        tracing::warn!("cannot start $BROWSER ({}): {e}; open {url} yourself", browser.to_string_lossy());
    }
}
