//! The [`Host`] a container's processes run on: the kubelet's clock (a `sleep 3600` ends when
//! the cluster's clock has moved an hour), the container's signal box, its log (or an exec
//! session's stream, or a probe's capture) for output, the cluster network, the pod's
//! listening ports and the container's memory and CPU use.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tinykube_clock::Clock;
use tinykube_runtime::{BoxFuture, CpuSink, Host, LogSink, Network, Server, Signal, Stream};
use tokio::sync::{mpsc, Notify};

use crate::logs::LogHandle;
use crate::stats::ContainerMeter;

/// Signals sent to a container's main process and not taken yet.
#[derive(Default)]
pub(crate) struct Signals {
    queue: Mutex<VecDeque<Signal>>,
    notify: Notify,
}

impl Signals {
    pub fn send(&self, s: Signal) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(s);
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    fn take(&self) -> Option<Signal> {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }
}

/// What a container uses, as its processes say (stress), kept in its node's account
/// ([`crate::stats::NodeMeter`]; none for an exec session); the runner OOM-kills over the limit.
#[derive(Default)]
pub(crate) struct Usage {
    pub memory: AtomicU64,
    pub cpu_millis: AtomicU64,
    /// Told when memory use changes.
    pub changed: Notify,
    pub meter: Option<ContainerMeter>,
}

/// A listening server and the run that opened it.
type Listening = (u64, Arc<dyn Server>);

/// The servers listening in this kubelet's pods: (pod IP, port) → the server and the run that
/// opened it.
#[derive(Default)]
pub(crate) struct Listeners {
    map: Mutex<HashMap<(String, u16), Listening>>,
}

impl Listeners {
    pub fn get(&self, ip: &str, port: u16) -> Option<Arc<dyn Server>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(ip.to_string(), port))
            .map(|(_, s)| s.clone())
    }

    fn open(&self, ip: &str, port: u16, owner: u64, server: Arc<dyn Server>) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((ip.to_string(), port), (owner, server));
    }

    /// Close what the run `owner` opened (its process ended).
    pub fn close(&self, owner: u64) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, (o, _)| *o != owner);
    }
}

/// Where a process's output goes.
#[derive(Clone)]
pub(crate) enum Output {
    /// The container's log (its main process, hooks' output is not logged).
    Log(LogHandle),
    /// An exec session (with a TTY, stderr goes to stdout).
    Session {
        tx: mpsc::UnboundedSender<(Stream, String)>,
        tty: bool,
    },
    /// A probe's output, kept for its message.
    Capture(Arc<Mutex<String>>),
}

impl Output {
    /// Write what a process wrote `at` (the time its log line gets).
    fn write(&self, at: SystemTime, stream: Stream, text: &str) {
        match self {
            Output::Log(h) => h.lock().current.write(at, stream, text),
            Output::Session { tx, tty } => {
                let stream = if *tty { Stream::Stdout } else { stream };
                let text = if *tty {
                    text.replace('\n', "\r\n")
                } else {
                    text.to_string()
                };
                let _ = tx.send((stream, text));
            }
            Output::Capture(buf) => buf.lock().unwrap_or_else(|e| e.into_inner()).push_str(text),
        }
    }
}

/// The network position of a container: its pod's IP, for its listeners.
#[derive(Clone)]
pub(crate) struct Place {
    pub pod_ip: String,
    pub listeners: Arc<Listeners>,
    /// The run whose listeners these are.
    pub run: u64,
}

pub(crate) struct KubeletHost {
    pub clock: Clock,
    pub signals: Arc<Signals>,
    pub output: Output,
    pub stdin: Option<mpsc::Receiver<String>>,
    pub network: Arc<dyn Network>,
    pub place: Place,
    pub usage: Arc<Usage>,
}

impl Host for KubeletHost {
    fn now(&self) -> SystemTime {
        self.clock.now()
    }

    fn sleep(&mut self, d: Duration) -> BoxFuture<'_, ()> {
        if d.is_zero() {
            // The shell's way of letting the other tasks run: a yield, even on a manual clock
            // (whose zero sleep is over at once).
            return Box::pin(tokio::task::yield_now());
        }
        Box::pin(self.clock.sleep(d))
    }

    fn wait_signal(&mut self, d: Option<Duration>) -> BoxFuture<'_, Option<Signal>> {
        let signals = self.signals.clone();
        let clock = self.clock.clone();
        Box::pin(async move {
            if d.is_some_and(|d| d.is_zero()) {
                // As in `sleep`: a zero wait still lets the other tasks run.
                tokio::task::yield_now().await;
            }
            let deadline = d.map(|d| clock.instant() + d);
            loop {
                let notified = signals.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(s) = signals.take() {
                    return Some(s);
                }
                match deadline {
                    Some(at) => {
                        tokio::select! {
                            _ = notified => {}
                            _ = clock.sleep_until(at) => return None,
                        }
                    }
                    None => notified.await,
                }
            }
        })
    }

    fn take_signal(&mut self) -> Option<Signal> {
        self.signals.take()
    }

    fn write(&mut self, stream: Stream, text: &str) {
        self.output.write(self.clock.now(), stream, text);
    }

    fn read(&mut self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            match self.stdin.as_mut() {
                Some(rx) => rx.recv().await,
                None => None,
            }
        })
    }

    fn log_sink(&self) -> LogSink {
        let (out, clock) = (self.output.clone(), self.clock.clone());
        Arc::new(move |stream, text| out.write(clock.now(), stream, text))
    }

    fn cpu_sink(&self) -> CpuSink {
        let meter = self.usage.meter.clone();
        Arc::new(move |work| {
            if let Some(m) = &meter {
                m.charge(work);
            }
        })
    }

    fn network(&self) -> Arc<dyn Network> {
        self.network.clone()
    }

    fn listen(&mut self, port: u16, server: Arc<dyn Server>) {
        let p = &self.place;
        p.listeners.open(&p.pod_ip, port, p.run, server);
    }

    fn set_memory(&mut self, bytes: u64) {
        self.usage.memory.store(bytes, Ordering::Relaxed);
        if let Some(m) = &self.usage.meter {
            m.set_memory(bytes);
        }
        self.usage.changed.notify_waiters();
    }

    fn set_cpu(&mut self, millicores: u64) {
        self.usage.cpu_millis.store(millicores, Ordering::Relaxed);
        if let Some(m) = &self.usage.meter {
            m.set_cpu(millicores);
        }
    }
}
