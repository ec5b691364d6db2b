//! Rows of the admissionregistration kinds: ValidatingAdmissionPolicy (`VALIDATIONS`,
//! `PARAMKIND`) and ValidatingAdmissionPolicyBinding (`POLICYNAME`, `PARAMREF`), as upstream's
//! printers show them.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{age, name, s};

pub fn validating_admission_policy(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let validations = obj
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let param_kind = match obj.pointer("/spec/paramKind") {
        Some(k) if k.is_object() => format!("{}/{}", s(k, "/apiVersion"), s(k, "/kind")),
        _ => "<unset>".to_string(),
    };
    vec![
        name(obj).into(),
        (validations as i64).into(),
        param_kind.into(),
        age(obj, now).into(),
    ]
}

pub fn validating_admission_policy_binding(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param_ref = match obj.pointer("/spec/paramRef") {
        Some(r) if r.is_object() => {
            let (ns, name) = (s(r, "/namespace"), s(r, "/name"));
            match (name.is_empty(), ns.is_empty(), r.get("selector")) {
                (false, false, _) => format!("{ns}/{name}"),
                // Upstream cannot tell a cluster-scoped param from here either.
                (false, true, _) => format!("*/{name}"),
                (true, _, Some(sel)) if sel.is_object() => go_selector(sel),
                _ => "<unset>".to_string(),
            }
        }
        _ => "<unset>".to_string(),
    };
    vec![
        name(obj).into(),
        s(obj, "/spec/policyName").into(),
        param_ref.into(),
        age(obj, now).into(),
    ]
}

/// A LabelSelector as Go's generated `String()` prints it, which upstream's printer shows.
fn go_selector(sel: &Value) -> String {
    let mut labels: Vec<(String, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[]string{{{}}},}},",
                s(e, "/key"),
                s(e, "/operator"),
                values
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policy_rows_count_validations_and_name_the_param_kind() {
        let now = Utc::now();
        let p = json!({"metadata": {"name": "demo"}, "spec": {"validations": [{}, {}]}});
        assert_eq!(
            validating_admission_policy(&p, now)[1..3],
            [json!(2), json!("<unset>")]
        );
        let p = json!({"metadata": {"name": "demo"},
            "spec": {"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"}}});
        assert_eq!(
            validating_admission_policy(&p, now)[1..3],
            [json!(0), json!("rules.example.com/v1/ReplicaLimit")]
        );
    }

    #[test]
    fn binding_rows_show_the_param_ref_as_upstream() {
        let now = Utc::now();
        let cases = [
            (json!(null), "<unset>"),
            (json!({"name": "a", "namespace": "default"}), "default/a"),
            (json!({"name": "a"}), "*/a"),
            (
                json!({"selector": {"matchLabels": {"x": "y"}}}),
                "&LabelSelector{MatchLabels:map[string]string{x: y,},MatchExpressions:[]LabelSelectorRequirement{},}",
            ),
        ];
        for (param_ref, want) in cases {
            let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": param_ref}});
            let row = validating_admission_policy_binding(&b, now);
            assert_eq!(row[1], json!("p"));
            assert_eq!(row[2], json!(want), "{param_ref}");
        }
    }
}
