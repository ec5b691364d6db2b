//! The processes of one shell session and the one [`Host`] they share.
//!
//! A shell with background jobs runs several processes at once, but the kubelet hands it a
//! single `&mut dyn Host`. So every process (the main shell, each `&` job) is a `'static`
//! future that reaches the world through a [`Sys`] handle instead: writes are queued, sleeps
//! and waits register what they wait for, and [`drive`] polls all of them, flushes what they
//! wrote, and then blocks the host once for the earliest thing any of them waits on (a
//! deadline, a signal, a chunk of stdin). Time is the sum of what the host slept.

use std::collections::{BTreeMap, VecDeque};
use std::future::{poll_fn, Future};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, SystemTime};

use crate::{BoxFuture, CpuSink, Host, LogSink, Network, Server, Signal, Stream};

/// A process's handle on the shared session.
#[derive(Clone)]
pub(super) struct Sys(Arc<Mutex<State>>);

struct State {
    /// Output not yet handed to the host, in order.
    out: Vec<(Stream, String)>,
    /// The host's wall clock at the last step.
    now: SystemTime,
    /// Time slept since the session started.
    clock: Duration,
    /// What the processes wait for, gathered while polling them.
    next_deadline: Option<Duration>,
    wants_signal: bool,
    wants_read: bool,
    signals: VecDeque<Signal>,
    stdin: String,
    stdin_eof: bool,
    stdin_chunks: u64,
    spawned: Vec<(u32, BoxFuture<'static, i32>)>,
    /// Background jobs by pid: `None` while running, then their exit code.
    jobs: BTreeMap<u32, Option<i32>>,
    kills: Vec<u32>,
    next_pid: u32,
    listens: Vec<(u16, Arc<dyn Server>)>,
    memory: Option<u64>,
    cpu: Option<u64>,
    network: Arc<dyn Network>,
    log_sink: LogSink,
    cpu_sink: CpuSink,
}

/// Why a [`Sys::wait`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    /// Every job waited for has ended.
    Done,
    /// A signal is pending (left queued for the shell's trap).
    Signal,
    /// The timeout ran out.
    Timeout,
}

