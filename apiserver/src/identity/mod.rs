//! Identity: the cluster CA and signing key kept in the data dir (`keys`), the serving
//! certificate it signs (`serving`), the ServiceAccount tokens signed with it and their
//! verification (`token`), legacy ServiceAccount token Secrets' JWTs (`legacy`), the union of
//! bearer-token authenticators the requests and TokenReview share (`bearer`),
//! client-certificate authentication (`x509`), and upstream's ServiceAccount admission plugin
//! for pods (`admission`).

mod admission;
pub mod bearer;
mod keys;
pub mod legacy;
pub mod serving;
pub mod token;
pub mod x509;

pub use admission::admit_pod;
pub use keys::{KeyError, Keys};

/// The audience and issuer of every token this server issues and accepts, upstream's
/// defaults for a cluster domain of `cluster.local`.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
