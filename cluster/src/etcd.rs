//! The local etcd of `tinykube up --etcd`: the `etcd` found on PATH (Debian's etcd-server; or
//! `$TINYKUBE_ETCD`), one member named `tinykube` with its data in `DATA_DIR/etcd` (mode 0700, as
//! etcd requires), client and peer URLs on free 127.0.0.1 ports, ready once `/health` says so.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The member's name (`--name`, `--initial-cluster NAME=URL`).
const MEMBER: &str = "tinykube";

/// The first executable `name` in the directories of `path` (a `PATH` value).
pub fn find_in(path: &OsStr, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The `etcd` to run: `$TINYKUBE_ETCD` (as the store's tests take it), else `etcd` on PATH.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TINYKUBE_ETCD").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    find_in(&std::env::var_os("PATH").unwrap_or_default(), "etcd")
}

/// A port on 127.0.0.1 that nothing listens on now.
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The client URL of a local etcd on `port`.
pub fn client_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// The etcd flags of a one-member cluster in `data` serving clients on `client` and its peer
/// port on `peer`. On a restart etcd reads its membership from `data` and the `--initial-*`
/// flags are ignored.
pub fn args(data: &Path, client: u16, peer: u16) -> Vec<String> {
    let client = client_url(client);
    let peer = format!("http://127.0.0.1:{peer}");
    vec![
        "--name".into(),
        MEMBER.into(),
        "--data-dir".into(),
        data.display().to_string(),
        "--listen-client-urls".into(),
        client.clone(),
        "--advertise-client-urls".into(),
        client,
        "--listen-peer-urls".into(),
        peer.clone(),
        "--initial-advertise-peer-urls".into(),
        peer.clone(),
        "--initial-cluster".into(),
        format!("{MEMBER}={peer}"),
        "--logger".into(),
        "zap".into(),
    ]
}

/// Create `data` readable by its owner only (etcd refuses a data dir others can read).
pub fn prepare(data: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data)?;
    std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700))
}

/// Whether an HTTP response from etcd's `/health` says it is healthy.
pub fn healthy(response: &str) -> bool {
    let ok = response
        .lines()
        .next()
        .is_some_and(|status| status.split(' ').nth(1) == Some("200"));
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    let health = serde_json::from_str::<serde_json::Value>(body.trim())
        .ok()
        .and_then(|v| v.get("health").cloned());
    ok && health == Some(serde_json::json!("true"))
}

/// Ask etcd on 127.0.0.1:`port` for `/health` once.
pub async fn check(port: u16) -> bool {
    let ask = async {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).await?;
        conn.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await?;
        let mut response = String::new();
        conn.read_to_string(&mut response).await?;
        Ok::<_, std::io::Error>(response)
    };
    match tokio::time::timeout(Duration::from_secs(2), ask).await {
        Ok(Ok(response)) => healthy(&response),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_on_path_only_when_executable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tinykube-find-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("etcd"), "not executable").unwrap();
        std::fs::write(b.join("etcd"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(b.join("etcd"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        let cases = [
            (path(&[&a, &b]), Some(b.join("etcd"))),
            (path(&[&a]), None),
            (path(&[&b, &a]), Some(b.join("etcd"))),
            (path(&[]), None),
        ];
        for (p, want) in cases {
            assert_eq!(find_in(&p, "etcd"), want, "{p:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn health_answers() {
        let cases = [
            (
                "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"health\":\"true\",\"reason\":\"\"}",
                true,
            ),
            (
                "HTTP/1.0 503 Service Unavailable\r\n\r\n{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}",
                false,
            ),
            ("HTTP/1.0 200 OK\r\n\r\n{\"health\":\"false\"}", false),
            ("HTTP/1.0 200 OK\r\n\r\nnot json", false),
            ("", false),
        ];
        for (response, want) in cases {
            assert_eq!(healthy(response), want, "{response}");
        }
    }

    #[test]
    fn one_member_on_loopback() {
        let args = args(Path::new("/d/etcd"), 2379, 2380).join(" ");
        assert_eq!(
            args,
            "--name tinykube --data-dir /d/etcd \
             --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
             --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
             --initial-cluster tinykube=http://127.0.0.1:2380 --logger zap"
        );
    }
}
