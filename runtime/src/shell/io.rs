//! A process's standard streams (where its output goes: the host, a file, a pipe's buffer,
//! nowhere; where its input comes from) and [`Proc`], what an applet or an image's program
//! runs with: its streams, environment and working directory, seen as a [`Host`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::sys::{Sys, Waited};
use crate::{BoxFuture, Container, CpuSink, Fs, Host, LogSink, Network, Server, Signal, Stream};

/// Where a stream's writes go.
#[derive(Clone)]
pub(super) enum Sink {
    Host(Stream),
    Null,
    /// Appended to a file (truncated when the redirection was made).
    File(Fs, String),
    /// A pipe or a command substitution.
    Buf(Arc<Mutex<String>>),
}

impl Sink {
    pub fn write(&self, sys: &Sys, text: &str) {
        match self {
            Sink::Host(s) => sys.write(*s, text),
            Sink::Null => {}
            Sink::File(fs, path) => {
                let _ = fs.write(path, text.as_bytes(), true);
            }
            Sink::Buf(b) => b.lock().unwrap_or_else(|e| e.into_inner()).push_str(text),
        }
    }

    /// A fresh buffer, and the sink writing into it.
    pub fn buffer() -> (Sink, Arc<Mutex<String>>) {
        let b = Arc::new(Mutex::new(String::new()));
        (Sink::Buf(b.clone()), b)
    }
}

/// Take what a buffer holds.
pub(super) fn take(buf: &Arc<Mutex<String>>) -> String {
    std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Where a process reads from.
#[derive(Clone)]
pub(super) enum Input {
    /// The host's stdin (`kubectl exec -i`).
    Host,
    /// Text, with how much of it was read (shared, so `while read` consumes it line by line).
    Data(Arc<Mutex<(String, usize)>>),
}

impl Input {
    pub fn data(text: String) -> Input {
        Input::Data(Arc::new(Mutex::new((text, 0))))
    }

    pub fn empty() -> Input {
        Input::data(String::new())
    }

    /// The next line with its newline (the last one may lack it); `None` at the end.
    pub async fn read_line(&self, sys: &Sys) -> Option<String> {
        match self {
            Input::Data(d) => {
                let mut d = d.lock().unwrap_or_else(|e| e.into_inner());
                let (text, pos) = &mut *d;
                if *pos >= text.len() {
                    return None;
                }
                let end = text[*pos..].find('\n').map_or(text.len(), |i| *pos + i + 1);
                let line = text[*pos..end].to_string();
                *pos = end;
                Some(line)
            }
            Input::Host => loop {
                if let Some(l) = sys.stdin_line() {
                    return Some(l);
                }
                if !sys.read_chunk().await {
                    return sys.stdin_line();
                }
            },
        }
    }

    /// Everything up to the end.
    pub async fn read_all(&self, sys: &Sys) -> String {
        match self {
            Input::Data(d) => {
                let mut d = d.lock().unwrap_or_else(|e| e.into_inner());
                let rest = d.0[d.1..].to_string();
                d.1 = d.0.len();
                rest
            }
            Input::Host => {
                while sys.read_chunk().await {}
                sys.stdin_take()
            }
        }
    }

    /// What is there now, or the next chunk; `None` at the end.
    pub async fn read_some(&self, sys: &Sys) -> Option<String> {
        match self {
            Input::Data(_) => Some(self.read_all(sys).await).filter(|s| !s.is_empty()),
            Input::Host => {
                let now = sys.stdin_take();
                if !now.is_empty() {
                    return Some(now);
                }
                sys.read_chunk().await;
                Some(sys.stdin_take()).filter(|s| !s.is_empty())
            }
        }
    }
}

/// A process's three standard streams.
#[derive(Clone)]
pub(super) struct Io {
    pub stdin: Input,
    pub stdout: Sink,
    pub stderr: Sink,
}

impl Io {
    pub fn host() -> Io {
        Io {
            stdin: Input::Host,
            stdout: Sink::Host(Stream::Stdout),
            stderr: Sink::Host(Stream::Stderr),
        }
    }
}

/// A program being run (an applet, or an image's program through [`crate::images::builtin`]).
pub(super) struct Proc {
    pub sys: Sys,
    pub io: Io,
    pub fs: Fs,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    /// Whether signals sent to the container reach it (a foreground program of PID 1).
    pub sig_owner: bool,
    pub c: Arc<Container>,
}

impl Proc {
    pub fn out(&self, text: &str) {
        self.io.stdout.write(&self.sys, text);
    }

    pub fn err(&self, text: &str) {
        self.io.stderr.write(&self.sys, text);
    }

    /// `path` made absolute against the working directory.
    pub fn path(&self, path: &str) -> String {
        crate::fs::absolute(&self.cwd, path)
    }

    pub fn getenv(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Host for Proc {
    fn now(&self) -> SystemTime {
        self.sys.now()
    }

    fn sleep(&mut self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(self.sys.sleep(d))
    }

    fn wait_signal(&mut self, d: Option<Duration>) -> BoxFuture<'_, Option<Signal>> {
        let interrupt = self.sig_owner;
        let wait = self.sys.wait(Vec::new(), interrupt, d);
        Box::pin(async move {
            match wait.await {
                Waited::Signal => self.sys.take_signal(),
                _ => None,
            }
        })
    }

    fn take_signal(&mut self) -> Option<Signal> {
        if self.sig_owner {
            self.sys.take_signal()
        } else {
            None
        }
    }

    fn write(&mut self, stream: Stream, text: &str) {
        match stream {
            Stream::Stdout => self.out(text),
            Stream::Stderr => self.err(text),
        }
    }

    fn read(&mut self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move { self.io.stdin.read_some(&self.sys).await })
    }

    fn log_sink(&self) -> LogSink {
        self.sys.log_sink()
    }

    fn cpu_sink(&self) -> CpuSink {
        self.sys.cpu_sink()
    }

    fn network(&self) -> Arc<dyn Network> {
        self.sys.network()
    }

    fn listen(&mut self, port: u16, server: Arc<dyn Server>) {
        self.sys.listen(port, server);
    }

    fn set_memory(&mut self, bytes: u64) {
        self.sys.set_memory(bytes);
    }

    fn set_cpu(&mut self, millicores: u64) {
        self.sys.set_cpu(millicores);
    }
}
