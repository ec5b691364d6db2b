//! What every tinykube binary does around its real work, done one way: flags whose errors are
//! one line, logs on stderr, Go-style durations in flags, and a shutdown token that SIGTERM or
//! Ctrl-C cancels.

use std::fmt::Display;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Parse the command line; a bad flag is one line on stderr (`PROGRAM: message`) and exit code
/// 2, while `--help` and `--version` print as clap does.
pub fn parse<F: clap::Parser>(program: &str) -> F {
    match F::try_parse() {
        Ok(flags) => flags,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            exit(program, 2, first.trim_start_matches("error: "))
        }
    }
}

/// Print `PROGRAM: message` on stderr and exit with `code`.
pub fn exit(program: &str, code: i32, message: impl Display) -> ! {
    eprintln!("{program}: {message}");
    std::process::exit(code)
}

/// Log to stderr at `default_level` unless `RUST_LOG` says otherwise, as JSON lines when
/// `json`; colours only on a terminal.
pub fn init_logging(default_level: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// A clap value parser for Go durations (`500ms`, `20s`, `5m`, `1h30m`).
pub fn go_duration(s: &str) -> Result<Duration, String> {
    tinykube_proto::duration::parse(s).map_err(|e| e.to_string())
}

/// A duration flag whose default is a constant: parsed as a Go duration, shown in `--help` as
/// Go writes it (`15s`, `1m30s`, `500ms`), so `default_value_t = GoDuration(CONST)` keeps the
/// default in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl std::str::FromStr for GoDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        go_duration(s).map(GoDuration)
    }
}

impl Display for GoDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        if ms == 0 {
            return write!(f, "0s");
        }
        if !ms.is_multiple_of(1000) {
            return write!(f, "{ms}ms");
        }
        let secs = ms / 1000;
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            write!(f, "{h}h{m}m{s}s")
        } else if m > 0 {
            write!(f, "{m}m{s}s")
        } else {
            write!(f, "{s}s")
        }
    }
}

/// A token cancelled by the first SIGTERM or Ctrl-C. The SIGTERM handler is installed before
/// this returns, so a signal right after start-up still stops the program cleanly. Must be
/// called inside a Tokio runtime.
pub fn shutdown_on_signal() -> CancellationToken {
    let shutdown = CancellationToken::new();
    let cancel = shutdown.clone();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        let sigterm = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = sigterm => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        cancel.cancel();
    });
    shutdown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_flags_take_them() {
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(go_duration("soon")
            .unwrap_err()
            .contains("invalid duration"));
    }

    #[tokio::test]
    async fn sigterm_cancels_the_token() {
        let token = shutdown_on_signal();
        assert!(!token.is_cancelled());
        std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), token.cancelled())
            .await
            .expect("cancelled by SIGTERM");
    }

    #[test]
    fn go_durations_print_as_go_writes_them_and_parse_back() {
        let cases = [
            (Duration::from_secs(15), "15s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::ZERO, "0s"),
        ];
        for (d, text) in cases {
            assert_eq!(GoDuration(d).to_string(), text);
            assert_eq!(text.parse::<GoDuration>(), Ok(GoDuration(d)), "{text}");
        }
    }
}
