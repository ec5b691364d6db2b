//! The labs of `labs/` as tests: a page is parsed into files and commands, replayed against a
//! fresh `tinykube up` in a temporary directory, and every command's output is compared with
//! what the page shows. The page format is described in `labs/README.md`:
//!
//! - `<!-- lab-cluster: tinykube up FLAGS -->` once: the cluster the lab starts from (the harness
//!   adds `--port 0` and its own data dir, `./tinykube-data` of the lab's directory).
//! - a fenced block whose info string is `yaml file=NAME` (or any language) is written to `NAME`
//!   in the lab's directory at that point of the page;
//! - a fenced `console` block holds commands (`$ ` lines, continued by a trailing `\` or a
//!   heredoc) each followed by the output a student sees. Whitespace runs compare as one space;
//!   `...` inside a line stands for any text, and a line of just `...` for any number of lines.
//!   Commands that only read (`kubectl get`, `describe`, `events`, `logs`, `rollout history`,
//!   `cat`, `ls`) are retried until their output matches or a minute has passed, since a student
//!   who sees another state waits a moment and looks again; the others run exactly once.
//!
//! With `TINYKUBE_LAB_SHOW=1` every matching output is printed (a mismatch fails the test with
//! the output anyway), to write a page from a run.
//!
//! Commands run with `bash -c` in the lab's directory, with the tinykube binaries first on PATH
//! and KUBECONFIG set; each runs in its own process group, which is killed when the lab ends, so
//! a command may leave a process in the background (`tinykube-scheduler … &`).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// How long a read-only command is retried until its output matches.
const RETRY_FOR: Duration = Duration::from_secs(60);
/// How long any one command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// One thing a page does, in page order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write a file of the page into the lab's directory.
    File { name: String, text: String },
    /// Run a command and compare its output with the page.
    Command {
        line: usize,
        command: String,
        expected: Vec<String>,
    },
}

/// A parsed lab page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lab {
    /// Flags of `tinykube up` (after `up`).
    pub cluster: Vec<String>,
    pub steps: Vec<Step>,
}

/// Parse a lab page.
pub fn parse(page: &str) -> Result<Lab> {
    let mut cluster = None;
    let mut steps = Vec::new();
    let lines: Vec<&str> = page.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(rest) = line.strip_prefix("<!-- lab-cluster:") {
            let rest = rest.trim_end_matches("-->").trim();
            let flags = rest
                .strip_prefix("tinykube up")
                .ok_or_else(|| anyhow!("line {}: lab-cluster must be `tinykube up …`", i + 1))?;
            cluster = Some(flags.split_whitespace().map(str::to_string).collect());
            i += 1;
            continue;
        }
        let Some(info) = line.strip_prefix("```").filter(|s| !s.is_empty()) else {
            i += 1;
            continue;
        };
        let fence_line = i + 1;
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .ok_or_else(|| anyhow!("line {fence_line}: unclosed code block"))?;
        let body = &lines[i + 1..end];
        let mut words = info.split_whitespace();
        let language = words.next().unwrap_or_default();
        let file = words.find_map(|w| w.strip_prefix("file="));
        if let Some(name) = file {
            let mut text = body.join("\n");
            text.push('\n');
            steps.push(Step::File {
                name: name.to_string(),
                text,
            });
        } else if language == "console" {
            steps.extend(commands(body, fence_line + 1)?);
        }
        i = end + 1;
    }
    let cluster =
        cluster.ok_or_else(|| anyhow!("no `<!-- lab-cluster: tinykube up … -->` line"))?;
    Ok(Lab { cluster, steps })
}

/// The commands of a console block whose first line is line `first` of the page.
fn commands(body: &[&str], first: usize) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let Some(start) = body[i].strip_prefix("$ ") else {
            if body[i].trim().is_empty() {
                i += 1;
                continue;
            }
            bail!(
                "line {}: output before any command in a console block",
                first + i
            );
        };
        let line = first + i;
        let mut command = start.to_string();
        i += 1;
        // Continuations: a trailing backslash, then heredoc bodies.
        while command.ends_with('\\') && i < body.len() {
            command.push('\n');
            command.push_str(body[i]);
            i += 1;
        }
        if let Some(word) = heredoc_word(&command) {
            loop {
                let Some(l) = body.get(i) else {
                    bail!("line {line}: heredoc {word} is not closed");
                };
                command.push('\n');
                command.push_str(l);
                i += 1;
                if l.trim() == word {
                    break;
                }
            }
        }
        let mut expected = Vec::new();
        while i < body.len() && !body[i].starts_with("$ ") {
            expected.push(body[i].to_string());
            i += 1;
        }
        while expected.last().is_some_and(|l| l.trim().is_empty()) {
            expected.pop();
        }
        steps.push(Step::Command {
            line,
            command,
            expected,
        });
    }
    Ok(steps)
}

