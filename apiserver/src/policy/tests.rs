//! Table tests of the plugin's pure parts: which requests rules select, and what validations
//! decide with their messages.

use cel::Value as Cel;
use serde_json::{json, Value};
use tinykube_proto::registry;

use super::evaluate::{self, Activation, Decision};
use super::matching::{self, NamespaceLabels};
use super::request::{Attributes, Operation, UserInfo};
use crate::registry::cel::values;

fn attrs<'a>(
    plural: &str,
    group: &str,
    sub: &'a str,
    op: Operation,
    ns: &'a str,
    obj: Option<&'a Value>,
    user: &'a UserInfo,
) -> Attributes<'a> {
    let info = registry::RESOURCES
        .iter()
        .find(|r| r.plural == plural && r.group == group)
        .expect("served");
    Attributes {
        info,
        subresource: sub,
        operation: op,
        name: "web",
        namespace: ns,
        object: obj,
        old_object: None,
        dry_run: false,
        user,
    }
}

#[test]
fn rules_select_resources_as_upstream() {
    let user = UserInfo::anonymous();
    let rule = |resources: Value, scope: &str| {
        json!({"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": resources, "scope": scope})
    };
    let cases = [
        (
            rule(json!(["deployments"]), "*"),
            "",
            Operation::Create,
            true,
        ),
        (
            rule(json!(["deployments"]), "*"),
            "scale",
            Operation::Update,
            false,
        ),
        (
            rule(json!(["deployments/scale"]), "*"),
            "scale",
            Operation::Update,
            true,
        ),
        (
            rule(json!(["deployments/*"]), "*"),
            "status",
            Operation::Update,
            true,
        ),
        (
            rule(json!(["deployments/*"]), "*"),
            "",
            Operation::Update,
            false,
        ),
        (rule(json!(["*"]), "*"), "", Operation::Create, true),
        (rule(json!(["*"]), "*"), "status", Operation::Update, false),
        (rule(json!(["*/*"]), "*"), "status", Operation::Update, true),
        (
            rule(json!(["*/status"]), "*"),
            "status",
            Operation::Update,
            true,
        ),
        (
            rule(json!(["deployments"]), "*"),
            "",
            Operation::Delete,
            false,
        ),
        (
            rule(json!(["deployments"]), "Cluster"),
            "",
            Operation::Create,
            false,
        ),
        (
            rule(json!(["deployments"]), "Namespaced"),
            "",
            Operation::Create,
            true,
        ),
        (
            rule(json!(["replicasets"]), "*"),
            "",
            Operation::Create,
            false,
        ),
    ];
    for (rule, sub, op, want) in cases {
        let a = attrs("deployments", "apps", sub, op, "default", None, &user);
        assert_eq!(
            matching::rule_matches(&rule, &a),
            want,
            "{rule} {sub:?} {op:?}"
        );
    }
}

