//! RBAC as a user meets it: the bootstrap roles `kubectl get clusterroles` lists, `kubectl auth
//! whoami` and `kubectl auth can-i` under the default AlwaysAllow mode, and under
//! `--authorization-mode RBAC` a token user bound to `view` who can list pods but not delete
//! one, refused with upstream's message, bindings taking effect on the next request.
//!
//! kubectl attaches bearer tokens only over TLS, which the API server does not serve yet, so
//! the RBAC scenario speaks raw HTTP with `Authorization: Bearer`; the controller manager (our
//! own client, which sends its kubeconfig's token over HTTP) aggregates `view` as the admin.

use std::time::Duration;

use serde_json::{json, Value};
use tinykube_tests::{eventually, table_rows, ApiServer, ControllerManager};

#[test]
fn bootstrap_policy_and_reviews_under_always_allow() {
    let server = ApiServer::start().unwrap();
    let roles = server.kubectl(&["get", "clusterroles"]);
    let rows = table_rows(roles.ok());
    assert_eq!(rows[0], vec!["NAME", "CREATED", "AT"]);
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    for want in [
        "admin",
        "cluster-admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:aggregate-to-view",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:node",
    ] {
        assert!(names.contains(&want), "{want} missing:\n{}", roles.stdout);
    }
    let bindings = server.kubectl(&["get", "clusterrolebindings", "-o", "wide"]);
    let admin = table_rows(bindings.ok())
        .into_iter()
        .find(|r| r[0] == "cluster-admin")
        .unwrap();
    assert_eq!(admin[1], "ClusterRole/cluster-admin");
    assert_eq!(admin[3], "system:masters");

    // The aggregation controller fills admin, edit and view from the aggregate-to roles.
    let _manager =
        ControllerManager::start(&server, &["--controllers=clusterrole-aggregation"]).unwrap();
    let resources = |role: &str| {
        server
            .kubectl(&[
                "get",
                "clusterrole",
                role,
                "-o",
                "jsonpath={.rules[*].resources}",
            ])
            .stdout
    };
    assert!(
        eventually(Duration::from_secs(10), || {
            let admin = resources("admin");
            admin.contains("rolebindings")
                && admin.contains("pods/exec")
                && admin.contains("pods/log")
        }),
        "admin never aggregated: {}",
        resources("admin")
    );
    assert!(resources("view").contains("pods/log") && !resources("view").contains("secrets"));
    let describe = server.kubectl(&["describe", "clusterrole", "view"]);
    assert!(
        describe.ok().contains("  pods/log  "),
        "{}",
        describe.stdout
    );

    assert_eq!(
        server.kubectl(&["auth", "whoami"]).ok(),
        "ATTRIBUTE   VALUE\nUsername    system:anonymous\nGroups      [system:unauthenticated]\n"
    );
    assert_eq!(
        server.kubectl(&["auth", "can-i", "create", "pods"]).ok(),
        "yes\n"
    );
    assert_eq!(
        server.kubectl(&["auth", "can-i", "--list"]).ok(),
        "Resources   Non-Resource URLs   Resource Names   Verbs\n\
         *.*         []                  []               [*]\n            \
         [*]                 []               [*]\n"
    );

    // Roles and bindings made with kubectl, printed and validated as upstream's.
    server
        .kubectl(&[
            "create",
            "role",
            "pod-reader",
            "--verb=get,list",
            "--resource=pods",
        ])
        .ok();
    server
        .kubectl(&[
            "create",
            "rolebinding",
            "read-pods",
            "--role=pod-reader",
            "--user=alice",
            "--group=devs",
            "--serviceaccount=default:builder",
        ])
        .ok();
    // kubectl sends these as protobuf: nonResourceURLs keeps its name.
    server
        .kubectl(&[
            "create",
            "clusterrole",
            "log-reader",
            "--verb=get",
            "--non-resource-url=/logs/*",
        ])
        .ok();
    let urls = server.kubectl(&[
        "get",
        "clusterrole",
        "log-reader",
        "-o",
        "jsonpath={.rules[0].nonResourceURLs}",
    ]);
    assert_eq!(urls.ok(), r#"["/logs/*"]"#);
    let wide = server.kubectl(&["get", "rolebinding", "read-pods", "-o", "wide"]);
    let rows = table_rows(wide.ok());
    assert_eq!(
        rows[0],
        vec!["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert_eq!(rows[1][1], "Role/pod-reader");
    assert_eq!(rows[1][3..], ["alice", "devs", "default/builder"]);
    let moved = server.kubectl(&[
        "patch",
        "rolebinding",
        "read-pods",
        "--type=merge",
        "-p",
        r#"{"roleRef":{"name":"other"}}"#,
    ]);
    assert!(moved.fails().contains(
        r#"The RoleBinding "read-pods" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef"#
    ), "{moved:?}");
    let bad = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bad}\nrules:\n- verbs: [get]\n  nonResourceURLs: [/healthz]\n"),
    );
    assert!(bad.fails().contains(
        r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#
    ), "{bad:?}");
}

struct Rbac {
    server: ApiServer,
    _manager: ControllerManager,
}

impl Rbac {
    fn start() -> Rbac {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(
            &tokens,
            "admin-token,admin,1,\"system:masters\"\nalice-token,alice,2\n",
        )
        .unwrap();
        let server = ApiServer::start_with(&[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--authorization-mode",
            "RBAC",
        ])
        .unwrap();
        // The controller manager authenticates as the admin (our client sends the token).
        let config = std::fs::read_to_string(server.kubeconfig()).unwrap();
        std::fs::write(
            server.kubeconfig(),
            config.replace("user: {}", "user: {token: admin-token}"),
        )
        .unwrap();
        let manager =
            ControllerManager::start(&server, &["--controllers=clusterrole-aggregation"]).unwrap();
        Rbac {
            server,
            _manager: manager,
        }
    }

    fn send(&self, method: &str, token: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.server.url);
        let http = self.server.http();
        let req = match method {
            "GET" => http.get(url),
            "POST" => http.post(url),
            "DELETE" => http.delete(url),
            _ => unreachable!(),
        };
        let req = match body {
            Some(b) => req.json(&b),
            None => req,
        };
        let resp = req.bearer_auth(token).send().unwrap();
        let code = resp.status().as_u16();
        (code, resp.json().unwrap_or(Value::Null))
    }
}

