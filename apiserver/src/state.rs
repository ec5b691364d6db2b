//! The server's shared state: a cheap-to-clone handle over the store and settings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::identity::Keys;
use crate::kinds::Kinds;
use crate::policy::UserInfo;
use crate::storage::Objects;

pub struct Shared {
    pub objects: Objects,
    /// The kinds served: built-ins and the resources of established definitions.
    pub kinds: Kinds,
    /// Bearer tokens accepted, with their users; `None`: no authentication.
    pub tokens: Option<HashMap<String, UserInfo>>,
    /// `--authorization-mode`: what every request is checked against.
    pub authorization: crate::authz::AuthorizationMode,
    /// The cluster CA and the ServiceAccount token keys.
    pub keys: Arc<Keys>,
    /// Cancelled when the server stops: watches end.
    pub shutdown: CancellationToken,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// The ranges of Services' cluster IPs and node ports.
    pub services: crate::services::ServiceNet,
    /// Whether client certificates authenticate (`--client-ca-file`, over HTTPS).
    pub client_certs: bool,
    /// The time of the timestamps the server writes and of the tables' AGE columns.
    pub clock: tinykube_clock::Clock,
    /// The APIServices with a backend: where their group versions are proxied.
    pub aggregator: crate::aggregator::Aggregator,
}

#[derive(Clone)]
pub struct AppState(pub Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}