#[test]
fn selectors_and_excludes_as_upstream() {
    let user = UserInfo::anonymous();
    let labelled = json!({"metadata": {"name": "web", "labels": {"app": "web"}}});
    let test_ns = NamespaceLabels::Labels([("environment".into(), "test".into())].into());
    let prod_ns = NamespaceLabels::Labels([("environment".into(), "prod".into())].into());
    let rules = json!([{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]);
    let cases = [
        (
            json!({"namespaceSelector": {"matchLabels": {"environment": "test"}}}),
            &test_ns,
            Ok(true),
        ),
        (
            json!({"namespaceSelector": {"matchLabels": {"environment": "test"}}}),
            &prod_ns,
            Ok(false),
        ),
        (
            json!({"namespaceSelector": {"matchExpressions": [{"key": "environment", "operator": "NotIn", "values": ["test"]}]}}),
            &prod_ns,
            Ok(true),
        ),
        (
            json!({"objectSelector": {"matchLabels": {"app": "db"}}}),
            &test_ns,
            Ok(false),
        ),
        (
            json!({"objectSelector": {"matchLabels": {"app": "web"}}, "resourceRules": rules}),
            &test_ns,
            Ok(true),
        ),
        (json!({"excludeResourceRules": rules}), &test_ns, Ok(false)),
        (
            json!({"namespaceSelector": {"matchLabels": {"environment": "test"}}}),
            &NamespaceLabels::Missing("gone".into()),
            Err("namespaces \"gone\" not found".to_string()),
        ),
    ];
    for (mr, ns, want) in cases {
        let a = attrs(
            "deployments",
            "apps",
            "",
            Operation::Create,
            "default",
            Some(&labelled),
            &user,
        );
        assert_eq!(matching::matches(&mr, &a, ns), want, "{mr}");
    }
}

fn activation(object: Value, params: Value) -> Activation {
    Activation::new(vec![
        ("object", values::dynamic(&object)),
        ("oldObject", Cel::Null),
        ("params", values::dynamic(&params)),
    ])
}

#[test]
fn validations_decide_with_upstream_messages() {
    let deploy = json!({"spec": {"replicas": 6}});
    let limit = json!({"maxReplicas": 3});
    let cases = [
        (json!({"expression": "object.spec.replicas <= 10"}), vec![]),
        (
            json!({"expression": "object.spec.replicas <= 5"}),
            vec![Decision::Deny {
                message: "failed expression: object.spec.replicas <= 5".into(),
                reason: "Invalid".into(),
            }],
        ),
        (
            json!({"expression": "object.spec.replicas <= 5", "message": "too many", "reason": "Forbidden"}),
            vec![Decision::Deny {
                message: "too many".into(),
                reason: "Forbidden".into(),
            }],
        ),
        (
            json!({"expression": "object.spec.replicas <= params.maxReplicas", "message": "static",
                   "messageExpression": "'object.spec.replicas must be no greater than ' + string(params.maxReplicas)"}),
            vec![Decision::Deny {
                message: "object.spec.replicas must be no greater than 3".into(),
                reason: "Invalid".into(),
            }],
        ),
        (
            // A multi-line message expression falls back to the message.
            json!({"expression": "false", "message": "static", "messageExpression": "'a\\nb'"}),
            vec![Decision::Deny {
                message: "static".into(),
                reason: "Invalid".into(),
            }],
        ),
        (
            json!({"expression": "object.spec.missing > 1"}),
            vec![Decision::Error(
                "expression 'object.spec.missing > 1' resulted in error: no such key: missing"
                    .into(),
            )],
        ),
    ];
    for (validation, want) in cases {
        let mut act = activation(deploy.clone(), limit.clone());
        assert_eq!(
            evaluate::validations(&mut act, std::slice::from_ref(&validation)),
            want,
            "{validation}"
        );
    }
}

#[test]
fn variables_and_match_conditions() {
    let mut act = activation(
        json!({"metadata": {"labels": {"exempt": "true"}}}),
        Value::Null,
    );
    act.bind_variables(&[
        json!({"name": "exempt", "expression": "object.metadata.labels['exempt'] == 'true'"}),
        json!({"name": "broken", "expression": "object.nope"}),
    ]);
    assert_eq!(act.eval("variables.exempt"), Ok(Cel::Bool(true)));
    assert_eq!(
        act.eval("variables.broken == 1"),
        Err("expression 'variables.broken == 1' resulted in error: composited variable \"broken\" fails to evaluate: no such key: nope".into())
    );
    let cond = |e: &str| json!({"name": "c", "expression": e});
    assert_eq!(
        evaluate::match_conditions(&mut act, &[cond("true")]),
        Ok(true)
    );
    assert_eq!(
        evaluate::match_conditions(&mut act, &[cond("object.x"), cond("false")]),
        Ok(false)
    );
    assert_eq!(
        evaluate::match_conditions(&mut act, &[cond("object.x")]),
        Err("expression 'object.x' resulted in error: no such key: x".into())
    );
}
