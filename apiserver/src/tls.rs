//! HTTPS: the rustls server configuration (the serving certificate from `--tls-cert-file` and
//! `--tls-private-key-file`, else the one generated from the cluster CA; client certificates
//! asked for when `--client-ca-file` is set) and [`TlsListener`], the axum listener whose
//! connections come out of a finished handshake with the client's [`Peer`] identity.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::identity::x509::{ClientCa, ClientCaError, PeerIdentity};

/// The HTTPS settings of a server (`None` in [`crate::Config`] is plain HTTP).
#[derive(Debug, Clone, Default)]
pub struct TlsConfig {
    /// `--tls-cert-file` and `--tls-private-key-file`; else `DATA_DIR/apiserver.crt` and
    /// `.key`, signed by the cluster CA, are generated on first start.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `--client-ca-file`: client certificates it signed authenticate their CN.
    pub client_ca_file: Option<PathBuf>,
}

/// Why HTTPS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("the serving certificate: {0}")]
    Generate(#[source] crate::identity::KeyError),
    #[error("the client CA: {0}")]
    ClientCa(#[source] ClientCaError),
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[source] rustls::Error),
}

/// The rustls configuration and the client CA (if any) of a server.
pub fn server_config(
    tls: &TlsConfig,
    generated: impl FnOnce() -> Result<(String, String), crate::identity::KeyError>,
) -> Result<(Arc<ServerConfig>, Option<ClientCa>), TlsError> {
    let client_ca = match &tls.client_ca_file {
        Some(path) => Some(ClientCa::load(path).map_err(TlsError::ClientCa)?),
        None => None,
    };
    let (cert, key, origin) = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => {
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p).map_err(|e| TlsError::Read {
                    path: p.clone(),
                    reason: e.to_string(),
                })
            };
            (read(cert)?, read(key)?, cert.clone())
        }
        _ => {
            let (cert, key) = generated().map_err(TlsError::Generate)?;
            (
                cert,
                key,
                PathBuf::from(crate::identity::serving::CERT_FILE),
            )
        }
    };
    let bad = |reason: String| TlsError::Read {
        path: origin.clone(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if chain.is_empty() {
        return Err(bad("no certificate in it".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| bad(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?;
    let builder = match &client_ca {
        Some(ca) => builder.with_client_cert_verifier(ca.handshake_verifier()),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(TlsError::Config)?;
    // axum serves HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(config), client_ca))
}

/// What a handler knows of the connection a request came on.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub identity: PeerIdentity,
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Peer {
        stream.remote_addr().clone()
    }
}

/// How long a client may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts TCP connections and hands over those whose handshake succeeded. Handshakes run
/// in their own tasks, so a slow client does not hold up the others.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, Peer)>,
}

impl TlsListener {
    /// Start accepting on `listener` until `shutdown`.
    pub fn new(
        listener: TcpListener,
        config: Arc<ServerConfig>,
        client_ca: Option<ClientCa>,
        shutdown: CancellationToken,
    ) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (tcp, addr) = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::debug!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let (acceptor, tx, client_ca) = (acceptor.clone(), tx.clone(), client_ca.clone());
                tokio::spawn(async move {
                    let tls =
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                            Ok(Ok(tls)) => tls,
                            Ok(Err(e)) => {
                                tracing::debug!(%addr, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%addr, "TLS handshake timed out");
                                return;
                            }
                        };
                    let identity = match &client_ca {
                        Some(ca) => ca.authenticate(tls.get_ref().1.peer_certificates()),
                        None => PeerIdentity::None,
                    };
                    if let PeerIdentity::Invalid(why) = &identity {
                        tracing::info!(%addr, "client certificate refused: {why}");
                    }
                    let _ = tx.send((tls, Peer { addr, identity })).await;
                });
            }
        });
        Ok(TlsListener { local, ready })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop stopped (shutdown): no more connections.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Peer> {
        Ok(Peer {
            addr: self.local,
            identity: PeerIdentity::None,
        })
    }
}
