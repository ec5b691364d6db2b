//! Writes through `pods/status`: what upstream's conversion and status strategy do to the new
//! status (`podIP` is authoritative over `podIPs[0]`, a missing `qosClass` is backfilled, owner
//! references stay), and ValidatePodStatusUpdate (pod IPs and host IPs, the QoS class, condition
//! types, the nominated node, no terminated container brought back when the pod does not
//! restart it).

use serde_json::{json, Value};

use super::super::field::FieldError;
use super::super::names::{immutable, subdomain_errors};
use super::super::rules::{ip, one_per_family, qualified_name_errors};
use super::annotations;

/// Conditions the system owns; others must be qualified names.
const SYSTEM_CONDITIONS: &[&str] = &["PodScheduled", "Ready", "Initialized"];

fn ips(status: &Value, key: &str) -> Vec<String> {
    status
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            e.get("ip")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// `podIP` and `podIPs` as upstream's v1 round trip leaves them: a `podIP` that `podIPs` does
/// not start with replaces the list; a list without `podIP` gives it its first entry.
pub fn normalize_pod_ips(status: &mut Value) {
    let Some(m) = status.as_object_mut() else {
        return;
    };
    let pod_ip = m
        .get("podIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first = ips(&Value::Object(m.clone()), "podIPs").into_iter().next();
    if !pod_ip.is_empty() && first.as_deref() != Some(pod_ip.as_str()) {
        m.insert("podIPs".into(), json!([{ "ip": pod_ip }]));
    } else if pod_ip.is_empty() {
        if let Some(first) = first {
            m.insert("podIP".into(), first.into());
        }
    }
}

/// Upstream's status strategy: the QoS class set at creation and the owner references stay.
pub fn prepare(new: &mut Value, old: &Value) {
    if let Some(status) = new.get_mut("status") {
        normalize_pod_ips(status);
        if status
            .get("qosClass")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            if let (Some(m), Some(q)) = (status.as_object_mut(), old.pointer("/status/qosClass")) {
                m.insert("qosClass".into(), q.clone());
            }
        }
    }
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        match old.pointer("/metadata/ownerReferences") {
            Some(r) => meta.insert("ownerReferences".into(), r.clone()),
            None => meta.remove("ownerReferences"),
        };
    }
}

/// Each `podIPs` entry an IP, one per family, none twice.
fn validate_pod_ips(status: &Value) -> Vec<FieldError> {
    let list = ips(status, "podIPs");
    let mut errs: Vec<FieldError> = list
        .iter()
        .enumerate()
        .filter_map(|(i, a)| ip(&format!("status.podIPs[{i}]"), a))
        .collect();
    if list.len() > 1 {
        let shown = status.get("podIPs").cloned().unwrap_or(Value::Null);
        let addrs: Vec<&str> = list.iter().map(String::as_str).collect();
        errs.extend(one_per_family("status.podIPs", &shown, &addrs));
        errs.extend(duplicates("status.podIPs", status, &list));
    }
    errs
}

/// `hostIPs[0]` is `hostIP`; each entry an IP, none twice, one per family.
fn validate_host_ips(status: &Value) -> Vec<FieldError> {
    let list = ips(status, "hostIPs");
    let Some(first) = list.first() else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    let host_ip = status.get("hostIP").and_then(Value::as_str).unwrap_or("");
    if host_ip != first {
        errs.push(FieldError::invalid(
            "status.hostIPs[0].ip",
            first.as_str(),
            "must be equal to `hostIP`",
        ));
    }
    errs.extend(
        list.iter()
            .enumerate()
            .filter_map(|(i, a)| ip(&format!("status.hostIPs[{i}]"), a)),
    );
    if list.len() > 1 {
        errs.extend(duplicates("status.hostIPs", status, &list));
        let shown = status.get("hostIPs").cloned().unwrap_or(Value::Null);
        let addrs: Vec<&str> = list.iter().map(String::as_str).collect();
        errs.extend(one_per_family("status.hostIPs", &shown, &addrs));
    }
    errs
}

fn duplicates(field: &str, status: &Value, list: &[String]) -> Vec<FieldError> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let entries = status.get(key).and_then(Value::as_array);
    let mut errs = Vec::new();
    for (i, a) in list.iter().enumerate() {
        if list[..i].contains(a) {
            let entry = entries
                .and_then(|e| e.get(i))
                .cloned()
                .unwrap_or(Value::Null);
            errs.push(FieldError::duplicate(format!("{field}[{i}]"), entry));
        }
    }
    errs
}

fn terminated(status: &Value) -> bool {
    status
        .pointer("/state/terminated")
        .is_some_and(|t| !t.is_null())
}

