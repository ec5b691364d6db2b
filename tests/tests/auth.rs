//! With --token-auth-file, requests without a listed bearer token get 401. (kubectl attaches
//! tokens only over TLS, so against plain HTTP it is refused like any anonymous client.)

use tinykube_tests::ApiServer;

#[test]
fn bearer_tokens_are_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "s3cret,admin,1,\"system:masters\"\n").unwrap();
    let server = ApiServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]).unwrap();
    let http = server.http();
    let url = format!("{}/api/v1/namespaces", server.url);
    assert_eq!(http.get(&url).send().unwrap().status().as_u16(), 401);
    assert_eq!(
        http.get(&url)
            .bearer_auth("wrong")
            .send()
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    assert_eq!(
        http.get(&url)
            .bearer_auth("s3cret")
            .send()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let denied = server.kubectl(&["get", "ns"]);
    assert!(
        denied.fails().contains("Unauthorized") || denied.stderr.contains("must be logged in"),
        "{denied:?}"
    );
    let listed: serde_json::Value = http
        .get(&url)
        .bearer_auth("s3cret")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(listed["kind"], "NamespaceList");
    // Health endpoints stay open, as probes need them.
    assert!(http
        .get(format!("{}/healthz", server.url))
        .send()
        .unwrap()
        .status()
        .is_success());
}
