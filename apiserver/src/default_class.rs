//! The default StorageClass of a new cluster, as kind ships it: `standard`, marked default,
//! provisioned by `rancher.io/local-path` (which tinykube's controller manager implements in
//! its `persistentvolume-binder`), `WaitForFirstConsumer`, reclaim policy `Delete`.
//!
//! Created once, when the data directory is new (kind applies its manifest once at cluster
//! creation, it runs no addon manager): a class the user deletes or replaces stays that way
//! across restarts.

use serde_json::json;

use crate::error::ApiError;
use crate::object;
use crate::storage::Objects;

pub const NAME: &str = "standard";
pub const PROVISIONER: &str = "rancher.io/local-path";

/// Whether this is the first start of the data directory: the `default` namespace, which every
/// start creates and which cannot be deleted, is not there yet.
pub fn first_start(objects: &Objects) -> Result<bool, ApiError> {
    let info = tinykube_proto::registry::builtin("", "v1", "namespaces").expect("served");
    Ok(objects.try_get(info, None, "default")?.is_none())
}

/// Create the default class (already there: nothing to do).
pub async fn create(objects: &Objects, clock: &tinykube_clock::Clock) -> Result<(), ApiError> {
    let info = tinykube_proto::registry::builtin("storage.k8s.io", "v1", "storageclasses")
        .expect("storageclasses are served");
    let obj = json!({
        "kind": "StorageClass", "apiVersion": "storage.k8s.io/v1",
        "metadata": {
            "name": NAME, "uid": uuid::Uuid::new_v4().to_string(),
            "creationTimestamp": object::timestamp(clock.utc()),
            "annotations": {crate::admission::storage::IS_DEFAULT_CLASS: "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    match objects.create(info, &obj).await {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
