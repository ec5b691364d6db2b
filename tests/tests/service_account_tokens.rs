//! ServiceAccount tokens as upstream's docs show them with real kubectl: "Manually create an
//! API token for a ServiceAccount" (a `kubernetes.io/service-account-token` Secret that the
//! controller manager's tokens controller fills, whose token then authenticates, and which goes
//! with its ServiceAccount), and TokenReview of bound, legacy and static tokens.

use std::time::Duration;

use tinykube_tests::{eventually, ApiServer, ControllerManager};

const BUILD_ROBOT_SECRET: &str = r#"
apiVersion: v1
kind: Secret
metadata:
  name: build-robot-secret
  annotations:
    kubernetes.io/service-account.name: build-robot
type: kubernetes.io/service-account-token
"#;

/// A server that authenticates (`admin-token` is in `system:masters`) over HTTPS, and a
/// kubeconfig with the admin's token for the controller manager.
fn server() -> (tempfile::TempDir, ApiServer, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "admin-token,admin,0,\"system:masters\"\n").unwrap();
    let server =
        ApiServer::start_with(&["--secure", "--token-auth-file", tokens.to_str().unwrap()])
            .unwrap();
    let kubeconfig = dir.path().join("admin.kubeconfig");
    std::fs::copy(server.kubeconfig(), &kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap();
    server
        .kubectl(&[
            "--kubeconfig",
            kc,
            "config",
            "set-credentials",
            "admin",
            "--token=admin-token",
        ])
        .ok();
    (dir, server, kubeconfig)
}

/// `kubectl create -f -` of a TokenReview of `token` (for `audiences`), its status.
fn review(server: &ApiServer, token: &str, audiences: &[&str]) -> serde_json::Value {
    let body = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences},
    });
    let out = server.kubectl_stdin(
        &["--token", "admin-token", "create", "-f", "-", "-o", "json"],
        Some(&body.to_string()),
    );
    let answer: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    answer["status"].clone()
}

#[test]
fn a_manually_created_token_secret_is_filled_authenticates_and_goes_with_its_account() {
    let (_dir, server, kubeconfig) = server();
    let _cm =
        ControllerManager::start_as(&server, kubeconfig, &["--controllers=serviceaccount-token"])
            .unwrap();
    let admin = |args: &[&str]| {
        let mut all = vec!["--token", "admin-token"];
        all.extend_from_slice(args);
        server.kubectl(&all)
    };
    admin(&["create", "serviceaccount", "build-robot"]).ok();
    server
        .kubectl_stdin(
            &["--token", "admin-token", "apply", "-f", "-"],
            Some(BUILD_ROBOT_SECRET),
        )
        .ok();
    let token = || {
        admin(&[
            "get",
            "secret",
            "build-robot-secret",
            "-o",
            "jsonpath={.data.token}",
        ])
        .stdout
        .clone()
    };
    assert!(eventually(Duration::from_secs(15), || !token().is_empty()));
    let described = admin(&["describe", "secret", "build-robot-secret"])
        .ok()
        .to_string();
    use base64::Engine;
    let jwt = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(token())
            .unwrap(),
    )
    .unwrap();
    let uid = admin(&["get", "sa", "build-robot", "-o", "jsonpath={.metadata.uid}"])
        .ok()
        .to_string();
    for line in [
        "Annotations:  kubernetes.io/service-account.name: build-robot".to_string(),
        format!("kubernetes.io/service-account.uid: {uid}"),
        "Type:  kubernetes.io/service-account-token".to_string(),
        "namespace:  7 bytes".to_string(),
        format!("token:      {jwt}"),
    ] {
        assert!(described.contains(&line), "{line:?} in\n{described}");
    }
    assert!(described.contains("ca.crt:"), "{described}");

    // The legacy token authenticates as its ServiceAccount, and TokenReview says so.
    let whoami = server.kubectl(&[
        "--token",
        &jwt,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(whoami.ok(), "system:serviceaccount:default:build-robot");
    let status = review(&server, &jwt, &[]);
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(
        status["audiences"],
        serde_json::json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // Each day's first use is recorded on the Secret, as upstream's legacy token tracking.
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(eventually(Duration::from_secs(10), || {
        admin(&[
            "get",
            "secret",
            "build-robot-secret",
            "-o",
            r"jsonpath={.metadata.labels.kubernetes\.io/legacy-token-last-used}",
        ])
        .stdout
            == today
    }));

    // Gone with its account: the Secret is deleted, the token refused.
    admin(&["delete", "serviceaccount", "build-robot"]).ok();
    assert!(eventually(Duration::from_secs(15), || {
        !admin(&["get", "secret", "build-robot-secret"]).success
    }));
    let refused = server.kubectl(&["--token", &jwt, "get", "pods"]);
    assert_eq!(
        refused.fails().trim(),
        "error: You must be logged in to the server (Unauthorized)"
    );
    let status = review(&server, &jwt, &[]);
    assert_eq!(
        status,
        serde_json::json!({"user": {}, "error": "[invalid bearer token, Token has been invalidated]"})
    );
}

#[test]
fn token_reviews_answer_as_upstreams() {
    let (_dir, server, _) = server();
    let admin = |args: &[&str]| {
        let mut all = vec!["--token", "admin-token"];
        all.extend_from_slice(args);
        server.kubectl(&all)
    };
    admin(&["create", "serviceaccount", "robot"]).ok();
    let token = admin(&["create", "token", "robot"]).ok().trim().to_string();
    let status = review(&server, &token, &[]);
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    let credential = status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap_or_default();
    assert!(credential.starts_with("JTI="), "{status}");

    // Audiences: a token for vault is for vault only.
    let vault = admin(&["create", "token", "robot", "--audience", "vault"])
        .ok()
        .trim()
        .to_string();
    assert_eq!(
        review(&server, &vault, &["vault", "other"])["audiences"],
        serde_json::json!(["vault"])
    );
    assert_eq!(
        review(&server, &vault, &[]),
        serde_json::json!({"user": {}, "error": "[invalid bearer token, token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]]"})
    );
    // The token file's users serve the API's audience only.
    assert_eq!(
        review(&server, "admin-token", &[])["user"]["username"],
        "admin"
    );
    assert_eq!(
        review(&server, "admin-token", &["vault"]),
        serde_json::json!({"user": {}, "error": "invalid bearer token"})
    );
    // A gone account's token.
    admin(&["delete", "serviceaccount", "robot"]).ok();
    assert_eq!(
        review(&server, &token, &[]),
        serde_json::json!({"user": {}, "error": "[invalid bearer token, serviceaccounts \"robot\" not found]"})
    );
    // An empty token is a 400; the kind is served (discovery) and create-only.
    let empty = server.kubectl_stdin(
        &["--token", "admin-token", "create", "-f", "-"],
        Some(r#"{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": ""}}"#),
    );
    assert!(
        empty
            .fails()
            .contains("token is required for TokenReview in authentication"),
        "{empty:?}"
    );
    let resources = admin(&[
        "api-resources",
        "--api-group=authentication.k8s.io",
        "-o",
        "wide",
    ])
    .ok()
    .to_string();
    assert!(
        resources.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.first() == Some(&"tokenreviews") && cols.ends_with(&["TokenReview", "create"])
        }),
        "{resources}"
    );
}
