// tinykube up as a Node.js test fixture, as the README shows it: `--output json
// --exit-on-stdin-close` on a temporary data dir and port 0, the unmodified
// @kubernetes/client-node, and closing stdin to stop the cluster. The binary is taken from
// TINYKUBE (a path), else from PATH.
const { test } = require("node:test");
const assert = require("node:assert");
const { spawn } = require("node:child_process");
const { once } = require("node:events");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const readline = require("node:readline");
const k8s = require("@kubernetes/client-node");

async function startCluster(dataDir) {
  const proc = spawn(process.env.TINYKUBE || "tinykube", ["up", "--port", "0", "--nodes", "2",
    "--data-dir", dataDir, "--output", "json", "--exit-on-stdin-close"],
    { stdio: ["pipe", "pipe", "inherit"] });
  const [line] = await once(readline.createInterface({ input: proc.stdout }), "line");
  const info = JSON.parse(line);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(info.kubeconfig);
  // client-node 1.x refuses an http:// server unless TLS checks are off; tinykube up serves
  // HTTP unless given --secure.
  kc.clusters = kc.clusters.map((c) => ({ ...c, skipTLSVerify: true }));
  const stop = async () => {
    const exited = once(proc, "exit");
    proc.stdin.end();
    const [code] = await exited;
    return code;
  };
  return { info, kc, stop };
}

test("a throw-away cluster for client-node", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tinykube-js-"));
  const { info, kc, stop } = await startCluster(dir);
  try {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const nodes = await core.listNode();
    assert.deepStrictEqual(nodes.items.map((n) => n.metadata.name).sort(), ["worker0", "worker1"]);
    assert.deepStrictEqual(info.nodes, ["worker0", "worker1"]);

    await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "settings" }, data: { colour: "blue" } },
    });
    const read = await core.readNamespacedConfigMap({ name: "settings", namespace: "default" });
    assert.strictEqual(read.data.colour, "blue");

    await assert.rejects(
      core.readNamespacedPod({ name: "nope", namespace: "default" }),
      (e) => e.code === 404 && JSON.parse(e.body).message === 'pods "nope" not found',
    );
  } finally {
    assert.strictEqual(await stop(), 0, "closing stdin stops the cluster cleanly");
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
