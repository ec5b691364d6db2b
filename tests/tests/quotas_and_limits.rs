//! LimitRanges and ResourceQuotas as the upstream docs' tasks use them, with real kubectl:
//! "Configure Default Memory Requests and Limits for a Namespace", "Configure Default CPU
//! Requests and Limits for a Namespace", "Configure Minimum and Maximum CPU Constraints for a
//! Namespace", "Configure Memory and CPU Quotas for a Namespace" and "Configure a Pod Quota for
//! a Namespace" (the docs' manifests, commands and outputs); then what the docs only state:
//! usage given back on deletion, validation, and concurrent creates that cannot overrun a quota.

use std::path::Path;
use std::time::Duration;

use tinykube_tests::{eventually, manifest, table_rows, ApiServer, ControllerManager};

fn apply(server: &ApiServer, file: &Path, ns: &str) -> tinykube_tests::Kubectl {
    let path = file.to_str().unwrap();
    server.kubectl(&["apply", "-f", path, &format!("--namespace={ns}")])
}

fn get(server: &ApiServer, what: &[&str], ns: &str, jsonpath: &str) -> String {
    let mut args = vec!["get"];
    args.extend(what);
    let ns = format!("--namespace={ns}");
    let out = format!("--output=jsonpath={jsonpath}");
    args.extend([ns.as_str(), out.as_str()]);
    server.kubectl(&args).ok().to_string()
}

fn pod(name: &str, container: &str, image: &str, resources: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: {container}\n    image: {image}\n{resources}"
    )
}

const RESOURCES: &str = "{.spec.containers[0].resources}";

#[test]
fn default_memory_and_cpu_requests_and_limits() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch();
    // Memory.
    server
        .kubectl(&["create", "namespace", "default-mem-example"])
        .ok();
    let lr = manifest(&dir, "memory-defaults.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: mem-limit-range\nspec:\n  limits:\n  - default:\n      memory: 512Mi\n    defaultRequest:\n      memory: 256Mi\n    type: Container\n");
    assert_eq!(
        apply(&server, &lr, "default-mem-example").ok(),
        "limitrange/mem-limit-range created\n"
    );
    let cases = [
        (
            "default-mem-demo",
            "",
            r#"{"limits":{"memory":"512Mi"},"requests":{"memory":"256Mi"}}"#,
        ),
        (
            "default-mem-demo-2",
            "    resources:\n      limits:\n        memory: \"1Gi\"\n",
            r#"{"limits":{"memory":"1Gi"},"requests":{"memory":"1Gi"}}"#,
        ),
        (
            "default-mem-demo-3",
            "    resources:\n      requests:\n        memory: \"128Mi\"\n",
            r#"{"limits":{"memory":"512Mi"},"requests":{"memory":"128Mi"}}"#,
        ),
    ];
    for (name, resources, want) in cases {
        let file = manifest(
            &dir,
            &format!("{name}.yaml"),
            &pod(name, &format!("{name}-ctr"), "nginx", resources),
        );
        assert_eq!(
            apply(&server, &file, "default-mem-example").ok(),
            format!("pod/{name} created\n")
        );
        assert_eq!(
            get(&server, &["pod", name], "default-mem-example", RESOURCES),
            want,
            "{name}"
        );
    }
    assert_eq!(
        get(&server, &["pod", "default-mem-demo"], "default-mem-example", "{.metadata.annotations.kubernetes\\.io/limit-ranger}"),
        "LimitRanger plugin set: memory request for container default-mem-demo-ctr; memory limit for container default-mem-demo-ctr"
    );
    // CPU: the docs' manifest writes the quantities as numbers.
    server
        .kubectl(&["create", "namespace", "default-cpu-example"])
        .ok();
    let lr = manifest(&dir, "cpu-defaults.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: cpu-limit-range\nspec:\n  limits:\n  - default:\n      cpu: 1\n    defaultRequest:\n      cpu: 0.5\n    type: Container\n");
    apply(&server, &lr, "default-cpu-example").ok();
    let cases = [
        (
            "default-cpu-demo",
            "",
            r#"{"limits":{"cpu":"1"},"requests":{"cpu":"500m"}}"#,
        ),
        (
            "default-cpu-demo-2",
            "    resources:\n      limits:\n        cpu: \"1\"\n",
            r#"{"limits":{"cpu":"1"},"requests":{"cpu":"1"}}"#,
        ),
        (
            "default-cpu-demo-3",
            "    resources:\n      requests:\n        cpu: \"0.75\"\n",
            r#"{"limits":{"cpu":"1"},"requests":{"cpu":"750m"}}"#,
        ),
    ];
    for (name, resources, want) in cases {
        let file = manifest(
            &dir,
            &format!("{name}.yaml"),
            &pod(name, &format!("{name}-ctr"), "nginx", resources),
        );
        apply(&server, &file, "default-cpu-example").ok();
        assert_eq!(
            get(&server, &["pod", name], "default-cpu-example", RESOURCES),
            want,
            "{name}"
        );
    }
    // The QoS class follows the defaulted resources.
    assert_eq!(
        get(
            &server,
            &["pod", "default-cpu-demo"],
            "default-cpu-example",
            "{.status.qosClass}"
        ),
        "Burstable"
    );
}

