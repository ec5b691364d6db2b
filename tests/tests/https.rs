//! HTTPS as upstream serves it: real kubectl sends its bearer tokens (it does only over TLS)
//! and its client certificates to an API server with the generated serving certificate;
//! `tinykube up --secure` brings a cluster whose components and admin all use client
//! certificates, which kubectl and kube-rs use through the kubeconfig it writes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use tinykube_tests::{binary, eventually, table_rows, ApiServer, ControllerManager};

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

#[test]
fn kubectl_sends_tokens_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "s3cret,alice,1,\"dev\"\n").unwrap();
    let server =
        ApiServer::start_with(&["--secure", "--token-auth-file", tokens.to_str().unwrap()])
            .unwrap();
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );

    let out = server.kubectl(&["--token", "s3cret", "get", "pods"]);
    assert!(
        out.ok().is_empty() && out.stderr.contains("No resources found"),
        "{out:?}"
    );
    let denied = server.kubectl(&["--token", "wrong", "get", "pods"]);
    assert_eq!(denied.fails().trim(), UNAUTHORIZED);
    // Without credentials: 401 (kubectl, given none over TLS, would prompt for a password).
    assert_eq!(anonymous_status(&server), 401);

    // A ServiceAccount token (TokenRequest) authenticates over HTTPS too.
    server
        .kubectl(&["--token", "s3cret", "create", "serviceaccount", "robot"])
        .ok();
    let token = server
        .kubectl(&["--token", "s3cret", "create", "token", "robot"])
        .ok()
        .trim()
        .to_string();
    server
        .kubectl(&["--token", &token, "get", "serviceaccounts"])
        .ok();
    let names = table_rows(server.kubectl(&["--token", &token, "get", "sa"]).ok());
    assert!(names.iter().any(|r| r[0] == "robot"), "{names:?}");

    // The serving certificate's names are kubeadm's, and the server checks out against the
    // CA in the data dir (the harness trusts only that CA).
    let health = server.http().get(format!("{}/healthz", server.url)).send();
    assert!(health.unwrap().status().is_success());
    let localhost = server.url.replace("127.0.0.1", "localhost");
    let health = server.http().get(format!("{localhost}/healthz")).send();
    assert!(health.unwrap().status().is_success());
}

/// The status of a request without credentials, over HTTPS with the server's CA.
fn anonymous_status(server: &ApiServer) -> u16 {
    let url = format!("{}/api/v1/namespaces/default/pods", server.url);
    server.http().get(url).send().unwrap().status().as_u16()
}

/// A client certificate for `cn` in `groups`, signed by the CA in `ca_dir` (its `ca.crt` and
/// `ca.key`), or by a fresh stranger CA when `ca_dir` is `None`; written as `NAME.crt` and
/// `NAME.key` in `out`, whose paths are returned.
fn client_cert(ca_dir: Option<&Path>, cn: &str, groups: &[&str], out: &Path) -> (PathBuf, PathBuf) {
    let (ca_key, ca) = match ca_dir {
        Some(dir) => {
            let key =
                KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca.key")).unwrap()).unwrap();
            let pem = std::fs::read_to_string(dir.join("ca.crt")).unwrap();
            let ca = CertificateParams::from_ca_cert_pem(&pem)
                .unwrap()
                .self_signed(&key)
                .unwrap();
            (key, ca)
        }
        None => {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params
                .distinguished_name
                .push(DnType::CommonName, "stranger");
            params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let ca = params.self_signed(&key).unwrap();
            (key, ca)
        }
    };
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut name = DistinguishedName::new();
    for g in groups {
        name.push(DnType::OrganizationName, *g);
    }
    name.push(DnType::CommonName, cn);
    params.distinguished_name = name;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let file = if ca_dir.is_some() { cn } else { "stranger" };
    let (crt, pem) = (
        out.join(format!("{file}.crt")),
        out.join(format!("{file}.key")),
    );
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&pem, key.serialize_pem()).unwrap();
    (crt, pem)
}

// Denies ConfigMaps to jane in exactly the groups `dev` and `system:authenticated`: the
// policy's refusal shows who the API server took the client to be.
const WHO_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: who}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "!(request.userInfo.username == 'jane' && request.userInfo.groups == ['dev', 'system:authenticated'])"
    message: "jane of dev, by her certificate"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: who}
spec: {policyName: who, validationActions: [Deny]}
"#;

