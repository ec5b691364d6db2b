//! Table tests of the policy and binding strategies: defaults, and upstream's messages for
//! invalid specs.

use serde_json::{json, Value};

use super::{BindingStrategy, PolicyStrategy};
use crate::registry::Strategy;

fn policy(spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "demo-policy.example.com"}, "spec": spec})
}

fn binding(spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": "demo-binding"}, "spec": spec})
}

fn errors(strategy: &dyn Strategy, mut obj: Value) -> Vec<String> {
    strategy.default(&mut obj);
    strategy
        .validate_create(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn rules() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                              "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

#[test]
fn the_docs_policy_is_valid_and_defaulted() {
    let mut p = policy(json!({"matchConstraints": rules(),
        "validations": [{"expression": "object.spec.replicas <= 5"}]}));
    PolicyStrategy.default(&mut p);
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let mc = &p["spec"]["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    assert!(PolicyStrategy.validate_create(&p).is_empty());
}

#[test]
fn invalid_policies_as_upstream_words_them() {
    let cases = [
        (
            json!({"validations": [{"expression": "true"}]}),
            vec!["spec.matchConstraints: Required value"],
        ),
        (
            json!({"matchConstraints": {}, "validations": [{"expression": "true"}]}),
            vec!["spec.matchConstraints.resourceRules: Required value"],
        ),
        (
            json!({"matchConstraints": rules()}),
            vec![
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ],
        ),
        (
            json!({"matchConstraints": rules(), "failurePolicy": "Never",
                   "validations": [{"expression": "true"}]}),
            vec![r#"spec.failurePolicy: Unsupported value: "Never": supported values: "Fail", "Ignore""#],
        ),
        (
            json!({"matchConstraints": rules(), "validations": [{"expression": "object.spec.replicas <"}]}),
            vec!["spec.validations[0].expression: Invalid value: \"object.spec.replicas <\": compilation failed: ERROR: <input>:1:23: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.spec.replicas <\n | ......................^"],
        ),
        (
            json!({"matchConstraints": rules(), "validations": [{"expression": "true", "reason": "Gone"}]}),
            vec![r#"spec.validations[0].reason: Unsupported value: "Gone": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized""#],
        ),
        (
            json!({"matchConstraints": rules(), "validations": [{"expression": "true"}],
                   "matchConditions": [{"name": "a", "expression": "true"}, {"name": "a", "expression": "true"}]}),
            vec![r#"spec.matchConditions[1].name: Duplicate value: "a""#],
        ),
        (
            json!({"matchConstraints": rules(), "validations": [{"expression": "true"}],
                   "variables": [{"name": "in", "expression": "1"}]}),
            vec![r#"spec.variables[0].name: Invalid value: "in": name is not a valid CEL identifier"#],
        ),
        (
            json!({"matchConstraints": rules(), "validations": [{"expression": "true"}],
                   "paramKind": {"apiVersion": "rules.example.com/v1"}}),
            vec!["spec.paramKind.kind: Required value"],
        ),
        (
            json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["*", "apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "*"], "resources": ["*", "pods"]}]},
                   "validations": [{"expression": "true"}]}),
            vec![
                r#"spec.matchConstraints.resourceRules[0].operations: Invalid value: []admissionregistration.OperationType{"CREATE", "*"}: if '*' is present, must not specify other operations"#,
                r#"spec.matchConstraints.resourceRules[0].apiGroups: Invalid value: []string{"*", "apps"}: if '*' is present, must not specify other API groups"#,
                r#"spec.matchConstraints.resourceRules[0].resources: Invalid value: []string{"*", "pods"}: if '*' is present, must not specify other resources without subresources"#,
            ],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            errors(&PolicyStrategy, policy(spec.clone())),
            want,
            "{spec}"
        );
    }
}

#[test]
fn invalid_bindings_as_upstream_words_them() {
    let cases = [
        (
            json!({"policyName": "p", "validationActions": ["Deny"]}),
            Vec::<&str>::new(),
        ),
        (
            json!({"validationActions": []}),
            vec![
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ],
        ),
        (
            json!({"policyName": "p", "validationActions": ["Deny", "Warn"]}),
            vec![r#"spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#],
        ),
        (
            json!({"policyName": "p", "validationActions": ["Audit", "Audit", "Block"]}),
            vec![
                r#"spec.validationActions[1]: Duplicate value: "Audit""#,
                r#"spec.validationActions[2]: Unsupported value: "Block": supported values: "Audit", "Deny", "Warn""#,
            ],
        ),
        (
            // The docs' binding-with-param-prod.yaml: upstream refuses it for this.
            json!({"policyName": "p", "validationActions": ["Deny"],
                   "paramRef": {"name": "replica-limit-prod.example.com", "namespace": "default"}}),
            vec!["spec.paramRef.parameterNotFoundAction: Required value"],
        ),
        (
            json!({"policyName": "p", "validationActions": ["Deny"],
                   "paramRef": {"parameterNotFoundAction": "Deny"}}),
            vec!["spec.paramRef: Required value: one of name or selector must be specified"],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            errors(&BindingStrategy, binding(spec.clone())),
            want,
            "{spec}"
        );
    }
}
