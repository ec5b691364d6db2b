//! Node selection as upstream's `nodeaffinity` helpers: a pod's `nodeSelector` and required
//! node-affinity terms against a node's labels and name (terms ORed, a term's expressions
//! ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; `matchFields` on `metadata.name`). Shared by
//! the scheduler's NodeAffinity plugin and the DaemonSet controller's placement.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, PodSpec};

/// The only field a `matchFields` requirement may name.
pub const NAME_FIELD: &str = "metadata.name";

/// One requirement against the value of its key (`None`: the node has no such label).
pub fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => match (value.and_then(int), values.first().and_then(|b| int(b))) {
            (Some(v), Some(b)) if r.operator == "Gt" => v > b,
            (Some(v), Some(b)) => v < b,
            _ => false,
        },
        _ => false,
    }
}

/// Whether a node selector term matches a node: every expression on its labels and every field
/// requirement on its name; an empty term matches nothing.
pub fn term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    name: &str,
) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields
            .iter()
            .all(|r| requirement_matches(r, (r.key == NAME_FIELD).then_some(name)))
}

/// Whether a pod spec's `nodeSelector` and required node affinity admit the node.
pub fn required_matches(spec: &PodSpec, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    selector_ok
        && required.is_none_or(|r| {
            r.node_selector_terms
                .iter()
                .any(|t| term_matches(t, labels, name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn operators_as_upstream() {
        let cases = [
            (req("k", "In", &["a", "b"]), Some("b"), true),
            (req("k", "In", &["a"]), None, false),
            (req("k", "NotIn", &["a"]), Some("b"), true),
            (req("k", "NotIn", &["a"]), None, true),
            (req("k", "Exists", &[]), Some(""), true),
            (req("k", "DoesNotExist", &[]), Some("x"), false),
            (req("k", "Gt", &["3"]), Some("4"), true),
            (req("k", "Gt", &["3"]), Some("three"), false),
            (req("k", "Lt", &["3"]), Some("2"), true),
            (req("k", "Lt", &["3"]), None, false),
            (req("k", "Near", &["3"]), Some("3"), false),
        ];
        for (r, value, want) in cases {
            assert_eq!(requirement_matches(&r, value), want, "{r:?} on {value:?}");
        }
    }

    #[test]
    fn terms_and_fields() {
        let labels: BTreeMap<String, String> = [("project".to_string(), "p1".to_string())].into();
        let both = NodeSelectorTerm {
            match_expressions: Some(vec![req("project", "In", &["p1"])]),
            match_fields: Some(vec![req(NAME_FIELD, "In", &["worker0"])]),
        };
        assert!(term_matches(&both, &labels, "worker0"));
        assert!(!term_matches(&both, &labels, "worker1"));
        assert!(!term_matches(
            &NodeSelectorTerm::default(),
            &labels,
            "worker0"
        ));
        let other_field = NodeSelectorTerm {
            match_fields: Some(vec![req("metadata.uid", "Exists", &[])]),
            ..Default::default()
        };
        assert!(!term_matches(&other_field, &labels, "worker0"));
        let spec = PodSpec {
            node_selector: Some([("project".to_string(), "p2".to_string())].into()),
            ..Default::default()
        };
        assert!(!required_matches(&spec, &labels, "worker0"));
        assert!(required_matches(&PodSpec::default(), &labels, "worker0"));
    }
}
