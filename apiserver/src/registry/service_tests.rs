//! Table tests of the Service strategy: defaults, validation messages, updates.

use super::*;
use serde_json::json;

fn svc(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
}

fn defaulted(spec: Value) -> Value {
    let mut obj = svc(spec);
    ServiceStrategy.default(&mut obj);
    obj
}

#[test]
fn defaults_are_upstream_s() {
    let obj = defaulted(json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}));
    assert_eq!(
        obj["spec"],
        json!({"selector": {"app": "web"},
               "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
               "type": "ClusterIP", "sessionAffinity": "None",
               "internalTrafficPolicy": "Cluster", "ipFamilyPolicy": "SingleStack",
               "ipFamilies": ["IPv4"]})
    );
    let node_port =
        defaulted(json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}));
    assert_eq!(node_port["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(node_port["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(node_port["spec"]["ports"][0]["targetPort"], "http");
    let headless = defaulted(json!({"clusterIP": "None", "ports": [{"port": 80}]}));
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
    let external = defaulted(json!({"type": "ExternalName", "externalName": "example.com"}));
    assert!(external["spec"].get("ipFamilies").is_none());
    assert!(external["spec"].get("internalTrafficPolicy").is_none());
}

#[test]
fn validation_reads_as_upstream() {
    let cases = [
        (json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}), vec![]),
        (json!({"selector": {"app": "web"}}), vec!["spec.ports: Required value"]),
        (
            json!({"ports": [{"port": 70000}]}),
            vec!["spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                 "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
        ),
        (
            json!({"ports": [{"port": 80, "nodePort": 30080}]}),
            vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
        ),
        (
            json!({"ports": [{"port": 80, "protocol": "HTTP"}]}),
            vec!["spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""],
        ),
        (
            json!({"ports": [{"port": 80, "name": "a"}, {"port": 81}]}),
            vec!["spec.ports[1].name: Required value"],
        ),
        (
            json!({"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80}]}),
            vec!["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"],
        ),
        (
            json!({"clusterIP": "10.96.0.300", "ports": [{"port": 80}]}),
            vec!["spec.clusterIPs[0]: Invalid value: \"10.96.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"],
        ),
        (
            json!({"type": "ExternalName"}),
            vec!["spec.externalName: Required value"],
        ),
        (
            json!({"ports": [{"port": 80}], "externalTrafficPolicy": "Local"}),
            vec!["spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set when `type` is 'NodePort' or 'LoadBalancer'"],
        ),
        (
            json!({"ports": [{"port": 80}], "ipFamilies": ["IPv6"]}),
            vec!["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"],
        ),
    ];
    for (spec, want) in cases {
        let obj = defaulted(spec.clone());
        let got: Vec<String> = ServiceStrategy
            .validate_create(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, want, "{spec}");
    }
    let mut bad_name = defaulted(json!({"ports": [{"port": 80}]}));
    bad_name["metadata"]["name"] = json!("1web");
    let errs = ServiceStrategy.validate_create(&bad_name);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].to_string().contains("a DNS-1035 label"),
        "{}",
        errs[0]
    );
}

#[test]
fn updates_keep_allocations_and_drop_what_the_type_lost() {
    let old = defaulted(json!({"type": "NodePort", "clusterIP": "10.96.0.10",
        "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}));
    // A client that re-sends the spec without the allocated values keeps them.
    let mut new = svc(json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}]}));
    ServiceStrategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
    // Back to ClusterIP: node ports and the external policy go.
    let mut back = old.clone();
    back["spec"]["type"] = json!("ClusterIP");
    ServiceStrategy.prepare_for_update(&mut back, &old);
    assert!(back["spec"]["ports"][0].get("nodePort").is_none());
    assert!(back["spec"].get("externalTrafficPolicy").is_none());
    assert!(ServiceStrategy.validate_update(&back, &old).is_empty());
    // A cluster IP may not change.
    let mut moved = old.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.11");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    let errs: Vec<String> = ServiceStrategy
        .validate_update(&moved, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        vec![
            "spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.11\"}: may not change once set"
        ]
    );
}