#[test]
fn minimum_and_maximum_cpu_constraints() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch();
    let ns = "constraints-cpu-example";
    server.kubectl(&["create", "namespace", ns]).ok();
    let lr = manifest(&dir, "cpu-constraints.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: cpu-min-max-demo-lr\nspec:\n  limits:\n  - max:\n      cpu: \"800m\"\n    min:\n      cpu: \"200m\"\n    type: Container\n");
    apply(&server, &lr, ns).ok();
    // The defaults were created automatically.
    let yaml = server.kubectl(&[
        "get",
        "limitrange",
        "cpu-min-max-demo-lr",
        "--output=yaml",
        &format!("--namespace={ns}"),
    ]);
    assert!(
        yaml.ok().contains("  limits:\n  - default:\n      cpu: 800m\n    defaultRequest:\n      cpu: 800m\n    max:\n      cpu: 800m\n    min:\n      cpu: 200m\n    type: Container\n"),
        "{}",
        yaml.stdout
    );
    let described = server.kubectl(&[
        "describe",
        "limitrange",
        "cpu-min-max-demo-lr",
        &format!("--namespace={ns}"),
    ]);
    let rows = table_rows(described.ok());
    assert_eq!(
        rows[2..],
        [
            vec![
                "Type",
                "Resource",
                "Min",
                "Max",
                "Default",
                "Request",
                "Default",
                "Limit",
                "Max",
                "Limit/Request",
                "Ratio"
            ],
            vec![
                "----",
                "--------",
                "---",
                "---",
                "---------------",
                "-------------",
                "-----------------------"
            ],
            vec!["Container", "cpu", "200m", "800m", "800m", "800m", "-"],
        ]
    );
    let rows = table_rows(
        server
            .kubectl(&["get", "limits", &format!("--namespace={ns}")])
            .ok(),
    );
    assert_eq!(rows[0], ["NAME", "CREATED", "AT"]);
    assert_eq!(rows[1][0], "cpu-min-max-demo-lr");

    let ok = manifest(&dir, "cpu-constraints-pod.yaml", &pod("constraints-cpu-demo", "constraints-cpu-demo-ctr", "nginx", "    resources:\n      limits:\n        cpu: \"800m\"\n      requests:\n        cpu: \"500m\"\n"));
    apply(&server, &ok, ns).ok();
    assert_eq!(
        get(&server, &["pod", "constraints-cpu-demo"], ns, RESOURCES),
        r#"{"limits":{"cpu":"800m"},"requests":{"cpu":"500m"}}"#
    );
    server
        .kubectl(&[
            "delete",
            "pod",
            "constraints-cpu-demo",
            &format!("--namespace={ns}"),
        ])
        .ok();

    let cases = [
        ("constraints-cpu-demo-2", "    resources:\n      limits:\n        cpu: \"1.5\"\n      requests:\n        cpu: \"500m\"\n",
         "pods \"constraints-cpu-demo-2\" is forbidden: maximum cpu usage per Container is 800m, but limit is 1500m"),
        ("constraints-cpu-demo-3", "    resources:\n      limits:\n        cpu: \"800m\"\n      requests:\n        cpu: \"100m\"\n",
         "pods \"constraints-cpu-demo-3\" is forbidden: minimum cpu usage per Container is 200m, but request is 100m"),
    ];
    for (name, resources, want) in cases {
        let file = manifest(
            &dir,
            &format!("{name}.yaml"),
            &pod(name, &format!("{name}-ctr"), "nginx", resources),
        );
        let refused = apply(&server, &file, ns);
        let expected = format!(
            "Error from server (Forbidden): error when creating \"{}\": {want}\n",
            file.display()
        );
        assert_eq!(refused.fails(), expected);
    }
    let bare = manifest(
        &dir,
        "cpu-constraints-pod-4.yaml",
        &pod(
            "constraints-cpu-demo-4",
            "constraints-cpu-demo-4-ctr",
            "vish/stress",
            "",
        ),
    );
    apply(&server, &bare, ns).ok();
    assert_eq!(
        get(&server, &["pod", "constraints-cpu-demo-4"], ns, RESOURCES),
        r#"{"limits":{"cpu":"800m"},"requests":{"cpu":"800m"}}"#
    );
}

