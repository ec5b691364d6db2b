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
}

/// `--output json`: one line, no trailing newline.
pub fn json(s: &Summary) -> String {
    let ready = Ready {
        server: s.url,
        kubeconfig: s.layout.kubeconfig(),
        data_dir: &s.layout.root,
        nodes: s.nodes,
        pids: s.components.iter().copied().collect(),
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
    let _ = writeln!(out, "  API server    {}", s.url);
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
        });
        assert!(text.starts_with("tinykube: cluster up in 0.42s, 3 node(s) Ready\n"));
        assert!(text.contains("  nodes         worker0 worker1 worker2\n"));
        assert!(text.contains("\nexport KUBECONFIG=/d/kubeconfig\n"));
        assert!(!text.contains("note"));
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
                }
            })
        );
    }
}
