//! InterPodAffinity's tables, after upstream's filtering and scoring tests.

use super::*;
use crate::framework::handle::Fixed;
use crate::plugins::testing::node;
use serde_json::{json, Value};
use std::sync::Arc;

/// Upstream's test namespaces: two teams of two.
fn plugin() -> InterPodAffinity {
    let ns = |name: &str, team: &str| -> Namespace {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {
            "team": team, "kubernetes.io/metadata.name": name}}}))
        .unwrap()
    };
    InterPodAffinity {
        namespaces: Arc::new(Fixed::new([
            ns("subteam1.team1", "team1"),
            ns("subteam2.team1", "team1"),
            ns("subteam1.team2", "team2"),
            ns("subteam2.team2", "team2"),
        ])),
    }
}

fn pod_in(namespace: &str, name: &str, labels: Value, affinity: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [], "affinity": affinity}}))
    .unwrap()
}

fn pod(name: &str, labels: Value, affinity: Value) -> Pod {
    pod_in("default", name, labels, affinity)
}

fn with_pods(name: &str, labels: Value, pods: Vec<Pod>) -> Arc<NodeInfo> {
    let n = node(name, labels, json!({}));
    Arc::new(NodeInfo::new(
        n.node,
        pods.into_iter().map(Arc::new).collect(),
    ))
}

fn verdicts(p: &Pod, nodes: &[Arc<NodeInfo>]) -> Vec<Status> {
    let plugin = plugin();
    let mut state = CycleState::default();
    plugin.pre_filter(p, nodes, &mut state);
    nodes.iter().map(|n| plugin.filter(p, n, &state)).collect()
}

/// The raw scores, and the normalized ones, of every node as the scheduling cycle computes
/// them (PreFilter, then PreScore over all the nodes).
fn scores(p: &Pod, nodes: &[Arc<NodeInfo>]) -> (Vec<i64>, Vec<i64>) {
    let plugin = plugin();
    let mut state = CycleState::default();
    plugin.pre_filter(p, nodes, &mut state);
    let feasible: Vec<&NodeInfo> = nodes.iter().map(|n| n.as_ref()).collect();
    plugin.pre_score(p, &feasible, nodes, &mut state);
    let raw: Vec<i64> = nodes.iter().map(|n| plugin.score(p, n, &state)).collect();
    let mut normalized = raw.clone();
    plugin.normalize(&mut normalized);
    (raw, normalized)
}

/// A required (anti-)affinity term selecting `selector` by `key`.
fn term(selector: Value, key: &str) -> Value {
    json!({"labelSelector": selector, "topologyKey": key})
}

fn in_(key: &str, values: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": key, "operator": "In", "values": values}]})
}

fn required(kind: &str, terms: Vec<Value>) -> Value {
    json!({ kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms} })
}

fn team1() -> Value {
    in_("team", &["team1"])
}

#[test]
fn affinity_follows_the_topology_domain() {
    // mysql runs on a project1 node; tomcat wants the same project.
    let mysql = pod("mysql", json!({"app": "mysql"}), json!(null));
    let nodes = vec![
        with_pods("w0", json!({"project": "project1"}), vec![mysql]),
        with_pods("w1", json!({"project": "project1"}), vec![]),
        with_pods("w2", json!({"project": "project2"}), vec![]),
        with_pods("w3", json!({}), vec![]),
    ];
    let mut t = term(in_("app", &["mysql"]), "project");
    t["namespaces"] = json!(["default"]);
    let tomcat = pod(
        "tomcat",
        json!({"app": "tomcat"}),
        required("podAffinity", vec![t]),
    );
    let v = verdicts(&tomcat, &nodes);
    assert_eq!(v[..2], [Status::Success, Status::Success]);
    assert_eq!(v[2], Status::unresolvable(AFFINITY_REASON));
    assert_eq!(v[3], Status::unresolvable(AFFINITY_REASON));
}

