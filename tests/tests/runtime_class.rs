//! RuntimeClasses as the upstream docs' "Pod Overhead" task uses them: the class is served and
//! printed, a pod naming it gets its overhead (and its scheduling constraints), an unknown class
//! or a hand-set overhead is refused with upstream's messages.

use tinykube_tests::{table_rows, ApiServer};

const KATA: &str = "apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: kata-fc
handler: kata-fc
overhead:
  podFixed:
    memory: \"120Mi\"
    cpu: \"250m\"
scheduling:
  nodeSelector:
    runtime: kata
  tolerations:
  - key: runtime
    operator: Equal
    value: kata
    effect: NoSchedule
";

fn pod(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{extra}  containers:\n  - name: busybox-ctr\n    image: busybox:1.28\n    resources:\n      limits:\n        cpu: 500m\n        memory: 100Mi\n"
    )
}

#[test]
fn a_pods_runtime_class_brings_its_overhead_and_scheduling() {
    let server = ApiServer::start().unwrap();
    let created = server.kubectl_stdin(&["apply", "-f", "-"], Some(KATA));
    assert_eq!(created.ok(), "runtimeclass.node.k8s.io/kata-fc created\n");
    let rows = table_rows(server.kubectl(&["get", "runtimeclass"]).ok()).to_vec();
    assert_eq!(rows[0], ["NAME", "HANDLER", "AGE"]);
    assert_eq!(rows[1][..2], ["kata-fc", "kata-fc"]);

    let made = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some(&pod("test-pod", "  runtimeClassName: kata-fc\n")),
    );
    assert_eq!(made.ok(), "pod/test-pod created\n");
    let spec = server.kubectl(&[
        "get",
        "pod",
        "test-pod",
        "-o",
        "jsonpath={.spec.overhead.cpu} {.spec.overhead.memory} {.spec.nodeSelector.runtime} {.spec.tolerations[?(@.key==\"runtime\")].value}",
    ]);
    assert_eq!(spec.ok(), "250m 120Mi kata kata");

    // An unknown class, and an overhead the class does not define, are refused.
    let unknown = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some(&pod("lost", "  runtimeClassName: nope\n")),
    );
    assert_eq!(
        unknown.fails().trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"lost\" is forbidden: pod rejected: RuntimeClass \"nope\" not found"
    );
    let by_hand = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some(&pod("sneaky", "  overhead:\n    cpu: 1\n")),
    );
    assert!(
        by_hand.fails().contains(
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
        ),
        "{}",
        by_hand.fails()
    );
    let conflicting = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some(&pod(
            "elsewhere",
            "  runtimeClassName: kata-fc\n  nodeSelector:\n    runtime: runc\n",
        )),
    );
    assert!(
        conflicting.fails().contains(
            "conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc"
        ),
        "{}",
        conflicting.fails()
    );
    let pods = server.kubectl(&["get", "pods", "-o", "name"]);
    assert_eq!(
        pods.ok(),
        "pod/test-pod\n",
        "nothing stored for the refused pods"
    );

    // The handler is immutable, and must be a DNS label.
    let changed = server.kubectl(&[
        "patch",
        "runtimeclass",
        "kata-fc",
        "--type=merge",
        "-p",
        r#"{"handler":"runc"}"#,
    ]);
    assert!(
        changed
            .fails()
            .contains("handler: Invalid value: \"runc\": field is immutable"),
        "{}",
        changed.fails()
    );
}
