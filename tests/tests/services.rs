//! Services as a user meets them: `kubectl expose deployment web --port 80` lists the three
//! pods in the Endpoints and the EndpointSlice (`kubectl get svc,ep,endpointslices`,
//! `kubectl describe svc`), a pod marked not ready moves to `notReadyAddresses` and
//! `ready: false` within a second, a restarted controller manager makes no second slice;
//! requested cluster IPs and node ports are refused when taken or out of range with upstream's
//! messages; the allocations survive an API server restart and concurrent creates with no
//! value handed out twice; the `kubernetes` Service points at the API server.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use tinykube_tests::{eventually, table_rows, ApiServer, ControllerManager, Kubelet, Scheduler};

const WAIT: Duration = Duration::from_secs(30);

fn json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).unwrap()
}

fn ips(list: &Value) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out
}

/// The web service's slices (the controller's only).
fn slices(server: &ApiServer) -> Vec<Value> {
    json(
        server,
        &[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
        ],
    )["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// (address, ready) of every endpoint of the web service's slices.
fn slice_endpoints(server: &ApiServer) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = slices(server)
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            (
                e["addresses"][0].as_str().unwrap_or("").to_string(),
                e["conditions"]["ready"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn exposed_deployment_has_its_ready_pods_as_endpoints() {
    let server = ApiServer::start().unwrap();
    let mut kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    let _scheduler = Scheduler::start(&server, &[]).unwrap();
    let mut manager = ControllerManager::start(&server, &[]).unwrap();
    server
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ])
        .ok();
    server
        .kubectl(&["expose", "deployment", "web", "--port", "80"])
        .ok();

    let pod_ips = || -> Vec<String> {
        let pods = json(&server, &["get", "pods", "-l", "app=web"]);
        let mut out: Vec<String> = pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_string))
            .collect();
        out.sort();
        out
    };
    assert!(
        eventually(WAIT, || {
            let want = pod_ips();
            want.len() == 3
                && ips(&json(&server, &["get", "ep", "web"])["subsets"][0]["addresses"]) == want
                && slice_endpoints(&server).iter().filter(|(_, r)| *r).count() == 3
        }),
        "endpoints never listed the three pods:\n{}",
        server
            .kubectl(&["get", "pods,svc,ep,endpointslices", "-o", "wide"])
            .stdout
    );
    let want = pod_ips();

    // What `kubectl get svc,ep,endpointslices` and `describe` show.
    let svc = server.kubectl(&["get", "svc", "web"]);
    let row = &table_rows(svc.ok())[1];
    assert_eq!(&row[1], "ClusterIP");
    assert!(row[2].starts_with("10."), "{row:?}");
    assert_eq!((&row[3][..], &row[4][..]), ("<none>", "80/TCP"));
    let ep = server.kubectl(&["get", "ep", "web"]);
    let cell = &table_rows(ep.ok())[1][1];
    let listed: HashSet<&str> = cell.split(',').collect();
    let expected: Vec<String> = want.iter().map(|ip| format!("{ip}:80")).collect();
    assert_eq!(listed, expected.iter().map(String::as_str).collect());
    let slices_table = server.kubectl(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
    ]);
    let row = &table_rows(slices_table.ok())[1];
    assert_eq!((&row[1][..], &row[2][..]), ("IPv4", "80"), "{row:?}");
    let describe = server.kubectl(&["describe", "svc", "web"]);
    let line = describe
        .ok()
        .lines()
        .find(|l| l.starts_with("Endpoints:"))
        .unwrap_or_default()
        .to_string();
    for ip in &want {
        assert!(line.contains(&format!("{ip}:80")), "{line}");
    }

    // The slice's labels, owner and endpoints as upstream's controller writes them.
    let slice = &slices(&server)[0];
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(slice["metadata"]["labels"]["app"], "web");
    let ep0 = &slice["endpoints"][0];
    assert_eq!(ep0["nodeName"], "worker0");
    assert_eq!(ep0["targetRef"]["kind"], "Pod");
    assert!(
        slice["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"]
            .is_string()
    );

    // One pod marked not ready leaves the ready addresses at once.
    let pods = json(&server, &["get", "pods", "-l", "app=web"]);
    let victim = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["status"]["podIP"] == want[0].as_str())
        .unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    // The kubelet would write its own view (Ready) back at its next status resync: stop it,
    // so that the pod stays as the patch leaves it (the node is only declared lost after 40 s).
    kubelet.kill9();
    let started = Instant::now();
    server
        .kubectl(&[
            "patch",
            "pod",
            &victim,
            "--subresource=status",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#,
        ])
        .ok();
    let moved = eventually(Duration::from_secs(1), || {
        let ep = json(&server, &["get", "ep", "web"]);
        let subset = &ep["subsets"][0];
        ips(&subset["notReadyAddresses"]) == vec![want[0].clone()]
            && !ips(&subset["addresses"]).contains(&want[0])
            && slice_endpoints(&server).contains(&(want[0].clone(), false))
    });
    assert!(
        moved,
        "the not-ready pod did not move within a second ({:?}):\n{}",
        started.elapsed(),
        server
            .kubectl(&["get", "ep,endpointslices", "-o", "yaml"])
            .stdout
    );

    // A restarted controller manager finds its slice: still exactly one.
    manager.restart().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(slices(&server).len(), 1);

    // A Service without a selector keeps the Endpoints its owner writes.
    let manual = "apiVersion: v1\nkind: Service\nmetadata:\n  name: external\nspec:\n  ports:\n  - port: 80\n---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: external\nsubsets:\n- addresses:\n  - ip: 192.0.2.10\n  ports:\n  - port: 80\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(manual))
        .ok();
    let again = manual.replace("192.0.2.10", "192.0.2.11");
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&again))
        .ok();
    std::thread::sleep(Duration::from_secs(1));
    let kept = json(&server, &["get", "ep", "external"]);
    assert_eq!(ips(&kept["subsets"][0]["addresses"]), vec!["192.0.2.11"]);

    // Deleting the service takes its Endpoints and (through the garbage collector) slices.
    server.kubectl(&["delete", "svc", "web"]).ok();
    assert!(eventually(WAIT, || server
        .kubectl(&["get", "ep", "web"])
        .stderr
        .contains("NotFound")
        && slices(&server).is_empty()));
}

