//! Client errors: the server's `Status` for API failures, and each local stage that can fail.

use serde::Deserialize;

/// A `Status` object returned by the server.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
pub struct Status {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub code: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error Status.
    #[error("{} ({}): {}", .0.reason, .0.code, .0.message)]
    Api(Status),
    #[error("reading the kubeconfig {path}: {reason}")]
    Config { path: String, reason: String },
    #[error("the TLS settings (CA, client certificate): {0}")]
    Tls(#[source] reqwest::Error),
    #[error("request to the API server failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("decoding the server's answer: {0}")]
    Decode(#[from] serde_json::Error),
}

impl ClientError {
    /// The HTTP status code of an API error.
    pub fn code(&self) -> Option<u16> {
        match self {
            ClientError::Api(s) => Some(s.code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }
}
