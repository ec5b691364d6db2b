//! What a cluster is made of, decided before anything starts: the data directory's layout, the
//! saved shape (so a second `tinykube up` resumes the same cluster), the nodes with their
//! addresses, pod CIDRs, labels and taints, and the kubeconfig text (with the CA and a client
//! certificate for a `--secure` cluster).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Above this many workers, one kubelet process simulates them all (`--simulate-nodes`).
pub const SIMULATE_ABOVE: usize = 10;

/// The shape of a cluster, saved in `DATA_DIR/cluster.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub workers: usize,
    pub masters: usize,
    pub port: u16,
    /// HTTPS with client certificates (`tinykube up --secure`).
    #[serde(default)]
    pub secure: bool,
    /// Where the API servers keep the objects.
    #[serde(default)]
    pub storage: Storage,
    /// How many API servers (`--apiservers`); above one, behind the launcher's balancer.
    #[serde(default = "one")]
    pub apiservers: usize,
}

fn one() -> usize {
    1
}

/// The store of a cluster's API servers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "camelCase")]
pub enum Storage {
    /// Each API server's embedded sled store in `DATA_DIR/apiserver` (one API server).
    #[default]
    Sled,
    /// A local `etcd` the launcher runs, its data in `DATA_DIR/etcd` (`--etcd`).
    LocalEtcd,
    /// etcd servers run by someone else (`--etcd-servers URL,URL`).
    Etcd { servers: Vec<String> },
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            workers: 3,
            masters: 0,
            port: 6443,
            secure: false,
            storage: Storage::Sled,
            apiservers: 1,
        }
    }
}

/// What this run of `tinykube up` asked for; `None`: as the saved cluster, else the default.
#[derive(Debug, Clone, Default)]
pub struct Requested {
    pub workers: Option<usize>,
    pub masters: Option<usize>,
    pub port: Option<u16>,
    pub secure: Option<bool>,
    /// `--etcd` (`--etcd=false`: back to sled).
    pub etcd: Option<bool>,
    /// `--etcd-servers URL,URL`.
    pub etcd_servers: Option<Vec<String>>,
    pub apiservers: Option<usize>,
}

impl Shape {
    /// Flags given on this run win; the rest comes from the saved shape, then the defaults.
    pub fn resolve(saved: Option<Shape>, asked: &Requested) -> Shape {
        let base = saved.unwrap_or_default();
        let storage = match (&asked.etcd_servers, asked.etcd) {
            (Some(servers), _) => Storage::Etcd {
                servers: servers.clone(),
            },
            (None, Some(true)) => Storage::LocalEtcd,
            (None, Some(false)) => Storage::Sled,
            (None, None) => base.storage,
        };
        Shape {
            workers: asked.workers.unwrap_or(base.workers),
            masters: asked.masters.unwrap_or(base.masters),
            port: asked.port.unwrap_or(base.port),
            secure: asked.secure.unwrap_or(base.secure),
            storage,
            apiservers: asked.apiservers.unwrap_or(base.apiservers),
        }
    }

