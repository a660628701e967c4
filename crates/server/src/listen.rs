//! Accepting and serving connections (HTTP/1.1, plain or TLS) with hyper's connection
//! builder rather than `axum::serve`, which exposes no timeouts: each connection is
//! registered in [`Connections`] (caps, shedding), its TLS handshake and headers must arrive
//! within the header timeout, an idle keep-alive within the idle timeout, and a stopping server
//! lets each finish its answer and closes it.

use super::conns::{Conn, Connections, Full, Registered};
use super::gate::hold_until_sent;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderName, HeaderValue, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

/// How often a connection checks whether it waited too long.
const TICK: Duration = Duration::from_millis(250);

/// Shed sockets not closed yet that the accept loop lets pile up: well within the descriptors
/// the connection cap keeps back.
const MAX_CLOSING: usize = 16;

/// Accepts until `stop` is cancelled; then each connection finishes its answer and closes
/// (a connection still open is left to the caller's deadline).
pub async fn accept_loop(
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    registry: Arc<Connections>,
    stop: CancellationToken,
) {
    loop {
        while registry.closing() > MAX_CLOSING {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let accepted = tokio::select! {
            accepted = tcp.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors despite the cap (the store's files count too): make room.
                let shed = out_of_descriptors(&e) && registry.shed_one();
                tracing::warn!(
                    "accepting a connection failed: {e}{}",
                    if shed { "; closed the oldest waiting connection" } else { "" }
                );
                if !shed {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        let registered = match registry.admit(peer.ip()) {
            Ok(registered) => registered,
            Err(full) => {
                let cap = match full {
                    Full::Address => "connections from this address",
                    Full::Server => "connections",
                };
                tracing::debug!(%peer, "refused a connection: every one of the server's {cap} has a call running");
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            // Without it a small answer waits for the client's delayed ACK (Nagle).
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let (tls, router, stop) = (tls.clone(), router.clone(), stop.clone());
        tokio::spawn(serve_connection(stream, peer, tls, router, registered, stop));
    }
}

fn out_of_descriptors(e: &io::Error) -> bool {
    // EMFILE (24) and ENFILE (23) on Linux and the BSDs.
    matches!(e.raw_os_error(), Some(23 | 24))
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    router: Router,
    registered: Registered,
    stop: CancellationToken,
) {
    let conn = registered.conn.clone();
    let policy = *registered.policy();
    let io = Tracked { inner: stream, conn: conn.clone() };
    let io = match tls {
        None => Either::Left(io),
        Some(acceptor) => {
            let handshake = tokio::time::timeout(policy.header_timeout, acceptor.accept(io));
            tokio::select! {
                done = handshake => match done {
                    Ok(Ok(tls)) => Either::Right(tls),
                    Ok(Err(e)) => return tracing::debug!(%peer, "TLS handshake failed: {e}"),
                    Err(_) => {
                        registered.metrics().connection_closed("timeout");
                        return tracing::debug!(%peer, "TLS handshake not finished in time: closed");
                    }
                },
                () = conn.shed.cancelled() => return,
            }
        }
    };
    // Clients that honour it (Node's fetch does) stop reusing a connection before the
    // server closes it for idling, rather than sending a request into a closing socket.
    let keep_alive = HeaderValue::try_from(format!("timeout={}", policy.idle_timeout.as_secs().max(1))).ok();
    let service = hyper::service::service_fn({
        let conn = conn.clone();
        move |mut request: hyper::Request<Incoming>| {
            let keep_alive = keep_alive.clone();
            request.extensions_mut().insert(ConnectInfo(peer));
            conn.begin();
            let answering = Answering(conn.clone());
            let mut router = router.clone();
            async move {
                // Router is always ready: no `poll_ready` needed.
                let mut response = match router.call(request.map(Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                if let Some(value) = keep_alive
                    && !response.headers().contains_key(header::CONNECTION)
                {
                    response.headers_mut().insert(HeaderName::from_static("keep-alive"), value);
                }
                Ok::<_, Infallible>(hold_until_sent(response, answering))
            }
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.keep_alive(true);
    let mut connection = pin!(builder.serve_connection(TokioIo::new(io), service));
    let mut ticks = tokio::time::interval(TICK);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                break;
            }
            () = conn.shed.cancelled() => {
                tracing::debug!(%peer, "connection closed to make room for a new one");
                break;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = ticks.tick() => {
                if conn.overdue(&policy) {
                    registered.metrics().connection_closed("timeout");
                    tracing::debug!(%peer, "connection closed: no complete request in time");
                    break;
                }
            }
        }
    }
    drop(registered);
}

/// A request being answered on a connection, until its answer has been sent.
struct Answering(Arc<Conn>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The socket, telling its connection when bytes arrive (headers begin).
struct Tracked {
    inner: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Tracked {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.conn.on_read();
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The process's soft limit on open files (RLIMIT_NOFILE), where the system tells it.
pub fn descriptor_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}
