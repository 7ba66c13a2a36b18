//! What every HTTP client of neocode shares (the providers, `web_fetch`): the TLS settings,
//! made once per process (ring as the crypto provider, the platform's certificate authorities
//! read only at the first TLS handshake), and an error's innermost cause in words.

use std::sync::{Arc, Once, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

static CRYPTO: Once = Once::new();

/// The innermost error's text: reqwest's outer text says only "error sending request".
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    let s = cur.to_string();
    if s.is_empty() { e.to_string() } else { s }
}
static TLS: OnceLock<rustls::ClientConfig> = OnceLock::new();
static VERIFIER: OnceLock<Arc<LazyVerifier>> = OnceLock::new();

/// What reqwest would set up itself (TLS 1.2 and 1.3, the system's certificate authorities
/// through the platform verifier, ALPN `h2` and `http/1.1`), made once per process, with
/// the verifier built at the first TLS handshake ([`LazyVerifier`]).
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    if let Some(c) = TLS.get() {
        return Ok(c.clone());
    }
    CRYPTO.call_once(|| {
        // Another part of the process may have installed one already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let verifier = VERIFIER
        .get_or_init(|| {
            Arc::new(LazyVerifier {
                provider: provider.clone(),
                inner: OnceLock::new(),
            })
        })
        .clone();
    let mut c = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TLS.get_or_init(|| c).clone())
}

/// The platform's certificate verifier, built on first use: building it reads and parses
/// every certificate authority of the system (about 150 files, 19 million instructions here,
/// most of the CPU of a one-delta turn), which a server on plain HTTP (a local model) never
/// needs, and which each new client used to do again. Signatures are checked with the
/// crypto provider's algorithms, as the platform verifier checks them, without the roots.
#[derive(Debug)]
struct LazyVerifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    inner: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl LazyVerifier {
    fn roots(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.inner
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.roots()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Whether this process read the system's certificate authorities (a TLS handshake
/// happened).
#[cfg(test)]
pub(crate) fn tls_roots_loaded() -> bool {
    VERIFIER.get().is_some_and(|v| v.inner.get().is_some())
}

/// How many signature schemes the shared verifier names (it needs no roots for that).
#[cfg(test)]
pub(crate) fn verifier_schemes() -> usize {
    VERIFIER
        .get()
        .map_or(0, |v| v.supported_verify_schemes().len())
}