/// The delimiter of a `<<WORD`, `<<'WORD'` or `<<-WORD` heredoc in a command.
fn heredoc_word(command: &str) -> Option<String> {
    let at = command.find("<<")?;
    let rest = command[at + 2..].trim_start_matches('-').trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// One line with whitespace runs as one space, trimmed.
fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The literal pieces of a pattern between its `...` wildcards; in a longer run of dots the
/// last three are the wildcard (`10.244.3....` is `10.244.3.` then anything).
fn pieces(pattern: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut rest = pattern;
    while let Some(at) = rest.find("...") {
        let run = rest[at..].chars().take_while(|&c| c == '.').count();
        let last = pieces.last_mut().expect("never empty");
        last.push_str(&rest[..at]);
        last.push_str(&".".repeat(run - 3));
        pieces.push(String::new());
        rest = &rest[at + run..];
    }
    pieces.last_mut().expect("never empty").push_str(rest);
    pieces
}

/// Whether `actual` matches the glob `pattern` in which `...` stands for any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let pieces = pieces(pattern);
    if pieces.len() == 1 {
        return pattern == actual;
    }
    let (first, last) = (&pieces[0], &pieces[pieces.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last.as_str())
}

/// Whether the output lines match the page's lines (`...` lines stand for any lines).
pub fn output_matches(expected: &[String], actual: &str) -> bool {
    let want: Vec<String> = trim_blank(expected.iter().map(|l| squeeze(l)).collect());
    let got: Vec<String> = trim_blank(actual.lines().map(squeeze).collect());
    // memo[i][j]: want[i..] against got[j..] already known not to match.
    let mut failed = vec![vec![false; got.len() + 1]; want.len() + 1];
    fn go(want: &[String], got: &[String], i: usize, j: usize, failed: &mut [Vec<bool>]) -> bool {
        if failed[i][j] {
            return false;
        }
        let ok = if i == want.len() {
            j == got.len()
        } else if want[i] == "..." {
            (j..=got.len()).any(|k| go(want, got, i + 1, k, failed))
        } else {
            j < got.len() && line_matches(&want[i], &got[j]) && go(want, got, i + 1, j + 1, failed)
        };
        if !ok {
            failed[i][j] = true;
        }
        ok
    }
    go(&want, &got, 0, 0, &mut failed)
}

fn trim_blank(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let lead = lines.iter().take_while(|l| l.is_empty()).count();
    lines.drain(..lead);
    lines
}

/// Whether a command only reads, so that running it again is harmless.
fn read_only(command: &str) -> bool {
    const READERS: &[&str] = &[
        "kubectl get ",
        "kubectl describe ",
        "kubectl events",
        "kubectl logs ",
        "kubectl rollout history ",
        "kubectl top ",
        "cat ",
        "ls ",
    ];
    let c = command.trim_start();
    !c.contains(" -w") && !c.contains("--watch") && READERS.iter().any(|r| c.starts_with(r))
}

/// A lab being replayed: its directory, its `tinykube up` and the process groups it started.
struct Run {
    dir: tempfile::TempDir,
    up: Child,
    groups: Vec<u32>,
    path: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        for g in &self.groups {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{g}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.up.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.up.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.up.kill();
        let _ = self.up.wait();
    }
}

impl Run {
    fn start(cluster: &[String]) -> Result<Run> {
        let dir = tempfile::Builder::new().prefix("tinykube-lab").tempdir()?;
        let bin = crate::bin_dir();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // `TINYKUBE_TEST_STORAGE=etcd` replays every lab on etcd.
        let etcd: &[&str] = if crate::etcd_requested() {
            &["--etcd"]
        } else {
            &[]
        };
        let mut up = Command::new(crate::binary("tinykube"))
            .arg("up")
            .args(cluster)
            .args(etcd)
            .args(["--port", "0", "--data-dir", "tinykube-data"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("tinykube-up.err"))?)
            .spawn()
            .context("starting tinykube up")?;
        let mut lines = BufReader::new(up.stdout.take().expect("piped")).lines();
        let mut seen = Vec::new();
        let mut ready = false;
        for line in lines.by_ref() {
            let line = line?;
            ready |= line.starts_with("export KUBECONFIG=");
            let done = line.starts_with("Ctrl-C");
            seen.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        let run = Run {
            dir,
            up,
            groups: Vec::new(),
            path,
        };
        if !ready {
            let mut err = String::new();
            std::fs::File::open(run.dir.path().join("tinykube-up.err"))?
                .read_to_string(&mut err)?;
            bail!("tinykube up did not come up: {seen:?}\n{err}");
        }
        Ok(run)
    }

    /// Run one command to its end; its stdout and stderr together, as a terminal shows them.
    fn exec(&mut self, command: &str) -> Result<String> {
        let out_path = self.dir.path().join(".lab-output");
        let out = std::fs::File::create(&out_path)?;
        let dir = self.dir.path();
        let mut child = Command::new("bash")
            .args(["-c", command])
            .current_dir(dir)
            .env("PATH", &self.path)
            .env("KUBECONFIG", dir.join("tinykube-data/kubeconfig"))
            .env("KUBECACHEDIR", dir.join(".kube-cache"))
            .env("HOME", dir)
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn()?;
        self.groups.push(child.id());
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            if child.try_wait()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                bail!("`{command}` still running after {COMMAND_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(std::fs::read_to_string(&out_path)?)
    }
}

/// Replay the lab page at `path`; the error names the first command whose output differs.
pub fn replay(path: &Path) -> Result<()> {
    let page = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let lab = parse(&page).with_context(|| format!("{}", path.display()))?;
    let show = std::env::var_os("TINYKUBE_LAB_SHOW").is_some();
    let mut run = Run::start(&lab.cluster)?;
    for step in &lab.steps {
        match step {
            Step::File { name, text } => {
                let target: PathBuf = run.dir.path().join(name);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&target, text)?;
            }
            Step::Command {
                line,
                command,
                expected,
            } => {
                let retry_until = Instant::now() + RETRY_FOR;
                loop {
                    let output = run.exec(command)?;
                    if output_matches(expected, &output) {
                        if show {
                            eprintln!("{}:{line}\n$ {command}\n{output}", path.display());
                        }
                        break;
                    }
                    if !read_only(command) || Instant::now() > retry_until {
                        bail!(
                            "{}:{line}: `{command}` printed\n{output}\n--- but the page shows ---\n{}",
                            path.display(),
                            expected.join("\n")
                        );
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn pages_parse_into_files_and_commands() {
        let page = "# Lab\n<!-- lab-cluster: tinykube up --masters 1 -->\n\n```yaml file=pod.yaml\nkind: Pod\n```\n\n```sh\nnot run\n```\n\n```console\n$ kubectl apply -f pod.yaml\npod/x created\n\n$ cat > a.txt <<'EOF'\nhello\nEOF\n$ kubectl get pods \\\n    -o wide\nNAME ...\n```\n";
        let lab = parse(page).unwrap();
        assert_eq!(lab.cluster, vec!["--masters", "1"]);
        assert_eq!(
            lab.steps,
            vec![
                Step::File {
                    name: "pod.yaml".into(),
                    text: "kind: Pod\n".into()
                },
                Step::Command {
                    line: 13,
                    command: "kubectl apply -f pod.yaml".into(),
                    expected: lines("pod/x created"),
                },
                Step::Command {
                    line: 16,
                    command: "cat > a.txt <<'EOF'\nhello\nEOF".into(),
                    expected: vec![],
                },
                Step::Command {
                    line: 19,
                    command: "kubectl get pods \\\n    -o wide".into(),
                    expected: lines("NAME ..."),
                },
            ]
        );
        assert!(parse("no cluster").is_err());
        assert!(parse("<!-- lab-cluster: tinykube up -->\n```console\n$ x\n").is_err());
        assert!(parse("<!-- lab-cluster: tinykube up -->\n```console\noutput\n```\n").is_err());
    }

    #[test]
    fn outputs_compare_with_elisions() {
        let table = "NAME      STATUS   AGE\nworker0   Ready    12s\nworker1   Ready    3m\n";
        assert!(output_matches(
            &lines("NAME STATUS AGE\nworker0 Ready ...\nworker1 Ready ..."),
            table
        ));
        assert!(output_matches(&lines("NAME STATUS AGE\n..."), table));
        assert!(output_matches(&lines("...\nworker1 Ready ..."), table));
        assert!(!output_matches(
            &lines("NAME STATUS AGE\nworker0 Ready ..."),
            table
        ));
        assert!(!output_matches(
            &lines("...\nworker0 NotReady ...\n..."),
            table
        ));
        assert!(output_matches(
            &lines("pod/web-...-... evicted"),
            "pod/web-7d9c-x2 evicted\n"
        ));
        assert!(!output_matches(
            &lines("pod/web-...-... evicted"),
            "pod/web evicted\n"
        ));
        assert!(output_matches(&[], "\n"));
        assert!(!output_matches(&[], "something\n"));
        assert!(line_matches("a...b...c", "aXbYc"));
        assert!(!line_matches("a...b...c", "aXcYb"));
        assert!(!line_matches("ab...ba", "aba"));
        assert!(line_matches("10.244.3.... worker2", "10.244.3.17 worker2"));
        assert!(!line_matches("10.244.3.... worker2", "10.244.33 worker2"));
        assert!(line_matches(
            "continuing command...",
            "continuing command..."
        ));
    }

    #[test]
    fn only_readers_are_retried() {
        assert!(read_only("kubectl get pods -o wide"));
        assert!(read_only("kubectl describe pod x"));
        assert!(!read_only("kubectl get pods -w"));
        assert!(!read_only("kubectl delete pod x"));
        assert!(!read_only("kubectl apply -f x.yaml"));
    }
}
