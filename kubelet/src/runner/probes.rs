//! Probes and lifecycle hooks, as upstream's prober: startup first (liveness and readiness wait
//! for it), each after its `initialDelaySeconds` then every `periodSeconds`, a result counted
//! against `successThreshold`/`failureThreshold`, each failure an `Unhealthy` event with the
//! prober's message; a failed liveness or startup probe has the container killed (with the
//! probe's own `terminationGracePeriodSeconds` when set), readiness flips the container's
//! `ready`. Handlers: `exec` (in the container, output kept for the message), `httpGet`
//! (`kube-probe/` user agent, 2xx and 3xx succeed), `tcpSocket` and `grpc`, all through the
//! pod's simulated network from the node. Delays, periods and timeouts go by the kubelet's
//! clock (a probe's answer itself is immediate).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tinykube_client::events::EventType;
use tinykube_runtime::{HttpRequest, NetError, Network};
use tokio::sync::mpsc;

use super::host::{KubeletHost, Output, Signals, Usage};
use super::pod::{Ctx, Live};
use super::state::Kind;

/// The user agent of HTTP probes (`kube-probe/MAJOR.MINOR`).
const USER_AGENT: &str = "kube-probe/1.36";

/// What the probes tell the container's supervisor.
#[derive(Debug)]
pub(crate) enum ProbeEvent {
    /// The startup probe succeeded.
    Started,
    /// Readiness changed.
    Ready(bool),
    /// Kill the container (liveness or startup failed), with the Killing event's message.
    Kill {
        message: String,
        grace: Option<Duration>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Startup,
    Liveness,
    Readiness,
}

impl Which {
    fn title(self) -> &'static str {
        match self {
            Which::Startup => "Startup",
            Which::Liveness => "Liveness",
            Which::Readiness => "Readiness",
        }
    }
}

/// Run the container's probes until the run ends (the task is aborted then).
pub(crate) async fn run(
    ctx: Arc<Ctx>,
    c: Container,
    kind: Kind,
    live: Live,
    tx: mpsc::Sender<ProbeEvent>,
) {
    if kind == Kind::Init {
        return;
    }
    if let Some(p) = &c.startup_probe {
        if !probe_loop(&ctx, &c, kind, &live, Which::Startup, p, &tx).await {
            return;
        }
        let _ = tx.send(ProbeEvent::Started).await;
    }
    let liveness = async {
        if let Some(p) = &c.liveness_probe {
            probe_loop(&ctx, &c, kind, &live, Which::Liveness, p, &tx).await;
        }
    };
    let readiness = async {
        if let Some(p) = &c.readiness_probe {
            probe_loop(&ctx, &c, kind, &live, Which::Readiness, p, &tx).await;
        }
    };
    futures::join!(liveness, readiness);
}

/// Probe until the probe is done with: `true` when a startup probe succeeded, `false` when it
/// asked for a kill. Liveness and readiness loops run until aborted.
async fn probe_loop(
    ctx: &Ctx,
    c: &Container,
    kind: Kind,
    live: &Live,
    which: Which,
    p: &Probe,
    tx: &mpsc::Sender<ProbeEvent>,
) -> bool {
    let secs = |v: Option<i32>, d: i32| Duration::from_secs(v.unwrap_or(d).max(0) as u64);
    let period = secs(p.period_seconds, 10).max(Duration::from_secs(1));
    let timeout = secs(p.timeout_seconds, 1).max(Duration::from_secs(1));
    let success_threshold = p.success_threshold.unwrap_or(1).max(1);
    let failure_threshold = p.failure_threshold.unwrap_or(3).max(1);
    let clock = &live.clock;
    clock.sleep(secs(p.initial_delay_seconds, 0)).await;
    let (mut successes, mut failures) = (0, 0);
    let mut ready = false;
    loop {
        let result = probe(live, c, p, timeout, &ctx.h.host_ip).await;
        match result {
            Ok(()) => {
                failures = 0;
                successes += 1;
                if successes >= success_threshold {
                    match which {
                        Which::Startup => return true,
                        Which::Readiness if !ready => {
                            ready = true;
                            let _ = tx.send(ProbeEvent::Ready(true)).await;
                        }
                        _ => {}
                    }
                }
            }
            Err(msg) => {
                successes = 0;
                failures += 1;
                let text = format!("{} probe failed: {msg}", which.title());
                ctx.h
                    .event(
                        &ctx.k,
                        Some((&c.name, kind)),
                        EventType::Warning,
                        "Unhealthy",
                        &text,
                    )
                    .await;
                if failures >= failure_threshold {
                    match which {
                        Which::Readiness => {
                            if ready {
                                ready = false;
                                let _ = tx.send(ProbeEvent::Ready(false)).await;
                            }
                        }
                        Which::Liveness | Which::Startup => {
                            let word = if which == Which::Liveness {
                                "liveness"
                            } else {
                                "startup"
                            };
                            let grace = p
                                .termination_grace_period_seconds
                                .map(|s| Duration::from_secs(s.max(0) as u64));
                            let _ = tx
                                .send(ProbeEvent::Kill {
                                    message: format!(
                                        "Container {} failed {word} probe, will be restarted",
                                        c.name
                                    ),
                                    grace,
                                })
                                .await;
                            return false;
                        }
                    }
                }
            }
        }
        clock.sleep(period).await;
    }
}

/// A named or numbered port of the container.
fn port_of(c: &Container, port: &IntOrString) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())
            .or_else(|| name.parse().ok()),
    }
}