    /// Why this shape cannot run, in the words of the flags that make it.
    pub fn check(&self) -> Result<(), String> {
        if self.apiservers == 0 {
            return Err("--apiservers must be at least 1".into());
        }
        if self.apiservers > 1 && self.storage == Storage::Sled {
            return Err(format!(
                "--apiservers {} needs a store the API servers share: add --etcd (a local etcd) or --etcd-servers URL,URL (sled is one API server's own)",
                self.apiservers
            ));
        }
        if let Storage::Etcd { servers } = &self.storage {
            if servers.is_empty() {
                return Err("--etcd-servers needs at least one URL (http://HOST:PORT)".into());
            }
            for s in servers {
                let rest = s
                    .strip_prefix("http://")
                    .or_else(|| s.strip_prefix("https://"));
                if rest.is_none_or(|r| r.is_empty()) {
                    return Err(format!(
                        "--etcd-servers: {s:?} is not a URL (http://HOST:PORT)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Paths inside the data directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
        }
    }
    pub fn apiserver_data(&self) -> PathBuf {
        self.root.join("apiserver")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn log(&self, component: &str) -> PathBuf {
        self.logs().join(format!("{component}.log"))
    }
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }
    pub fn shape_file(&self) -> PathBuf {
        self.root.join("cluster.json")
    }
    pub fn manifests(&self, node: &str) -> PathBuf {
        self.root.join("nodes").join(node).join("manifests")
    }
    /// `run/COMPONENT.pid` and `run/COMPONENT.sh`: which process a component is, and how to
    /// start it again by hand.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }
    pub fn pid_file(&self, component: &str) -> PathBuf {
        self.run_dir().join(format!("{component}.pid"))
    }
    pub fn restart_script(&self, component: &str) -> PathBuf {
        self.run_dir().join(format!("{component}.sh"))
    }
    /// `pki/COMPONENT.kubeconfig`: a `--secure` cluster's component kubeconfigs, each with
    /// the component's own client certificate.
    pub fn component_kubeconfig(&self, component: &str) -> PathBuf {
        self.root
            .join("pki")
            .join(format!("{component}.kubeconfig"))
    }
    /// The local etcd's data (`tinykube up --etcd`).
    pub fn etcd_data(&self) -> PathBuf {
        self.root.join("etcd")
    }
    /// The cluster CA the API server generates (`ca.crt`; its key beside it).
    pub fn ca_cert(&self) -> PathBuf {
        self.apiserver_data().join("ca.crt")
    }
}

/// One node of the cluster and how its kubelet describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    pub name: String,
    pub node_ip: Ipv4Addr,
    pub pod_cidr: String,
    pub master: bool,
}

/// How the kubelets are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeletPlan {
    /// One process for one node.
    Single(NodePlan),
    /// One process simulating `count` workers `worker-0…`, addresses counting up from `first`.
    Simulated { count: usize, first: NodePlan },
}

impl KubeletPlan {
    /// The name of its log file (`kubelet-worker0`, `kubelet-workers`).
    pub fn component(&self) -> String {
        match self {
            KubeletPlan::Single(n) => format!("kubelet-{}", n.name),
            KubeletPlan::Simulated { .. } => "kubelet-workers".into(),
        }
    }

    /// The node names it runs.
    pub fn node_names(&self) -> Vec<String> {
        match self {
            KubeletPlan::Single(n) => vec![n.name.clone()],
            KubeletPlan::Simulated { count, .. } => {
                (0..*count).map(|i| format!("worker-{i}")).collect()
            }
        }
    }

    /// Its flags, after `--master URL`.
    pub fn args(&self, layout: &Layout) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let node = match self {
            KubeletPlan::Single(n) => {
                args.extend([
                    "--hostname-override".into(),
                    n.name.clone(),
                    "--pod-manifest-path".into(),
                    layout.manifests(&n.name).display().to_string(),
                ]);
                n
            }
            KubeletPlan::Simulated { count, first } => {
                args.extend([
                    "--hostname-override".into(),
                    "worker".into(),
                    "--simulate-nodes".into(),
                    count.to_string(),
                    "--pod-manifest-path".into(),
                    layout.manifests("{node}").display().to_string(),
                ]);
                first
            }
        };
        args.extend([
            "--node-ip".into(),
            node.node_ip.to_string(),
            "--pod-cidr".into(),
            node.pod_cidr.clone(),
            "--read-only-port".into(),
            "0".into(),
        ]);
        if node.master {
            args.extend([
                "--node-labels".into(),
                "node-role.kubernetes.io/master=".into(),
                "--register-with-taints".into(),
                "node-role.kubernetes.io/master:NoSchedule".into(),
            ]);
        }
        args
    }
}

fn add(base: Ipv4Addr, n: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base).wrapping_add(n as u32))
}