#[test]
fn client_certificates_authenticate_their_common_name() {
    let mut server = ApiServer::start_with(&["--secure"]).unwrap();
    let ca = server.ca_file().display().to_string();
    server.restart_with(&["--client-ca-file", &ca]).unwrap();
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let scratch = server.scratch();
    let (crt, key) = client_cert(Some(&server.data_dir()), "jane", &["dev"], &scratch);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let as_jane = |args: &[&str]| {
        let mut all = vec!["--client-certificate", &crt, "--client-key", &key];
        all.extend(args);
        server.kubectl(&all)
    };
    as_jane(&["get", "pods"]).ok();
    assert_eq!(anonymous_status(&server), 401);

    server
        .kubectl_stdin(
            &[
                "--client-certificate",
                &crt,
                "--client-key",
                &key,
                "apply",
                "-f",
                "-",
            ],
            Some(WHO_POLICY),
        )
        .ok();
    let refused = eventually(Duration::from_secs(10), || {
        let out = as_jane(&["create", "configmap", "c"]);
        !out.success && out.stderr.contains("jane of dev, by her certificate")
    });
    assert!(refused, "{:?}", as_jane(&["create", "configmap", "c"]));
    let (other, other_key) = client_cert(Some(&server.data_dir()), "joe", &["dev"], &scratch);
    server
        .kubectl(&[
            "--client-certificate",
            other.to_str().unwrap(),
            "--client-key",
            other_key.to_str().unwrap(),
            "create",
            "configmap",
            "c",
        ])
        .ok();

    // A certificate from another CA is refused as upstream does: 401, not a failed handshake.
    let (bad, bad_key) = client_cert(None, "jane", &["dev"], &scratch);
    let out = server.kubectl(&[
        "--client-certificate",
        bad.to_str().unwrap(),
        "--client-key",
        bad_key.to_str().unwrap(),
        "get",
        "pods",
    ]);
    assert_eq!(out.fails().trim(), UNAUTHORIZED);
}

#[test]
fn tls_cert_file_is_served_instead_of_the_generated_one() {
    let dir = tempfile::tempdir().unwrap();
    // A CA of the user's own and a serving certificate for 127.0.0.1 it signed.
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, "my-ca");
    params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(path("ca.pem"), ca.pem()).unwrap();
    std::fs::write(path("tls.crt"), cert.pem()).unwrap();
    std::fs::write(path("tls.key"), key.serialize_pem()).unwrap();

    let mut child = Command::new(binary("tinykube-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--data-dir", &path("data")])
        .args([
            "--tls-cert-file",
            &path("tls.crt"),
            "--tls-private-key-file",
            &path("tls.key"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("https://127.0.0.1:"), "{line}");
    // Trusting only the user's CA, the server checks out: it serves the given certificate.
    let http = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap())
        .no_proxy()
        .build()
        .unwrap();
    let healthy = eventually(Duration::from_secs(10), || {
        http.get(format!("{url}/healthz"))
            .send()
            .is_ok_and(|r| r.status().is_success())
    });
    // (Without any credentials kubectl would prompt for a password over HTTPS; the token is
    // ignored by a server with no authenticator.)
    let empty = dir.path().join("empty.kubeconfig");
    std::fs::write(&empty, "apiVersion: v1\nkind: Config\n").unwrap();
    let out = Command::new("kubectl")
        .args([
            "--token",
            "ignored",
            "--server",
            &url,
            "--certificate-authority",
            &path("ca.pem"),
            "get",
            "ns",
            "-o",
            "name",
        ])
        .env("KUBECONFIG", &empty)
        .env("KUBECACHEDIR", dir.path().join("kube-cache"))
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(healthy);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("namespace/kube-system"),
        "{out:?}"
    );
    assert!(!dir.path().join("data/apiserver.crt").exists());
}

/// `tinykube up --secure --output json --exit-on-stdin-close`: stopped when dropped.
struct Cluster {
    child: Child,
    stdin: Option<ChildStdin>,
    info: serde_json::Value,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if !eventually(Duration::from_secs(20), || {
            self.child.try_wait().ok().flatten().is_some()
        }) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_file_name("kube-cache"))
        .output()
        .expect("kubectl runs")
}