/// Run a command in the container, its output captured: (exit code, output).
pub(crate) async fn exec_capture(
    live: &Live,
    argv: &[String],
    timeout: Duration,
) -> Option<(i32, String)> {
    let buf = Arc::new(Mutex::new(String::new()));
    let mut host = KubeletHost {
        clock: live.clock.clone(),
        signals: Arc::new(Signals::default()),
        output: Output::Capture(buf.clone()),
        stdin: None,
        network: live.network.clone(),
        place: live.place.clone(),
        usage: Arc::new(Usage::default()),
    };
    let run = tinykube_runtime::run_exec(argv, &live.spec, live.fs.clone(), &mut host);
    let code = live.clock.timeout(timeout, run).await.ok()?;
    let out = buf.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Some((code, out))
}

fn dial_error(ip: &str, port: u16, e: &NetError) -> String {
    match e {
        NetError::Refused => format!("dial tcp {ip}:{port}: connect: connection refused"),
        NetError::TimedOut => format!("dial tcp {ip}:{port}: i/o timeout"),
        NetError::BadAddress(h) => format!("dial tcp: lookup {h}: no such host"),
    }
}

/// One probe; `Err` is the prober's message.
async fn probe(
    live: &Live,
    c: &Container,
    p: &Probe,
    timeout: Duration,
    node_ip: &str,
) -> Result<(), String> {
    let pod_ip = live.network.pod_ip.clone();
    if let Some(e) = &p.exec {
        let argv = e.command.clone().unwrap_or_default();
        return match exec_capture(live, &argv, timeout).await {
            None => Err(format!("command {:?} timed out", argv.join(" "))),
            Some((0, _)) => Ok(()),
            Some((_, out)) => Err(out.trim_end_matches('\n').to_string()),
        };
    }
    if let Some(g) = &p.http_get {
        let ip = g.host.clone().unwrap_or(pod_ip);
        let port = port_of(c, &g.port).unwrap_or(0);
        let scheme = g
            .scheme
            .clone()
            .unwrap_or_else(|| "HTTP".into())
            .to_lowercase();
        let path = g.path.clone().unwrap_or_else(|| "/".into());
        let url = format!("{scheme}://{ip}:{port}{path}");
        let req = HttpRequest {
            method: "GET".into(),
            path: path.clone(),
            host: format!("{ip}:{port}"),
            headers: g
                .http_headers
                .iter()
                .flatten()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            remote_ip: node_ip.to_string(),
            user_agent: USER_AGENT.into(),
        };
        return match live.network.http(&ip, port, &req) {
            Ok(r) if (200..400).contains(&r.status) => Ok(()),
            Ok(r) => Err(format!("HTTP probe failed with statuscode: {}", r.status)),
            Err(NetError::TimedOut) => Err(format!(
                "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
            )),
            Err(e) => Err(format!("Get \"{url}\": {}", dial_error(&ip, port, &e))),
        };
    }
    if let Some(t) = &p.tcp_socket {
        let ip = t.host.clone().unwrap_or(pod_ip);
        let port = port_of(c, &t.port).unwrap_or(0);
        return live
            .network
            .connect(&ip, port)
            .map_err(|e| dial_error(&ip, port, &e));
    }
    if let Some(g) = &p.grpc {
        let port = u16::try_from(g.port).unwrap_or(0);
        let service = g.service.clone().unwrap_or_default();
        return match live.network.grpc_health(&pod_ip, port, &service) {
            Ok(true) => Ok(()),
            Ok(false) => Err("service unhealthy (responded with \"NOT_SERVING\")".into()),
            Err(_) => Err(format!(
                "timeout: failed to connect service \"{pod_ip}:{port}\" within {}s",
                timeout.as_secs()
            )),
        };
    }
    Ok(())
}

/// Run a lifecycle hook; `Err` is the FailedPostStartHook/FailedPreStopHook message.
pub(crate) async fn run_hook(
    live: &Live,
    hook: &LifecycleHandler,
    node_ip: &str,
) -> Result<(), String> {
    if let Some(e) = &hook.exec {
        let argv = e.command.clone().unwrap_or_default();
        return match exec_capture(live, &argv, Duration::from_secs(3600)).await {
            Some((0, _)) => Ok(()),
            Some((code, out)) => Err(format!(
                "Exec lifecycle hook ({argv:?}) for Container \"{}\" in Pod \"{}\" failed - error: command '{}' exited with {code}: {out}, message: \"{out}\"",
                live.spec.name,
                live.spec.hostname,
                argv.join(" ")
            )),
            None => Err("command timed out".into()),
        };
    }
    if let Some(g) = &hook.http_get {
        let ip = g
            .host
            .clone()
            .unwrap_or_else(|| live.network.pod_ip.clone());
        let port = match &g.port {
            IntOrString::Int(n) => u16::try_from(*n).unwrap_or(0),
            IntOrString::String(s) => s.parse().unwrap_or(0),
        };
        let req = HttpRequest {
            method: "GET".into(),
            path: g.path.clone().unwrap_or_else(|| "/".into()),
            host: format!("{ip}:{port}"),
            remote_ip: node_ip.to_string(),
            user_agent: USER_AGENT.into(),
            ..Default::default()
        };
        return match live.network.http(&ip, port, &req) {
            Ok(r) if (200..400).contains(&r.status) => Ok(()),
            Ok(r) => Err(format!("HTTP lifecycle hook ({}) for Container \"{}\" in Pod \"{}\" failed - error: received status code {}", req.path, live.spec.name, live.spec.hostname, r.status)),
            Err(e) => Err(format!("HTTP lifecycle hook ({}) for Container \"{}\" in Pod \"{}\" failed - error: {}", req.path, live.spec.name, live.spec.hostname, dial_error(&ip, port, &e))),
        };
    }
    if let Some(s) = &hook.sleep {
        live.clock
            .sleep(Duration::from_secs(s.seconds.max(0) as u64))
            .await;
    }
    Ok(())
}
