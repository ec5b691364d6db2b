//! One pod's worker, as upstream's pod workers and container runtime between them: mount the
//! volumes, run the init containers in order (sidecars left running), then the containers
//! side by side, each under a supervisor that creates and starts it, watches its process, its
//! probes and its memory, kills it (SIGTERM, then SIGKILL after the grace period) and restarts
//! it by the pod's `restartPolicy` with the crash-loop back-off; and stop everything when the
//! pod is deleted. Container times, back-offs, grace periods and hooks go by the kubelet's
//! clock; retries while a volume or a container's config cannot be had yet stay on tokio's
//! (they wait for API objects, not for time).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod};
use tinykube_client::events::EventType;
use tinykube_clock::Clock;
use tinykube_runtime::{Fs, Signal};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use super::host::{KubeletHost, Output, Place, Signals, Usage};
use super::network::PodNetwork;
use super::probes::{self, ProbeEvent};
use super::state::{Exit, Kind, PodRun, State};
use super::volumes::{self, PodVolumes};
use super::{env, Backoff};
use crate::logs::LogHandle;
use crate::stats::{ContainerKey, ContainerSpec, NodeMeter};
use crate::Kubelet;

/// Run IDs, for the listeners each run opens.
static RUNS: AtomicU64 = AtomicU64::new(1);

/// A live run of a container, for `exec` and probes.
#[derive(Clone)]
pub(crate) struct Live {
    pub spec: tinykube_runtime::Container,
    pub fs: Fs,
    pub place: Place,
    pub network: Arc<PodNetwork>,
    /// The kubelet's clock (what commands run in the container live by).
    pub clock: Clock,
}

/// A pod being run, shared by its worker, its status writes and the streaming endpoints.
pub(crate) struct PodHandle {
    pub pod: Arc<Pod>,
    pub run: Mutex<PodRun>,
    pub changed: Notify,
    /// Cancelled when the pod is to stop; `grace` says how long its containers get.
    pub stop: CancellationToken,
    pub grace: Mutex<Duration>,
    /// Finished once every container has stopped for good.
    pub done: CancellationToken,
    pub logs: Mutex<std::collections::HashMap<String, LogHandle>>,
    pub live: Mutex<std::collections::HashMap<String, Live>>,
    /// The stdin of the current run of each container with `stdin: true` (for `attach`).
    pub stdin: Mutex<std::collections::HashMap<String, mpsc::Sender<String>>>,
    pub network: Arc<PodNetwork>,
    pub host_ip: String,
    /// Events are recorded (a lone node; simulated nodes save the writes).
    pub events: bool,
    /// Taken over after a kubelet restart: the first start of each container is quiet (no
    /// events), as its container was, for the API, running all along.
    pub adopted: std::sync::atomic::AtomicBool,
    /// The kubelet's clock.
    pub clock: Clock,
    /// The account of the node's usage its containers are kept in.
    pub meter: Arc<NodeMeter>,
}

