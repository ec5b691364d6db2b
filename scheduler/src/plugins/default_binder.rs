//! DefaultBinder (Bind): binds the pod to its node through the `pods/binding` subresource, as
//! upstream's. The only in-tree plugin that does I/O.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use tinykube_client::{Api, Client};

use crate::framework::{CycleState, Pending, Plugin, Status};

pub const NAME: &str = "DefaultBinder";

pub struct DefaultBinder {
    client: Client,
}

impl DefaultBinder {
    pub fn new(client: Client) -> Self {
        DefaultBinder { client }
    }
}

/// The Binding object for `pod` on `node` (its uid guards against a pod re-created meanwhile).
pub fn binding(pod: &Pod, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace,
                     "uid": pod.metadata.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn bind<'a>(&'a self, pod: &'a Pod, node: &'a str, _state: &'a CycleState) -> Pending<'a> {
        Box::pin(async move {
            let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), ns);
            match pods
                .create_subresource(name, "binding", &binding(pod, node))
                .await
            {
                Ok(_) => Status::Success,
                Err(e) => Status::Error(e.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_names_the_pod_and_its_node() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "prod", "uid": "u-1"}}))
        .unwrap();
        let cases = [("worker0", "worker0"), ("node-17", "node-17")];
        for (node, want) in cases {
            let b = binding(&pod, node);
            assert_eq!(b["kind"], "Binding");
            assert_eq!(
                b["metadata"],
                json!({"name": "web", "namespace": "prod", "uid": "u-1"})
            );
            assert_eq!(b["target"]["name"], want);
        }
    }
}
