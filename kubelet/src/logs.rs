//! Container logs as the kubelet keeps them: per container, the lines of its current run and
//! of the run before (`kubectl logs --previous`), each line with its time and stream, bounded
//! in bytes (the oldest lines go first, as log rotation drops old files), and a broadcast of
//! new lines for followers (`kubectl logs -f`), closed when the run ends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tinykube_runtime::Stream;
use tokio::sync::broadcast;

/// Bytes of one run's log kept in memory (older lines are dropped first), each line counted
/// with what keeping it costs besides its text.
pub const MAX_RUN_BYTES: usize = 256 * 1024;
/// What a kept line costs besides its text: its record, the string's allocation.
const LINE_OVERHEAD: usize = 64;

/// One line a container wrote (without its newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at: SystemTime,
    pub stream: Stream,
    pub text: String,
}

/// The log of one run of a container.
#[derive(Debug, Default)]
pub struct RunLog {
    lines: VecDeque<LogLine>,
    bytes: usize,
    /// A line written without its newline yet, per stream.
    partial: [String; 2],
    /// New lines for followers, made when the first one comes (its buffer is most of a
    /// quiet container's memory otherwise).
    tx: Option<broadcast::Sender<LogLine>>,
    /// What the process writes, as it writes it (partial lines included), for `attach`.
    tap: Option<broadcast::Sender<(Stream, String)>>,
    ended: bool,
}

/// Lines a slow follower may fall behind by.
const FOLLOW_BUFFER: usize = 256;

impl RunLog {
    /// The lines kept, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &LogLine> {
        self.lines.iter()
    }

    /// Whether the run has ended (a follower stops after the lines it has).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Receive the lines written from now on; `None` when the run has ended.
    pub fn subscribe(&mut self) -> Option<broadcast::Receiver<LogLine>> {
        if self.ended {
            return None;
        }
        let tx = self
            .tx
            .get_or_insert_with(|| broadcast::channel(FOLLOW_BUFFER).0);
        Some(tx.subscribe())
    }

    fn push(&mut self, line: LogLine) {
        self.bytes += line.text.len() + LINE_OVERHEAD;
        if let Some(tx) = &self.tx {
            if tx.send(line.clone()).is_err() {
                // Every follower has gone: drop the buffer until the next one.
                self.tx = None;
            }
        }
        self.lines.push_back(line);
        while self.bytes > MAX_RUN_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.text.len() + LINE_OVERHEAD,
                None => break,
            }
        }
    }

    /// Receive what the process writes from now on, as it writes it; `None` when the run has
    /// ended.
    pub fn tap(&mut self) -> Option<broadcast::Receiver<(Stream, String)>> {
        if self.ended {
            return None;
        }
        let tx = self
            .tap
            .get_or_insert_with(|| broadcast::channel(FOLLOW_BUFFER).0);
        Some(tx.subscribe())
    }

    /// Append what a process wrote: complete lines are kept, the rest waits for its newline.
    pub fn write(&mut self, at: SystemTime, stream: Stream, text: &str) {
        if let Some(tap) = &self.tap {
            if tap.send((stream, text.to_string())).is_err() {
                self.tap = None;
            }
        }
        let slot = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        self.partial[slot].push_str(text);
        while let Some(i) = self.partial[slot].find('\n') {
            let rest = self.partial[slot].split_off(i + 1);
            let mut line = std::mem::replace(&mut self.partial[slot], rest);
            line.pop();
            self.push(LogLine {
                at,
                stream,
                text: line,
            });
        }
    }

    /// The run ended: a pending partial line is kept, followers are told.
    pub fn end(&mut self, at: SystemTime) {
        for (slot, stream) in [(0, Stream::Stdout), (1, Stream::Stderr)] {
            let text = std::mem::take(&mut self.partial[slot]);
            if !text.is_empty() {
                self.push(LogLine { at, stream, text });
            }
        }
        self.tx = None;
        self.tap = None;
        self.ended = true;
    }
}

/// The logs of one container: its current run and the one before.
#[derive(Debug, Default)]
pub struct ContainerLogs {
    pub current: RunLog,
    pub previous: Option<RunLog>,
}

impl ContainerLogs {
    /// A new run starts (a restart): the current log becomes the previous one.
    pub fn restart(&mut self, at: SystemTime) {
        let mut old = std::mem::take(&mut self.current);
        if !old.ended() {
            old.end(at);
        }
        self.previous = Some(old);
    }
}

/// A shared handle on a container's logs.
#[derive(Debug, Clone, Default)]
pub struct LogHandle(Arc<Mutex<ContainerLogs>>);

impl LogHandle {
    pub fn lock(&self) -> MutexGuard<'_, ContainerLogs> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_partials_previous_and_bounds() {
        let t = SystemTime::UNIX_EPOCH;
        let h = LogHandle::default();
        let mut follower = h.lock().current.subscribe().unwrap();
        h.lock().current.write(t, Stream::Stdout, "0: a\n1: ");
        h.lock().current.write(t, Stream::Stdout, "b\n2");
        let texts: Vec<String> = h.lock().current.lines().map(|l| l.text.clone()).collect();
        assert_eq!(texts, ["0: a", "1: b"]);
        assert_eq!(follower.try_recv().unwrap().text, "0: a");
        h.lock().restart(t);
        assert_eq!(follower.try_recv().unwrap().text, "1: b");
        assert_eq!(follower.try_recv().unwrap().text, "2");
        assert!(matches!(
            follower.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        let logs = h.lock();
        let prev: Vec<&str> = logs
            .previous
            .as_ref()
            .unwrap()
            .lines()
            .map(|l| l.text.as_str())
            .collect();
        assert_eq!(prev, ["0: a", "1: b", "2"]);
        assert_eq!(logs.current.lines().count(), 0);
        drop(logs);
        let big = "x".repeat(1000);
        for _ in 0..1000 {
            h.lock()
                .current
                .write(t, Stream::Stderr, &format!("{big}\n"));
        }
        let n = h.lock().current.lines().count();
        assert!(n < 260 && n > 200, "{n}");
    }
}
