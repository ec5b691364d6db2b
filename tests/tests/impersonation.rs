//! Impersonation with real kubectl (`--as`, `--as-group`): under RBAC each impersonated value
//! must be allowed to the real user (verb `impersonate`), refused with upstream's 403, and the
//! request then acts as the impersonated user; under AlwaysAllow impersonation simply works.
//! kube-rs's `impersonate` settings go the same way.

use tinykube_tests::{table_rows, ApiServer};

/// Upstream's refusal of a group (or extra, or uid) without a user.
const NO_USER: &str = "requested [{Group  devs    }] without impersonating a user";

const IMPERSONATOR: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-jane}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [jane]}
- {apiGroups: [""], resources: [groups], verbs: [impersonate], resourceNames: [devs]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-impersonates-jane}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-jane}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
"#;

/// The status code and message of a GET of the pods with `headers`, as `token`.
fn raw_get(server: &ApiServer, token: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .bearer_auth(token);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().unwrap();
    let code = resp.status().as_u16();
    let body: serde_json::Value = resp.json().unwrap();
    (code, body["message"].as_str().unwrap_or("").to_string())
}

#[test]
fn impersonation_under_rbac() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "admin-token,admin,0,\"system:masters\"\nbob-token,bob,2\n",
    )
    .unwrap();
    let server = ApiServer::start_with(&[
        "--secure",
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--authorization-mode",
        "RBAC",
    ])
    .unwrap();
    let run = |token: &str, args: &[&str]| {
        let mut all = vec!["--token", token];
        all.extend_from_slice(args);
        server.kubectl(&all)
    };
    let admin = |args: &[&str]| run("admin-token", args);
    let bob = |args: &[&str]| run("bob-token", args);

    // The admin (system:masters) may impersonate anyone; the request is then jane's.
    let whoami = table_rows(admin(&["auth", "whoami", "--as=jane", "--as-group=devs"]).ok());
    assert_eq!(whoami[1], ["Username", "jane"]);
    assert_eq!(whoami[2], ["Groups", "[devs", "system:authenticated]"]);
    let can = admin(&["auth", "can-i", "list", "pods", "--as=jane"]);
    assert_eq!(can.stdout.trim(), "no", "{can:?}");
    admin(&[
        "create",
        "role",
        "pod-reader",
        "--verb=list",
        "--resource=pods",
    ])
    .ok();
    admin(&[
        "create",
        "rolebinding",
        "jane-reads",
        "--role=pod-reader",
        "--user=jane",
    ])
    .ok();
    assert_eq!(
        admin(&["auth", "can-i", "list", "pods", "--as=jane"])
            .ok()
            .trim(),
        "yes"
    );
    // A ServiceAccount user gets its groups, and is refused what it may not do.
    let sa = admin(&["get", "pods", "--as=system:serviceaccount:default:foo"]);
    assert_eq!(
        sa.fails().trim(),
        "Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:default:foo\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let whoami = admin(&[
        "auth",
        "whoami",
        "--as=system:serviceaccount:default:foo",
        "-o",
        "jsonpath={.status.userInfo.groups}",
    ]);
    assert_eq!(
        whoami.ok(),
        r#"["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]"#
    );

    // bob may not impersonate, until a role lets him impersonate jane (and devs) only.
    assert_eq!(
        bob(&["get", "pods", "--as=jane"]).fails().trim(),
        "Error from server (Forbidden): users \"jane\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    assert_eq!(
        bob(&["get", "pods", "--as=system:serviceaccount:default:foo"]).fails().trim(),
        "Error from server (Forbidden): serviceaccounts \"foo\" is forbidden: User \"bob\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"default\""
    );
    server
        .kubectl_stdin(
            &["--token", "admin-token", "apply", "-f", "-"],
            Some(IMPERSONATOR),
        )
        .ok();
    let listed = bob(&["get", "pods", "--as=jane"]);
    assert!(
        listed.ok().is_empty() && listed.stderr.contains("No resources found"),
        "{listed:?}"
    );
    assert_eq!(
        bob(&["get", "pods", "--as=jane", "--as-group=ops"]).fails().trim(),
        "Error from server (Forbidden): groups \"ops\" is forbidden: User \"bob\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
    );
    assert_eq!(
        bob(&["get", "pods", "--as=joe"]).fails().trim(),
        "Error from server (Forbidden): users \"joe\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // Extras are authorized as userextras/KEY of authentication.k8s.io.
    let (code, message) = raw_get(
        &server,
        "bob-token",
        &[
            ("Impersonate-User", "jane"),
            ("Impersonate-Extra-Scopes", "view"),
        ],
    );
    assert_eq!(code, 403);
    assert_eq!(message, "userextras.authentication.k8s.io \"view\" is forbidden: User \"bob\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope");
    // A group without a user is upstream's 400.
    assert_eq!(
        raw_get(&server, "admin-token", &[("Impersonate-Group", "devs")]),
        (400, NO_USER.to_string())
    );
}

#[test]
fn impersonation_under_always_allow() {
    let server = ApiServer::start().unwrap();
    let whoami = table_rows(
        server
            .kubectl(&["auth", "whoami", "--as=jane", "--as-group=devs"])
            .ok(),
    );
    assert_eq!(whoami[1], ["Username", "jane"]);
    assert_eq!(whoami[2], ["Groups", "[devs", "system:authenticated]"]);
    assert_eq!(
        server
            .kubectl(&["auth", "can-i", "list", "pods", "--as=jane"])
            .ok()
            .trim(),
        "yes"
    );
    let listed = server.kubectl(&["get", "pods", "--as=system:serviceaccount:default:foo"]);
    assert!(
        listed.ok().is_empty() && listed.stderr.contains("No resources found"),
        "{listed:?}"
    );
    let resp = server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .header("Impersonate-Group", "devs")
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
}

/// kube-rs, unmodified, with its kubeconfig's `as` and `as-groups`: the server sees jane of devs.
#[test]
fn kube_rs_impersonates_from_its_config() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use kube::config::{KubeConfigOptions, Kubeconfig};
    // The harness is blocking: start the API server before the runtime.
    let server = ApiServer::start().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let user = runtime.block_on(async {
        let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        config.auth_info.impersonate = Some("jane".into());
        config.auth_info.impersonate_groups = Some(vec!["devs".into()]);
        let client = kube::Client::try_from(config).unwrap();
        let reviews: kube::Api<SelfSubjectReview> = kube::Api::all(client);
        let review = reviews
            .create(&Default::default(), &SelfSubjectReview::default())
            .await
            .unwrap();
        review.status.and_then(|s| s.user_info).unwrap_or_default()
    });
    assert_eq!(user.username.as_deref(), Some("jane"));
    assert_eq!(
        user.groups,
        Some(vec!["devs".to_string(), "system:authenticated".to_string()])
    );
}
