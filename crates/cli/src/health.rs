//! `cortex health`: asks a running `cortex serve --http` on this machine for `GET /health` and
//! exits 0 when it answers 200, 1 otherwise: a container's health check, in an image with no
//! HTTP client of its own. The address is the server's (`--http`, `CORTEX_HTTP_ADDR`), an
//! unspecified one (0.0.0.0, [::]) asked on loopback. Plain HTTP only: a server behind TLS of its
//! own is checked by whatever terminates it.

use crate::error::CliError;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long the whole check may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The status line of the server's answer to `GET /health`, or why there was none.
pub fn check(addr: &str) -> Result<String, CliError> {
    let target = local_target(addr)?;
    let fail = |what: &str, e: std::io::Error| CliError::Run(format!("{what} {target}: {e}"));
    let mut stream =
        TcpStream::connect_timeout(&target, TIMEOUT).map_err(|e| fail("cannot connect to", e))?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| fail("cannot wait for", e))?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(|e| fail("cannot write to", e))?;
    let request = format!("GET /health HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| fail("cannot ask", e))?;
    let mut answer = Vec::new();
    stream.take(4096).read_to_end(&mut answer).map_err(|e| fail("no answer from", e))?;
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or_default().trim().to_string();
    if status.split_whitespace().nth(1) == Some("200") {
        Ok(status)
    } else {
        Err(CliError::Run(format!("{target}/health answered {status:?}, not 200")))
    }
}

/// Where to ask: `addr` as the server binds it, an unspecified address replaced by loopback.
fn local_target(addr: &str) -> Result<SocketAddr, CliError> {
    let mut target = addr.to_socket_addrs().ok().and_then(|mut all| all.next()).ok_or_else(|| {
        CliError::argument("--http", format!("{addr:?} is not an address to listen on (host:port)"))
    })?;
    match target.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => target.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(ip) if ip.is_unspecified() => target.set_ip(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        _ => {}
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_address_is_asked_on_loopback() {
        assert_eq!(local_target("0.0.0.0:8080").unwrap(), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(local_target("[::]:8080").unwrap(), "[::1]:8080".parse().unwrap());
        assert_eq!(local_target("127.0.0.1:9").unwrap(), "127.0.0.1:9".parse().unwrap());
        assert!(local_target("no port").is_err());
    }

    #[test]
    fn a_server_not_listening_is_a_failure_naming_the_address() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = free.local_addr().unwrap().to_string();
        drop(free);
        let e = check(&addr).unwrap_err().to_string();
        assert!(e.contains(&addr), "{e}");
    }

    #[test]
    fn a_200_passes_and_anything_else_fails() {
        for (answer, healthy) in
            [("HTTP/1.1 200 OK\r\n\r\nok", true), ("HTTP/1.1 503 Service Unavailable\r\n\r\n", false)]
        {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let server = std::thread::spawn(move || {
                let (mut conn, _) = listener.accept().unwrap();
                let mut request = [0u8; 512];
                let n = conn.read(&mut request).unwrap();
                assert!(String::from_utf8_lossy(&request[..n]).starts_with("GET /health HTTP/1.1\r\n"));
                conn.write_all(answer.as_bytes()).unwrap();
            });
            assert_eq!(check(&addr).is_ok(), healthy, "{answer}");
            server.join().unwrap();
        }
    }
}
