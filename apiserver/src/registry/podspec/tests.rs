//! Table tests of the pod spec: upstream's defaults, the QoS class, and ValidatePodSpec cases
//! (after validation_test.go) with upstream's paths and messages.

use serde_json::{json, Value};

use super::defaults::pull_policy;
use super::*;

#[test]
fn pod_defaults_match_upstream() {
    let mut spec = json!({"hostNetwork": true, "containers": [{"name": "nginx", "image": "nginx",
        "ports": [{"containerPort": 80}],
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 0},
        "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}],
        "volumes": [{"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                    {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]});
    default_pod_spec(&mut spec, true);
    default_tolerations(&mut spec);
    let c = &spec["containers"][0];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(
        c["ports"][0],
        json!({"containerPort": 80, "hostPort": 80, "protocol": "TCP"})
    );
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["livenessProbe"]["periodSeconds"], 10);
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(spec["volumes"][0]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        spec["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(
        spec["volumes"][1]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(
        spec["tolerations"][1]["key"],
        "node.kubernetes.io/unreachable"
    );
    assert_eq!(pull_policy("nginx:1.14.2"), "IfNotPresent");
    assert_eq!(pull_policy("registry:5000/nginx"), "Always");
    assert_eq!(validate_spec(&spec, "spec", true), vec![]);
    // Templates keep an unset host port.
    let mut template = json!({"hostNetwork": true, "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]});
    default_pod_spec(&mut template, false);
    assert!(template["containers"][0]["ports"][0]
        .get("hostPort")
        .is_none());
    assert_eq!(validate_pod_spec(&template, "spec.template.spec"), vec![]);
}

#[test]
fn qos_classes() {
    let best = json!({"containers": [{"name": "c"}]});
    assert_eq!(qos_class(&best), "BestEffort");
    let burst = json!({"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"memory": "200Mi"}}}]});
    assert_eq!(qos_class(&burst), "Burstable");
    let guaranteed = json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]});
    assert_eq!(qos_class(&guaranteed), "Guaranteed");
}

/// A defaulted pod spec with one container `c`, changed by `f`.
fn spec_with(f: impl Fn(&mut Value)) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    f(&mut spec);
    default_pod_spec(&mut spec, true);
    spec
}

fn errors(spec: &Value) -> Vec<String> {
    validate_spec(spec, "spec", true)
        .iter()
        .map(ToString::to_string)
        .collect()
}

const LABEL_MSG: &str = tinykube_proto::names::LABEL_MSG;

#[test]
fn containers_as_upstream() {
    type Case = (&'static str, fn(&mut Value), Vec<String>);
    let c0 = "spec.containers[0]";
    let cases: Vec<Case> = vec![
        ("no containers", |s| s["containers"] = json!([]), vec!["spec.containers: Required value".into()]),
        ("bad name", |s| s["containers"][0]["name"] = "A_b".into(), vec![format!("{c0}.name: Invalid value: \"A_b\": {LABEL_MSG}")]),
        ("no image", |s| s["containers"][0]["image"] = "".into(), vec![format!("{c0}.image: Required value")]),
        ("dup names", |s| s["initContainers"] = json!([{"name": "c", "image": "i"}]), vec!["spec.initContainers[0].name: Duplicate value: \"c\"".into()]),
        ("port zero", |s| s["containers"][0]["ports"] = json!([{"containerPort": 0}]), vec![format!("{c0}.ports[0].containerPort: Required value")]),
        ("port range", |s| s["containers"][0]["ports"] = json!([{"containerPort": 70000, "hostPort": -1}]), vec![
            format!("{c0}.ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
            format!("{c0}.ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive"),
        ]),
        ("protocol", |s| s["containers"][0]["ports"] = json!([{"containerPort": 80, "protocol": "HTTP"}]), vec![format!("{c0}.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"")]),
        ("port names", |s| s["containers"][0]["ports"] = json!([{"name": "web", "containerPort": 80}, {"name": "web", "containerPort": 81}, {"name": "8080", "containerPort": 82}]), vec![
            format!("{c0}.ports[1].name: Duplicate value: \"web\""),
            format!("{c0}.ports[2].name: Invalid value: \"8080\": must contain at least one letter (a-z)"),
        ]),
        ("host ports", |s| s["containers"] = json!([{"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}, {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 8080}]}]), vec!["spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"".into()]),
        ("env name", |s| s["containers"][0]["env"] = json!([{"name": "A=B", "value": "x"}, {"name": ""}]), vec![
            format!("{c0}.env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
            format!("{c0}.env[1].name: Required value"),
        ]),
        ("env sources", |s| s["containers"][0]["env"] = json!([{"name": "A", "valueFrom": {}}, {"name": "B", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}, "configMapKeyRef": {"name": "c", "key": ".."}}}]), vec![
            format!("{c0}.env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
            format!("{c0}.env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"),
            format!("{c0}.env[2].valueFrom.configMapKeyRef.key: Invalid value: \"..\": must not be '..'"),
            format!("{c0}.env[2].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"),
        ]),
        ("env fields", |s| s["containers"][0]["env"] = json!([{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}}, {"name": "C", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}}]), vec![
            format!("{c0}.env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\""),
            format!("{c0}.env[1].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nope\": error converting fieldPath: field label not supported: spec.nope"),
            format!("{c0}.env[2].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"),
        ]),
        ("envFrom", |s| s["containers"][0]["envFrom"] = json!([{"prefix": "a=", "configMapRef": {"name": "cm"}}, {}]), vec![
            format!("{c0}.envFrom[0].prefix: Invalid value: \"a=\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
            format!("{c0}.envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"),
        ]),
        ("resources", |s| s["containers"][0]["resources"] = json!({"requests": {"cpu": "-1"}}), vec![format!("{c0}.resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0")]),
        ("pull policy", |s| s["containers"][0]["imagePullPolicy"] = "Sometimes".into(), vec![format!("{c0}.imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"")]),
        ("message policy", |s| s["containers"][0]["terminationMessagePolicy"] = "Log".into(), vec![format!("{c0}.terminationMessagePolicy: Unsupported value: \"Log\": supported values: \"File\", \"FallbackToLogsOnError\"")]),
        ("restart on container", |s| s["containers"][0]["restartPolicy"] = "Always".into(), vec![format!("{c0}.restartPolicy: Forbidden: may not be set for non-init containers")]),
        ("init probes", |s| s["initContainers"] = json!([{"name": "i", "image": "i", "readinessProbe": {"exec": {"command": ["true"]}}}]), vec!["spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always".into()]),
        ("sidecar", |s| s["initContainers"] = json!([{"name": "i", "image": "i", "restartPolicy": "Always", "readinessProbe": {"exec": {"command": ["true"]}}}]), vec![]),
        ("init restart", |s| s["initContainers"] = json!([{"name": "i", "image": "i", "restartPolicy": "Never"}]), vec!["spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".into()]),
        ("security", |s| s["containers"][0]["securityContext"] = json!({"runAsUser": -1, "privileged": true, "allowPrivilegeEscalation": false}), vec![
            format!("{c0}.securityContext.runAsUser: Invalid value: -1: must be between 0 and 4294967295, inclusive"),
            format!("{c0}.securityContext: Invalid value: {{\"runAsUser\":-1,\"privileged\":true,\"allowPrivilegeEscalation\":false}}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
        ]),
    ];
    for (what, change, want) in cases {
        assert_eq!(errors(&spec_with(change)), want, "{what}");
    }
}

#[test]
fn probes_as_upstream() {
    type Case = (&'static str, fn(&mut Value), Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("no handler", |s| s["containers"][0]["livenessProbe"] = json!({}), vec!["spec.containers[0].livenessProbe: Required value: must specify a handler type"]),
        ("two handlers", |s| s["containers"][0]["readinessProbe"] = json!({"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}), vec!["spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"]),
        ("thresholds", |s| s["containers"][0]["livenessProbe"] = json!({"exec": {"command": ["true"]}, "successThreshold": 2, "periodSeconds": -1}), vec![
            "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ]),
        ("readiness grace", |s| s["containers"][0]["readinessProbe"] = json!({"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 10}), vec!["spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes"]),
        ("http", |s| s["containers"][0]["startupProbe"] = json!({"httpGet": {"port": "HTTP", "scheme": "FTP"}}), vec![
            "spec.containers[0].startupProbe.httpGet.port: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "spec.containers[0].startupProbe.httpGet.port: Invalid value: \"HTTP\": must contain at least one letter (a-z)",
            "spec.containers[0].startupProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
        ]),
        ("exec", |s| s["containers"][0]["livenessProbe"] = json!({"exec": {}}), vec!["spec.containers[0].livenessProbe.exec.command: Required value"]),
        ("sleep", |s| s["containers"][0]["lifecycle"] = json!({"preStop": {"sleep": {"seconds": 60}}}), vec!["spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)"]),
    ];
    for (what, change, want) in cases {
        assert_eq!(errors(&spec_with(change)), want, "{what}");
    }
}

#[test]
fn volumes_as_upstream() {
    type Case = (&'static str, fn(&mut Value), Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("ok", |s| {
            s["volumes"] = json!([{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}}]);
            s["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}, {"name": "cfg", "mountPath": "/cfg", "subPath": "p"}]);
        }, vec![]),
        ("no source", |s| s["volumes"] = json!([{"name": "v"}]), vec!["spec.volumes[0]: Required value: must specify a volume type"]),
        ("two sources", |s| s["volumes"] = json!([{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]), vec!["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"]),
        ("names", |s| s["volumes"] = json!([{"name": "a.b", "emptyDir": {}}, {"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]), vec![
            "spec.volumes[0].name: Invalid value: \"a.b\": must not contain dots",
            "spec.volumes[2].name: Duplicate value: \"v\"",
        ]),
        ("mounts", |s| {
            s["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
            s["containers"][0]["volumeMounts"] = json!([{"name": "w", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": ""}]);
        }, vec![
            "spec.containers[0].volumeMounts[0].name: Not found: \"w\"",
            "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
            "spec.containers[0].volumeMounts[2].mountPath: Required value",
        ]),
        ("sub path", |s| {
            s["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
            s["containers"][0]["volumeMounts"] = json!([{"name": "v", "mountPath": "/a", "subPath": "../x"}]);
        }, vec!["spec.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'"]),
        ("sources", |s| s["volumes"] = json!([{"name": "h", "hostPath": {"path": "/a/../b", "type": "Dir"}}, {"name": "s", "secret": {"defaultMode": 1000, "items": [{"key": "k", "path": "..x"}]}},
            {"name": "p", "persistentVolumeClaim": {}}]), vec![
            "spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
            "spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
            "spec.volumes[1].secret.secretName: Required value",
            "spec.volumes[1].secret.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
            "spec.volumes[1].secret.items[0].path: Invalid value: \"..x\": must not start with '..'",
            "spec.volumes[2].persistentVolumeClaim.claimName: Required value",
        ]),
        ("invalid volumes cannot be mounted", |s| {
            s["volumes"] = json!([{"name": "v", "persistentVolumeClaim": {}}]);
            s["containers"][0]["volumeMounts"] = json!([{"name": "v", "mountPath": "/a"}]);
        }, vec![
            "spec.volumes[0].persistentVolumeClaim.claimName: Required value",
            "spec.containers[0].volumeMounts[0].name: Not found: \"v\"",
        ]),
    ];
    for (what, change, want) in cases {
        assert_eq!(errors(&spec_with(change)), want, "{what}");
    }
}

#[test]
fn pod_fields_as_upstream() {
    type Case = (&'static str, fn(&mut Value), Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("restart", |s| s["restartPolicy"] = "Sometimes".into(), vec!["spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""]),
        ("dns", |s| s["dnsPolicy"] = "Google".into(), vec!["spec.dnsPolicy: Unsupported value: \"Google\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""]),
        ("dns none", |s| s["dnsPolicy"] = "None".into(), vec!["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]),
        ("deadline", |s| s["activeDeadlineSeconds"] = 0.into(), vec!["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"]),
        ("node selector", |s| s["nodeSelector"] = json!({"disk": "-ssd"}), vec!["spec.nodeSelector: Invalid value: \"-ssd\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
        ("host network", |s| { s["hostNetwork"] = true.into(); s["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 81}]); }, vec!["spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"]),
        ("tolerations", |s| s["tolerations"] = json!([{"operator": "Equal", "value": "x"}, {"key": "k", "operator": "Exists", "value": "v", "tolerationSeconds": 5, "effect": "NoSchedule"}, {"key": "k", "operator": "Near"}, {"key": "k", "effect": "Sometimes"}]), vec![
            "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
            "spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
            "spec.tolerations[2].operator: Unsupported value: \"Near\": supported values: \"Equal\", \"Exists\"",
            "spec.tolerations[3].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
        ]),
        ("overhead", |s| s["overhead"] = json!({"cpu": "-1"}), vec!["spec.overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"]),
        ("affinity", |s| s["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ""}]}}), vec![
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must be non-empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]),
        ("spread", |s| s["topologySpreadConstraints"] = json!([{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]), vec![
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
        ]),
        ("gates", |s| s["schedulingGates"] = json!([{"name": "example.com/a"}, {"name": "example.com/a"}]), vec!["spec.schedulingGates[1]: Duplicate value: \"example.com/a\""]),
        ("names", |s| { s["serviceAccountName"] = "Bad_SA".into(); s["hostname"] = "a.b".into(); }, vec![
            "spec.serviceAccountName: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.hostname: Invalid value: \"a.b\": must not contain dots",
        ]),
        ("dns config", |s| s["dnsConfig"] = json!({"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "x"], "searches": ["svc.cluster.local.", "_ldap._tcp.example.com", "Bad"]}), vec![
            "spec.dnsConfig.nameservers: Invalid value: [\"1.1.1.1\",\"8.8.8.8\",\"9.9.9.9\",\"x\"]: must not have more than 3 nameservers",
            "spec.dnsConfig.nameservers[3]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "spec.dnsConfig.searches[2]: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')",
        ]),
        ("security context", |s| s["securityContext"] = json!({"fsGroup": -1, "sysctls": [{"name": "net.ipv4.ip_forward"}, {"name": "Bad"}]}), vec![
            "spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 4294967295, inclusive",
            "spec.securityContext.sysctls[1].name: Invalid value: \"Bad\": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
        ]),
    ];
    for (what, change, want) in cases {
        assert_eq!(errors(&spec_with(change)), want, "{what}");
    }
}

#[test]
fn templates_forbid_ephemeral_containers() {
    let mut spec = spec_with(|_| {});
    spec["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    let errs = validate_pod_spec(&spec, "spec.template.spec");
    assert_eq!(
        errs[0].to_string(),
        "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"
    );
}