/// Workers `worker0…` (InternalIP 192.168.10.10…, podCIDR 10.244.1.0/24…) and masters
/// `master0…` (192.168.10.5…, the podCIDRs after the workers'), as the course's cluster.
pub fn plan(shape: &Shape) -> Vec<KubeletPlan> {
    let worker = |i: usize, name: String| NodePlan {
        name,
        node_ip: add(Ipv4Addr::new(192, 168, 10, 10), i),
        pod_cidr: format!("{}/24", add(Ipv4Addr::new(10, 244, 0, 0), (i + 1) << 8)),
        master: false,
    };
    let mut out = Vec::new();
    for j in 0..shape.masters {
        let ip = if j < 5 {
            add(Ipv4Addr::new(192, 168, 10, 5), j)
        } else {
            add(Ipv4Addr::new(192, 168, 9, 10), j)
        };
        out.push(KubeletPlan::Single(NodePlan {
            name: format!("master{j}"),
            node_ip: ip,
            pod_cidr: format!(
                "{}/24",
                add(Ipv4Addr::new(10, 244, 0, 0), (shape.workers + 1 + j) << 8)
            ),
            master: true,
        }));
    }
    if shape.workers > SIMULATE_ABOVE {
        out.push(KubeletPlan::Simulated {
            count: shape.workers,
            first: worker(0, "worker-0".into()),
        });
    } else {
        out.extend(
            (0..shape.workers).map(|i| KubeletPlan::Single(worker(i, format!("worker{i}")))),
        );
    }
    out
}

