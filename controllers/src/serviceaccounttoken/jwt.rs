//! Signing legacy ServiceAccount tokens: upstream's JWT of a token Secret (issuer
//! `kubernetes/serviceaccount`, `proto::serviceaccount::LegacyClaims`), with the key the API
//! server verifies ServiceAccount tokens with (an ECDSA P-256 PEM key: ES256).

use std::path::{Path, PathBuf};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use tinykube_proto::serviceaccount::LegacyClaims;

/// Why the signing key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading --service-account-private-key-file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--service-account-private-key-file {path} is not a PEM ECDSA key: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: jsonwebtoken::errors::Error,
    },
}

/// Signs legacy tokens.
pub struct Signer {
    key: EncodingKey,
}

impl Signer {
    pub fn from_pem(pem: &[u8]) -> Result<Signer, jsonwebtoken::errors::Error> {
        Ok(Signer {
            key: EncodingKey::from_ec_pem(pem)?,
        })
    }

    pub fn from_file(path: &Path) -> Result<Signer, KeyError> {
        let pem = std::fs::read(path).map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Signer::from_pem(&pem).map_err(|source| KeyError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The token of `claims`, a compact JWS whose header names the algorithm only (as the
    /// API server's own tokens).
    pub fn sign(&self, claims: &LegacyClaims) -> Result<String, jsonwebtoken::errors::Error> {
        let header = Header {
            typ: None,
            ..Header::new(Algorithm::ES256)
        };
        jsonwebtoken::encode(&header, claims, &self.key)
    }
}
