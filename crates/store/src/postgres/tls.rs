//! TLS to PostgreSQL, as libpq's `sslmode` means it, with rustls:
//! - `disable`: no TLS; `prefer` (the default) and `require`: TLS (required for `require`)
//!   without checking the server's certificate — encrypted, but open to an active
//!   man-in-the-middle, as with libpq;
//! - `verify-ca`: the certificate must chain to a CA of `sslrootcert`;
//! - `verify-full`: that, and it must name the host connected to.
//!
//! `sslrootcert` is a PEM file of CA certificates, or `system` for the public web CAs
//! (webpki-roots). The PostgreSQL driver knows only disable/prefer/require and no
//! `sslrootcert`, so both are taken out of the URL here and become the TLS configuration.

use crate::{Result, StoreError};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore, SignatureScheme};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

pub(super) type Tls = MakeRustlsConnect;

/// What the URL asks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndHost,
}

/// The URL as the driver reads it, and the TLS connector its `sslmode` asks for.
pub(super) fn configure(url: &str, label: &str) -> Result<(String, Tls)> {
    let refuse = |reason: String| StoreError::Open { path: label.to_string(), reason };
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut mode = None;
    let mut root = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", value)) => mode = Some(value.to_string()),
            Some(("sslrootcert", value)) => root = Some(percent_decoded(value)),
            _ => kept.push(pair),
        }
    }
    let (driver_mode, check) = match mode.as_deref() {
        None | Some("prefer") => ("prefer", Check::Nothing),
        Some("disable") => ("disable", Check::Nothing),
        Some("allow") => ("prefer", Check::Nothing),
        Some("require") => ("require", Check::Nothing),
        Some("verify-ca") => ("require", Check::Chain),
        Some("verify-full") => ("require", Check::ChainAndHost),
        Some(other) => {
            return Err(refuse(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    kept.push(match driver_mode {
        "disable" => "sslmode=disable",
        "require" => "sslmode=require",
        _ => "sslmode=prefer",
    });
    let roots = match (check, root.as_deref()) {
        (Check::Nothing, _) => None,
        (_, None) => {
            return Err(refuse(format!(
                "sslmode={} needs the CA that signed the server's certificate: add sslrootcert=/path/to/ca.pem to the URL (or sslrootcert=system for a public CA)",
                mode.as_deref().unwrap_or_default()
            )));
        }
        (_, Some("system")) => Some(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }),
        (_, Some(path)) => Some(read_roots(path).map_err(|e| refuse(e.to_string()))?),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| refuse(format!("TLS setup: {e}")))?;
    let config = match (check, roots) {
        (Check::ChainAndHost, Some(roots)) => builder.with_root_certificates(roots).with_no_client_auth(),
        (_, roots) => {
            let verifier = Verifier {
                roots: roots.map(Arc::new),
                algorithms: provider.signature_verification_algorithms,
            };
            builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)).with_no_client_auth()
        }
    };
    Ok((format!("{base}?{}", kept.join("&")), MakeRustlsConnect::new(config)))
}

/// Why `sslrootcert` gives no CA to check the server's certificate against.
#[derive(Debug, thiserror::Error)]
enum RootsError {
    #[error("sslrootcert {path}: {source}")]
    Pem { path: String, source: rustls::pki_types::pem::Error },
    #[error("sslrootcert {path}: {source}")]
    Certificate { path: String, source: TlsError },
    #[error("sslrootcert {path} holds no PEM certificate")]
    Empty { path: String },
}

fn read_roots(path: &str) -> std::result::Result<RootCertStore, RootsError> {
    let pem = |source| RootsError::Pem { path: path.to_string(), source };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(pem)? {
        roots
            .add(cert.map_err(pem)?)
            .map_err(|source| RootsError::Certificate { path: path.to_string(), source })?;
    }
    if roots.is_empty() {
        return Err(RootsError::Empty { path: path.to_string() });
    }
    Ok(roots)
}

/// `%2F` and the like in a URL's value (a path in `sslrootcert`).
fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a connection checks of the server's certificate: nothing (`prefer`, `require`, as
/// libpq does without a root certificate) or its chain to `roots` (`verify-ca`). The
/// handshake's signatures are checked either way. (`verify-full` uses rustls's own verifier.)
#[derive(Debug)]
struct Verifier {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, TlsError> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, self.algorithms.all)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_leave_the_driver_a_url_it_reads() {
        let (url, _) = configure("postgres://u@h:5432/db?sslmode=require&application_name=x", "l").unwrap();
        assert_eq!(url, "postgres://u@h:5432/db?application_name=x&sslmode=require");
        let (url, _) = configure("postgres://u@h/db", "l").unwrap();
        assert_eq!(url, "postgres://u@h/db?sslmode=prefer");
        let (url, _) = configure("postgres://u@h/db?sslmode=verify-full&sslrootcert=system", "l").unwrap();
        assert_eq!(url, "postgres://u@h/db?sslmode=require");
        let parsed: std::result::Result<postgres::Config, _> = url.parse();
        assert!(parsed.is_ok());
    }

    #[test]
    fn a_verify_mode_without_a_ca_or_with_a_bad_one_is_refused_clearly() {
        let error = |url: &str| match configure(url, "l") {
            Err(StoreError::Open { reason, .. }) => reason,
            other => panic!("{url}: {:?}", other.map(|(u, _)| u)),
        };
        assert!(error("postgres://h/db?sslmode=verify-full").contains("sslrootcert="));
        assert!(
            error("postgres://h/db?sslmode=verify-ca&sslrootcert=/no/such/ca.pem")
                .contains("/no/such/ca.pem")
        );
        assert!(error("postgres://h/db?sslmode=verify").contains("verify-full"));
        let dir = tempfile::tempdir().unwrap();
        let not_pem = dir.path().join("ca.pem");
        std::fs::write(&not_pem, "not a certificate\n").unwrap();
        assert_eq!(
            error(&format!("postgres://h/db?sslmode=verify-ca&sslrootcert={}", not_pem.display())),
            format!("sslrootcert {} holds no PEM certificate", not_pem.display())
        );
        assert_eq!(percent_decoded("%2Ftmp%2Fca.pem"), "/tmp/ca.pem");
    }
}
