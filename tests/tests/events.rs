//! Events created through the API show in `kubectl describe` and `kubectl get events`, and
//! field selectors on involvedObject find them.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

#[test]
fn describe_and_get_events_show_api_events() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pod: Value = http
        .post(format!("{}/api/v1/namespaces/default/pods", server.url))
        .json(
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .send()
        .unwrap()
        .json()
        .unwrap();
    let now = "2026-11-22T08:00:00Z";
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web",
                           "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
        "reason": "Scheduled", "message": "Successfully assigned default/web to worker0",
        "type": "Normal", "source": {"component": "default-scheduler"},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    });
    let resp = http
        .post(format!("{}/api/v1/namespaces/default/events", server.url))
        .json(&event)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);

    let describe = server.kubectl(&["describe", "pod", "web"]);
    let text = describe.ok();
    assert!(text.contains("Events:"), "{text}");
    assert!(
        text.contains("Successfully assigned default/web to worker0"),
        "{text}"
    );
    assert!(text.contains("default-scheduler"), "{text}");

    let events = server.kubectl(&["get", "events"]);
    let text = events.ok();
    assert!(text.starts_with("LAST SEEN"), "{text}");
    assert!(text.contains("pod/web"), "{text}");
    assert!(text.contains("Scheduled"), "{text}");

    let none = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=other",
    ]);
    assert!(
        none.stderr
            .contains("No resources found in default namespace."),
        "{none:?}"
    );
    let bad = server.kubectl(&["get", "events", "--field-selector", "nonsense.field=x"]);
    assert!(
        bad.fails()
            .contains("field label not supported: nonsense.field"),
        "{bad:?}"
    );
}