#[test]
fn every_required_affinity_term_needs_one_pod_matching_them_all() {
    let both_terms = |key: &str| {
        required(
            "podAffinity",
            vec![
                term(in_("foo", &["bar"]), key),
                term(in_("service", &["securityscan"]), key),
            ],
        )
    };
    let ok = Status::Success;
    let no = Status::unresolvable(AFFINITY_REASON);
    let cases = [
        (
            "the first pod of a collection with affinity to itself goes anywhere, even where a \
             pod matches one of its terms",
            pod(
                "p",
                json!({"foo": "bar", "service": "securityscan"}),
                both_terms("zone"),
            ),
            vec![pod("p1", json!({"foo": "bar"}), json!(null))],
            vec![],
            [ok.clone(), ok.clone()],
        ),
        (
            "the first pod of a collection still needs the topology keys",
            pod(
                "p",
                json!({"foo": "bar", "service": "securityscan"}),
                both_terms("zoneLabel"),
            ),
            vec![pod("p1", json!({"foo": "bar"}), json!(null))],
            vec![],
            [no.clone(), no.clone()],
        ),
        (
            "the terms are satisfied by one pod matching both",
            pod("p", json!({"security": "S1"}), both_terms("zone")),
            vec![pod(
                "p1",
                json!({"foo": "bar", "service": "securityscan"}),
                json!(null),
            )],
            vec![],
            [ok.clone(), no.clone()],
        ),
        (
            "two pods matching one term each satisfy neither",
            pod("p", json!({"security": "S1"}), both_terms("zone")),
            vec![
                pod("p1", json!({"foo": "bar"}), json!(null)),
                pod("p2", json!({"service": "securityscan"}), json!(null)),
            ],
            vec![],
            [no.clone(), no.clone()],
        ),
        (
            "a pod matching both elsewhere leaves only its zone",
            pod("p", json!({"security": "S1"}), both_terms("zone")),
            vec![
                pod("p1", json!({"foo": "bar"}), json!(null)),
                pod("p2", json!({"service": "securityscan"}), json!(null)),
            ],
            vec![pod(
                "p3",
                json!({"foo": "bar", "service": "securityscan"}),
                json!(null),
            )],
            [no.clone(), ok.clone()],
        ),
        (
            "a pod matching itself is no first pod once another matches all its terms",
            pod(
                "p",
                json!({"foo": "bar", "service": "securityscan"}),
                both_terms("zone"),
            ),
            vec![],
            vec![pod(
                "p1",
                json!({"foo": "bar", "service": "securityscan"}),
                json!(null),
            )],
            [no.clone(), ok.clone()],
        ),
    ];
    for (what, p, on_a, on_b, want) in cases {
        let nodes = vec![
            with_pods("a", json!({"zone": "az1", "hostname": "h1"}), on_a),
            with_pods("b", json!({"zone": "az2", "hostname": "h2"}), on_b),
        ];
        assert_eq!(verdicts(&p, &nodes), want, "{what}");
    }
}

