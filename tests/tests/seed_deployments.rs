//! The Deployments of the course's scheduling-affinity chapter (`scheduling-affinity.txt`)
//! reach READY n/n with the scheduler and the controller manager running, their pods placed by
//! the podAffinity rules, once a stand-in kubelet marks the bound pods Running.

use std::time::Duration;

use tinykube_tests::{eventually, ready_nodes, ApiServer, ControllerManager, Scheduler};

fn seed(name: &str) -> String {
    format!("{}/fixtures/seeds/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Mark every pod that has a node Running and Ready; the number of pods still unbound.
fn run_bound_pods(server: &ApiServer) -> usize {
    let list: serde_json::Value = server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .send()
        .and_then(|r| r.json())
        .unwrap_or_default();
    let mut unbound = 0;
    for pod in list["items"].as_array().into_iter().flatten() {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        if pod["spec"]["nodeName"].is_null() {
            unbound += 1;
        } else if pod["status"]["phase"] != "Running" {
            tinykube_tests::mark_ready(server, "default", name);
        }
    }
    unbound
}

fn ready_column(server: &ApiServer, deploy: &str) -> String {
    let out = server.kubectl(&["get", "deploy", deploy, "--no-headers"]);
    out.stdout
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

#[test]
fn mysql_and_tomcat_with_required_pod_affinity_become_ready() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, false);
    server
        .kubectl(&["label", "nodes", "worker0", "project=project1"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker1", "worker2", "project=project2"])
        .ok();
    let _scheduler = Scheduler::start(&server, &[]).unwrap();
    let _cm = ControllerManager::start(&server, &[]).unwrap();
    server
        .kubectl(&["apply", "-f", &seed("mysql-deploy.yaml")])
        .ok();
    server
        .kubectl(&["apply", "-f", &seed("tomcat-deploy.yaml")])
        .ok();
    assert!(
        eventually(Duration::from_secs(20), || {
            run_bound_pods(&server);
            ready_column(&server, "mysql-deploy") == "1/1"
                && ready_column(&server, "tomcat-deploy") == "2/2"
        }),
        "{}",
        server.kubectl(&["get", "deploy,pods", "-o", "wide"]).stdout
    );
    // tomcat runs in the same project as mysql.
    let project_of = |selector: &str| -> Vec<String> {
        let nodes = server.kubectl(&[
            "get",
            "pods",
            "-l",
            selector,
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ]);
        nodes
            .stdout
            .split_whitespace()
            .map(|n| {
                server
                    .kubectl(&[
                        "get",
                        "node",
                        n,
                        "-o",
                        "jsonpath={.metadata.labels.project}",
                    ])
                    .stdout
            })
            .collect()
    };
    let mysql = project_of("app=mysql");
    let tomcat = project_of("app=tomcat-app1");
    assert_eq!(mysql.len(), 1);
    assert_eq!(tomcat, vec![mysql[0].clone(), mysql[0].clone()]);
    let rollout = server.kubectl(&["rollout", "status", "deploy/tomcat-deploy", "--timeout=5s"]);
    assert_eq!(
        rollout.ok(),
        "deployment \"tomcat-deploy\" successfully rolled out\n"
    );
}
