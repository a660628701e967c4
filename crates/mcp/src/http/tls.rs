//! The server's listener: plain TCP, or HTTPS for the team server (`--tls-cert` / `--tls-key`): rustls with its ring provider (the
//! one the PostgreSQL and model-download clients use), behind axum's own `serve` as a
//! `Listener`. Handshakes run on tasks of their own, so a client that stalls its handshake
//! never holds up the next connection; one that does not finish within
//! [`HANDSHAKE_TIMEOUT`] is dropped.

use axum::serve::Listener;
use cortex_service::config::ConfigError;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::either::Either;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificate chain and private key files (PEM) the server presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// Both flags or neither; `None` serves plain HTTP.
    pub fn resolve(cert: Option<PathBuf>, key: Option<PathBuf>) -> Result<Option<TlsFiles>, ConfigError> {
        match (cert, key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => {
                let files = TlsFiles { cert, key };
                files.server_config()?;
                Ok(Some(files))
            }
            (Some(cert), None) => Err(ConfigError::new(
                "--tls-key / CORTEX_HTTP_TLS_KEY",
                "",
                "is missing",
                format!("HTTPS needs the private key of {} as well", cert.display()),
            )),
            (None, Some(key)) => Err(ConfigError::new(
                "--tls-cert / CORTEX_HTTP_TLS_CERT",
                "",
                "is missing",
                format!("HTTPS needs the certificate (chain) that goes with {} as well", key.display()),
            )),
        }
    }

    /// The rustls configuration of these files; an unreadable or unusable file is an error
    /// naming its flag.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, ConfigError> {
        let certs = read_certs(&self.cert)?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| {
            ConfigError::new(
                "--tls-key / CORTEX_HTTP_TLS_KEY",
                &self.key.display().to_string(),
                format!("holds no usable PEM private key ({e})"),
                "give the PEM file of the certificate's private key (PKCS#8, PKCS#1 or SEC1)",
            )
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
            .map_err(|e| {
                ConfigError::new(
                    "--tls-cert / CORTEX_HTTP_TLS_CERT",
                    &self.cert.display().to_string(),
                    format!("cannot be served with {} ({e})", self.key.display()),
                    "give a certificate and the private key that belongs to it",
                )
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let refuse = |why: String| {
        ConfigError::new(
            "--tls-cert / CORTEX_HTTP_TLS_CERT",
            &path.display().to_string(),
            why,
            "give the PEM file of the server's certificate, followed by its intermediates",
        )
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| refuse(format!("cannot be read ({e})")))?
        .collect::<Result<_, _>>()
        .map_err(|e| refuse(format!("is not PEM ({e})")))?;
    if certs.is_empty() {
        return Err(refuse("holds no certificate".into()));
    }
    Ok(certs)
}

/// Connections that completed their TLS handshake, with the peer's address.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` from now on (on a task of its own), handing over connections once
    /// their handshake is done.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (sender, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            while !sender.is_closed() {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, then go on accepting.
                        tracing::warn!("accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                no_delay(&stream);
                let (acceptor, sender) = (acceptor.clone(), sender.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = sender.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake not finished in time: dropped"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task ended (never while the listener lives): no more connections.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// Where the server accepts: plain TCP, or TLS over it.
pub enum ServerListener {
    Plain(TcpListener),
    Tls(TlsListener),
}

impl Listener for ServerListener {
    type Io = Either<TcpStream, TlsStream<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self {
            ServerListener::Plain(tcp) => {
                let (io, peer) = Listener::accept(tcp).await;
                no_delay(&io);
                (Either::Left(io), peer)
            }
            ServerListener::Tls(tls) => {
                let (io, peer) = tls.accept().await;
                (Either::Right(io), peer)
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        match self {
            ServerListener::Plain(tcp) => Listener::local_addr(tcp),
            ServerListener::Tls(tls) => tls.local_addr(),
        }
    }
}

/// Answers leave at once: without it, a small response waits for the client's delayed ACK
/// (Nagle), some 40 ms on Linux.
fn no_delay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
}
