//! A student at a terminal: a kubectl command run in a pseudo-terminal (util-linux `script`),
//! keys typed into it once it has the terminal, and the screen it leaves.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::ApiServer;

/// The logging page's counter pod (bound to `worker0`): a numbered line with the date each
/// second, for `kubectl logs -f` and `kubectl attach`.
pub const COUNTER: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: counter
spec:
  nodeName: worker0
  containers:
  - name: count
    image: busybox:1.28
    args: [/bin/sh, -c,
            'i=0; while true; do echo "$i: $(date)"; i=$((i+1)); sleep 1; done']
"#;

/// Run `command` in a pseudo-terminal with `env` set, type `keys` after `wait` seconds (0.7 s
/// apart): the screen (without carriage returns) and the exit status.
pub fn type_into(
    server: &ApiServer,
    command: &str,
    keys: &'static [&'static str],
    wait: u64,
    env: &[(&str, &str)],
) -> (String, ExitStatus) {
    let mut term = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env("KUBECONFIG", server.kubeconfig())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    let mut stdin = term.stdin.take().unwrap();
    let typing = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(wait));
        for k in keys {
            let _ = stdin.write_all(k.as_bytes());
            let _ = stdin.flush();
            std::thread::sleep(Duration::from_millis(700));
        }
        std::thread::sleep(Duration::from_secs(3));
    });
    let mut out = String::new();
    term.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = term.wait().unwrap();
    typing.join().unwrap();
    (out.replace('\r', ""), status)
}
