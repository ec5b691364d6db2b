"""A pytest fixture for tinykube, as the README shows it: `tinykube up --output json
--exit-on-stdin-close` on a temporary data dir and port 0, one cluster per test, stopped by
closing its stdin. The `tinykube` binary is taken from TINYKUBE (a path), else from PATH."""

import json
import os
import shutil
import subprocess

import pytest
from kubernetes import config


def tinykube_binary():
    path = os.environ.get("TINYKUBE") or shutil.which("tinykube")
    if not path:
        raise RuntimeError("tinykube not found: build it (cargo build --workspace --bins) and set TINYKUBE or PATH")
    return path


@pytest.fixture
def cluster(tmp_path):
    proc = subprocess.Popen(
        [tinykube_binary(), "up", "--port", "0", "--nodes", "2", "--data-dir", str(tmp_path),
         "--output", "json", "--exit-on-stdin-close"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # blocks until every node is Ready
    assert line, "tinykube up exited before its cluster was ready"
    info = json.loads(line)
    api = config.new_client_from_config(info["kubeconfig"])
    yield info, api
    api.close()
    proc.stdin.close()  # stops the cluster
    assert proc.wait(timeout=30) == 0