#[test]
fn namespace_selectors_pick_namespaces_by_their_labels() {
    let region = json!({"region": "r1", "zone": "z11"});
    let scan = || json!({"service": "securityscan"});
    let with_selector = |sel: Value, key: &str| {
        let mut t = term(in_("service", &["securityscan", "value2"]), key);
        t["namespaceSelector"] = sel;
        t
    };
    let cases = [
        (
            "affinity to a pod in a namespace the selector matches",
            pod_in(
                "default",
                "p",
                json!({"security": "S1"}),
                required("podAffinity", vec![with_selector(team1(), "region")]),
            ),
            pod_in("subteam1.team1", "e", scan(), json!(null)),
            Status::Success,
        ),
        (
            "affinity to a pod in a namespace the selector does not match",
            pod_in(
                "default",
                "p",
                json!({"security": "S1"}),
                required("podAffinity", vec![with_selector(team1(), "region")]),
            ),
            pod_in("subteam1.team2", "e", scan(), json!(null)),
            Status::unresolvable(AFFINITY_REASON),
        ),
        (
            "anti-affinity to a pod in a namespace the selector matches",
            pod_in(
                "subteam1.team1",
                "p",
                json!({"security": "S1"}),
                required("podAntiAffinity", vec![with_selector(team1(), "zone")]),
            ),
            pod_in("subteam2.team1", "e", scan(), json!(null)),
            Status::unschedulable(ANTI_AFFINITY_REASON),
        ),
        (
            "anti-affinity with a selector matching all namespaces",
            pod_in(
                "subteam1.team1",
                "p",
                json!({"security": "S1"}),
                required("podAntiAffinity", vec![with_selector(json!({}), "zone")]),
            ),
            pod_in("subteam2.team1", "e", scan(), json!(null)),
            Status::unschedulable(ANTI_AFFINITY_REASON),
        ),
        (
            "anti-affinity to a pod in a namespace the selector does not match",
            pod_in(
                "subteam1.team1",
                "p",
                json!({"security": "S1"}),
                required("podAntiAffinity", vec![with_selector(team1(), "zone")]),
            ),
            pod_in("subteam1.team2", "e", scan(), json!(null)),
            Status::Success,
        ),
        (
            "a placed pod's anti-affinity matches the incoming pod's namespace labels",
            pod_in("subteam1.team1", "p", scan(), json!(null)),
            pod_in(
                "default",
                "e",
                json!({}),
                required("podAntiAffinity", vec![with_selector(team1(), "zone")]),
            ),
            Status::unschedulable(EXISTING_ANTI_AFFINITY_REASON),
        ),
        (
            "a placed pod's anti-affinity that selects other namespaces",
            pod_in("subteam1.team2", "p", scan(), json!(null)),
            pod_in(
                "default",
                "e",
                json!({}),
                required("podAntiAffinity", vec![with_selector(team1(), "zone")]),
            ),
            Status::Success,
        ),
    ];
    for (what, p, placed, want) in cases {
        let nodes = vec![with_pods("node1", region.clone(), vec![placed])];
        assert_eq!(verdicts(&p, &nodes), [want], "{what}");
    }
}

#[test]
fn anti_affinity_both_ways_and_the_first_of_a_group() {
    let anti = required(
        "podAntiAffinity",
        vec![term(
            json!({"matchLabels": {"app": "fluentd"}}),
            "kubernetes.io/hostname",
        )],
    );
    let placed = pod("f1", json!({"app": "fluentd"}), anti.clone());
    let nodes = vec![
        with_pods("w0", json!({"kubernetes.io/hostname": "w0"}), vec![placed]),
        with_pods("w1", json!({"kubernetes.io/hostname": "w1"}), vec![]),
    ];
    let next = pod("f2", json!({"app": "fluentd"}), anti);
    assert_eq!(
        verdicts(&next, &nodes),
        [Status::unschedulable(ANTI_AFFINITY_REASON), Status::Success]
    );
    // A plain pod the placed one repels is kept off its node too.
    let plain = pod("x", json!({"app": "fluentd"}), json!(null));
    assert_eq!(
        verdicts(&plain, &nodes)[0],
        Status::unschedulable(EXISTING_ANTI_AFFINITY_REASON)
    );
    // Self-affinity: the first pod of a group may go where the topology key exists.
    let first = pod(
        "db",
        json!({"app": "db"}),
        required(
            "podAffinity",
            vec![term(
                json!({"matchLabels": {"app": "db"}}),
                "kubernetes.io/hostname",
            )],
        ),
    );
    assert_eq!(verdicts(&first, &nodes), [Status::Success, Status::Success]);
}

#[test]
fn preferred_terms_score_by_weight() {
    let mysql = pod("mysql", json!({"app": "mysql"}), json!(null));
    let nodes = vec![
        with_pods("w0", json!({"kubernetes.io/hostname": "w0"}), vec![mysql]),
        with_pods("w1", json!({"kubernetes.io/hostname": "w1"}), vec![]),
    ];
    let p = pod(
        "t",
        json!({}),
        json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 80, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "mysql"}}, "topologyKey": "kubernetes.io/hostname"}}]}}),
    );
    assert_eq!(scores(&p, &nodes), (vec![80, 0], vec![100, 0]));
}

