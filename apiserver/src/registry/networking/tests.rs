//! Table tests of the networking kinds' defaults and validation, with upstream's messages.

use serde_json::{json, Value};

use super::super::Strategy;
use super::{IngressClassStrategy, IngressStrategy, NetworkPolicyStrategy};

fn messages(errs: Vec<super::FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn ingress(spec: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
}

fn path(p: Value) -> Value {
    ingress(json!({"rules": [{"host": "foo.bar.com", "http": {"paths": [p]}}]}))
}

#[test]
fn ingresses_are_validated_as_upstream() {
    let svc = json!({"service": {"name": "web", "port": {"number": 80}}});
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (path(json!({"path": "/", "pathType": "Prefix", "backend": svc})), vec![]),
        (
            path(json!({"path": "/", "backend": svc})),
            vec!["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
        ),
        (
            path(json!({"path": "a//b", "pathType": "Exact", "backend": svc})),
            vec![
                "spec.rules[0].http.paths[0].path: Invalid value: \"a//b\": must be an absolute path",
                "spec.rules[0].http.paths[0].path: Invalid value: \"a//b\": must not contain '//'",
            ],
        ),
        (
            path(json!({"path": "/", "pathType": "Regex", "backend": svc})),
            vec!["spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""],
        ),
        (
            path(json!({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "Web", "port": {}}}})),
            vec![
                "spec.rules[0].http.paths[0].backend.service.name: Invalid value: \"Web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
            ],
        ),
        (
            path(json!({"path": "/", "pathType": "Prefix", "backend": {}})),
            vec!["spec.rules[0].http.paths[0].backend: Invalid value: \"\": resource or service backend is required"],
        ),
        (
            ingress(json!({})),
            vec!["spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"],
        ),
        (
            ingress(json!({"rules": [{"host": "1.2.3.4"}], "defaultBackend": svc})),
            vec!["spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address"],
        ),
        (ingress(json!({"rules": [{"host": "*.example.com"}], "defaultBackend": svc})), vec![]),
    ];
    for (obj, want) in cases {
        assert_eq!(
            messages(IngressStrategy.validate_create(&obj)),
            want,
            "{obj}"
        );
    }
}

#[test]
fn ingress_classes_default_scope_and_check_the_controller() {
    let mut class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "example.com/ingress-controller",
        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
    IngressClassStrategy.default(&mut class);
    assert_eq!(class["spec"]["parameters"]["scope"], "Cluster");
    assert!(IngressClassStrategy.validate_create(&class).is_empty());
    let bad = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "nginx"}});
    assert_eq!(
        messages(IngressClassStrategy.validate_create(&bad)),
        vec!["spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"]
    );
    let mut moved = class.clone();
    moved["spec"]["controller"] = "example.com/other".into();
    assert_eq!(
        messages(IngressClassStrategy.validate_update(&moved, &class)),
        vec!["spec.controller: Invalid value: \"example.com/other\": field is immutable"]
    );
}

#[test]
fn network_policies_default_and_validate() {
    let mut np = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {
        "podSelector": {"matchLabels": {"role": "db"}},
        "ingress": [{"from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}}],
                     "ports": [{"port": 6379}]}],
        "egress": [{"to": [{}], "ports": [{"port": 5978, "endPort": 5000}]}]}});
    NetworkPolicyStrategy.default(&mut np);
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(
        messages(NetworkPolicyStrategy.validate_create(&np)),
        vec![
            "spec.egress[0].ports[0].endPort: Invalid value: 5978: must be greater than or equal to `port`",
            "spec.egress[0].to[0]: Required value: must specify a peer",
        ]
    );
    let outside = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"podSelector": {},
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/8"]}}]}]}});
    assert_eq!(
        messages(NetworkPolicyStrategy.validate_create(&outside)),
        vec![
            "spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
            "spec.ingress[0].from[0].ipBlock.except[1]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`",
        ]
    );
}
