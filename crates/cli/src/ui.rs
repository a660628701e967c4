//! `cortex ui [ADDR]`: the web UI for one person on their own machine — `cortex serve --http
//! ADDR` on the embedded store (or `--db`). Once the port is this server's, the URL is printed
//! and the browser named by `$BROWSER` started on it; a port another program holds is refused
//! before anything is opened. Loopback addresses only: a server others can reach is `cortex
//! serve --http`'s, with API keys.

use crate::error::CliError;
use crate::output;
use std::net::SocketAddr;
use std::process::ExitCode;

pub const DEFAULT_ADDR: &str = "127.0.0.1:8787";

/// Serves the UI on `addr` until stopped.
pub fn run(db: Option<String>, addr: &str) -> Result<ExitCode, CliError> {
    let socket = cortex_server::parse_addr("ADDR", addr)?;
    if !socket.ip().is_loopback() {
        return Err(CliError::argument(
            "ADDR",
            format!(
                "`{addr}` is not a loopback address: `cortex ui` serves one person on this machine; \
                 for a team use `cortex serve --http {addr}` with API keys (docs/UI.md)"
            ),
        ));
    }
    let options = cortex_server::HttpOptions::resolve(&socket.to_string(), &[], crate::env)?;
    let browser = std::env::var_os("BROWSER").filter(|b| !b.is_empty());
    let served = crate::serve(db, Some(options), move |local| announce(local, browser));
    served.map_err(|e| match e {
        CliError::Serve(cortex_server::ServeError::Listen { addr, source })
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            CliError::argument(
                "ADDR",
                format!(
                    "port {} of {} is in use by another program (another `cortex ui`?); give a free \
                     one, e.g. `cortex ui {}:{}`",
                    addr.port(),
                    addr.ip(),
                    addr.ip(),
                    addr.port().wrapping_add(1).max(1024)
                ),
            )
        }
        other => other,
    })
}

/// Prints the URL of the server bound at `local` and starts the browser on it: the port is
/// this process's already, so the browser cannot land on another server.
fn announce(local: SocketAddr, browser: Option<std::ffi::OsString>) {
    let url = format!("http://{local}/");
    output::line(&format!("Cortex Memory's web UI: {url} (Ctrl-C stops it)"));
    if let Some(browser) = browser
        && let Err(e) = std::process::Command::new(&browser).arg(&url).spawn()
    {
        tracing::warn!("cannot start $BROWSER ({}): {e}; open {url} yourself", browser.to_string_lossy());
    }
}
