//! Child processes: each component runs from a binary next to the launcher, with stdout and
//! stderr appended to `DATA_DIR/logs/COMPONENT.log`. A watcher task per child reports its exit;
//! stopping sends SIGTERM (through `kill(1)`: no unsafe code) and SIGKILL after a grace period.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::ClusterError;

/// A component that stopped on its own.
#[derive(Debug)]
pub struct Exit {
    pub name: String,
    pub status: Option<ExitStatus>,
}

/// A running component.
#[derive(Debug, Clone)]
pub struct Component {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
    /// The command line, to restart it by hand.
    pub command: String,
}

fn append(log: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
}

pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Start `program` as component `name`. With `first_line`, its first stdout line is returned
/// (the API server prints its address there) and the rest goes to the log.
pub async fn spawn(
    name: &str,
    program: &Path,
    args: &[String],
    log: &Path,
    first_line: bool,
    exits: mpsc::UnboundedSender<Exit>,
) -> Result<(Component, Option<String>), ClusterError> {
    let spawn_err = |source| ClusterError::Spawn {
        component: name.to_string(),
        source,
    };
    let stderr = append(log).map_err(spawn_err)?;
    let stdout = if first_line {
        Stdio::piped()
    } else {
        Stdio::from(append(log).map_err(spawn_err)?)
    };
    let mut child = Command::new(program)
        .args(args)
        // Every component is told its cluster with --master; a kubeconfig the user's shell
        // points at (perhaps one `rm -rf` removed) is not its business.
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_err)?;
    let pid = child.id().unwrap_or(0);
    let mut line = None;
    if let Some(out) = child.stdout.take() {
        let mut lines = BufReader::new(out).lines();
        line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        let log = log.to_path_buf();
        tokio::spawn(async move {
            let Ok(mut file) = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .await
            else {
                return;
            };
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = file.write_all(format!("{l}\n").as_bytes()).await;
            }
        });
    }
    let who = name.to_string();
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = exits.send(Exit { name: who, status });
    });
    let command = std::iter::once(program.display().to_string())
        .chain(args.iter().cloned())
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    Ok((
        Component {
            name: name.to_string(),
            pid,
            log: log.to_path_buf(),
            command,
        },
        line,
    ))
}

/// Send `signal` (`TERM`, `KILL`) to a process.
pub fn signal(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// How a process ended, as a person reads it.
pub fn describe(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            _ => "exited".into(),
        },
        None => "exited".into(),
    }
}

/// The last `n` lines of a log file.
pub fn tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The component that keeps the cluster's state (`tinykube up --etcd`): stopped after the rest,
/// so the API servers can still remove their leases on the way out.
pub const ETCD: &str = "etcd";

/// A running cluster's processes: the components in order of start, and those that exited.
pub struct Processes {
    pub components: Vec<Component>,
    pub exited: BTreeSet<String>,
}

impl Processes {
    pub fn find(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }

    /// Stop every component still running: SIGTERM, SIGKILL after 5 s; all of them but etcd
    /// first, then etcd.
    pub async fn stop(&mut self, exits: &mut mpsc::UnboundedReceiver<Exit>) {
        for last in [false, true] {
            let live: Vec<Component> = self
                .components
                .iter()
                .rev()
                .filter(|c| (c.name == ETCD) == last && !self.exited.contains(&c.name))
                .cloned()
                .collect();
            self.stop_these(&live, exits).await;
        }
    }

    async fn stop_these(&mut self, live: &[Component], exits: &mut mpsc::UnboundedReceiver<Exit>) {
        for c in live {
            signal(c.pid, "TERM");
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while live.iter().any(|c| !self.exited.contains(&c.name)) {
            match tokio::time::timeout_at(deadline, exits.recv()).await {
                Ok(Some(e)) => {
                    self.exited.insert(e.name);
                }
                _ => break,
            }
        }
        for c in live.iter().filter(|c| !self.exited.contains(&c.name)) {
            signal(c.pid, "KILL");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_describing() {
        let cases = [
            ("--nodes", "--nodes"),
            ("/d/nodes/{node}/manifests", "'/d/nodes/{node}/manifests'"),
            ("a b", "'a b'"),
            ("it's", r"'it'\''s'"),
            (
                "node-role.kubernetes.io/master=",
                "node-role.kubernetes.io/master=",
            ),
        ];
        for (arg, want) in cases {
            assert_eq!(shell_quote(arg), want);
        }
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            describe(Some(ExitStatus::from_raw(9))),
            "was killed by signal 9"
        );
        assert_eq!(
            describe(Some(ExitStatus::from_raw(1 << 8))),
            "exited with status 1"
        );
    }
}
