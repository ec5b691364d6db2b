//! The one screen `tinykube up` prints once the cluster is ready: where the API is, the nodes,
//! where static pod manifests and logs go, and the `export KUBECONFIG=…` line.

use std::fmt::Write as _;
use std::time::Duration;

use crate::layout::Layout;

/// What the summary shows.
pub struct Summary<'a> {
    pub elapsed: Duration,
    pub resumed: bool,
    pub url: &'a str,
    pub layout: &'a Layout,
    pub nodes: &'a [String],
    pub components: &'a [&'a str],
    pub controller_manager: bool,
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
    let comps: Vec<String> = s.components.iter().map(|c| c.to_string()).collect();
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
            components: &["apiserver", "scheduler", "kubelet-worker0"],
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
}
