"""The Python `kubernetes` client, unmodified, against a throw-away tinykube: the nodes, a
Deployment whose pods run, a watch that sees them, a namespace deleted for real, and the
errors a client gets as upstream's Status objects."""

import json
import time

import pytest
from kubernetes import client, watch
from kubernetes.stream import portforward
from kubernetes.client.rest import ApiException


def eventually(what, check, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_nodes_are_ready(cluster):
    info, api = cluster
    nodes = client.CoreV1Api(api).list_node().items
    assert sorted(n.metadata.name for n in nodes) == info["nodes"] == ["worker0", "worker1"]
    for node in nodes:
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready[0].status == "True"


def test_a_deployment_runs_and_a_watch_sees_its_pods(cluster):
    _, api = cluster
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
    })
    running = set()
    stream = watch.Watch().stream(core.list_namespaced_pod, "default",
                                  label_selector="app=web", timeout_seconds=30)
    for event in stream:
        pod = event["object"]
        if pod.status.phase == "Running":
            running.add(pod.metadata.name)
        if len(running) == 3:
            break
    assert len(running) == 3
    deployment = eventually("the Deployment available",
                            lambda: (d := apps.read_namespaced_deployment("web", "default"))
                            .status.available_replicas == 3 and d)
    assert deployment.status.ready_replicas == 3
    nodes = {p.spec.node_name for p in core.list_namespaced_pod("default", label_selector="app=web").items}
    assert nodes == {"worker0", "worker1"}, "spread over both nodes"


def test_a_namespace_is_deleted_with_what_it_holds(cluster):
    _, api = cluster
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "scratch"}})
    core.create_namespaced_config_map("scratch", {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    core.delete_namespace("scratch")

    def gone():
        try:
            core.read_namespace("scratch")
            return False
        except ApiException as e:
            return e.status == 404
    eventually("the namespace gone", gone)


def test_errors_are_upstreams_statuses(cluster):
    _, api = cluster
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404
    status = json.loads(missing.value.body)
    assert (status["kind"], status["reason"], status["message"]) == ("Status", "NotFound", 'pods "nope" not found')
    with pytest.raises(ApiException) as invalid:
        core.create_namespaced_config_map("default", {"metadata": {"name": "Not_Valid"}})
    assert invalid.value.status == 422


def test_port_forward_reaches_the_pods_server(cluster):
    """The client's port-forward (WebSocket, `v4.channel.k8s.io`): nginx's welcome page through
    the forwarded socket, and upstream's error for a port nothing listens on."""
    _, api = cluster
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pf-web"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                 "ports": [{"containerPort": 80}]}]},
    })
    eventually("the pod running",
               lambda: core.read_namespaced_pod("pf-web", "default").status.phase == "Running")

    forwarded = portforward(core.connect_get_namespaced_pod_portforward, "pf-web", "default",
                            ports="80")
    sock = forwarded.socket(80)
    sock.setblocking(True)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    answer = b""
    while chunk := sock.recv(4096):
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
    assert b"<title>Welcome to nginx!</title>" in answer
    assert forwarded.error(80) is None

    refused = portforward(core.connect_get_namespaced_pod_portforward, "pf-web", "default",
                          ports="81")
    sock = refused.socket(81)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert sock.recv(100) == b""
    assert "connect: connection refused" in eventually("the error", lambda: refused.error(81))
