//! tinykube's API vocabulary: the served kinds, quantities, selectors and patches. Pure: no I/O.
//!
//! The object types themselves come from `k8s-openapi` (re-exported as [`api`]); this crate adds
//! what the rest of the workspace shares on top of them.

pub mod cron;
pub mod duration;
pub mod fields;
pub mod fuzzing;
pub mod hash;
pub mod labels;
pub mod managed;
pub mod names;
pub mod node_affinity;
pub mod patch;
pub mod quantity;
pub mod quota;
pub mod registry;
pub mod serviceaccount;
pub mod storage;
pub mod taints;
pub mod typed;

pub use k8s_openapi as api;