#[test]
fn preferred_terms_count_the_namespaces_listed_or_selected() {
    // Upstream's scoring cases: weight 5 for pods labelled security=S1 in region, in
    // subteam2.team2 or in a team1 namespace.
    let preferring = |kind: &str| {
        json!({ kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5,
            "podAffinityTerm": {"labelSelector": in_("security", &["S1"]), "topologyKey": "region",
                "namespaces": ["subteam2.team2"], "namespaceSelector": team1()}}]}})
    };
    let s1 = || json!({"security": "S1"});
    let in_ns = |ns: &str| pod_in(ns, &format!("in-{ns}"), s1(), json!(null));
    let selected_only = || {
        vec![
            with_pods(
                "node1",
                json!({"region": "China"}),
                vec![
                    in_ns("subteam1.team1"),
                    in_ns("subteam1.team1"),
                    in_ns("subteam1.team2"),
                ],
            ),
            with_pods(
                "node2",
                json!({"region": "India"}),
                vec![in_ns("subteam2.team1")],
            ),
        ]
    };
    let listed_and_selected = || {
        vec![
            with_pods(
                "node1",
                json!({"region": "China"}),
                vec![
                    in_ns("subteam1.team1"),
                    in_ns("subteam1.team1"),
                    in_ns("subteam2.team2"),
                ],
            ),
            with_pods(
                "node2",
                json!({"region": "India"}),
                vec![in_ns("subteam2.team1")],
            ),
        ]
    };
    let cases = [
        (
            "affinity, selected namespaces",
            "podAffinity",
            selected_only(),
            (vec![10, 5], vec![100, 0]),
        ),
        (
            "affinity, listed and selected namespaces",
            "podAffinity",
            listed_and_selected(),
            (vec![15, 5], vec![100, 0]),
        ),
        (
            "anti-affinity, selected namespaces",
            "podAntiAffinity",
            selected_only(),
            (vec![-10, -5], vec![0, 100]),
        ),
        (
            "anti-affinity, listed and selected namespaces",
            "podAntiAffinity",
            listed_and_selected(),
            (vec![-15, -5], vec![0, 100]),
        ),
    ];
    for (what, kind, nodes, want) in cases {
        let p = pod_in("subteam1.team1", "p", s1(), preferring(kind));
        assert_eq!(scores(&p, &nodes), want, "{what}");
    }
}

#[test]
fn placed_pods_terms_match_the_incoming_pods_namespace_labels() {
    let nodes_with = |affinity: Value, s2_affinity: Value| {
        vec![
            with_pods(
                "node1",
                json!({"region": "China"}),
                vec![pod("e1", json!({"security": "S1"}), affinity)],
            ),
            with_pods(
                "node2",
                json!({"region": "India"}),
                vec![pod("e2", json!({"security": "S2"}), s2_affinity)],
            ),
            with_pods("node3", json!({"az": "az1"}), vec![]),
        ]
    };
    let stay_with_s2 = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 6, "podAffinityTerm": {"labelSelector": in_("security", &["S2"]), "topologyKey": "region"}}]}});
    let preferred_ns = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"labelSelector": in_("security", &["S1"]), "topologyKey": "region",
            "namespaces": ["subteam2.team2"], "namespaceSelector": team1()}}]}});
    let hard = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": in_("service", &["S1"]), "topologyKey": "region",
            "namespaces": ["", "subteam2.team2"], "namespaceSelector": team1()}]}});
    let cases = [
        (
            "a placed pod's preferred affinity with a namespace selector",
            pod_in(
                "subteam1.team1",
                "p",
                json!({"security": "S1"}),
                json!(null),
            ),
            nodes_with(preferred_ns, stay_with_s2.clone()),
            vec![100, 0, 0],
        ),
        (
            "placed pods' required affinity, by namespace selector",
            pod_in("subteam1.team1", "p", json!({"service": "S1"}), json!(null)),
            nodes_with(hard.clone(), hard.clone()),
            vec![100, 100, 0],
        ),
        (
            "placed pods' required affinity, by listed namespace",
            pod_in("subteam2.team2", "p", json!({"service": "S1"}), json!(null)),
            nodes_with(hard.clone(), hard.clone()),
            vec![100, 100, 0],
        ),
        (
            "placed pods' required affinity, in no namespace of theirs",
            pod_in("subteam1.team2", "p", json!({"service": "S1"}), json!(null)),
            nodes_with(hard.clone(), hard),
            vec![0, 0, 0],
        ),
    ];
    for (what, p, nodes, want) in cases {
        assert_eq!(scores(&p, &nodes).1, want, "{what}");
    }
}
