//! List and watch filters: label selectors and the field selectors each kind supports, with
//! upstream's field names (`spec.nodeName`, `involvedObject.name`, …).

use serde_json::Value;
use tinykube_proto::fields::FieldSelector;
use tinykube_proto::labels::Selector;
use tinykube_proto::registry::ResourceInfo;

use crate::error::{ApiError, ApiResult};

/// Field selector names a kind supports beyond `metadata.name` and `metadata.namespace`, with
/// the JSON pointer each reads.
fn kind_fields(info: &ResourceInfo) -> &'static [(&'static str, &'static str)] {
    match (info.group, info.kind) {
        ("", "Pod") => &[
            ("spec.nodeName", "/spec/nodeName"),
            ("spec.restartPolicy", "/spec/restartPolicy"),
            ("spec.schedulerName", "/spec/schedulerName"),
            ("spec.serviceAccountName", "/spec/serviceAccountName"),
            ("spec.hostNetwork", "/spec/hostNetwork"),
            ("status.phase", "/status/phase"),
            ("status.podIP", "/status/podIP"),
            ("status.nominatedNodeName", "/status/nominatedNodeName"),
        ],
        ("", "Node") => &[("spec.unschedulable", "/spec/unschedulable")],
        ("", "Namespace") => &[("status.phase", "/status/phase")],
        ("", "Secret") => &[("type", "/type")],
        ("", "Event") => &[
            ("involvedObject.kind", "/involvedObject/kind"),
            ("involvedObject.namespace", "/involvedObject/namespace"),
            ("involvedObject.name", "/involvedObject/name"),
            ("involvedObject.uid", "/involvedObject/uid"),
            ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
            (
                "involvedObject.resourceVersion",
                "/involvedObject/resourceVersion",
            ),
            ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
            ("reason", "/reason"),
            ("reportingComponent", "/reportingComponent"),
            ("source", "/source/component"),
            ("type", "/type"),
        ],
        ("events.k8s.io", "Event") => &[
            ("regarding.kind", "/involvedObject/kind"),
            ("regarding.namespace", "/involvedObject/namespace"),
            ("regarding.name", "/involvedObject/name"),
            ("regarding.uid", "/involvedObject/uid"),
            ("reason", "/reason"),
            ("reportingController", "/reportingComponent"),
            ("type", "/type"),
        ],
        ("apps", "ReplicaSet") => &[("status.replicas", "/status/replicas")],
        _ => &[],
    }
}

/// A parsed label and field selector pair.
#[derive(Debug, Clone)]
pub struct Filter {
    labels: Option<Selector>,
    fields: Option<FieldSelector>,
    info: ResourceInfo,
}

/// The JSON pointer a supported field selector name reads: the shared metadata fields, a
/// built-in kind's own, or a custom resource's `selectableFields` (`.spec.color` is selected
/// as `spec.color`).
fn field_pointer(info: &ResourceInfo, field: &str) -> Option<String> {
    match field {
        "metadata.name" => return Some("/metadata/name".into()),
        "metadata.namespace" => return Some("/metadata/namespace".into()),
        _ => {}
    }
    if let Some(custom) = &info.custom {
        return custom
            .selectable_fields()
            .iter()
            .find(|path| path.trim_start_matches('.') == field)
            .map(|path| path.replace('.', "/"));
    }
    kind_fields(info)
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, p)| p.to_string())
}

fn field_value(info: &ResourceInfo, obj: &Value, field: &str) -> Option<String> {
    let pointer = field_pointer(info, field)?;
    match obj.pointer(&pointer) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(v) => Some(v.to_string()),
    }
}

impl Filter {
    pub fn parse(
        info: &ResourceInfo,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> ApiResult<Filter> {
        let labels =
            match label_selector.filter(|s| !s.trim().is_empty()) {
                Some(s) => Some(Selector::parse(s).map_err(|e| {
                    ApiError::BadRequest(format!("unable to parse requirement: {e}"))
                })?),
                None => None,
            };
        let fields = match field_selector.filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                let sel =
                    FieldSelector::parse(s).map_err(|e| ApiError::BadRequest(e.to_string()))?;
                for req in sel.requirements() {
                    if field_pointer(info, &req.field).is_none() {
                        return Err(ApiError::BadRequest(format!(
                            "field label not supported: {}",
                            req.field
                        )));
                    }
                }
                Some(sel)
            }
            None => None,
        };
        Ok(Filter {
            labels,
            fields,
            info: info.clone(),
        })
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(sel) = &self.labels {
            let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
            let ok = sel.matches_with(|k| labels.and_then(|m| m.get(k)).and_then(Value::as_str));
            if !ok {
                return false;
            }
        }
        if let Some(sel) = &self.fields {
            if !sel.matches(|f| field_value(&self.info, obj, f)) {
                return false;
            }
        }
        true
    }
}