impl std::fmt::Debug for PodHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodHandle")
            .field("pod", &self.pod.metadata.name)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PodHandle {
    pub fn new(
        pod: Arc<Pod>,
        network: Arc<PodNetwork>,
        host_ip: String,
        events: bool,
        clock: Clock,
        meter: Arc<NodeMeter>,
    ) -> Self {
        let grace = pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30)
            .max(0) as u64;
        PodHandle {
            run: Mutex::new(PodRun::new(&pod, clock.timestamp())),
            pod,
            changed: Notify::new(),
            stop: CancellationToken::new(),
            grace: Mutex::new(Duration::from_secs(grace)),
            done: CancellationToken::new(),
            logs: Default::default(),
            live: Default::default(),
            stdin: Default::default(),
            network,
            host_ip,
            events,
            adopted: Default::default(),
            clock,
            meter,
        }
    }

    pub fn run(&self) -> MutexGuard<'_, PodRun> {
        lock(&self.run)
    }

    /// Change the containers' state; the condition times follow, writers are told.
    pub fn update(&self, f: impl FnOnce(&mut PodRun)) {
        {
            let mut run = self.run();
            let (init, ready) = (run.initialized(), run.containers_ready());
            f(&mut run);
            let now = self.clock.timestamp();
            if run.initialized() != init {
                run.initialized_at = now;
            }
            if run.containers_ready() != ready {
                run.ready_at = now;
            }
            run.version += 1;
        }
        self.changed.notify_one();
    }

    /// Take over the restart counts the API shows (a pod adopted after a kubelet restart).
    pub fn seed(&self, status: Option<&k8s_openapi::api::core::v1::PodStatus>) {
        let Some(status) = status else { return };
        self.adopted.store(true, Ordering::Relaxed);
        let mut guard = self.run();
        let run = &mut *guard;
        for (list, statuses) in [
            (&mut run.apps, status.container_statuses.as_ref()),
            (&mut run.inits, status.init_container_statuses.as_ref()),
        ] {
            for s in statuses.into_iter().flatten() {
                if let Some(c) = list.iter_mut().find(|c| c.name == s.name) {
                    c.restarts = s.restart_count;
                }
            }
        }
    }

    pub fn logs_of(&self, name: &str) -> LogHandle {
        lock(&self.logs)
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    pub fn live(&self, name: &str) -> Option<Live> {
        lock(&self.live).get(name).cloned()
    }

    /// Stop the pod's containers, giving them `grace`.
    pub fn stop(&self, grace: Duration) {
        *lock(&self.grace) = grace;
        self.stop.cancel();
    }

    fn grace(&self) -> Duration {
        *lock(&self.grace)
    }

    pub fn name(&self) -> String {
        self.pod.metadata.name.clone().unwrap_or_default()
    }

    pub fn namespace(&self) -> String {
        self.pod.metadata.namespace.clone().unwrap_or_default()
    }

    fn uid(&self) -> String {
        self.pod.metadata.uid.clone().unwrap_or_default()
    }

    /// Record an event about one of the pod's containers.
    pub async fn event(
        &self,
        k: &Kubelet,
        c: Option<(&str, Kind)>,
        kind: EventType,
        reason: &str,
        msg: &str,
    ) {
        if !self.events {
            return;
        }
        let field_path = c.map(|(name, kind)| match kind {
            Kind::App => format!("spec.containers{{{name}}}"),
            _ => format!("spec.initContainers{{{name}}}"),
        });
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: self.pod.metadata.name.clone(),
            namespace: self.pod.metadata.namespace.clone(),
            uid: self.pod.metadata.uid.clone(),
            resource_version: self.pod.metadata.resource_version.clone(),
            field_path,
        };
        if let Err(e) = k.recorder.record(&reference, kind, reason, msg).await {
            tracing::debug!(error = %e, reason, "could not record pod event");
        }
    }
}