fn exit_code(status: &Value) -> i64 {
    status
        .pointer("/state/terminated/exitCode")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// A container the pod does not restart may not leave `terminated`.
fn state_transitions(
    field: &str,
    new: Option<&Value>,
    old: Option<&Value>,
    restart: &str,
    restartable: &dyn Fn(&str) -> bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if restart == "Always" {
        return errs;
    }
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let (new, old) = (list(new), list(old));
    for (i, o) in old.iter().enumerate() {
        let name = o.get("name").and_then(Value::as_str).unwrap_or("");
        if !terminated(o) || (exit_code(o) != 0 && restart == "OnFailure") || restartable(name) {
            continue;
        }
        for n in &new {
            if n.get("name").and_then(Value::as_str) == Some(name) && !terminated(n) {
                errs.push(FieldError::forbidden(
                    format!("{field}[{i}].state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
    errs
}

/// Upstream's ValidatePodStatusUpdate, but the metadata rules every kind shares.
pub fn validate(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = annotations::validate_update(new, old);
    let null = Value::Null;
    let (ns, os) = (
        new.get("status").unwrap_or(&null),
        old.get("status").unwrap_or(&null),
    );
    for (i, c) in ns
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or("");
        if !SYSTEM_CONDITIONS.contains(&kind) {
            for m in qualified_name_errors(kind) {
                // Upstream reports these under `metadata`.
                errs.push(FieldError::invalid(
                    format!("metadata.conditions[{i}].Type"),
                    kind,
                    m,
                ));
            }
        }
    }
    let nominated = ns
        .get("nominatedNodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !nominated.is_empty()
        && os.get("nominatedNodeName").and_then(Value::as_str) != Some(nominated)
    {
        for m in subdomain_errors(nominated) {
            errs.push(FieldError::invalid(
                "status.nominatedNodeName",
                nominated,
                m,
            ));
        }
    }
    let qos = |s: &Value| s.get("qosClass").filter(|q| *q != "").cloned();
    errs.extend(immutable(
        "status.qosClass",
        qos(ns).as_ref(),
        qos(os).as_ref(),
    ));
    let restart = old
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    errs.extend(state_transitions(
        "status.containerStatuses",
        ns.get("containerStatuses"),
        os.get("containerStatuses"),
        restart,
        &|_| false,
    ));
    let sidecar = |name: &str| {
        old.pointer("/spec/initContainers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("name").and_then(Value::as_str) == Some(name)
                    && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
            })
    };
    errs.extend(state_transitions(
        "status.initContainerStatuses",
        ns.get("initContainerStatuses"),
        os.get("initContainerStatuses"),
        restart,
        &sidecar,
    ));
    errs.extend(validate_pod_ips(ns));
    errs.extend(validate_host_ips(ns));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never", "nodeName": "w0",
               "containers": [{"name": "c", "image": "i"}]},
               "status": status})
    }

    fn check(old: Value, mut new: Value) -> Vec<String> {
        prepare(&mut new, &old);
        validate(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn pod_ips_follow_pod_ip() {
        let mut s = json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.9"}]});
        normalize_pod_ips(&mut s);
        assert_eq!(s["podIPs"], json!([{"ip": "10.0.0.1"}]));
        let mut s = json!({"podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]});
        normalize_pod_ips(&mut s);
        assert_eq!(s["podIP"], "10.0.0.9");
        let mut s = json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]});
        normalize_pod_ips(&mut s);
        assert_eq!(s["podIPs"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn statuses_as_upstream() {
        let old = pod(json!({"phase": "Pending", "qosClass": "BestEffort"}));
        let cases = [
            (json!({"phase": "Running", "podIP": "10.244.1.2", "hostIP": "192.168.1.1", "hostIPs": [{"ip": "192.168.1.1"}]}), vec![]),
            (json!({"phase": "Running", "podIP": "999.1.1.1"}), vec!["status.podIPs[0]: Invalid value: \"999.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
            (json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}), vec!["status.podIPs: Invalid value: [{\"ip\":\"10.0.0.1\"},{\"ip\":\"10.0.0.2\"}]: may specify no more than one IP for each IP family"]),
            (json!({"podIPs": [{"ip": "fd00::1"}, {"ip": "fd00::1"}]}), vec![
                "status.podIPs: Invalid value: [{\"ip\":\"fd00::1\"},{\"ip\":\"fd00::1\"}]: may specify no more than one IP for each IP family",
                "status.podIPs[1]: Duplicate value: {\"ip\":\"fd00::1\"}",
            ]),
            (json!({"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.2"}]}), vec!["status.hostIPs[0].ip: Invalid value: \"10.0.0.2\": must be equal to `hostIP`"]),
            (json!({"hostIP": "1.2.3", "hostIPs": [{"ip": "1.2.3"}]}), vec!["status.hostIPs[0]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
            (json!({"qosClass": "Guaranteed"}), vec!["status.qosClass: Invalid value: \"Guaranteed\": field is immutable"]),
            (json!({"nominatedNodeName": "Node_1"}), vec!["status.nominatedNodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
            (json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "bad type", "status": "True"}]}), vec!["metadata.conditions[1].Type: Invalid value: \"bad type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
            (json!({"phase": "Whatever"}), vec![]),
        ];
        for (status, want) in cases {
            let got = check(old.clone(), pod(status.clone()));
            assert_eq!(got, want, "{status}");
        }
    }

    #[test]
    fn terminated_containers_stay_terminated_unless_restarted() {
        let done = json!({"qosClass": "BestEffort", "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0}}}]});
        let back = json!({"containerStatuses": [{"name": "c", "state": {"running": {}}}]});
        assert_eq!(
            check(pod(done.clone()), pod(back.clone())),
            ["status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"]
        );
        let mut always = pod(done);
        always["spec"]["restartPolicy"] = "Always".into();
        assert!(check(always, pod(back)).is_empty());
    }
}