/// The kubeconfig of a user: the server and, for an HTTPS one, the CA to trust and the
/// user's client certificate, embedded as kubeadm's `admin.conf` does.
pub fn kubeconfig(server: &str, creds: Option<&crate::pki::Credentials>) -> String {
    use base64::Engine;
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let (ca, user) = match creds {
        Some(c) => (
            format!("    certificate-authority-data: {}\n", b64(&c.ca_pem)),
            format!(
                "\n    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&c.cert_pem),
                b64(&c.key_pem)
            ),
        ),
        None => (String::new(), " {}\n".to_string()),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n{ca}    server: {server}\n  name: tinykube\ncontexts:\n- context:\n    cluster: tinykube\n    user: admin\n  name: tinykube\ncurrent-context: tinykube\nusers:\n- name: admin\n  user:{user}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_then_saved_shape_then_defaults() {
        let saved = Shape {
            workers: 5,
            masters: 1,
            port: 7000,
            secure: true,
            storage: Storage::LocalEtcd,
            apiservers: 3,
        };
        let shape = |workers, masters, port, secure, storage: Storage, apiservers| Shape {
            workers,
            masters,
            port,
            secure,
            storage,
            apiservers,
        };
        let none = Requested::default();
        let servers = vec!["http://10.0.0.1:2379".to_string()];
        let external = Storage::Etcd {
            servers: servers.clone(),
        };
        let cases = [
            (None, none.clone(), Shape::default()),
            (Some(saved.clone()), none.clone(), saved.clone()),
            (
                Some(saved.clone()),
                Requested {
                    workers: Some(2),
                    port: Some(0),
                    ..none.clone()
                },
                shape(2, 1, 0, true, Storage::LocalEtcd, 3),
            ),
            (
                Some(saved.clone()),
                Requested {
                    secure: Some(false),
                    etcd: Some(false),
                    apiservers: Some(1),
                    ..none.clone()
                },
                shape(5, 1, 7000, false, Storage::Sled, 1),
            ),
            (
                None,
                Requested {
                    masters: Some(1),
                    ..none.clone()
                },
                shape(3, 1, 6443, false, Storage::Sled, 1),
            ),
            (
                None,
                Requested {
                    secure: Some(true),
                    etcd: Some(true),
                    apiservers: Some(2),
                    ..none.clone()
                },
                shape(3, 0, 6443, true, Storage::LocalEtcd, 2),
            ),
            (
                // Given servers win over the saved local etcd.
                Some(saved.clone()),
                Requested {
                    etcd_servers: Some(servers.clone()),
                    ..none.clone()
                },
                shape(5, 1, 7000, true, external.clone(), 3),
            ),
        ];
        for (saved, asked, want) in cases {
            assert_eq!(Shape::resolve(saved, &asked), want, "{asked:?}");
        }
    }

    #[test]
    fn shapes_that_cannot_run_say_which_flag_is_wrong() {
        let with = |storage: Storage, apiservers| Shape {
            storage,
            apiservers,
            ..Shape::default()
        };
        let etcd = |s: &[&str]| Storage::Etcd {
            servers: s.iter().map(|s| s.to_string()).collect(),
        };
        let cases = [
            (with(Storage::Sled, 1), None),
            (with(Storage::LocalEtcd, 3), None),
            (
                with(etcd(&["http://127.0.0.1:2379", "https://e:2379"]), 2),
                None,
            ),
            (
                with(Storage::Sled, 0),
                Some("--apiservers must be at least 1"),
            ),
            (
                with(Storage::Sled, 3),
                Some("--apiservers 3 needs a store the API servers share: add --etcd (a local etcd) or --etcd-servers URL,URL (sled is one API server's own)"),
            ),
            (
                with(etcd(&["127.0.0.1:2379"]), 1),
                Some(r#"--etcd-servers: "127.0.0.1:2379" is not a URL (http://HOST:PORT)"#),
            ),
            (
                with(etcd(&["http://"]), 1),
                Some(r#"--etcd-servers: "http://" is not a URL (http://HOST:PORT)"#),
            ),
            (
                with(etcd(&[]), 1),
                Some("--etcd-servers needs at least one URL (http://HOST:PORT)"),
            ),
        ];
        for (shape, want) in cases {
            assert_eq!(shape.check().err().as_deref(), want, "{shape:?}");
        }
    }

    #[test]
    fn an_old_cluster_json_is_a_sled_cluster_with_one_api_server() {
        let old = r#"{"workers": 2, "masters": 0, "port": 6443}"#;
        let shape: Shape = serde_json::from_str(old).unwrap();
        assert_eq!((shape.storage, shape.apiservers), (Storage::Sled, 1));
        let saved = serde_json::to_string(&Shape {
            storage: Storage::Etcd {
                servers: vec!["http://e:2379".into()],
            },
            ..Shape::default()
        })
        .unwrap();
        assert!(
            saved.contains(r#""storage":{"backend":"etcd","servers":["http://e:2379"]}"#),
            "{saved}"
        );
    }

    #[test]
    fn nodes_as_the_course_names_and_numbers_them() {
        let layout = Layout::new(Path::new("/d"));
        let p = plan(&Shape {
            workers: 3,
            masters: 1,
            port: 0,
            ..Shape::default()
        });
        let names: Vec<Vec<String>> = p.iter().map(KubeletPlan::node_names).collect();
        assert_eq!(names, [["master0"], ["worker0"], ["worker1"], ["worker2"]]);
        let KubeletPlan::Single(w2) = &p[3] else {
            panic!("single")
        };
        assert_eq!(
            (w2.node_ip.to_string(), w2.pod_cidr.as_str()),
            ("192.168.10.12".into(), "10.244.3.0/24")
        );
        let KubeletPlan::Single(m0) = &p[0] else {
            panic!("single")
        };
        assert_eq!(
            (m0.node_ip.to_string(), m0.pod_cidr.as_str()),
            ("192.168.10.5".into(), "10.244.4.0/24")
        );
        let args = p[0].args(&layout).join(" ");
        assert!(args.contains("--node-labels node-role.kubernetes.io/master="));
        assert!(args.contains("--register-with-taints node-role.kubernetes.io/master:NoSchedule"));
        assert!(args.contains("--pod-manifest-path /d/nodes/master0/manifests"));
        assert!(!p[1].args(&layout).join(" ").contains("master"));

        let big = plan(&Shape {
            workers: 1000,
            port: 0,
            ..Shape::default()
        });
        assert_eq!(big.len(), 1);
        assert_eq!(big[0].node_names().len(), 1000);
        assert_eq!(big[0].component(), "kubelet-workers");
        let args = big[0].args(&layout).join(" ");
        assert!(args.contains("--simulate-nodes 1000"), "{args}");
        assert!(args.contains("/d/nodes/{node}/manifests"), "{args}");
    }

    #[test]
    fn kubeconfig_points_at_the_server() {
        let text = kubeconfig("http://127.0.0.1:6443", None);
        assert!(text.contains("server: http://127.0.0.1:6443\n"));
        assert!(text.contains("current-context: tinykube\n"));
        assert!(text.ends_with("- name: admin\n  user: {}\n"), "{text}");
        let creds = crate::pki::Credentials {
            ca_pem: "CA".into(),
            cert_pem: "CERT".into(),
            key_pem: "KEY".into(),
        };
        let text = kubeconfig("https://127.0.0.1:6443", Some(&creds));
        assert!(
            text.contains(
                "    certificate-authority-data: Q0E=\n    server: https://127.0.0.1:6443\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n"
            ),
            "{text}"
        );
    }
}
