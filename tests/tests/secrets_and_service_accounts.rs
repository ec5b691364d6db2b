//! Secrets and ServiceAccounts with the real kubectl, as the docs' "Managing Secrets using
//! kubectl", "Distribute Credentials Securely Using Secrets" and "Configure Service Accounts for
//! Pods" tasks do them (the steps that need no running container): creating, reading and
//! validating Secrets of each type, immutability, the `default` ServiceAccount and
//! `kube-root-ca.crt` of a new namespace, a pod's projected token volume, `kubectl create
//! token`, and that token used as a bearer token once authentication is on.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use tinykube_tests::{eventually, manifest, table_rows, ApiServer, ControllerManager};

fn json(server: &ApiServer, args: &[&str]) -> Value {
    serde_json::from_str(server.kubectl(args).ok()).expect("kubectl printed JSON")
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url claims");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[test]
fn managing_secrets_using_kubectl() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&[
        "create",
        "secret",
        "generic",
        "db-user-pass",
        "--from-literal=username=admin",
        "--from-literal=password=S!B\\*d$zDsb=",
    ]);
    assert_eq!(out.ok(), "secret/db-user-pass created\n");
    let rows = table_rows(server.kubectl(&["get", "secrets"]).ok());
    assert_eq!(rows[0], ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(rows[1][..3], ["db-user-pass", "Opaque", "2"]);
    let described = server.kubectl(&["describe", "secret", "db-user-pass"]);
    let text = described.ok();
    assert!(text.contains("Type:  Opaque"), "{text}");
    assert!(text.contains("password:  12 bytes"), "{text}");
    assert!(text.contains("username:  5 bytes"), "{text}");
    let password = server.kubectl(&[
        "get",
        "secret",
        "db-user-pass",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(password.ok(), b64("S!B\\*d$zDsb="));

    // From files: the keys are the file names.
    let dir = server.scratch();
    std::fs::write(dir.join("username.txt"), "admin").unwrap();
    std::fs::write(dir.join("password.txt"), "S!B\\*d$zDsb=").unwrap();
    let from_files = server.kubectl(&[
        "create",
        "secret",
        "generic",
        "from-files",
        &format!("--from-file={}", dir.join("username.txt").display()),
        &format!("--from-file={}", dir.join("password.txt").display()),
    ]);
    from_files.ok();
    let secret = json(&server, &["get", "secret", "from-files", "-o", "json"]);
    assert_eq!(secret["data"]["username.txt"], b64("admin"));

    // stringData is folded into data and never stored.
    let path = manifest(
        &dir,
        "string-data.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: mysecret\ntype: Opaque\ndata:\n  username: YWRtaW4=\nstringData:\n  username: administrator\n  password: t0p-Secret\n",
    );
    server
        .kubectl(&["apply", "-f", path.to_str().unwrap()])
        .ok();
    let secret = json(&server, &["get", "secret", "mysecret", "-o", "json"]);
    assert_eq!(secret["data"]["username"], b64("administrator"));
    assert_eq!(secret["data"]["password"], b64("t0p-Secret"));
    assert!(secret.get("stringData").is_none(), "{secret}");

    // "Distribute Credentials Securely Using Secrets": a pod reading the Secret as files and
    // as environment variables; its own volumes come first, the token volume after them.
    let pod = manifest(
        &dir,
        "secret-pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: secret-test-pod\nspec:\n  containers:\n  - name: test-container\n    image: nginx\n    env:\n    - name: SECRET_USERNAME\n      valueFrom:\n        secretKeyRef:\n          name: mysecret\n          key: username\n    volumeMounts:\n    - name: secret-volume\n      mountPath: /etc/secret-volume\n      readOnly: true\n  volumes:\n  - name: secret-volume\n    secret:\n      secretName: mysecret\n",
    );
    server.kubectl(&["apply", "-f", pod.to_str().unwrap()]).ok();
    let pod = json(&server, &["get", "pod", "secret-test-pod", "-o", "json"]);
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    assert_eq!(
        volumes[0],
        serde_json::json!({"name": "secret-volume", "secret": {"defaultMode": 420, "secretName": "mysecret"}})
    );
    assert!(volumes[1]["name"]
        .as_str()
        .unwrap()
        .starts_with("kube-api-access-"));
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"][1]["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );

    assert_eq!(
        server.kubectl(&["delete", "secret", "db-user-pass"]).ok(),
        "secret \"db-user-pass\" deleted\n"
    );
}

#[test]
fn typed_secrets_are_created_and_validated() {
    let server = ApiServer::start().unwrap();
    // The API server's own CA is a valid certificate and key pair for a TLS Secret.
    let (cert, key) = (
        server.data_dir().join("ca.crt"),
        server.data_dir().join("ca.key"),
    );
    let tls = server.kubectl(&[
        "create",
        "secret",
        "tls",
        "my-tls",
        &format!("--cert={}", cert.display()),
        &format!("--key={}", key.display()),
    ]);
    assert_eq!(tls.ok(), "secret/my-tls created\n");
    let registry = server.kubectl(&[
        "create",
        "secret",
        "docker-registry",
        "my-registry",
        "--docker-server=registry.example.com",
        "--docker-username=tiger",
        "--docker-password=pass1234",
        "--docker-email=tiger@acme.example",
    ]);
    assert_eq!(registry.ok(), "secret/my-registry created\n");
    let rows = table_rows(server.kubectl(&["get", "secrets"]).ok());
    let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap();
    assert_eq!(row("my-tls")[1..3], ["kubernetes.io/tls", "2"]);
    assert_eq!(
        row("my-registry")[1..3],
        ["kubernetes.io/dockerconfigjson", "1"]
    );
    // Secrets are selectable by type, as upstream's.
    let by_type = server.kubectl(&[
        "get",
        "secrets",
        "--field-selector",
        "type=kubernetes.io/tls",
        "-o",
        "name",
    ]);
    assert_eq!(by_type.ok(), "secret/my-tls\n");

    let dir = server.scratch();
    let cases = [
        (
            "type: kubernetes.io/tls\ndata:\n  tls.crt: eA==\n",
            "data[tls.key]: Required value",
        ),
        (
            "type: kubernetes.io/basic-auth\nstringData:\n  user: x\n",
            "* data[username]: Required value\n* data[password]: Required value",
        ),
        (
            "type: kubernetes.io/ssh-auth\ndata: {}\n",
            "data[ssh-privatekey]: Required value",
        ),
        (
            "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: nope\n",
            "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\"",
        ),
        (
            "type: kubernetes.io/service-account-token\n",
            "metadata.annotations[kubernetes.io/service-account.name]: Required value",
        ),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        let path = manifest(
            &dir,
            &format!("bad-{i}.yaml"),
            &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad-{i}\n{body}"),
        );
        let out = server.kubectl(&["apply", "-f", path.to_str().unwrap()]);
        let err = out.fails();
        assert!(
            err.contains("is invalid") && err.contains(want),
            "{body}\n{err}"
        );
    }
    let basic = manifest(
        &dir,
        "basic.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: basic\ntype: kubernetes.io/basic-auth\nstringData:\n  username: admin\n",
    );
    server
        .kubectl(&["apply", "-f", basic.to_str().unwrap()])
        .ok();
    // The type never changes.
    let retype = server.kubectl(&["patch", "secret", "basic", "-p", r#"{"type":"Opaque"}"#]);
    assert!(
        retype
            .fails()
            .contains("type: Invalid value: \"Opaque\": field is immutable"),
        "{retype:?}"
    );
}

#[test]
fn immutable_secrets_and_config_maps_keep_their_data() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch();
    let path = manifest(
        &dir,
        "immutable.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: frozen\ndata:\n  a: YQ==\nimmutable: true\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\ndata:\n  a: a\nimmutable: true\n",
    );
    server
        .kubectl(&["apply", "-f", path.to_str().unwrap()])
        .ok();
    for (kind, patch) in [
        ("secret", r#"{"data":{"a":"Yg=="}}"#),
        ("configmap", r#"{"data":{"a":"b"}}"#),
    ] {
        let out = server.kubectl(&["patch", kind, "frozen", "-p", patch]);
        let err = out.fails();
        assert!(
            err.contains("data: Forbidden: field is immutable when `immutable` is set"),
            "{kind}: {err}"
        );
        let thaw = server.kubectl(&["patch", kind, "frozen", "-p", r#"{"immutable":false}"#]);
        assert!(
            thaw.fails()
                .contains("immutable: Forbidden: field is immutable when `immutable` is set"),
            "{thaw:?}"
        );
        // Metadata may still change.
        server
            .kubectl(&["label", kind, "frozen", "tier=config"])
            .ok();
    }
}

#[test]
fn service_accounts_for_pods() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &[]).unwrap();
    server.kubectl(&["create", "namespace", "demo"]).ok();
    let ready = eventually(Duration::from_secs(15), || {
        server
            .kubectl(&["get", "serviceaccount", "default", "-n", "demo"])
            .success
            && server
                .kubectl(&["get", "configmap", "kube-root-ca.crt", "-n", "demo"])
                .success
    });
    assert!(
        ready,
        "the default ServiceAccount and kube-root-ca.crt appear"
    );
    let rows = table_rows(server.kubectl(&["get", "sa", "-n", "demo"]).ok());
    assert_eq!(rows[0], ["NAME", "SECRETS", "AGE"]);
    assert_eq!(rows[1][..2], ["default", "0"]);
    let ca = json(
        &server,
        &[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "demo",
            "-o",
            "json",
        ],
    );
    let pem = std::fs::read_to_string(server.data_dir().join("ca.crt")).unwrap();
    assert_eq!(ca["data"]["ca.crt"], pem.as_str());
    assert!(ca["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .unwrap()
        .starts_with("Contains a CA bundle"));

    // A deleted default account and an edited CA bundle come back.
    server
        .kubectl(&["delete", "sa", "default", "-n", "demo"])
        .ok();
    server
        .kubectl(&[
            "patch",
            "cm",
            "kube-root-ca.crt",
            "-n",
            "demo",
            "-p",
            r#"{"data":{"ca.crt":"tampered"}}"#,
        ])
        .ok();
    assert!(eventually(Duration::from_secs(15), || {
        let cm = server.kubectl(&[
            "get",
            "cm",
            "kube-root-ca.crt",
            "-n",
            "demo",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ]);
        server
            .kubectl(&["get", "sa", "default", "-n", "demo"])
            .success
            && cm.stdout == pem
    }));

    // The docs' build-robot account and a pod that uses it.
    assert_eq!(
        server
            .kubectl(&["create", "serviceaccount", "build-robot"])
            .ok(),
        "serviceaccount/build-robot created\n"
    );
    let dir = server.scratch();
    let pod = manifest(
        &dir,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: my-pod\nspec:\n  serviceAccountName: build-robot\n  containers:\n  - name: nginx\n    image: nginx\n  - name: sidecar\n    image: busybox\n",
    );
    server.kubectl(&["apply", "-f", pod.to_str().unwrap()]).ok();
    let pod = json(&server, &["get", "pod", "my-pod", "-o", "json"]);
    assert_eq!(pod["spec"]["serviceAccount"], "build-robot");
    let volume = &pod["spec"]["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == 21,
        "{name}"
    );
    assert_eq!(
        volume["projected"],
        serde_json::json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}
        ]})
    );
    for c in pod["spec"]["containers"].as_array().unwrap() {
        assert_eq!(
            c["volumeMounts"],
            serde_json::json!([{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                "name": name, "readOnly": true}])
        );
    }
    let described = server.kubectl(&["describe", "pod", "my-pod"]);
    let text = described.ok();
    assert!(text.contains("Service Account:  build-robot"), "{text}");
    assert!(
        text.contains(&format!(
            "/var/run/secrets/kubernetes.io/serviceaccount from {name} (ro)"
        )),
        "{text}"
    );
    assert!(text.contains("TokenExpirationSeconds:  3607"), "{text}");

    // Opting out, on the account or on the pod.
    server
        .kubectl(&[
            "patch",
            "serviceaccount",
            "build-robot",
            "-p",
            r#"{"automountServiceAccountToken":false}"#,
        ])
        .ok();
    server
        .kubectl(&[
            "run",
            "no-token",
            "--image=nginx",
            "--overrides",
            r#"{"spec":{"serviceAccountName":"build-robot"}}"#,
        ])
        .ok();
    let bare = json(&server, &["get", "pod", "no-token", "-o", "json"]);
    assert!(bare["spec"].get("volumes").is_none(), "{bare}");

    // A pod naming an account that does not exist is refused.
    let missing = server.kubectl(&[
        "run",
        "lost",
        "--image=nginx",
        "--overrides",
        r#"{"spec":{"serviceAccountName":"nope"}}"#,
    ]);
    assert_eq!(
        missing.fails().trim(),
        "Error from server (Forbidden): pods \"lost\" is forbidden: error looking up service account default/nope: serviceaccount \"nope\" not found"
    );
}

#[test]
fn create_token_then_use_it_as_a_bearer_token() {
    let mut server = ApiServer::start().unwrap();
    let cm = ControllerManager::start(&server, &["--controllers=serviceaccount"]).unwrap();
    assert!(eventually(Duration::from_secs(15), || {
        server.kubectl(&["get", "sa", "default"]).success
    }));
    drop(cm);
    server.kubectl(&["create", "sa", "robot"]).ok();
    let token = server
        .kubectl(&["create", "token", "default"])
        .ok()
        .trim()
        .to_string();
    let c = claims(&token);
    assert_eq!(
        c["aud"],
        serde_json::json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(c["iss"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(c["sub"], "system:serviceaccount:default:default");
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(c["nbf"], c["iat"]);
    let uid = server
        .kubectl(&["get", "sa", "default", "-o", "jsonpath={.metadata.uid}"])
        .ok()
        .to_string();
    assert_eq!(
        c["kubernetes.io"],
        serde_json::json!({"namespace": "default", "serviceaccount": {"name": "default", "uid": uid}})
    );
    let robot = server
        .kubectl(&["create", "token", "robot", "--duration=2h"])
        .ok()
        .trim()
        .to_string();
    assert_eq!(
        claims(&robot)["exp"].as_i64().unwrap() - claims(&robot)["iat"].as_i64().unwrap(),
        7200
    );
    let short = server.kubectl(&["create", "token", "robot", "--duration=1m"]);
    assert!(short.fails().contains(
        "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    ));
    let bound_secret = server.kubectl(&[
        "create",
        "secret",
        "generic",
        "anchor",
        "--from-literal=a=b",
    ]);
    bound_secret.ok();
    let bound = server
        .kubectl(&[
            "create",
            "token",
            "robot",
            "--bound-object-kind=Secret",
            "--bound-object-name=anchor",
        ])
        .ok()
        .trim()
        .to_string();
    assert_eq!(claims(&bound)["kubernetes.io"]["secret"]["name"], "anchor");

    // Authentication on: the tokens are bearer tokens of their ServiceAccounts.
    let tokens = server.scratch().join("tokens.csv");
    std::fs::write(&tokens, "s3cret,admin,1,\"system:masters\"\n").unwrap();
    server
        .restart_with(&["--token-auth-file", tokens.to_str().unwrap()])
        .unwrap();
    let http = server.http();
    let status = |token: &str, path: &str| {
        http.get(format!("{}{path}", server.url))
            .bearer_auth(token)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(status(&token, "/api/v1/namespaces/default/pods"), 200);
    assert_eq!(status(&robot, "/api/v1/namespaces/default/pods"), 200);
    assert_eq!(status(&bound, "/api/v1/namespaces/default/pods"), 200);
    let forged = format!("{}x", &token[..token.len() - 1]);
    assert_eq!(status(&forged, "/api/v1/namespaces/default/pods"), 401);
    assert_eq!(status("nope", "/api/v1/namespaces/default/pods"), 401);
    // The user a policy sees is the ServiceAccount's.
    let policy = manifest(
        &server.scratch(),
        "policy.yaml",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: whoami\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n    - apiGroups: [\"\"]\n      apiVersions: [\"v1\"]\n      operations: [\"CREATE\"]\n      resources: [\"configmaps\"]\n  validations:\n  - expression: \"false\"\n    messageExpression: \"'user ' + request.userInfo.username + ' in ' + request.userInfo.groups.join(',')\"\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: whoami\nspec:\n  policyName: whoami\n  validationActions: [Deny]\n",
    );
    let as_admin = |method: reqwest::Method, path: &str, body: String, ct: &str| {
        http.request(method, format!("{}{path}", server.url))
            .bearer_auth("s3cret")
            .header("Content-Type", ct)
            .body(body)
            .send()
            .unwrap()
    };
    for doc in std::fs::read_to_string(&policy).unwrap().split("---\n") {
        let kind = if doc.contains("kind: ValidatingAdmissionPolicyBinding") {
            "validatingadmissionpolicybindings"
        } else {
            "validatingadmissionpolicies"
        };
        let resp = as_admin(
            reqwest::Method::POST,
            &format!("/apis/admissionregistration.k8s.io/v1/{kind}"),
            doc.to_string(),
            "application/yaml",
        );
        assert_eq!(resp.status().as_u16(), 201, "{}", resp.text().unwrap());
    }
    let denied = http
        .post(format!(
            "{}/api/v1/namespaces/default/configmaps",
            server.url
        ))
        .bearer_auth(&robot)
        .header("Content-Type", "application/json")
        .body(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#)
        .send()
        .unwrap();
    let status_body: Value = denied.json().unwrap();
    assert!(
        status_body["message"].as_str().unwrap().ends_with(
            "user system:serviceaccount:default:robot in system:serviceaccounts,system:serviceaccounts:default,system:authenticated"
        ),
        "{status_body}"
    );

    // Tokens of a deleted account, or bound to a deleted object, stop working.
    let gone = as_admin(
        reqwest::Method::DELETE,
        "/api/v1/namespaces/default/secrets/anchor",
        String::new(),
        "application/json",
    );
    assert_eq!(gone.status().as_u16(), 200);
    assert_eq!(status(&bound, "/api/v1/namespaces/default/pods"), 401);
    let gone = as_admin(
        reqwest::Method::DELETE,
        "/api/v1/namespaces/default/serviceaccounts/robot",
        String::new(),
        "application/json",
    );
    assert_eq!(gone.status().as_u16(), 200);
    assert_eq!(status(&robot, "/api/v1/namespaces/default/pods"), 401);
    assert_eq!(status(&token, "/api/v1/namespaces/default/pods"), 200);
}
