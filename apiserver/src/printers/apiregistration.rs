//! The APIService table, as upstream's kube-aggregator prints it: NAME, SERVICE (`Local`, or
//! `NAMESPACE/NAME` of the backing Service), AVAILABLE (`True`, `False (Reason)`, or `Unknown`
//! before any check), AGE.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::custom::{CREATION_TIMESTAMP_DESCRIPTION, NAME_DESCRIPTION};
use super::{age, name, s, Column};

fn column(name: &str, format: &str, description: &str) -> Column {
    Column {
        name: name.into(),
        type_: "string".into(),
        format: format.into(),
        description: description.into(),
        priority: 0,
    }
}

/// Upstream's column definitions.
pub fn columns() -> Vec<Column> {
    vec![
        column("Name", "name", NAME_DESCRIPTION),
        column(
            "Service",
            "",
            "The reference to the service that hosts this API endpoint.",
        ),
        column("Available", "", "Whether this service is available."),
        column("Age", "", CREATION_TIMESTAMP_DESCRIPTION),
    ]
}

/// The AVAILABLE cell: `True`, `STATUS (REASON)` when not true and a reason is given, else the
/// bare status; `Unknown` without the condition.
fn available(obj: &Value) -> String {
    let condition = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available");
    let Some(c) = condition else {
        return "Unknown".into();
    };
    let status = c["status"].as_str().unwrap_or("");
    let reason = c["reason"].as_str().unwrap_or("");
    if status == "True" || reason.is_empty() {
        status.to_string()
    } else {
        format!("{status} ({reason})")
    }
}

pub fn api_service(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let service = match obj.pointer("/spec/service").filter(|s| !s.is_null()) {
        Some(_) => format!(
            "{}/{}",
            s(obj, "/spec/service/namespace"),
            s(obj, "/spec/service/name")
        ),
        None => "Local".into(),
    };
    vec![
        name(obj).into(),
        service.into(),
        available(obj).into(),
        age(obj, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_read_as_upstream() {
        let now = Utc::now();
        let created = crate::object::timestamp(now - chrono::Duration::seconds(30));
        let cases = [
            (json!({}), None, "Local", "Unknown"),
            (
                json!({}),
                Some(json!({"type": "Available", "status": "True", "reason": "Local"})),
                "Local",
                "True",
            ),
            (
                json!({"namespace": "kube-system", "name": "metrics-server", "port": 443}),
                Some(json!({"type": "Available", "status": "False", "reason": "MissingEndpoints"})),
                "kube-system/metrics-server",
                "False (MissingEndpoints)",
            ),
            (
                json!({"namespace": "ns", "name": "api"}),
                Some(json!({"type": "Available", "status": "Unknown"})),
                "ns/api",
                "Unknown",
            ),
        ];
        for (service, condition, want_service, want_available) in cases {
            let mut obj = json!({"metadata": {"name": "v1.example.com", "creationTimestamp": created},
                                 "spec": {}});
            if service != json!({}) {
                obj["spec"]["service"] = service;
            }
            if let Some(c) = condition {
                obj["status"] = json!({"conditions": [c]});
            }
            let row = api_service(&obj, now);
            assert_eq!(
                row,
                vec![
                    json!("v1.example.com"),
                    json!(want_service),
                    json!(want_available),
                    json!("30s")
                ],
            );
            assert_eq!(row.len(), columns().len());
        }
    }
}
