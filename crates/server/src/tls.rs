//! HTTPS for the team server (`--tls-cert` / `--tls-key`): rustls with its ring provider (the
//! one the PostgreSQL and model-download clients use). Each connection's handshake runs on its
//! own task (`listen`), within the header timeout.

use cortex_service::config::ConfigError;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