const PODS: &str = "/api/v1/namespaces/default/pods";
const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";

#[test]
fn a_user_bound_to_view_lists_pods_and_may_not_delete_them() {
    let c = Rbac::start();
    // Nothing is bound to alice yet: upstream's 403 for a list.
    let (code, status) = c.send("GET", "alice-token", PODS, None);
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"], json!({"kind": "pods"}));
    // What every authenticated user may do: discovery, version, reviews about herself.
    assert_eq!(c.send("GET", "alice-token", "/version", None).0, 200);
    assert_eq!(c.send("GET", "alice-token", "/apis", None).0, 200);
    let (code, cluster) = c.send("GET", "alice-token", "/api/v1/nodes", None);
    assert_eq!(code, 403);
    assert_eq!(
        cluster["message"],
        r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
    );

    // The admin (system:masters) binds alice to view, and creates a pod to be refused.
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}],
    });
    assert_eq!(
        c.send("POST", "admin-token", BINDINGS, Some(binding)).0,
        201
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(c.send("POST", "admin-token", PODS, Some(pod)).0, 201);
    // As soon as the aggregation controller has filled view's rules, alice lists pods.
    assert!(
        eventually(Duration::from_secs(10), || c
            .send("GET", "alice-token", PODS, None)
            .0
            == 200),
        "view never let alice list pods"
    );
    let (code, list) = c.send("GET", "alice-token", PODS, None);
    assert_eq!(
        (code, list["items"][0]["metadata"]["name"].clone()),
        (200, json!("web"))
    );
    let (code, refused) = c.send("DELETE", "alice-token", &format!("{PODS}/web"), None);
    assert_eq!(code, 403);
    assert_eq!(
        refused["message"],
        r#"pods "web" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "default""#
    );
    assert_eq!(refused["details"], json!({"name": "web", "kind": "pods"}));

    // The access reviews answer with the binding that allows.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}}});
    let (code, answer) = c.send(
        "POST",
        "alice-token",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some(review),
    );
    assert_eq!(code, 201);
    assert_eq!(answer["status"]["allowed"], true);
    assert_eq!(
        answer["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "alice-view/default" of ClusterRole "view" to User "alice""#
    );
    let about_alice = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"namespace": "default", "verb": "delete", "resource": "pods"}}});
    let (code, answer) = c.send(
        "POST",
        "admin-token",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(about_alice),
    );
    assert_eq!(
        (code, answer["status"].clone()),
        (201, json!({"allowed": false}))
    );
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                       "spec": {"namespace": "default"}});
    let (_, answer) = c.send(
        "POST",
        "alice-token",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(rules),
    );
    let resource_rules = answer["status"]["resourceRules"].as_array().unwrap();
    assert!(resource_rules.iter().any(|r| r["resources"]
        .as_array()
        .unwrap()
        .contains(&json!("pods"))
        && r["verbs"] == json!(["get", "list", "watch"])));
    assert_eq!(answer["status"]["incomplete"], false);
    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (_, answer) = c.send(
        "POST",
        "alice-token",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(whoami),
    );
    assert_eq!(
        answer["status"]["userInfo"],
        json!({"username": "alice", "uid": "2", "groups": ["system:authenticated"]})
    );

    // Escalation prevention: alice may write roles and bindings, but grant only what she holds.
    const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let role_maker = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "role-maker"},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]}]});
    assert_eq!(
        c.send("POST", "admin-token", ROLES, Some(role_maker)).0,
        201
    );
    let make_roles = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-makes-roles"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role-maker"},
        "subjects": [{"kind": "User", "name": "alice"}]});
    assert_eq!(
        c.send("POST", "admin-token", BINDINGS, Some(make_roles)).0,
        201
    );
    let role = |name: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]})
    };
    assert_eq!(
        c.send(
            "POST",
            "alice-token",
            ROLES,
            Some(role("reader", json!(["get", "list"])))
        )
        .0,
        201
    );
    let (code, refused) = c.send(
        "POST",
        "alice-token",
        ROLES,
        Some(role("deleter", json!(["get", "delete"]))),
    );
    assert_eq!(code, 403);
    assert_eq!(
        refused["message"],
        "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"
    );
    let to_edit = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "name": "alice"}]});
    let (code, refused) = c.send("POST", "alice-token", BINDINGS, Some(to_edit));
    assert_eq!(code, 403);
    assert!(refused["message"].as_str().unwrap().starts_with(
        "rolebindings.rbac.authorization.k8s.io \"alice-edit\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"
    ), "{refused}");
    c.send(
        "DELETE",
        "admin-token",
        &format!("{BINDINGS}/alice-makes-roles"),
        None,
    );

    // Removing the binding takes effect on the very next request.
    assert_eq!(
        c.send(
            "DELETE",
            "admin-token",
            &format!("{BINDINGS}/alice-view"),
            None
        )
        .0,
        200
    );
    assert_eq!(c.send("GET", "alice-token", PODS, None).0, 403);
    // A binding to a missing role says so in the reason, as upstream's.
    let dangling = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nope"},
        "subjects": [{"kind": "User", "name": "alice"}],
    });
    assert_eq!(
        c.send("POST", "admin-token", BINDINGS, Some(dangling)).0,
        201
    );
    let (_, status) = c.send("GET", "alice-token", PODS, None);
    assert_eq!(
        status["message"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default": RBAC: role.rbac.authorization.k8s.io "nope" not found"#
    );
}
