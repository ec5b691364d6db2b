//! A fake [`Host`] for the image tests: a virtual clock that sleeping and waiting advance at
//! once, signals queued at virtual times, and everything the process did recorded (output,
//! listened servers, memory and CPU figures, CPU work charged).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::net::{HttpRequest, HttpResponse, NetError, Network, Resolved, Server};
use crate::{BoxFuture, Container, CpuSink, Fs, Host, LogSink, Signal, Stream};

/// 2026-11-25T00:36:22Z.
pub const T0: u64 = 1_795_566_982;

pub fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(T0)
}

type Output = Arc<Mutex<Vec<(Stream, String)>>>;

pub struct FakeHost {
    pub now: SystemTime,
    /// Signals to deliver, at these offsets from [`t0`], in order.
    pub signals: VecDeque<(Duration, Signal)>,
    pub output: Output,
    pub servers: BTreeMap<u16, Arc<dyn Server>>,
    /// Every `set_memory`, with the offset from [`t0`] it came at.
    pub memory: Vec<(Duration, u64)>,
    pub cpu: u64,
    /// CPU work servers charged (`cpu_sink`), in total.
    pub charged: Arc<Mutex<Duration>>,
}

impl FakeHost {
    pub fn new() -> FakeHost {
        FakeHost {
            now: t0(),
            signals: VecDeque::new(),
            output: Arc::default(),
            servers: BTreeMap::new(),
            memory: Vec::new(),
            cpu: 0,
            charged: Arc::default(),
        }
    }

    /// A SIGTERM `at` after [`t0`].
    pub fn term_at(mut self, at: Duration) -> FakeHost {
        self.signals.push_back((at, Signal::Term));
        self
    }

    fn offset(&self) -> Duration {
        self.now.duration_since(t0()).unwrap_or_default()
    }

    /// What was written to `stream`, in order.
    pub fn text(&self, stream: Stream) -> String {
        let out = self.output.lock().unwrap();
        out.iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    /// A GET of `path` to the server on `port`, `at` after [`t0`].
    pub fn get(&self, port: u16, path: &str, at: Duration) -> HttpResponse {
        let server = self
            .servers
            .get(&port)
            .unwrap_or_else(|| panic!("nothing on {port}"));
        let req = HttpRequest {
            method: "GET".into(),
            path: path.into(),
            host: "10.244.0.5".into(),
            remote_ip: "10.244.0.1".into(),
            user_agent: "kube-probe/1.32".into(),
            ..HttpRequest::default()
        };
        server.http(&req, t0() + at)
    }
}

struct NoNetwork;

impl Network for NoNetwork {
    fn dns_server(&self) -> String {
        "10.96.0.10".into()
    }
    fn resolve(&self, _name: &str) -> Option<Resolved> {
        None
    }
    fn connect(&self, _ip: &str, _port: u16) -> Result<(), NetError> {
        Err(NetError::Refused)
    }
    fn http(&self, _ip: &str, _port: u16, _req: &HttpRequest) -> Result<HttpResponse, NetError> {
        Err(NetError::Refused)
    }
    fn grpc_health(&self, _ip: &str, _port: u16, _service: &str) -> Result<bool, NetError> {
        Err(NetError::Refused)
    }
}

impl Host for FakeHost {
    fn now(&self) -> SystemTime {
        self.now
    }

    fn sleep(&mut self, d: Duration) -> BoxFuture<'_, ()> {
        self.now += d;
        Box::pin(async {})
    }

    fn wait_signal(&mut self, d: Option<Duration>) -> BoxFuture<'_, Option<Signal>> {
        let now = self.offset();
        let next = self.signals.front().copied();
        let got = match (next, d) {
            (Some((at, sig)), d) if d.is_none_or(|d| at <= now + d) => {
                self.signals.pop_front();
                self.now = t0() + at.max(now);
                Some(sig)
            }
            (_, Some(d)) => {
                self.now += d;
                None
            }
            _ => panic!("waiting for ever with no signal queued"),
        };
        Box::pin(async move { got })
    }

    fn take_signal(&mut self) -> Option<Signal> {
        let now = self.offset();
        match self.signals.front() {
            Some((at, _)) if *at <= now => self.signals.pop_front().map(|(_, s)| s),
            _ => None,
        }
    }

    fn write(&mut self, stream: Stream, text: &str) {
        self.output.lock().unwrap().push((stream, text.to_string()));
    }

    fn read(&mut self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    fn log_sink(&self) -> LogSink {
        let out = self.output.clone();
        Arc::new(move |s, t| out.lock().unwrap().push((s, t.to_string())))
    }

    fn cpu_sink(&self) -> CpuSink {
        let charged = self.charged.clone();
        Arc::new(move |work| *charged.lock().unwrap() += work)
    }

    fn network(&self) -> Arc<dyn Network> {
        Arc::new(NoNetwork)
    }

    fn listen(&mut self, port: u16, server: Arc<dyn Server>) {
        self.servers.insert(port, server);
    }

    fn set_memory(&mut self, bytes: u64) {
        let at = self.offset();
        self.memory.push((at, bytes));
    }

    fn set_cpu(&mut self, millicores: u64) {
        self.cpu = millicores;
    }
}

/// A container of `image` with `command` and `args`.
pub fn container(image: &str, command: &[&str], args: &[&str]) -> Container {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    Container {
        name: "c".into(),
        image: image.into(),
        command: v(command),
        args: v(args),
        hostname: "web-0".into(),
        ..Container::default()
    }
}

/// Run `c`'s main process on its image's root tree (or `fs`) to its exit code.
pub fn run(c: &Container, fs: Option<Fs>, host: &mut FakeHost) -> i32 {
    let fs = fs.unwrap_or_else(|| crate::root_fs(&c.image));
    futures::executor::block_on(super::run(c, fs, host))
}
