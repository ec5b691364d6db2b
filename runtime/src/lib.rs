//! tinykube-runtime: what a simulated container does, decided from its pod spec alone.
//!
//! The kubelet keeps the pod lifecycle, the API and the clocks; this crate says what a
//! container's process does once started: its `command`/`args` run in a small interpreter of
//! the busybox shell ([`shell`]), images with known behaviour do what they do on a real
//! cluster ([`images`]), files live in an in-memory per-container filesystem with shared
//! volumes ([`fs`]), and the network is whatever the [`net::Network`] the kubelet hands in
//! says it is.
//!
//! **Invariant:** no I/O and no async runtime here. A process is a future that reaches the
//! world only through the [`Host`] it is given (time, sleeping, signals, stdio, listening
//! sockets, memory and CPU use), so a table test drives it with a fake host and virtual time,
//! and a sleeping process costs nothing but its parked future.

pub mod fs;
pub mod images;
pub mod net;
pub mod shell;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use fs::{Fs, FsError, Volume};
pub use net::{HttpRequest, HttpResponse, NetError, Network, Server};

/// A boxed, sendable future (what [`Host`]'s waiting methods return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Exit code of a process killed by SIGKILL (128 + 9), as the runtime reports it.
pub const EXIT_KILLED: i32 = 137;
/// Exit code of a command that was not found (busybox sh).
pub const EXIT_NOT_FOUND: i32 = 127;

/// Where a process writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A signal the kubelet sends to a container's main process. SIGKILL is not one: the kubelet
/// drops the process's future instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: the container is being stopped (deletion, failed liveness probe).
    Term,
}

/// Something that writes a container's output from outside its main future (a server
/// logging each request it answers).
pub type LogSink = Arc<dyn Fn(Stream, &str) + Send + Sync>;

/// Something that charges CPU work to a container from outside its main future: a server
/// answering a request costs it that request's CPU time (core-time), which the kubelet adds
/// to what the container demands ([`images::Footprint::request_cpu`]).
pub type CpuSink = Arc<dyn Fn(Duration) + Send + Sync>;

/// What a running process sees of the world; the kubelet implements it over tokio's clock and
/// the pod's log, a test over virtual time.
pub trait Host: Send {
    /// The wall clock (for `date`, and servers' log lines).
    fn now(&self) -> SystemTime;
    /// Sleep `d`; not cut short by signals (a foreground `sleep` in busybox is not).
    fn sleep(&mut self, d: Duration) -> BoxFuture<'_, ()>;
    /// Wait for a signal, at most `d` (`None`: for ever). Returns the signal, or `None` when
    /// the time ran out. What servers and the shell's `wait` block in.
    fn wait_signal(&mut self, d: Option<Duration>) -> BoxFuture<'_, Option<Signal>>;
    /// A signal delivered and not taken yet (the shell checks between commands to run traps).
    fn take_signal(&mut self) -> Option<Signal>;
    /// Write to stdout or stderr.
    fn write(&mut self, stream: Stream, text: &str);
    /// The next chunk of stdin; `None` at its end (at once for a process without stdin).
    fn read(&mut self) -> BoxFuture<'_, Option<String>>;
    /// A writer of this process's output usable from a [`Server`] after `listen`.
    fn log_sink(&self) -> LogSink;
    /// A charger of CPU work to this container usable from a [`Server`] after `listen`.
    fn cpu_sink(&self) -> CpuSink;
    /// The network as seen from this container.
    fn network(&self) -> Arc<dyn Network>;
    /// Start answering on `port` of the pod's IP (closed when the process ends).
    fn listen(&mut self, port: u16, server: Arc<dyn Server>);
    /// The memory this process now holds, in bytes (the kubelet OOM-kills over the limit).
    fn set_memory(&mut self, bytes: u64);
    /// The CPU this process now burns steadily, in millicores (what it asks for: the kubelet
    /// caps it at the container's limit).
    fn set_cpu(&mut self, millicores: u64);
}

/// What the runtime needs of a container spec, resolved by the kubelet (env values from
/// ConfigMaps, Secrets and the downward API already filled in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    pub image: String,
    /// `command` (the image's entrypoint when empty).
    pub command: Vec<String>,
    /// `args` (the image's cmd when both are empty).
    pub args: Vec<String>,
    /// Environment in order, after the kubelet's own (`HOSTNAME`, service variables).
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    /// Declared container ports.
    pub ports: Vec<u16>,
    /// The pod's hostname (`hostname`, `$HOSTNAME`).
    pub hostname: String,
}

/// Run a container's main process to its exit code. The returned future is the process: the
/// kubelet polls it, sends signals through the [`Host`], and drops it to SIGKILL.
pub fn run_main<'a>(c: &'a Container, fs: Fs, host: &'a mut dyn Host) -> BoxFuture<'a, i32> {
    images::run(c, fs, host)
}

/// Run a command inside a running container (`kubectl exec`, exec probes, hooks): `argv`
/// names a program of the container's image (the shell's applets), with the container's
/// environment and filesystem.
pub fn run_exec<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    shell::exec_argv(argv, c, fs, host)
}

/// The root filesystem a fresh container of `image` starts with.
pub fn root_fs(image: &str) -> Fs {
    Fs::new(images::root_tree(image))
}
