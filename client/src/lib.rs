//! tinykube's client runtime: how every component reaches the cluster.
//!
//! [`Config`] comes from a kubeconfig file or `--master URL`; [`Api`] is a typed REST client for
//! one kind (over `k8s-openapi`'s types) with list/watch/create/update/patch/delete and the
//! subresources; [`watcher`] turns list+watch into a stream that survives 410 and broken
//! streams; [`reflector`] keeps an in-memory cache with indexes. Users never write URLs or JSON.

mod api;
mod config;
pub mod dynamic;
pub mod endpoint;
mod error;
pub mod events;
pub mod leader;
pub mod reflector;
mod rest;
mod watch;
pub mod watcher;

pub use api::{Api, Kind, ListParams, Patch, PostParams, Scope};
pub use config::{http_builder, proxy_exempt, Client, Config, Tls};
pub use error::{ClientError, Status};
pub use watch::WatchEvent;

pub use k8s_openapi;

/// The current time as the API types hold it.
pub fn now() -> k8s_openapi::jiff::Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    k8s_openapi::jiff::Timestamp::new(d.as_secs() as i64, d.subsec_nanos() as i32)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}
