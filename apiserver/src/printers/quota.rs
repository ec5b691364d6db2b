//! The ResourceQuota row, as upstream's printResourceQuota: every resource of `status.hard`
//! sorted by name as `used/hard`, the `limits.*` ones in LIMIT and the others in REQUEST
//! (`pods: 1/2, requests.cpu: 500m/1`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use tinykube_proto::quota::parse_list;

use super::{age, name};

pub fn resource_quota(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let hard = parse_list(obj.pointer("/status/hard"));
    let used = parse_list(obj.pointer("/status/used"));
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (resource, h) in &hard {
        let u = used.get(resource).map(ToString::to_string);
        let cell = format!("{resource}: {}/{h}", u.as_deref().unwrap_or("0"));
        if resource.split('.').next() == Some("limits") && resource.contains('.') {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    vec![
        name(obj).into(),
        age(obj, now).into(),
        request.join(", ").into(),
        limit.join(", ").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_and_limits_apart() {
        let q = json!({"metadata": {"name": "mem-cpu-demo", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"hard": {"limits.cpu": "2", "limits.memory": "2Gi", "requests.cpu": "1",
                                "requests.memory": "1Gi", "pods": "2"},
                       "used": {"limits.cpu": "800m", "requests.cpu": "400m", "pods": "1"}}});
        let now = "2026-01-01T00:00:30Z".parse().unwrap();
        assert_eq!(
            resource_quota(&q, now),
            vec![
                json!("mem-cpu-demo"),
                json!("30s"),
                json!("pods: 1/2, requests.cpu: 400m/1, requests.memory: 0/1Gi"),
                json!("limits.cpu: 800m/2, limits.memory: 0/2Gi"),
            ]
        );
    }
}