#[test]
fn requested_addresses_and_ports_are_honoured_or_refused() {
    let server = ApiServer::start().unwrap();
    // The kubernetes service: the range's first IP, 443 to the API server's port.
    let kubernetes = json(&server, &["get", "svc", "kubernetes"]);
    assert_eq!(kubernetes["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(kubernetes["spec"]["ports"][0]["port"], 443);
    assert_eq!(kubernetes["metadata"]["labels"]["component"], "apiserver");
    let ep = server.kubectl(&["get", "ep", "kubernetes"]);
    assert!(
        ep.ok().contains(&format!("127.0.0.1:{}", server.port)),
        "{}",
        ep.stdout
    );

    server
        .kubectl(&[
            "create",
            "service",
            "clusterip",
            "a",
            "--tcp=80",
            "--clusterip=10.96.0.5",
        ])
        .ok();
    let taken = server.kubectl(&[
        "create",
        "service",
        "clusterip",
        "b",
        "--tcp=80",
        "--clusterip=10.96.0.5",
    ]);
    assert!(
        taken.fails().contains(r#"Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.5"}: failed to allocate IP 10.96.0.5: provided IP is already allocated"#),
        "{}",
        taken.stderr
    );
    let outside = server.kubectl(&[
        "create",
        "service",
        "clusterip",
        "c",
        "--tcp=80",
        "--clusterip=10.0.0.5",
    ]);
    assert!(outside.fails().contains("failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/12"), "{}", outside.stderr);
    server
        .kubectl(&[
            "create",
            "service",
            "nodeport",
            "np",
            "--tcp=80",
            "--node-port=30080",
        ])
        .ok();
    let port_taken = server.kubectl(&[
        "create",
        "service",
        "nodeport",
        "np2",
        "--tcp=80",
        "--node-port=30080",
    ]);
    assert!(
        port_taken.fails().contains(
            "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        ),
        "{}",
        port_taken.stderr
    );
    let port_outside = server.kubectl(&[
        "create",
        "service",
        "nodeport",
        "np3",
        "--tcp=80",
        "--node-port=8080",
    ]);
    assert!(port_outside.fails().contains(
        "provided port is not in the valid range. The range of valid ports is 30000-32767"
    ));
    for refused in ["b", "c", "np2", "np3"] {
        assert!(server
            .kubectl(&["get", "svc", refused])
            .stderr
            .contains("NotFound"));
    }

    // Headless, ExternalName and LoadBalancer as kubectl prints them.
    server
        .kubectl(&["create", "service", "clusterip", "hl", "--clusterip=None"])
        .ok();
    server
        .kubectl(&[
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
        ])
        .ok();
    server
        .kubectl(&["create", "service", "loadbalancer", "lb", "--tcp=80"])
        .ok();
    let table = server.kubectl(&["get", "svc", "hl", "ext", "lb"]);
    let rows = table_rows(table.ok());
    assert_eq!(&rows[1][1..4], &["ClusterIP", "None", "<none>"]);
    assert_eq!(&rows[2][1..4], &["ExternalName", "<none>", "example.com"]);
    assert_eq!(rows[3][1], "LoadBalancer");
    assert!(rows[3][2].starts_with("10."), "{:?}", rows[3]);
    assert_eq!(rows[3][3], "<pending>");
    assert!(rows[3][4].starts_with("80:3"), "{:?}", rows[3]);

    // A type change allocates and releases: NodePort back to ClusterIP frees 30080.
    server
        .kubectl(&[
            "patch",
            "svc",
            "np",
            "-p",
            r#"{"spec":{"type":"ClusterIP"}}"#,
        ])
        .ok();
    server
        .kubectl(&[
            "create",
            "service",
            "nodeport",
            "np4",
            "--tcp=80",
            "--node-port=30080",
        ])
        .ok();
    // Deleting frees the cluster IP.
    server.kubectl(&["delete", "svc", "a"]).ok();
    server
        .kubectl(&[
            "create",
            "service",
            "clusterip",
            "b",
            "--tcp=80",
            "--clusterip=10.96.0.5",
        ])
        .ok();
    let moved = server.kubectl(&[
        "patch",
        "svc",
        "b",
        "-p",
        r#"{"spec":{"clusterIP":"10.96.0.6","clusterIPs":["10.96.0.6"]}}"#,
    ]);
    assert!(
        moved.fails().contains("may not change once set"),
        "{}",
        moved.stderr
    );
}

/// Every cluster IP and node port of every service.
fn allocations(server: &ApiServer) -> (Vec<String>, Vec<i64>) {
    let list = json(server, &["get", "svc", "-A"]);
    let mut ips = Vec::new();
    let mut ports = Vec::new();
    for svc in list["items"].as_array().into_iter().flatten() {
        if let Some(ip) = svc["spec"]["clusterIP"].as_str().filter(|ip| *ip != "None") {
            ips.push(ip.to_string());
        }
        for p in svc["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(n) = p["nodePort"].as_i64() {
                ports.push(n);
            }
        }
    }
    (ips, ports)
}

fn unique<T: std::hash::Hash + Eq + Clone>(v: &[T]) -> bool {
    v.iter().cloned().collect::<HashSet<T>>().len() == v.len()
}

/// Create `n` NodePort services named `prefix-i` concurrently over plain HTTP.
fn create_concurrently(server: &ApiServer, prefix: &str, n: usize) {
    std::thread::scope(|s| {
        for i in 0..n {
            let http = server.http();
            let url = format!("{}/api/v1/namespaces/default/services", server.url);
            let body = serde_json::json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": format!("{prefix}-{i}")},
                "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 80}]}});
            s.spawn(move || {
                let r = http.post(url).json(&body).send().unwrap();
                assert_eq!(r.status().as_u16(), 201, "{}", r.text().unwrap_or_default());
            });
        }
    });
}

#[test]
fn allocations_survive_restarts_and_concurrent_creates() {
    // A small range, so that collisions would show.
    let mut server = ApiServer::start_with(&[
        "--service-cluster-ip-range",
        "10.100.0.0/26",
        "--service-node-port-range",
        "30000-30063",
    ])
    .unwrap();
    create_concurrently(&server, "before", 20);
    let (ips, ports) = allocations(&server);
    assert_eq!(ips.len(), 21, "{ips:?}");
    assert!(unique(&ips) && unique(&ports), "{ips:?} {ports:?}");
    assert!(ips.contains(&"10.100.0.1".to_string()));

    server.restart().unwrap();
    create_concurrently(&server, "after", 20);
    let (ips, ports) = allocations(&server);
    assert_eq!(ips.len(), 41);
    assert!(unique(&ips), "a cluster IP was handed out twice: {ips:?}");
    assert!(
        unique(&ports),
        "a node port was handed out twice: {ports:?}"
    );

    // The range is nearly full: the last free addresses are still found, then none.
    let free = 62 - 41;
    create_concurrently(&server, "fill", free);
    let (ips, _) = allocations(&server);
    assert_eq!(ips.len(), 62);
    assert!(unique(&ips));
    let full = server.kubectl(&["create", "service", "clusterip", "one-more", "--tcp=80"]);
    assert!(full.fails().contains("range is full"), "{}", full.stderr);
    // Deleting one frees its address for the next.
    server.kubectl(&["delete", "svc", "before-0"]).ok();
    server
        .kubectl(&["create", "service", "clusterip", "one-more", "--tcp=80"])
        .ok();
}