/// Run the pod until it stops for good (all containers done, or stopped on deletion).
pub(crate) async fn run(k: Arc<Kubelet>, h: Arc<PodHandle>, host_paths: super::HostPaths) {
    let volumes = loop {
        match volumes::mount_all(&k.client, &h.pod, &*host_paths).await {
            Ok(v) => break v,
            Err(msg) => {
                h.event(&k, None, EventType::Warning, "FailedMount", &msg)
                    .await;
                tokio::select! {
                    _ = h.stop.cancelled() => { h.done.cancel(); return; }
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
            }
        }
    };
    let etc = volumes::etc_files(
        &h.pod,
        &h.network.pod_ip,
        &h.network.cluster.search(&h.namespace()),
        &h.network.cluster.dns_ip,
    );
    let ctx = Arc::new(Ctx {
        k,
        h: h.clone(),
        volumes,
        etc,
    });
    let spec = h.pod.spec.clone().unwrap_or_default();
    let mut sidecars = Vec::new();
    for c in spec.init_containers.iter().flatten() {
        if h.stop.is_cancelled() {
            break;
        }
        if c.restart_policy.as_deref() == Some("Always") {
            let (ctx2, c2) = (ctx.clone(), c.clone());
            sidecars.push(tokio::spawn(async move {
                supervise(ctx2, c2, Kind::Sidecar).await;
            }));
            wait_started(&h, &c.name, Kind::Sidecar).await;
            continue;
        }
        let code = supervise(ctx.clone(), c.clone(), Kind::Init).await;
        if code != Some(0) {
            // Failed for good (restartPolicy Never), or stopped.
            stop_all(&h, sidecars).await;
            finish(&h);
            return;
        }
    }
    let mut apps = Vec::new();
    if !h.stop.is_cancelled() {
        for c in &spec.containers {
            let (ctx2, c2) = (ctx.clone(), c.clone());
            apps.push(tokio::spawn(async move {
                supervise(ctx2, c2, Kind::App).await;
            }));
        }
    }
    for a in apps {
        let _ = a.await;
    }
    stop_all(&h, sidecars).await;
    finish(&h);
}

/// Sidecars stop once the containers have (or with the pod).
async fn stop_all(h: &PodHandle, sidecars: Vec<tokio::task::JoinHandle<()>>) {
    if sidecars.is_empty() {
        return;
    }
    h.stop.cancel();
    for s in sidecars {
        let _ = s.await;
    }
}

fn finish(h: &PodHandle) {
    h.update(|run| {
        let terminal = matches!(run.phase(), "Succeeded" | "Failed");
        if terminal {
            run.sandbox_gone = true;
        }
    });
    h.done.cancel();
}

async fn wait_started(h: &PodHandle, name: &str, kind: Kind) {
    loop {
        let notified = h.changed.notified();
        {
            let mut run = h.run();
            match run.get_mut(kind, name) {
                Some(c) if c.started && c.is_running() => return,
                None => return,
                _ => {}
            }
        }
        if h.stop.is_cancelled() {
            return;
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = h.stop.cancelled() => return,
        }
        // `changed` may have been taken by the status writer: poll as well.
    }
}

/// What a pod's supervisors share.
pub(crate) struct Ctx {
    pub k: Arc<Kubelet>,
    pub h: Arc<PodHandle>,
    pub volumes: PodVolumes,
    pub etc: Vec<(String, String)>,
}

/// How one run of a container ended.
struct Ended {
    code: i32,
    oom: bool,
    /// Stopped because the pod is stopping: no restart.
    stopped: bool,
    /// How long the run lasted (a long one resets the back-off).
    ran_for: Duration,
}

/// Run a container by its restart rules; the exit code it stopped with for good (`None`: the
/// pod stopped first).
async fn supervise(ctx: Arc<Ctx>, c: Container, kind: Kind) -> Option<i32> {
    let (k, h) = (&ctx.k, &ctx.h);
    let name = c.name.clone();
    let policy = match kind {
        Kind::Sidecar => "Always".to_string(),
        _ => h.run().restart_policy.clone(),
    };
    let who = Some((name.as_str(), kind));
    let mut backoff = Backoff::default();
    let mut ran_for = Duration::ZERO;
    let mut first = true;
    let mut restarting = false;
    loop {
        if !first {
            let delay = backoff.next(ran_for);
            if !delay.is_zero() {
                let msg = format!(
                    "back-off {} restarting failed container={name} pod={}_{}({})",
                    go_seconds(delay),
                    h.name(),
                    h.namespace(),
                    h.uid()
                );
                h.update(|run| {
                    if let Some(cr) = run.get_mut(kind, &name) {
                        cr.state = State::Waiting {
                            reason: "CrashLoopBackOff".into(),
                            message: Some(msg),
                        };
                    }
                });
                let event = format!(
                    "Back-off restarting failed container {name} in pod {}_{}({})",
                    h.name(),
                    h.namespace(),
                    h.uid()
                );
                h.event(k, who, EventType::Warning, "BackOff", &event).await;
                tokio::select! {
                    _ = h.stop.cancelled() => return None,
                    _ = h.clock.sleep(delay) => {}
                }
            }
        }
        if h.stop.is_cancelled() {
            return None;
        }
        let services = k.network.services.list();
        let env = match env::build(&k.client, &h.pod, &c, &services).await {
            Ok(env) => env,
            Err(msg) => {
                h.update(|run| {
                    if let Some(cr) = run.get_mut(kind, &name) {
                        cr.state = State::Waiting {
                            reason: "CreateContainerConfigError".into(),
                            message: Some(msg.clone()),
                        };
                    }
                });
                h.event(
                    k,
                    who,
                    EventType::Warning,
                    "Failed",
                    &format!("Error: {msg}"),
                )
                .await;
                tokio::select! {
                    _ = h.stop.cancelled() => return None,
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
                continue;
            }
        };
        if std::mem::take(&mut restarting) {
            // The restart count counts the starts after the first.
            h.update(|run| {
                if let Some(cr) = run.get_mut(kind, &name) {
                    cr.restarts += 1;
                }
            });
            h.logs_of(&name).lock().restart(h.clock.now());
        }
        pull_events(&ctx, &c, who, first).await;
        let ended = run_once(&ctx, &c, kind, env, first).await;
        first = false;
        ran_for = ended.ran_for;
        let failed = ended.code != 0 || ended.oom;
        let restart = !ended.stopped
            && match (kind, policy.as_str()) {
                // An init container runs until it succeeds (or once, with Never).
                (Kind::Init, "Never") => false,
                (Kind::Init, _) => failed,
                (_, "Always") => true,
                (_, "OnFailure") => failed,
                _ => false,
            };
        if !restart {
            return (!ended.stopped).then_some(ended.code);
        }
        h.update(|run| {
            if let Some(cr) = run.get_mut(kind, &name) {
                if let State::Terminated(e) = &cr.state {
                    cr.last = Some(e.clone());
                }
            }
        });
        restarting = true;
    }
}

/// The image events of a start: an image pulled each time for `Always`, else present.
async fn pull_events(ctx: &Ctx, c: &Container, who: Option<(&str, Kind)>, first: bool) {
    if first && ctx.h.adopted.load(Ordering::Relaxed) {
        return;
    }
    let image = c.image.clone().unwrap_or_default();
    let always = match c.image_pull_policy.as_deref() {
        Some(p) => p == "Always",
        None => {
            let last = image.rsplit('/').next().unwrap_or("");
            !last.contains(':') || last.ends_with(":latest")
        }
    };
    let h = &ctx.h;
    if always {
        h.event(
            &ctx.k,
            who,
            EventType::Normal,
            "Pulling",
            &format!("Pulling image \"{image}\""),
        )
        .await;
        let size = 1_000_000
            + (u64::from_str_radix(&crate::hash::hex(&[image.as_bytes()], 1)[..6], 16)
                .unwrap_or(0)
                * 37);
        let took = if first { "1.2s" } else { "512ms" };
        h.event(
            &ctx.k,
            who,
            EventType::Normal,
            "Pulled",
            &format!("Successfully pulled image \"{image}\" in {took} ({took} including waiting). Image size: {size} bytes."),
        )
        .await;
    } else {
        h.event(
            &ctx.k,
            who,
            EventType::Normal,
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
        )
        .await;
    }
}

/// `10s`, `1m20s`, `5m0s`: a duration as Go prints it.
pub(crate) fn go_seconds(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{}s", s / 60, s % 60)
    }
}

/// A quantity of a container's `resources.limits` (`limits`) or `resources.requests`.
fn resource(c: &Container, limits: bool, name: &str) -> Option<tinykube_proto::quantity::Quantity> {
    let r = c.resources.as_ref()?;
    let list = if limits { &r.limits } else { &r.requests };
    tinykube_proto::quantity::Quantity::parse(&list.as_ref()?.get(name)?.0).ok()
}

/// The memory limit of a container in bytes.
fn memory_limit(c: &Container) -> Option<u64> {
    Some(resource(c, true, "memory")?.value().max(0) as u64)
}

/// What the node's account needs to know of a container starting as `id`.
fn meter_spec(h: &PodHandle, c: &Container, kind: Kind, id: &str) -> ContainerSpec {
    // A request defaults to the limit when only the limit is given (as the API server does).
    let request = resource(c, false, "cpu").or_else(|| resource(c, true, "cpu"));
    ContainerSpec {
        id: id.to_string(),
        image: c.image.clone().unwrap_or_default(),
        cpu_request_milli: request.map_or(0, |q| q.milli_value()),
        cpu_limit_milli: resource(c, true, "cpu").map(|q| q.milli_value()),
        memory_limit: memory_limit(c),
        init: kind != Kind::App,
        qos: crate::stats::qos_class(&h.pod).to_string(),
    }
}

/// Create, start and watch one run of a container until it ends.
async fn run_once(
    ctx: &Arc<Ctx>,
    c: &Container,
    kind: Kind,
    env: Vec<(String, String)>,
    first: bool,
) -> Ended {
    let (k, h) = (&ctx.k, &ctx.h);
    let name = c.name.clone();
    let who = Some((name.as_str(), kind));
    let restarts = h
        .run()
        .get_mut(kind, &name)
        .map(|cr| cr.restarts)
        .unwrap_or(0);
    let id = format!(
        "containerd://{}",
        crate::hash::hex(
            &[h.uid().as_bytes(), name.as_bytes(), &restarts.to_le_bytes()],
            4
        )
    );
    let run_id = RUNS.fetch_add(1, Ordering::Relaxed);
    let place = Place {
        pod_ip: h.network.pod_ip.clone(),
        listeners: h.network.cluster.listeners.clone(),
        run: run_id,
    };
    let spec = tinykube_runtime::Container {
        name: name.clone(),
        image: c.image.clone().unwrap_or_default(),
        command: c.command.clone().unwrap_or_default(),
        args: c.args.clone().unwrap_or_default(),
        env,
        working_dir: c.working_dir.clone(),
        ports: c
            .ports
            .iter()
            .flatten()
            .map(|p| p.container_port.clamp(0, 65535) as u16)
            .collect(),
        hostname: h.network.hostname.clone(),
    };
    let fs = volumes::container_fs(c, &ctx.volumes, &ctx.etc);
    let live = Live {
        spec: spec.clone(),
        fs: fs.clone(),
        place: place.clone(),
        network: h.network.clone(),
        clock: h.clock.clone(),
    };
    lock(&h.live).insert(name.clone(), live.clone());
    // A container of a pod taken over after a kubelet restart was running all along for the
    // API: its first start here is quiet.
    let quiet = first && h.adopted.load(Ordering::Relaxed);
    if !quiet {
        h.event(
            k,
            who,
            EventType::Normal,
            "Created",
            &format!("Created container: {name}"),
        )
        .await;
    }
    let signals = Arc::new(Signals::default());
    let key = ContainerKey {
        namespace: h.namespace(),
        pod: h.name(),
        container: name.clone(),
    };
    let meter = h.meter.start(key, meter_spec(h, c, kind, &id));
    let usage = Arc::new(Usage {
        meter: Some(meter.clone()),
        ..Usage::default()
    });
    let logs = h.logs_of(&name);
    // A container with `stdin: true` reads what `kubectl attach` types.
    let stdin = c.stdin.unwrap_or(false).then(|| {
        let (tx, rx) = mpsc::channel(64);
        lock(&h.stdin).insert(name.clone(), tx);
        rx
    });
    let mut host = KubeletHost {
        clock: h.clock.clone(),
        signals: signals.clone(),
        output: Output::Log(logs.clone()),
        stdin,
        network: h.network.clone(),
        place: place.clone(),
        usage: usage.clone(),
    };
    let started_at = h.clock.timestamp();
    let (has_startup, has_readiness) = (c.startup_probe.is_some(), c.readiness_probe.is_some());
    let process_spec = spec.clone();
    let process_fs = fs.clone();
    let mut process = tokio::spawn(async move {
        tinykube_runtime::run_main(&process_spec, process_fs, &mut host).await
    });
    h.update(|run| {
        if let Some(cr) = run.get_mut(kind, &name) {
            cr.state = State::Running { started_at };
            cr.id = Some(id.clone());
            cr.started = !has_startup;
            cr.ready = !has_startup && !has_readiness && kind != Kind::Init;
        }
    });
    if !quiet {
        h.event(
            k,
            who,
            EventType::Normal,
            "Started",
            &format!("Started container {name}"),
        )
        .await;
    }
    // postStart: the container is not running until it returns; a failure kills it.
    // Set when the container is to be killed, with its grace period.
    let mut kill: Option<Duration> = None;
    if let Some(hook) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) {
        if let Err(msg) = probes::run_hook(&live, hook, &h.host_ip).await {
            h.event(k, who, EventType::Warning, "FailedPostStartHook", &msg)
                .await;
            kill = Some(h.grace());
        }
    }
    let (tx, mut rx) = mpsc::channel::<ProbeEvent>(8);
    let probe_task = tokio::spawn(probes::run(ctx.clone(), c.clone(), kind, live.clone(), tx));
    let limit = memory_limit(c);
    let mut oom = false;
    let mut stopped = false;
    // Closed once the probes are done with (at once for a container without any).
    let mut probes_open = true;
    let code = loop {
        if let Some(grace) = kill.take() {
            break terminate(&h.clock, &signals, &mut process, grace).await;
        }
        let mem_changed = usage.changed.notified();
        if limit.is_some_and(|l| meter.working_set() > l) {
            process.abort();
            oom = true;
            break tinykube_runtime::EXIT_KILLED;
        }
        tokio::select! {
            r = &mut process => break r.unwrap_or(tinykube_runtime::EXIT_KILLED),
            _ = mem_changed => {}
            ev = rx.recv(), if probes_open => match ev {
                Some(ProbeEvent::Started) => h.update(|run| {
                    if let Some(cr) = run.get_mut(kind, &name) {
                        cr.started = true;
                        cr.ready = !has_readiness;
                    }
                }),
                Some(ProbeEvent::Ready(ready)) => h.update(|run| {
                    if let Some(cr) = run.get_mut(kind, &name) {
                        cr.ready = ready;
                    }
                }),
                Some(ProbeEvent::Kill { message, grace }) => {
                    h.event(k, who, EventType::Normal, "Killing", &message).await;
                    kill = Some(grace.unwrap_or_else(|| h.grace()));
                }
                None => probes_open = false,
            },
            _ = h.stop.cancelled() => {
                stopped = true;
                let grace = h.grace();
                let start = h.clock.instant();
                if let Some(hook) = c.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) {
                    let hook_run = probes::run_hook(&live, hook, &h.host_ip);
                    match h.clock.timeout(grace, hook_run).await {
                        Ok(Err(msg)) => h.event(k, who, EventType::Warning, "FailedPreStopHook", &msg).await,
                        Ok(Ok(())) => {}
                        Err(_) => {}
                    }
                }
                h.event(k, who, EventType::Normal, "Killing", &format!("Stopping container {name}")).await;
                let left = grace.saturating_sub(h.clock.instant() - start);
                break terminate(&h.clock, &signals, &mut process, left).await;
            }
        }
    };
    probe_task.abort();
    meter.end();
    place.listeners.close(run_id);
    lock(&h.live).remove(&name);
    lock(&h.stdin).remove(&name);
    let finished_at = h.clock.timestamp();
    logs.lock().current.end(h.clock.now());
    h.update(|run| {
        if let Some(cr) = run.get_mut(kind, &name) {
            cr.state = State::Terminated(Exit {
                exit_code: code,
                reason: Exit::reason_for(code, oom).into(),
                message: None,
                started_at,
                finished_at,
                container_id: id.clone(),
            });
            cr.ready = false;
            cr.started = false;
        }
    });
    let ran_for = Duration::try_from(finished_at.duration_since(started_at)).unwrap_or_default();
    Ended {
        code,
        oom,
        stopped,
        ran_for,
    }
}

/// SIGTERM, then SIGKILL once `grace` has passed on `clock`; the exit code.
async fn terminate(
    clock: &Clock,
    signals: &Signals,
    process: &mut tokio::task::JoinHandle<i32>,
    grace: Duration,
) -> i32 {
    signals.send(Signal::Term);
    match clock.timeout(grace, &mut *process).await {
        Ok(r) => r.unwrap_or(tinykube_runtime::EXIT_KILLED),
        Err(_) => {
            process.abort();
            tinykube_runtime::EXIT_KILLED
        }
    }
}
