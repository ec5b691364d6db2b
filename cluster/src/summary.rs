//! The one screen `tinykube up` prints once the cluster is ready: where the API is, the nodes,
//! where static pod manifests and logs go, and the `export KUBECONFIG=…` line; or, with
//! `--output json`, the one JSON line a test fixture in any language reads instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::layout::Layout;

/// What `tinykube up` prints on stdout once every node is Ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The one-screen summary for a person, ending with the `export KUBECONFIG=…` line.
    #[default]
    Text,
    /// Exactly one JSON line ([`Ready`]) and nothing else, for programs.
    Json,
}

/// What the summary shows.
pub struct Summary<'a> {
    pub elapsed: Duration,
    pub resumed: bool,
    pub url: &'a str,
    pub layout: &'a Layout,
    pub nodes: &'a [String],
    /// Each running component's name and pid, in order of start.
    pub components: &'a [(&'a str, u32)],
    pub controller_manager: bool,
    /// Each API server's name and URL (several: behind the balancer at `url`).
    pub apiservers: &'a [(String, String)],
    /// The etcd client URLs the API servers use; empty on sled.
    pub etcd_servers: &'a [String],
    /// Whether that etcd is the launcher's own (`--etcd`, data in `DATA_DIR/etcd`).
    pub local_etcd: bool,
}

/// The `--output json` line: where the cluster is and which processes it is made of. Paths are
/// absolute; keys are camelCase as in Kubernetes' own JSON.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ready<'a> {
    pub server: &'a str,
    pub kubeconfig: PathBuf,
    pub data_dir: &'a Path,
    pub nodes: &'a [String],
    pub pids: BTreeMap<&'a str, u32>,
    /// The URLs of the API servers behind `server` (the one API server's own when alone).
    pub apiservers: Vec<&'a str>,
    /// The etcd client URLs (absent on sled).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub etcd_servers: &'a [String],
}

/// `--output json`: one line, no trailing newline.
pub fn json(s: &Summary) -> String {
    let ready = Ready {
        server: s.url,
        kubeconfig: s.layout.kubeconfig(),
        data_dir: &s.layout.root,
        nodes: s.nodes,
        pids: s.components.iter().copied().collect(),
        apiservers: s.apiservers.iter().map(|(_, u)| u.as_str()).collect(),
        etcd_servers: s.etcd_servers,
    };
    serde_json::to_string(&ready).unwrap_or_default()
}

/// At most `n` names, then how many there are in all.
fn some(names: &[String], n: usize) -> String {
    if names.len() <= n {
        names.join(" ")
    } else {
        format!(
            "{} … {} ({} in all)",
            names[..n].join(" "),
            names[names.len() - 1],
            names.len()
        )
    }
}

pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    let verb = if s.resumed { "resumed" } else { "up" };
    let _ = writeln!(
        out,
        "tinykube: cluster {verb} in {:.2}s, {} node(s) Ready\n",
        s.elapsed.as_secs_f64(),
        s.nodes.len()
    );
    let root = s.layout.root.display();
    match s.apiservers {
        [_, _, ..] => {
            let behind: Vec<String> = s
                .apiservers
                .iter()
                .map(|(name, url)| format!("{name} {}", url.rsplit(':').next().unwrap_or(url)))
                .collect();
            let _ = writeln!(
                out,
                "  API server    {} (balancing {} API servers, ports: {})",
                s.url,
                s.apiservers.len(),
                behind.join(", ")
            );
        }
        _ => {
            let _ = writeln!(out, "  API server    {}", s.url);
        }
    }
    if !s.etcd_servers.is_empty() {
        let whose = match s.local_etcd {
            true => format!(" (local, data in {root}/etcd)"),
            false => String::new(),
        };
        let _ = writeln!(out, "  etcd          {}{whose}", s.etcd_servers.join(","));
    }
    let _ = writeln!(out, "  nodes         {}", some(s.nodes, 5));
    let _ = writeln!(
        out,
        "  static pods   {root}/nodes/NODE/manifests (one directory per node)"
    );
    let comps: Vec<String> = s.components.iter().map(|(c, _)| c.to_string()).collect();
    let _ = writeln!(
        out,
        "  logs          {root}/logs/COMPONENT.log: {}",
        some(&comps, 6)
    );
    let _ = writeln!(
        out,
        "  processes     {root}/run/COMPONENT.pid; {root}/run/COMPONENT.sh starts one again"
    );
    let _ = writeln!(
        out,
        "  data          {root} (`tinykube up --data-dir {root}` resumes it)"
    );
    if !s.controller_manager {
        let _ = writeln!(
            out,
            "  note          tinykube-controller-manager is not built: no workload controllers; tinykube up lifted the nodes' not-ready taint itself"
        );
    }
    let _ = writeln!(
        out,
        "\nexport KUBECONFIG={}\n",
        s.layout.kubeconfig().display()
    );
    let _ = write!(out, "Ctrl-C stops the cluster.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn one_screen_with_the_export_line() {
        let layout = Layout::new(Path::new("/d"));
        let nodes: Vec<String> = (0..3).map(|i| format!("worker{i}")).collect();
        let text = render(&Summary {
            elapsed: Duration::from_millis(420),
            resumed: false,
            url: "http://127.0.0.1:6443",
            layout: &layout,
            nodes: &nodes,
            components: &[("apiserver", 1), ("scheduler", 2), ("kubelet-worker0", 3)],
            controller_manager: true,
            apiservers: &[("apiserver".into(), "http://127.0.0.1:6443".into())],
            etcd_servers: &[],
            local_etcd: false,
        });
        assert!(text.starts_with("tinykube: cluster up in 0.42s, 3 node(s) Ready\n"));
        assert!(text.contains("  nodes         worker0 worker1 worker2\n"));
        assert!(text.contains("\nexport KUBECONFIG=/d/kubeconfig\n"));
        assert!(!text.contains("note"));
        assert!(text.contains("  API server    http://127.0.0.1:6443\n"));
        assert!(!text.contains("etcd"));
        assert!(text.lines().count() < 25);
        let many: Vec<String> = (0..1000).map(|i| format!("worker-{i}")).collect();
        assert_eq!(
            some(&many, 3),
            "worker-0 worker-1 worker-2 … worker-999 (1000 in all)"
        );
    }

    #[test]
    fn one_json_line_with_absolute_paths_and_camel_case_keys() {
        let layout = Layout::new(Path::new("/d"));
        let nodes = vec!["worker0".to_string(), "worker1".to_string()];
        let line = json(&Summary {
            elapsed: Duration::from_millis(420),
            resumed: true,
            url: "http://127.0.0.1:6443",
            layout: &layout,
            nodes: &nodes,
            components: &[
                ("apiserver", 10),
                ("scheduler", 11),
                ("controller-manager", 12),
                ("kubelet-worker0", 13),
                ("kubelet-worker1", 14),
            ],
            controller_manager: true,
            apiservers: &[("apiserver".into(), "http://127.0.0.1:6443".into())],
            etcd_servers: &[],
            local_etcd: false,
        });
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "server": "http://127.0.0.1:6443",
                "kubeconfig": "/d/kubeconfig",
                "dataDir": "/d",
                "nodes": ["worker0", "worker1"],
                "pids": {
                    "apiserver": 10,
                    "scheduler": 11,
                    "controller-manager": 12,
                    "kubelet-worker0": 13,
                    "kubelet-worker1": 14
                },
                "apiservers": ["http://127.0.0.1:6443"]
            })
        );
    }

    #[test]
    fn several_api_servers_behind_the_balancer_on_a_local_etcd() {
        let layout = Layout::new(Path::new("/d"));
        let nodes = vec!["worker0".to_string()];
        let apiservers: Vec<(String, String)> = (0..3)
            .map(|i| {
                (
                    format!("apiserver-{i}"),
                    format!("https://127.0.0.1:4000{i}"),
                )
            })
            .collect();
        let etcd = vec!["http://127.0.0.1:2379".to_string()];
        let summary = Summary {
            elapsed: Duration::from_millis(420),
            resumed: false,
            url: "https://127.0.0.1:6443",
            layout: &layout,
            nodes: &nodes,
            components: &[
                ("etcd", 9),
                ("apiserver-0", 10),
                ("apiserver-1", 11),
                ("apiserver-2", 12),
                ("kubelet-worker0", 13),
            ],
            controller_manager: true,
            apiservers: &apiservers,
            etcd_servers: &etcd,
            local_etcd: true,
        };
        let text = render(&summary);
        assert!(
            text.contains("  API server    https://127.0.0.1:6443 (balancing 3 API servers, ports: apiserver-0 40000, apiserver-1 40001, apiserver-2 40002)\n"),
            "{text}"
        );
        assert!(
            text.contains("  etcd          http://127.0.0.1:2379 (local, data in /d/etcd)\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&summary)).unwrap();
        assert_eq!(
            v["apiservers"],
            serde_json::json!([
                "https://127.0.0.1:40000",
                "https://127.0.0.1:40001",
                "https://127.0.0.1:40002"
            ])
        );
        assert_eq!(
            v["etcdServers"],
            serde_json::json!(["http://127.0.0.1:2379"])
        );
        assert_eq!(v["pids"]["etcd"], 9);
        assert_eq!(v["pids"]["apiserver-2"], 12);
    }
}