const QUOTA_MEM_CPU: &str = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: mem-cpu-demo\nspec:\n  hard:\n    requests.cpu: \"1\"\n    requests.memory: 1Gi\n    limits.cpu: \"2\"\n    limits.memory: 2Gi\n";

#[test]
fn memory_and_cpu_quota() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=resourcequota"]).unwrap();
    let dir = server.scratch();
    let ns = "quota-mem-cpu-example";
    server.kubectl(&["create", "namespace", ns]).ok();
    let quota = manifest(&dir, "quota-mem-cpu.yaml", QUOTA_MEM_CPU);
    assert_eq!(
        apply(&server, &quota, ns).ok(),
        "resourcequota/mem-cpu-demo created\n"
    );
    let used = || {
        get(
            &server,
            &["resourcequota", "mem-cpu-demo"],
            ns,
            "{.status.used}",
        )
    };
    assert!(
        eventually(Duration::from_secs(10), || used()
            == r#"{"limits.cpu":"0","limits.memory":"0","requests.cpu":"0","requests.memory":"0"}"#),
        "{}",
        used()
    );
    let first = manifest(&dir, "quota-mem-cpu-pod.yaml", &pod("quota-mem-cpu-demo", "quota-mem-cpu-demo-ctr", "nginx", "    resources:\n      limits:\n        memory: \"800Mi\"\n        cpu: \"800m\"\n      requests:\n        memory: \"600Mi\"\n        cpu: \"400m\"\n"));
    apply(&server, &first, ns).ok();
    let yaml = server.kubectl(&[
        "get",
        "resourcequota",
        "mem-cpu-demo",
        &format!("--namespace={ns}"),
        "--output=yaml",
    ]);
    assert!(
        yaml.ok().ends_with("status:\n  hard:\n    limits.cpu: \"2\"\n    limits.memory: 2Gi\n    requests.cpu: \"1\"\n    requests.memory: 1Gi\n  used:\n    limits.cpu: 800m\n    limits.memory: 800Mi\n    requests.cpu: 400m\n    requests.memory: 600Mi\n"),
        "{}",
        yaml.stdout
    );
    let second = manifest(&dir, "quota-mem-cpu-pod-2.yaml", &pod("quota-mem-cpu-demo-2", "quota-mem-cpu-demo-2-ctr", "redis", "    resources:\n      limits:\n        memory: \"1Gi\"\n        cpu: \"800m\"\n      requests:\n        memory: \"700Mi\"\n        cpu: \"400m\"\n"));
    assert_eq!(
        apply(&server, &second, ns).fails(),
        format!("Error from server (Forbidden): error when creating \"{}\": pods \"quota-mem-cpu-demo-2\" is forbidden: exceeded quota: mem-cpu-demo, requested: requests.memory=700Mi, used: requests.memory=600Mi, limited: requests.memory=1Gi\n", second.display())
    );
    // A quota on cpu and memory makes every container state them.
    assert_eq!(
        server.kubectl(&["run", "nginx", "--image=nginx", &format!("--namespace={ns}")]).fails(),
        "Error from server (Forbidden): pods \"nginx\" is forbidden: failed quota: mem-cpu-demo: must specify limits.cpu for: nginx; limits.memory for: nginx; requests.cpu for: nginx; requests.memory for: nginx\n"
    );
    let rows = table_rows(
        server
            .kubectl(&["get", "quota", &format!("--namespace={ns}")])
            .ok(),
    );
    assert_eq!(rows[0], ["NAME", "AGE", "REQUEST", "LIMIT"]);
    assert_eq!(
        rows[1][2..].join(" "),
        "requests.cpu: 400m/1, requests.memory: 600Mi/1Gi limits.cpu: 800m/2, limits.memory: 800Mi/2Gi"
    );
    let described = server.kubectl(&[
        "describe",
        "quota",
        "mem-cpu-demo",
        &format!("--namespace={ns}"),
    ]);
    assert_eq!(
        described.ok(),
        "Name:            mem-cpu-demo\nNamespace:       quota-mem-cpu-example\nResource         Used   Hard\n--------         ----   ----\nlimits.cpu       800m   2\nlimits.memory    800Mi  2Gi\nrequests.cpu     400m   1\nrequests.memory  600Mi  1Gi\n"
    );
    // Deleting the pod gives its usage back, and the second pod now fits.
    server
        .kubectl(&[
            "delete",
            "pod",
            "quota-mem-cpu-demo",
            &format!("--namespace={ns}"),
            "--wait=false",
        ])
        .ok();
    assert!(
        eventually(Duration::from_secs(10), || used()
            == r#"{"limits.cpu":"0","limits.memory":"0","requests.cpu":"0","requests.memory":"0"}"#),
        "{}",
        used()
    );
    apply(&server, &second, ns).ok();
}

#[test]
fn pod_quota_stops_a_deployment_at_two_pods() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(
        &server,
        &["--controllers=resourcequota,deployment,replicaset"],
    )
    .unwrap();
    let dir = server.scratch();
    let ns = "quota-pod-example";
    server.kubectl(&["create", "namespace", ns]).ok();
    let quota = manifest(&dir, "quota-pod.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pod-demo\nspec:\n  hard:\n    pods: \"2\"\n");
    apply(&server, &quota, ns).ok();
    let status = || get(&server, &["resourcequota", "pod-demo"], ns, "{.status}");
    assert!(
        eventually(Duration::from_secs(10), || status()
            == r#"{"hard":{"pods":"2"},"used":{"pods":"0"}}"#),
        "{}",
        status()
    );
    let deployment = manifest(&dir, "quota-pod-deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: pod-quota-demo\nspec:\n  selector:\n    matchLabels:\n      purpose: quota-demo\n  replicas: 3\n  template:\n    metadata:\n      labels:\n        purpose: quota-demo\n    spec:\n      containers:\n      - name: pod-quota-demo\n        image: nginx\n");
    apply(&server, &deployment, ns).ok();
    let failure = || {
        get(
            &server,
            &["deployment", "pod-quota-demo"],
            ns,
            "{.status.conditions[?(@.type==\"ReplicaFailure\")].message}",
        )
    };
    assert!(eventually(Duration::from_secs(10), || !failure().is_empty()));
    let message = failure();
    assert!(message.starts_with("pods \"pod-quota-demo-"), "{message}");
    assert!(
        message.ends_with("\" is forbidden: exceeded quota: pod-demo, requested: pods=1, used: pods=2, limited: pods=2"),
        "{message}"
    );
    let pods = server.kubectl(&["get", "pods", &format!("--namespace={ns}"), "--no-headers"]);
    assert_eq!(pods.ok().lines().count(), 2);
    assert_eq!(
        get(
            &server,
            &["resourcequota", "pod-demo"],
            ns,
            "{.status.used.pods}"
        ),
        "2"
    );
}

#[test]
fn quota_and_limit_range_validation() {
    let server = ApiServer::start().unwrap();
    let bad_lr = "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: bad\nspec:\n  limits:\n  - type: Container\n    min:\n      cpu: \"1\"\n    max:\n      cpu: 500m\n";
    let refused = server.kubectl_stdin(&["apply", "-f", "-"], Some(bad_lr));
    assert_eq!(
        refused.fails(),
        "The LimitRange \"bad\" is invalid: \n* spec.limits[0].min[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: min value 1 is greater than max value 500m\n* spec.limits[0].defaultRequest[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: min value 1 is greater than default request value 500m\n* spec.limits[0].default[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: min value 1 is greater than default value 500m\n"
    );
    let bad_quota = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: bad\nspec:\n  hard:\n    pods: 1500m\n";
    let refused = server.kubectl_stdin(&["apply", "-f", "-"], Some(bad_quota));
    assert_eq!(
        refused.fails(),
        "The ResourceQuota \"bad\" is invalid: spec.hard[pods]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", Format:\"DecimalSI\"}: must be an integer\n"
    );
}

#[test]
fn concurrent_creates_never_exceed_a_quota() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=resourcequota"]).unwrap();
    server.kubectl(&["create", "namespace", "race"]).ok();
    let quota = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: three\n  namespace: race\nspec:\n  hard:\n    count/configmaps: \"3\"\n    pods: \"3\"\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(quota))
        .ok();
    let used = || get(&server, &["quota", "three"], "race", "{.status.used}");
    assert!(
        eventually(Duration::from_secs(10), || used()
            == r#"{"count/configmaps":"0","pods":"0"}"#),
        "{}",
        used()
    );
    let http = server.http();
    let base = format!("{}/api/v1/namespaces/race", server.url);
    let created: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|i| {
                let (http, base) = (&http, &base);
                s.spawn(move || {
                    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": format!("p{i}")},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
                    let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("c{i}")}});
                    let a = http
                        .post(format!("{base}/pods"))
                        .json(&pod)
                        .send()
                        .unwrap()
                        .status();
                    let b = http
                        .post(format!("{base}/configmaps"))
                        .json(&cm)
                        .send()
                        .unwrap()
                        .status();
                    for s in [a, b] {
                        assert!(s.as_u16() == 201 || s.as_u16() == 403, "{s}");
                    }
                    usize::from(a.as_u16() == 201) + usize::from(b.as_u16() == 201)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(created, 6);
    assert_eq!(used(), r#"{"count/configmaps":"3","pods":"3"}"#);
    // Deleting an object of any counted kind gives its share back.
    let names = server.kubectl(&["get", "configmaps", "-n", "race", "-o", "name"]);
    let first = names.ok().lines().next().unwrap().to_string();
    server.kubectl(&["delete", &first, "-n", "race"]).ok();
    assert!(
        eventually(Duration::from_secs(10), || used()
            == r#"{"count/configmaps":"2","pods":"3"}"#),
        "{}",
        used()
    );
}

#[test]
fn kubectl_create_quota_and_describe_namespace() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=resourcequota"]).unwrap();
    server.kubectl(&["create", "namespace", "dev"]).ok();
    // `kubectl create quota` sends protobuf.
    let created = server.kubectl(&[
        "create",
        "quota",
        "best-effort",
        "--hard=pods=4",
        "--scopes=BestEffort",
        "-n",
        "dev",
    ]);
    assert_eq!(created.ok(), "resourcequota/best-effort created\n");
    server
        .kubectl(&["run", "a", "--image=nginx", "-n", "dev"])
        .ok();
    let burstable = r#"{"spec":{"containers":[{"name":"b","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}"#;
    server
        .kubectl(&[
            "run",
            "b",
            "--image=nginx",
            "-n",
            "dev",
            &format!("--overrides={burstable}"),
        ])
        .ok();
    let used = || {
        get(
            &server,
            &["quota", "best-effort"],
            "dev",
            "{.status.used.pods}",
        )
    };
    assert!(
        eventually(Duration::from_secs(10), || used() == "1"),
        "{}",
        used()
    );
    let described = server.kubectl(&["describe", "namespace", "dev"]);
    let text = described.ok();
    assert!(
        text.contains("Resource Quotas\n  Name:    best-effort\n  Scopes:  BestEffort\n  * Matches all pods that do not have resource requirements set. These pods have a best effort quality of service.\n  Resource  Used  Hard\n  --------  ---   ---\n  pods      1     4\n"),
        "{text}"
    );
    assert!(text.contains("No LimitRange resource."), "{text}");
}
