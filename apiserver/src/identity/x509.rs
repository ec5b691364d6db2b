//! Client-certificate authentication (`--client-ca-file`), as upstream's x509 authenticator:
//! the TLS handshake asks for a certificate without requiring one and accepts any (the client
//! still proves it holds the key); once the handshake is done the chain is verified against the
//! client CA for client auth, and a good one names the user: CN the user name, O the groups,
//! plus `system:authenticated`. A bad certificate does not fail the handshake: its requests get
//! 401 unless a bearer token authenticates them, as upstream's union of authenticators.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use crate::policy::UserInfo;

/// Who a connection's client certificate says the client is.
#[derive(Debug, Clone, Default)]
pub enum PeerIdentity {
    /// No certificate (or no `--client-ca-file`): bearer tokens decide.
    #[default]
    None,
    /// A certificate the client CA signed for client auth, with a common name.
    User(UserInfo),
    /// A certificate that failed verification, and why (logged; the request gets 401).
    Invalid(String),
}

/// Why the client CA could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ClientCaError {
    #[error("reading {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path} holds no usable CA certificate: {reason}")]
    Verifier { path: PathBuf, reason: String },
}

/// The client CA: verifies peer chains after the handshake.
#[derive(Debug, Clone)]
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl ClientCa {
    /// The CA certificates (PEM) of `path`.
    pub fn load(path: &Path) -> Result<ClientCa, ClientCaError> {
        let read = |reason: String| ClientCaError::Read {
            path: path.to_path_buf(),
            reason,
        };
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| read(e.to_string()))? {
            roots
                .add(cert.map_err(|e| read(e.to_string()))?)
                .map_err(|e| read(e.to_string()))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .allow_unauthenticated()
        .build()
        .map_err(|e| ClientCaError::Verifier {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(ClientCa { verifier })
    }

    /// The verifier to put in the TLS configuration: asks for a certificate, checks only the
    /// handshake's signature, leaves the chain to [`ClientCa::authenticate`].
    pub fn handshake_verifier(&self) -> Arc<dyn ClientCertVerifier> {
        Arc::new(RequestClientCert {
            inner: self.verifier.clone(),
        })
    }

    /// The identity of the chain a client presented (leaf first).
    pub fn authenticate(&self, chain: Option<&[CertificateDer<'static>]>) -> PeerIdentity {
        let Some((leaf, intermediates)) = chain.and_then(<[_]>::split_first) else {
            return PeerIdentity::None;
        };
        if let Err(e) = self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            return PeerIdentity::Invalid(format!(
                "verifying certificate {} failed: {e}",
                describe(leaf)
            ));
        }
        match user_of(leaf) {
            Some(user) => PeerIdentity::User(user),
            // Upstream's CommonNameUserConversion: no common name, no user.
            None => PeerIdentity::None,
        }
    }
}

/// The user a certificate names: CN the name, each O a group, then `system:authenticated`.
fn user_of(der: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let username = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    groups.push("system:authenticated".into());
    Some(UserInfo {
        username,
        uid: String::new(),
        groups,
        extra: Default::default(),
    })
}

/// As upstream's certificateIdentifier: `SN=…, CN=…, O=…, issuer="…"`, for the log line.
fn describe(der: &CertificateDer<'_>) -> String {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, cert)) => format!(
            "\"{}\" [serial {}] issued by \"{}\"",
            cert.subject(),
            cert.raw_serial_as_string(),
            cert.issuer()
        ),
        Err(_) => "(unparsable)".into(),
    }
}

/// Offers client authentication without requiring it and takes any chain, so that a
/// certificate from another CA reaches the authenticator (401) instead of failing the handshake.
#[derive(Debug)]
struct RequestClientCert {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};

    /// A CA: its certificate and key.
    fn ca(cn: &str) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        (params.self_signed(&key).unwrap(), key)
    }

    /// A leaf signed by `issuer`, with the subject's (type, value) pairs and `usage`.
    fn leaf(
        issuer: &(rcgen::Certificate, KeyPair),
        subject: &[(DnType, &str)],
        usage: ExtendedKeyUsagePurpose,
    ) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in subject {
            params.distinguished_name.push(t.clone(), *v);
        }
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        params
            .signed_by(&key, &issuer.0, &issuer.1)
            .unwrap()
            .der()
            .clone()
    }

    #[test]
    fn common_name_is_the_user_and_organizations_the_groups() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = ca("kubernetes");
        let path = dir.path().join("ca.crt");
        std::fs::write(&path, cluster.0.pem()).unwrap();
        let client_ca = ClientCa::load(&path).unwrap();
        // (rcgen keeps one value per attribute type: one O here.)
        let jane = [
            (DnType::OrganizationName, "dev"),
            (DnType::CommonName, "jane"),
        ];
        let client = ExtendedKeyUsagePurpose::ClientAuth;
        let cases: Vec<(&str, CertificateDer<'static>, &str)> = vec![
            (
                "signed",
                leaf(&cluster, &jane, client.clone()),
                "jane dev,system:authenticated",
            ),
            ("no CN", leaf(&cluster, &jane[..1], client.clone()), "none"),
            (
                "stranger",
                leaf(&ca("other"), &jane, client.clone()),
                "invalid",
            ),
            (
                "server usage",
                leaf(&cluster, &jane, ExtendedKeyUsagePurpose::ServerAuth),
                "invalid",
            ),
        ];
        for (what, cert, want) in cases {
            let got = match client_ca.authenticate(Some(&[cert])) {
                PeerIdentity::User(u) => format!("{} {}", u.username, u.groups.join(",")),
                PeerIdentity::None => "none".into(),
                PeerIdentity::Invalid(why) => {
                    assert!(why.starts_with("verifying certificate"), "{why}");
                    "invalid".into()
                }
            };
            assert_eq!(got, want, "{what}");
        }
        assert!(matches!(client_ca.authenticate(None), PeerIdentity::None));
    }
}