#[test]
fn tinykube_up_secure_runs_a_cluster_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary("tinykube"))
        .args([
            "up", "--secure", "--port", "0", "--nodes", "2", "--output", "json",
        ])
        .arg("--exit-on-stdin-close")
        .arg("--data-dir")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tinykube starts");
    let stdin = child.stdin.take();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let cluster = Cluster {
        child,
        stdin,
        info: serde_json::from_str(&line).expect("the JSON line"),
    };
    let server = cluster.info["server"].as_str().unwrap();
    assert!(server.starts_with("https://127.0.0.1:"), "{server}");
    let kubeconfig = PathBuf::from(cluster.info["kubeconfig"].as_str().unwrap());
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    for key in [
        "certificate-authority-data",
        "client-certificate-data",
        "client-key-data",
    ] {
        assert!(text.contains(key), "{text}");
    }

    let nodes = kubectl(&kubeconfig, &["get", "nodes"]);
    let rows = table_rows(&String::from_utf8_lossy(&nodes.stdout));
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[1..].iter().all(|r| r[1] == "Ready"), "{rows:?}");
    let out = kubectl(
        &kubeconfig,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let running = eventually(Duration::from_secs(30), || {
        let out = kubectl(&kubeconfig, &["get", "pods", "-l", "app=web"]);
        let rows = table_rows(&String::from_utf8_lossy(&out.stdout));
        rows.len() == 4 && rows[1..].iter().all(|r| r[2] == "Running")
    });
    assert!(
        running,
        "{:?}",
        kubectl(&kubeconfig, &["get", "pods", "-o", "wide"])
    );

    // Without the admin's certificate the server does not know who is asking.
    let ca = std::fs::read(dir.path().join("apiserver/ca.crt")).unwrap();
    let http = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .no_proxy()
        .build()
        .unwrap();
    let status = http
        .get(format!("{server}/api/v1/nodes"))
        .send()
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 401);

    // kube-rs, with rustls, from the same kubeconfig.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let names = runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::read_from(&kubeconfig).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
        let list = nodes.list(&Default::default()).await.unwrap();
        list.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect::<Vec<_>>()
    });
    assert_eq!(names, ["worker0", "worker1"]);
}

/// The issue's RBAC acceptance with real kubectl: under `--authorization-mode RBAC`, a token
/// user bound to `view` lists pods and is refused a delete with upstream's message; the admin
/// token (group `system:masters`) may do anything; `kubectl auth whoami` names the user.
#[test]
fn kubectl_under_rbac_as_a_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "admin-token,admin,0,\"system:masters\"\nview-token,alice,1,\"dev\"\n",
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
    let admin = |args: &[&str]| {
        let mut all = vec!["--token", "admin-token"];
        all.extend_from_slice(args);
        server.kubectl(&all)
    };
    let alice = |args: &[&str]| {
        let mut all = vec!["--token", "view-token"];
        all.extend_from_slice(args);
        server.kubectl(&all)
    };
    // The controller manager, with the admin's token, fills the aggregated `view` role.
    let kubeconfig = dir.path().join("admin.kubeconfig");
    std::fs::copy(server.kubeconfig(), &kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap();
    let user = server
        .kubectl(&[
            "--kubeconfig",
            kc,
            "config",
            "view",
            "-o",
            "jsonpath={.contexts[0].context.user}",
        ])
        .ok()
        .to_string();
    server
        .kubectl(&[
            "--kubeconfig",
            kc,
            "config",
            "set-credentials",
            &user,
            "--token=admin-token",
        ])
        .ok();
    let _cm = ControllerManager::start_as(
        &server,
        kubeconfig.clone(),
        &["--controllers=clusterrole-aggregation"],
    )
    .unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        admin(&[
            "get",
            "clusterrole",
            "view",
            "-o",
            "jsonpath={.rules[*].resources}",
        ])
        .stdout
        .contains("pods")
    }));
    admin(&["run", "web", "--image=nginx"]).ok();
    // Not bound to anything yet: refused.
    let refused = alice(&["get", "pods"]);
    assert_eq!(
        refused.fails().trim(),
        "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    admin(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ])
    .ok();
    let rows = table_rows(alice(&["get", "pods"]).ok());
    assert_eq!(rows[1][0], "web");
    let delete = alice(&["delete", "pod", "web"]);
    assert_eq!(
        delete.fails().trim(),
        "Error from server (Forbidden): pods \"web\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        alice(&["auth", "can-i", "delete", "pods"]).stdout.trim(),
        "no"
    );
    assert_eq!(alice(&["auth", "can-i", "list", "pods"]).ok().trim(), "yes");
    let whoami = table_rows(alice(&["auth", "whoami"]).ok());
    assert_eq!(whoami[1], ["Username", "alice"]);
    admin(&["delete", "pod", "web"]).ok();
}
