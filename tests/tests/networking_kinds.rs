//! networking.k8s.io/v1 with the real kubectl: the docs' IngressClass, Ingress and
//! NetworkPolicy examples applied, listed with upstream's columns and described; `kubectl
//! create ingress`; upstream's defaults and refusals. Nothing routes or filters traffic: the
//! objects are stored, defaulted, validated and printed.

use serde_json::Value;
use tinykube_tests::{manifest, table_rows, ApiServer};

const INGRESS_CLASSES: &str = "apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx-example
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: external-lb
spec:
  controller: example.com/ingress-controller
  parameters:
    apiGroup: k8s.example.com
    kind: IngressParameters
    name: external-lb
";

const MINIMAL_INGRESS: &str = "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: minimal-ingress
  annotations:
    nginx.ingress.kubernetes.io/rewrite-target: /
spec:
  ingressClassName: nginx-example
  rules:
  - http:
      paths:
      - path: /testpath
        pathType: Prefix
        backend:
          service:
            name: test
            port:
              number: 80
";

const NETWORK_POLICIES: &str = "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
spec:
  podSelector:
    matchLabels:
      role: db
  policyTypes:
  - Ingress
  - Egress
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    - namespaceSelector:
        matchLabels:
          project: myproject
    - podSelector:
        matchLabels:
          role: frontend
    ports:
    - protocol: TCP
      port: 6379
  egress:
  - to:
    - ipBlock:
        cidr: 10.0.0.0/24
    ports:
    - protocol: TCP
      port: 5978
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny-ingress
spec:
  podSelector: {}
  ingress:
  - ports:
    - port: 53
";

fn apply(server: &ApiServer, name: &str, text: &str) -> tinykube_tests::Kubectl {
    let path = manifest(&server.scratch(), name, text);
    server.kubectl(&["apply", "-f", path.to_str().unwrap()])
}

fn json(server: &ApiServer, args: &[&str]) -> Value {
    serde_json::from_str(server.kubectl(args).ok()).expect("kubectl printed JSON")
}

#[test]
fn ingresses_and_ingress_classes() {
    let server = ApiServer::start().unwrap();
    let out = apply(&server, "classes.yaml", INGRESS_CLASSES);
    assert_eq!(
        out.ok(),
        "ingressclass.networking.k8s.io/nginx-example created\ningressclass.networking.k8s.io/external-lb created\n"
    );
    let rows = table_rows(server.kubectl(&["get", "ingressclass"]).ok());
    assert_eq!(rows[0], ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap();
    assert_eq!(
        row("external-lb")[1..3],
        [
            "example.com/ingress-controller",
            "IngressParameters.k8s.example.com/external-lb"
        ]
    );
    assert_eq!(
        row("nginx-example")[1..3],
        ["k8s.io/ingress-nginx", "<none>"]
    );
    let class = json(
        &server,
        &["get", "ingressclass", "external-lb", "-o", "json"],
    );
    assert_eq!(class["spec"]["parameters"]["scope"], "Cluster");
    let moved = server.kubectl(&[
        "patch",
        "ingressclass",
        "nginx-example",
        "-p",
        r#"{"spec":{"controller":"example.com/other"}}"#,
    ]);
    assert!(moved
        .fails()
        .contains("spec.controller: Invalid value: \"example.com/other\": field is immutable"));

    assert_eq!(
        apply(&server, "ingress.yaml", MINIMAL_INGRESS).ok(),
        "ingress.networking.k8s.io/minimal-ingress created\n"
    );
    let created = server.kubectl(&[
        "create",
        "ingress",
        "simple",
        "--rule=foo.com/bar=svc1:8080,tls=my-cert",
    ]);
    assert_eq!(created.ok(), "ingress.networking.k8s.io/simple created\n");
    let rows = table_rows(server.kubectl(&["get", "ing"]).ok());
    assert_eq!(
        rows[0],
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap();
    // The ADDRESS cell is empty, so the row has one cell fewer once split on spaces.
    assert_eq!(row("minimal-ingress")[1..4], ["nginx-example", "*", "80"]);
    assert_eq!(row("simple")[1..4], ["<none>", "foo.com", "80,"]);
    let simple = json(&server, &["get", "ingress", "simple", "-o", "json"]);
    assert_eq!(
        simple["spec"]["rules"][0]["http"]["paths"][0]["pathType"],
        "Exact"
    );
    assert_eq!(simple["status"], serde_json::json!({"loadBalancer": {}}));
    let described = server.kubectl(&["describe", "ingress", "minimal-ingress"]);
    let text = described.ok();
    assert!(text.contains("Ingress Class:    nginx-example"), "{text}");
    assert!(text.contains("/testpath"), "{text}");

    // Upstream's refusals.
    let cases = [
        (
            "spec:\n  rules:\n  - http:\n      paths:\n      - path: /\n        backend:\n          service:\n            name: test\n            port:\n              number: 80\n",
            "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
        ),
        (
            "spec:\n  rules:\n  - http:\n      paths:\n      - path: /\n        pathType: Prefix\n        backend:\n          service:\n            name: test\n",
            "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
        ),
        (
            "spec:\n  rules:\n  - host: 10.0.0.1\n    http:\n      paths:\n      - path: relative\n        pathType: Exact\n        backend:\n          service:\n            name: test\n            port:\n              number: 80\n",
            "* spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address\n* spec.rules[0].http.paths[0].path: Invalid value: \"relative\": must be an absolute path",
        ),
        (
            "spec: {}\n",
            "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified",
        ),
    ];
    for (i, (spec, want)) in cases.iter().enumerate() {
        let text = format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: bad-{i}\n{spec}"
        );
        let out = apply(&server, &format!("bad-{i}.yaml"), &text);
        let err = out.fails();
        assert!(err.contains(want), "{spec}\n{err}");
    }
}

#[test]
fn network_policies() {
    let server = ApiServer::start().unwrap();
    assert_eq!(
        apply(&server, "policies.yaml", NETWORK_POLICIES).ok(),
        "networkpolicy.networking.k8s.io/test-network-policy created\nnetworkpolicy.networking.k8s.io/default-deny-ingress created\n"
    );
    let rows = table_rows(server.kubectl(&["get", "netpol"]).ok());
    assert_eq!(rows[0], ["NAME", "POD-SELECTOR", "AGE"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap();
    assert_eq!(row("test-network-policy")[1], "role=db");
    assert_eq!(row("default-deny-ingress")[1], "<none>");
    let deny = json(
        &server,
        &["get", "networkpolicy", "default-deny-ingress", "-o", "json"],
    );
    assert_eq!(deny["spec"]["policyTypes"], serde_json::json!(["Ingress"]));
    assert_eq!(deny["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(deny["metadata"]["generation"], 1);
    let described = server.kubectl(&["describe", "netpol", "test-network-policy"]);
    let text = described.ok();
    assert!(text.contains("PodSelector:     role=db"), "{text}");
    assert!(text.contains("172.17.1.0/24"), "{text}");

    let bad = "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: bad
spec:
  podSelector: {}
  policyTypes: [Ingress, Sideways]
  egress:
  - to:
    - ipBlock:
        cidr: 10.0.0.0/16
        except: [10.1.0.0/24]
      podSelector: {}
    ports:
    - port: 5978
      endPort: 5000
";
    let out = apply(&server, "bad.yaml", bad);
    let err = out.fails();
    for want in [
        "spec.egress[0].ports[0].endPort: Invalid value: 5978: must be greater than or equal to `port`",
        "spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
        "spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer",
        "spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
}
