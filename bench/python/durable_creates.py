"""Durable pod creates/s through the Python `kubernetes` client, as issue 22's table measured
them: a release `tinykube-apiserver` on a fresh data dir (every create acknowledged once durable),
CLIENTS processes each with its own keep-alive ApiClient creating pods until CREATES are made.

    python3 bench/python/durable_creates.py [--creates 4000] [--clients 8] [--bin target/release]

Prints creates/s and the client-side latency p50/p99. Processes, not threads: the client is
pure Python and one process of threads would measure the GIL, not the server.
"""

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

import kubernetes
from kubernetes import client


def pod(name):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1.14.2",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }


def worker(args):
    url, first, count = args
    cfg = client.Configuration()
    cfg.host = url
    api = client.CoreV1Api(client.ApiClient(cfg))
    latencies = []
    for i in range(first, first + count):
        started = time.perf_counter()
        api.create_namespaced_pod("default", pod(f"py-{i}"))
        latencies.append(time.perf_counter() - started)
    return latencies


def start_apiserver(binary, data_dir):
    proc = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "warn"},
        text=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        sys.exit("tinykube-apiserver printed nothing")
    return proc, line.strip().rsplit(" ", 1)[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--creates", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--bin", default="target/release", help="folder of tinykube-apiserver")
    flags = parser.parse_args()
    binary = os.path.join(flags.bin, "tinykube-apiserver")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: cargo build --release -p tinykube-apiserver")
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_apiserver(binary, os.path.join(tmp, "data"))
        try:
            each = flags.creates // flags.clients
            jobs = [(url, c * each, each) for c in range(flags.clients)]
            with multiprocessing.Pool(flags.clients) as pool:
                # Import and connect in every process before the clock starts.
                pool.map(worker, [(url, 10_000_000 + c, 1) for c in range(flags.clients)])
                started = time.perf_counter()
                results = pool.map(worker, jobs)
                took = time.perf_counter() - started
        finally:
            proc.terminate()
            proc.wait()
    latencies = sorted(l for r in results for l in r)
    total = len(latencies)
    print(
        f"python client durable pod creates: {total / took:.0f}/s "
        f"(p50 {latencies[total // 2] * 1e3:.1f} ms, p99 {latencies[int(total * 0.99)] * 1e3:.1f} ms; "
        f"workload: {total} pods by {flags.clients} processes of the Python kubernetes client "
        f"{kubernetes.__version__}, ack after fsync)"
    )


if __name__ == "__main__":
    main()
