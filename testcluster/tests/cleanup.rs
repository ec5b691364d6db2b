//! A test that panics with a cluster running leaves nothing behind: the test binary runs one
//! of its own tests as a child process (which starts a cluster in a directory it is given,
//! reports the cluster's port and panics), then checks that the directory is empty, the port
//! closed, and that the child exited on its own. The crate starts no process, so a cluster
//! can only leave threads behind, and they end with the process.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use tinykube_testcluster::TestCluster;

const CHILD: &str = "TINYKUBE_TESTCLUSTER_PANIC_IN";

/// The child's part: start a cluster under `$CHILD`, print its port, panic. Run without the
/// variable, as in any ordinary `cargo test`, it checks the same with a clean drop instead.
#[tokio::test]
async fn panicking_with_a_cluster() {
    let parent = match std::env::var(CHILD) {
        Ok(dir) => dir.into(),
        Err(_) => tempfile::tempdir().unwrap().keep(),
    };
    let cluster = TestCluster::builder()
        .temp_dir_in(&parent)
        .start()
        .await
        .unwrap();
    let port = cluster.server_url().rsplit(':').next().unwrap().to_string();
    println!("PORT {port}");
    assert!(cluster.data_dir().starts_with(&parent));
    if std::env::var(CHILD).is_ok() {
        panic!("a failing assertion with the cluster running");
    }
    drop(cluster);
    assert_eq!(
        std::fs::read_dir(&parent).unwrap().count(),
        0,
        "the data is removed"
    );
    assert!(TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err());
    std::fs::remove_dir(parent).unwrap();
}

#[test]
fn a_panicking_test_leaves_no_file_and_no_listener() {
    let parent = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "panicking_with_a_cluster",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, parent.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let port: u16 = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("PORT ").map(|p| p.trim().parse().unwrap()))
        .expect("the child started a cluster");
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "the child test failed as it should");
    assert!(
        err.contains("a failing assertion with the cluster running"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on the cluster's port any more"
    );
}
