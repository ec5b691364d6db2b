//! The command-line contract: a bad flag is one line on stderr and a non-zero exit; SIGTERM
//! stops the server cleanly.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tinykube_tests::binary;

#[test]
fn bad_flags_get_one_line_and_a_failure() {
    for args in [vec!["--bogus"], vec!["--listen", "nope"]] {
        let out = Command::new(binary("tinykube-apiserver"))
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("tinykube-apiserver: "), "{err}");
    }
    let help = Command::new(binary("tinykube-apiserver"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--data-dir"));
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary("tinykube-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains("listening on http://127.0.0.1:"), "{first}");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