impl Sys {
    pub fn new(
        network: Arc<dyn Network>,
        log_sink: LogSink,
        cpu_sink: CpuSink,
        now: SystemTime,
    ) -> Sys {
        Sys(Arc::new(Mutex::new(State {
            out: Vec::new(),
            now,
            clock: Duration::ZERO,
            next_deadline: None,
            wants_signal: false,
            wants_read: false,
            signals: VecDeque::new(),
            stdin: String::new(),
            stdin_eof: false,
            stdin_chunks: 0,
            spawned: Vec::new(),
            jobs: BTreeMap::new(),
            kills: Vec::new(),
            next_pid: 2,
            listens: Vec::new(),
            memory: None,
            cpu: None,
            network,
            log_sink,
            cpu_sink,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn now(&self) -> SystemTime {
        self.lock().now
    }

    pub fn network(&self) -> Arc<dyn Network> {
        self.lock().network.clone()
    }

    pub fn log_sink(&self) -> LogSink {
        self.lock().log_sink.clone()
    }

    pub fn cpu_sink(&self) -> CpuSink {
        self.lock().cpu_sink.clone()
    }

    pub fn write(&self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut st = self.lock();
        match st.out.last_mut() {
            Some((s, t)) if *s == stream => t.push_str(text),
            _ => st.out.push((stream, text.to_string())),
        }
    }

    pub fn listen(&self, port: u16, server: Arc<dyn Server>) {
        self.lock().listens.push((port, server));
    }

    pub fn set_memory(&self, bytes: u64) {
        self.lock().memory = Some(bytes);
    }

    pub fn set_cpu(&self, millicores: u64) {
        self.lock().cpu = Some(millicores);
    }

    /// A pending signal, taken.
    pub fn take_signal(&self) -> Option<Signal> {
        self.lock().signals.pop_front()
    }

    /// Start a background job; its pid.
    pub fn spawn(&self, job: BoxFuture<'static, i32>) -> u32 {
        let mut st = self.lock();
        let pid = st.next_pid;
        st.next_pid += 1;
        st.jobs.insert(pid, None);
        st.spawned.push((pid, job));
        pid
    }

    /// A fresh pid for a process that is not a job (a subshell's `$$` stays its parent's).
    pub fn job_status(&self, pid: u32) -> Option<Option<i32>> {
        self.lock().jobs.get(&pid).copied()
    }

    /// Kill a running job (SIGTERM to a job with no trap ends it: 143).
    pub fn kill(&self, pid: u32) -> bool {
        let mut st = self.lock();
        match st.jobs.get(&pid) {
            Some(None) => {
                st.kills.push(pid);
                true
            }
            _ => false,
        }
    }

    /// Sleep `d` of session time.
    pub fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send + 'static {
        let sys = self.clone();
        let deadline = self.lock().clock.saturating_add(d);
        poll_fn(move |_| {
            let mut st = sys.lock();
            if st.clock >= deadline {
                return Poll::Ready(());
            }
            st.next_deadline = Some(st.next_deadline.map_or(deadline, |n| n.min(deadline)));
            Poll::Pending
        })
    }

    /// Let the other processes (and the host) run: a sleep of nothing.
    pub fn yield_now(&self) -> impl Future<Output = ()> + Send + 'static {
        let sys = self.clone();
        let mut first = true;
        poll_fn(move |_| {
            if !first {
                return Poll::Ready(());
            }
            first = false;
            let mut st = sys.lock();
            let now = st.clock;
            st.next_deadline = Some(now);
            Poll::Pending
        })
    }

    /// Wait until every job of `pids` has ended, a signal is pending (when `interrupt`), or
    /// `timeout` has passed.
    pub fn wait(
        &self,
        pids: Vec<u32>,
        interrupt: bool,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Waited> + Send + 'static {
        let sys = self.clone();
        let deadline = timeout.map(|t| self.lock().clock.saturating_add(t));
        poll_fn(move |_| {
            let mut st = sys.lock();
            if interrupt && !st.signals.is_empty() {
                return Poll::Ready(Waited::Signal);
            }
            if !pids.is_empty() && pids.iter().all(|p| !matches!(st.jobs.get(p), Some(None))) {
                return Poll::Ready(Waited::Done);
            }
            if let Some(d) = deadline {
                if st.clock >= d {
                    return Poll::Ready(Waited::Timeout);
                }
                st.next_deadline = Some(st.next_deadline.map_or(d, |n| n.min(d)));
            }
            if interrupt {
                st.wants_signal = true;
            }
            Poll::Pending
        })
    }

    /// Wait for one more chunk of the host's stdin; `false` at its end.
    pub fn read_chunk(&self) -> impl Future<Output = bool> + Send + 'static {
        let sys = self.clone();
        let seen = self.lock().stdin_chunks;
        poll_fn(move |_| {
            let mut st = sys.lock();
            if st.stdin_chunks != seen {
                return Poll::Ready(true);
            }
            if st.stdin_eof {
                return Poll::Ready(false);
            }
            st.wants_read = true;
            Poll::Pending
        })
    }

    /// The host's stdin read so far and not consumed: a whole line (with its newline) when
    /// one is there, or everything at its end.
    pub fn stdin_line(&self) -> Option<String> {
        let mut st = self.lock();
        if let Some(i) = st.stdin.find('\n') {
            let rest = st.stdin.split_off(i + 1);
            return Some(std::mem::replace(&mut st.stdin, rest));
        }
        if st.stdin_eof && !st.stdin.is_empty() {
            return Some(std::mem::take(&mut st.stdin));
        }
        None
    }

    /// Everything buffered from stdin, taken.
    pub fn stdin_take(&self) -> String {
        std::mem::take(&mut self.lock().stdin)
    }
}

/// Run `main` and the jobs it starts against `host` until `main` ends; its exit code. The jobs
/// die with it (they are dropped).
pub(super) async fn drive(
    host: &mut dyn Host,
    sys: &Sys,
    mut main: BoxFuture<'static, i32>,
) -> i32 {
    let mut jobs: Vec<(u32, BoxFuture<'static, i32>)> = Vec::new();
    loop {
        {
            let mut st = sys.lock();
            st.now = host.now();
            while let Some(s) = host.take_signal() {
                st.signals.push_back(s);
            }
        }
        let done = poll_fn(|cx| Poll::Ready(step(cx, sys, &mut main, &mut jobs))).await;
        flush(host, sys);
        if let Some(code) = done {
            return code;
        }
        let (deadline, wants_signal, wants_read, clock) = {
            let st = sys.lock();
            (st.next_deadline, st.wants_signal, st.wants_read, st.clock)
        };
        if wants_read {
            let chunk = host.read().await;
            let mut st = sys.lock();
            match chunk {
                Some(text) => {
                    st.stdin.push_str(&text);
                    st.stdin_chunks += 1;
                }
                None => st.stdin_eof = true,
            }
            continue;
        }
        let wait = deadline.map(|d| d.saturating_sub(clock));
        if wants_signal || deadline.is_none() {
            // Nothing to wake up for but a signal (or a deadlock, which only SIGKILL ends).
            let before = host.now();
            let got = host.wait_signal(wait).await;
            let passed = host.now().duration_since(before).unwrap_or_default();
            let mut st = sys.lock();
            match got {
                Some(s) => {
                    st.signals.push_back(s);
                    st.clock += wait.map_or(passed, |w| passed.min(w));
                }
                None => st.clock += wait.unwrap_or(passed),
            }
        } else if let Some(w) = wait {
            host.sleep(w).await;
            sys.lock().clock += w;
        }
    }
}

/// Poll every process until none of them can move without the host; `Some` when `main` ended.
fn step(
    cx: &mut std::task::Context<'_>,
    sys: &Sys,
    main: &mut BoxFuture<'static, i32>,
    jobs: &mut Vec<(u32, BoxFuture<'static, i32>)>,
) -> Option<i32> {
    loop {
        {
            let mut st = sys.lock();
            st.next_deadline = None;
            st.wants_signal = false;
            st.wants_read = false;
        }
        if let Poll::Ready(code) = main.as_mut().poll(cx) {
            return Some(code);
        }
        let mut changed = false;
        let mut i = 0;
        while i < jobs.len() {
            if let Poll::Ready(code) = jobs[i].1.as_mut().poll(cx) {
                let (pid, _) = jobs.remove(i);
                sys.lock().jobs.insert(pid, Some(code));
                changed = true;
            } else {
                i += 1;
            }
        }
        let mut st = sys.lock();
        for pid in std::mem::take(&mut st.kills) {
            jobs.retain(|(p, _)| *p != pid);
            st.spawned.retain(|(p, _)| *p != pid);
            st.jobs.insert(pid, Some(143));
            changed = true;
        }
        if !st.spawned.is_empty() {
            jobs.append(&mut st.spawned);
            changed = true;
        }
        if !changed {
            return None;
        }
    }
}

fn flush(host: &mut dyn Host, sys: &Sys) {
    let (out, listens, memory, cpu) = {
        let mut st = sys.lock();
        (
            std::mem::take(&mut st.out),
            std::mem::take(&mut st.listens),
            st.memory.take(),
            st.cpu.take(),
        )
    };
    for (stream, text) in out {
        host.write(stream, &text);
    }
    for (port, server) in listens {
        host.listen(port, server);
    }
    if let Some(m) = memory {
        host.set_memory(m);
    }
    if let Some(c) = cpu {
        host.set_cpu(c);
    }
}
