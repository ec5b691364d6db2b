//! `/healthz` and Prometheus `/metrics`: scheduling attempts by result, attempt latency, and
//! pending pods by queue, served by the client crate's minimal HTTP/1.1 responder.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tinykube_client::endpoint::{self, Reply};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: &[f64] = &[
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192, 16.384,
];

/// How an attempt ended.
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    Scheduled,
    Unschedulable,
    Error,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Scheduled => "scheduled",
            Outcome::Unschedulable => "unschedulable",
            Outcome::Error => "error",
        }
    }
}

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    total: u64,
}

#[derive(Default)]
pub struct Metrics {
    attempts: [AtomicU64; 3],
    latency: Mutex<[Histogram; 3]>,
}

impl Metrics {
    pub fn observe(&self, outcome: Outcome, took: Duration) {
        let i = outcome as usize;
        self.attempts[i].fetch_add(1, Ordering::Relaxed);
        let mut h = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let h = &mut h[i];
        if h.counts.is_empty() {
            h.counts = vec![0; BUCKETS.len()];
        }
        let secs = took.as_secs_f64();
        for (b, c) in BUCKETS.iter().zip(h.counts.iter_mut()) {
            if secs <= *b {
                *c += 1;
            }
        }
        h.sum += secs;
        h.total += 1;
    }

    /// The exposition text; `pending` is (active, backoff, unschedulable).
    pub fn render(&self, profile: &str, pending: (usize, usize, usize)) -> String {
        let mut out = String::new();
        let outcomes = [Outcome::Scheduled, Outcome::Unschedulable, Outcome::Error];
        out.push_str("# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods, by the result.\n");
        out.push_str("# TYPE scheduler_schedule_attempts_total counter\n");
        for o in outcomes {
            let n = self.attempts[o as usize].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "scheduler_schedule_attempts_total{{profile=\"{profile}\",result=\"{}\"}} {n}",
                o.label()
            );
        }
        out.push_str("# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds (scheduling algorithm + binding).\n");
        out.push_str("# TYPE scheduler_scheduling_attempt_duration_seconds histogram\n");
        let hist = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        for o in outcomes {
            let h = &hist[o as usize];
            let labels = format!("profile=\"{profile}\",result=\"{}\"", o.label());
            for (i, b) in BUCKETS.iter().enumerate() {
                let c = h.counts.get(i).copied().unwrap_or(0);
                let _ = writeln!(out, "scheduler_scheduling_attempt_duration_seconds_bucket{{{labels},le=\"{b}\"}} {c}");
            }
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.total
            );
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_count{{{labels}}} {}",
                h.total
            );
        }
        out.push_str("# HELP scheduler_pending_pods Number of pending pods, by the queue type.\n");
        out.push_str("# TYPE scheduler_pending_pods gauge\n");
        for (queue, n) in [
            ("active", pending.0),
            ("backoff", pending.1),
            ("unschedulable", pending.2),
        ] {
            let _ = writeln!(out, "scheduler_pending_pods{{queue=\"{queue}\"}} {n}");
        }
        out
    }
}

/// Serve `/healthz` and `/metrics` on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    shutdown: CancellationToken,
) {
    let route = move |path: &str| match path.split('?').next().unwrap_or("") {
        "/healthz" | "/livez" | "/readyz" => Reply::healthy(),
        "/metrics" => Reply::ok("text/plain; version=0.0.4; charset=utf-8", render()),
        _ => Reply::not_found(),
    };
    endpoint::serve(listener, route, shutdown).await
}

/// Bind the health and metrics endpoint.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.observe(Outcome::Scheduled, Duration::from_millis(3));
        m.observe(Outcome::Unschedulable, Duration::from_millis(40));
        let text = m.render("default-scheduler", (1, 2, 3));
        assert!(text.contains("scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1\n"));
        assert!(text.contains("scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"default-scheduler\",result=\"scheduled\",le=\"0.004\"} 1\n"));
        assert!(text.contains("scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"default-scheduler\",result=\"scheduled\",le=\"0.002\"} 0\n"));
        assert!(text.contains("scheduler_pending_pods{queue=\"unschedulable\"} 3\n"));
    }
}
