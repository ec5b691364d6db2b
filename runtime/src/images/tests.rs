//! Table tests of the image table: reference matching, ENTRYPOINT/CMD, and each family's
//! programs driven on a fake host with virtual time.

use std::time::Duration;

use super::testing::{container, run, FakeHost};
use super::*;
use crate::{Stream, Volume};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn references_match_by_repository() {
    let cases = [
        ("nginx", "nginx", ""),
        ("nginx:1.14.2", "nginx", "1.14.2"),
        ("docker.io/library/nginx@sha256:0123abcd", "nginx", ""),
        (
            "docker.io/library/nginx:1.25@sha256:0123abcd",
            "nginx",
            "1.25",
        ),
        ("library/busybox:1.28", "busybox", "1.28"),
        (
            "registry.k8s.io/e2e-test-images/agnhost:2.40",
            "e2e-test-images/agnhost",
            "2.40",
        ),
        ("k8s.gcr.io/pause:3.9", "pause", "3.9"),
        ("localhost:5000/myapp:v1", "myapp", "v1"),
        ("polinux/stress", "polinux/stress", ""),
        (
            "gcr.io/google_containers/liveness",
            "google_containers/liveness",
            "",
        ),
    ];
    for (image, repo, tag) in cases {
        assert_eq!(parse_reference(image), Reference { repo, tag }, "{image}");
    }
    let rows = [
        ("docker.io/library/nginx@sha256:0123", Some("nginx")),
        (
            "registry.k8s.io/e2e-test-images/agnhost:2.40",
            Some("e2e-test-images/agnhost"),
        ),
        (
            "k8s.gcr.io/e2e-test-images/agnhost:2.39",
            Some("e2e-test-images/agnhost"),
        ),
        ("registry.k8s.io/liveness", Some("liveness")),
        ("registry.k8s.io/goproxy:0.1", Some("goproxy")),
        ("registry.k8s.io/pause:3.10", Some("pause")),
        ("vish/stress", Some("vish/stress")),
        ("bitnami/nginx", None),
        ("myapp:latest", None),
    ];
    for (image, want) in rows {
        assert_eq!(lookup(image).map(|r| r.repos[0]), want, "{image}");
    }
}

#[test]
fn argv_follows_entrypoint_and_cmd() {
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], Option<&'a [&'a str]>);
    let cases: &[Case] = &[
        ("busybox", &[], &[], Some(&["sh"])),
        ("busybox", &[], &["sleep", "3600"], Some(&["sleep", "3600"])),
        (
            "busybox",
            &["sh", "-c"],
            &["echo hi"],
            Some(&["sh", "-c", "echo hi"]),
        ),
        ("ubuntu", &[], &[], Some(&["/bin/bash"])),
        (
            "nginx",
            &[],
            &[],
            Some(&["/docker-entrypoint.sh", "nginx", "-g", "daemon off;"]),
        ),
        (
            "nginx",
            &[],
            &["nginx-debug"],
            Some(&["/docker-entrypoint.sh", "nginx-debug"]),
        ),
        // A command drops the image's CMD even without args.
        ("nginx", &["nginx"], &[], Some(&["nginx"])),
        (
            "registry.k8s.io/e2e-test-images/agnhost:2.40",
            &[],
            &["liveness"],
            Some(&["/agnhost", "liveness"]),
        ),
        (
            "registry.k8s.io/e2e-test-images/agnhost:2.40",
            &[],
            &[],
            Some(&["/agnhost", "pause"]),
        ),
        (
            "vish/stress",
            &[],
            &["-cpus", "2"],
            Some(&["/stress", "-logtostderr", "-cpus", "2"]),
        ),
        ("myapp", &[], &["--port", "80"], None),
        ("myapp", &["sleep"], &["3600"], Some(&["sleep", "3600"])),
    ];
    for (image, command, args, want) in cases {
        let c = container(image, command, args);
        let want: Option<Vec<String>> = want.map(|w| w.iter().map(|s| s.to_string()).collect());
        assert_eq!(argv(&c), want, "{image} {command:?} {args:?}");
    }
}

#[test]
fn builtins_by_basename() {
    let cases = [
        ("nginx:1.25", "nginx", true),
        ("nginx:1.25", "/usr/sbin/nginx", true),
        ("nginx:1.25", "/docker-entrypoint.sh", true),
        ("busybox", "nginx", false),
        (
            "registry.k8s.io/e2e-test-images/agnhost:2.40",
            "/agnhost",
            true,
        ),
        ("polinux/stress", "stress", true),
        ("polinux/stress", "sleep", false),
        ("myapp", "myapp", false),
    ];
    for (image, program, want) in cases {
        assert_eq!(builtin(image, program).is_some(), want, "{image} {program}");
    }
}

#[test]
fn root_trees() {
    let cases = [
        ("busybox", "/bin/sh", true),
        ("busybox", "/etc/passwd", true),
        ("nginx", "/usr/share/nginx/html/index.html", true),
        ("nginx", "/etc/nginx/conf.d/default.conf", true),
        ("nginx:alpine", "/etc/alpine-release", true),
        ("registry.k8s.io/pause:3.10", "/bin/sh", false),
        ("registry.k8s.io/pause:3.10", "/pause", true),
        ("httpd:2.4", "/usr/local/apache2/htdocs/index.html", true),
        ("myapp", "/bin/sh", true),
        ("alpine:3.20", "/etc/hosts", false),
    ];
    for (image, path, want) in cases {
        assert_eq!(crate::root_fs(image).exists(path), want, "{image} {path}");
    }
    let index = crate::root_fs("nginx").read("/usr/share/nginx/html/index.html");
    assert_eq!(index.unwrap().len(), 615);
}

#[test]
fn nginx_serves_files_and_logs_requests() {
    let shared = Volume::empty();
    let mut fs = crate::root_fs("nginx:1.27.3");
    let mut host = FakeHost::new().term_at(secs(60));
    let c = container("nginx:1.27.3", &[], &[]);
    assert_eq!(run(&c, Some(fs.clone()), &mut host), 0);

    let stdout = host.text(Stream::Stdout);
    assert!(stdout.contains("/docker-entrypoint.sh: Configuration complete; ready for start up\n"));
    assert!(stdout.contains("10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6"));
    let stderr = host.text(Stream::Stderr);
    assert!(stderr.contains("2026/11/25 00:36:22 [notice] 1#1: nginx/1.27.3\n"));
    assert!(stderr.contains("[notice] 1#1: start worker processes\n"));
    assert!(stderr.contains("2026/11/25 00:37:22 [notice] 1#1: signal 3 (SIGQUIT) received"));
    assert!(stderr.ends_with("[notice] 1#1: exit\n"));

    // The welcome page, a file from a volume mounted over the html directory, and errors.
    let welcome = host.get(80, "/", secs(1));
    assert_eq!((welcome.status, welcome.body.len()), (200, 615));
    fs.mount("/usr/share/nginx/html", shared.clone(), false);
    let mut host2 = FakeHost::new().term_at(secs(60));
    run(&c, Some(fs.clone()), &mut host2);
    assert_eq!(host2.get(80, "/", secs(1)).status, 403);
    fs.write(
        "/usr/share/nginx/html/index.html",
        b"hello from the volume\n",
        false,
    )
    .unwrap();
    fs.mkdir("/usr/share/nginx/html/docs", false).unwrap();
    let cases: &[(&str, u16, &str)] = &[
        ("/", 200, "hello from the volume\n"),
        ("/index.html", 200, "hello from the volume\n"),
        ("/docs/", 403, "<title>403 Forbidden</title>"),
        ("/docs", 301, "301 Moved Permanently"),
        ("/missing", 404, "<center>nginx/1.27.3</center>"),
    ];
    for (path, status, body) in cases {
        let r = host2.get(80, path, secs(2));
        let text = String::from_utf8(r.body).unwrap();
        assert_eq!(r.status, *status, "{path}");
        assert!(text.contains(body), "{path}: {text}");
    }
    let page_404 = host2.get(80, "/missing", secs(2));
    assert!(String::from_utf8(page_404.body)
        .unwrap()
        .starts_with("<html>\r\n<head><title>404 Not Found</title></head>\r\n"));
    let stdout = host2.text(Stream::Stdout);
    assert!(
        stdout.contains(
            "10.244.0.1 - - [25/Nov/2026:00:36:24 +0000] \"GET / HTTP/1.1\" 200 22 \"-\" \"kube-probe/1.32\" \"-\"\n"
        ),
        "{stdout}"
    );
    assert!(host2.text(Stream::Stderr).contains(
        "open() \"/usr/share/nginx/html/missing\" failed (2: No such file or directory)"
    ));
}

#[test]
fn nginx_variants() {
    // Without `daemon off;` nginx daemonizes and the container's process ends.
    let mut host = FakeHost::new();
    assert_eq!(
        run(&container("nginx", &["nginx"], &[]), None, &mut host),
        0
    );
    assert!(host.servers.is_empty());
    // A ConfigMap's default.conf: the entrypoint leaves it alone and nginx listens where it says.
    let mut fs = crate::root_fs("nginx");
    let conf = Volume::from_files([(
        "default.conf",
        b"server {\n listen 8080;\n root /usr/share/nginx/html;\n}\n".to_vec(),
    )]);
    fs.mount("/etc/nginx/conf.d", conf, true);
    let mut host = FakeHost::new().term_at(secs(5));
    assert_eq!(run(&container("nginx", &[], &[]), Some(fs), &mut host), 0);
    assert!(host
        .text(Stream::Stdout)
        .contains("differs from the packaged version"));
    assert_eq!(host.servers.keys().copied().collect::<Vec<_>>(), [8080]);
    // The httpd image.
    let mut host = FakeHost::new().term_at(secs(5));
    assert_eq!(
        run(&container("httpd:2.4.62", &[], &[]), None, &mut host),
        0
    );
    let r = host.get(80, "/", secs(1));
    assert_eq!(r.body, b"<html><body><h1>It works!</h1></body></html>\n");
    assert_eq!(host.get(80, "/nope", secs(1)).status, 404);
    let out = host.text(Stream::Stdout);
    assert!(out.contains("\"GET / HTTP/1.1\" 200 45\n"), "{out}");
    let err = host.text(Stream::Stderr);
    assert!(
        err.contains("AH00489: Apache/2.4.62 (Unix) configured"),
        "{err}"
    );
    assert!(err.contains("AH00492: caught SIGWINCH, shutting down gracefully"));
}

#[test]
fn agnhost_liveness_fails_after_ten_seconds() {
    for image in [
        "registry.k8s.io/e2e-test-images/agnhost:2.40",
        "registry.k8s.io/liveness",
    ] {
        let args: &[&str] = if image.contains("agnhost") {
            &["liveness"]
        } else {
            &[]
        };
        let mut host = FakeHost::new().term_at(secs(30));
        assert_eq!(run(&container(image, &[], args), None, &mut host), 143);
        let cases: &[(u64, u16, &str)] = &[(5, 200, "ok"), (10, 200, "ok"), (11, 500, "error: 11")];
        for (at, status, body) in cases {
            let r = host.get(8080, "/healthz", secs(*at));
            assert_eq!(
                (r.status, r.body.as_slice()),
                (*status, body.as_bytes()),
                "{image} {at}"
            );
        }
        let r = host.get(8080, "/healthz", Duration::from_millis(10_500));
        assert_eq!(r.body, b"error: 10.5");
        assert_eq!(host.get(8080, "/started", secs(3)).body, b"3s");
    }
}

#[test]
fn agnhost_subcommands() {
    let agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.40";
    // netexec
    let mut host = FakeHost::new().term_at(secs(10));
    let c = container(agnhost, &[], &["netexec", "--http-port=8081"]);
    assert_eq!(run(&c, None, &mut host), 143);
    let cases: &[(&str, u16, &str)] = &[
        ("/hostname", 200, "web-0"),
        ("/echo?msg=hello%20there", 200, "hello there"),
        ("/echo?msg=x&code=503", 503, "x"),
        ("/healthz", 200, ""),
        ("/clientip", 200, "10.244.0.1:40000"),
        (
            "/dial?request=hostname&protocol=http&host=10.244.1.7&port=8080&tries=1",
            200,
            r#"{"errors":["Get \"http://10.244.1.7:8080/hostname\": dial tcp 10.244.1.7:8080: connect: connection refused"]}"#,
        ),
    ];
    for (path, status, body) in cases {
        let r = host.get(8081, path, secs(1));
        assert_eq!(
            (r.status, r.body.as_slice()),
            (*status, body.as_bytes()),
            "{path}"
        );
    }
    let now = host.get(8081, "/", secs(1));
    assert!(String::from_utf8(now.body)
        .unwrap()
        .starts_with("NOW: 2026-11-25 00:36:23 +0000 UTC"));
    assert!(host
        .text(Stream::Stderr)
        .contains("Started HTTP server on port 8081\n"));

    // serve-hostname: the hostname on 9376; after SIGTERM it waits 60 s for deletion.
    let mut host = FakeHost::new().term_at(secs(10));
    assert_eq!(
        run(
            &container(agnhost, &[], &["serve-hostname"]),
            None,
            &mut host
        ),
        0
    );
    assert_eq!(host.get(9376, "/", secs(1)).body, b"web-0");
    assert_eq!(host.now, testing::t0() + secs(70));

    // pause exits 2 on SIGTERM, as upstream's os.Exit(2).
    let mut host = FakeHost::new().term_at(secs(3));
    assert_eq!(run(&container(agnhost, &[], &[]), None, &mut host), 2);
    assert_eq!(host.text(Stream::Stdout), "Paused\n");

    // grpc-health-checking: SERVING, then NOT_SERVING after the delay.
    let mut host = FakeHost::new().term_at(secs(20));
    let args = ["grpc-health-checking", "--delay-unhealthy-sec", "5"];
    run(&container(agnhost, &[], &args), None, &mut host);
    let grpc = host.servers[&5000].clone();
    assert_eq!(grpc.grpc_health(""), Some(false));
    assert_eq!(host.servers[&8080].grpc_health(""), None);
    let mut host = FakeHost::new().term_at(secs(20));
    run(
        &container(agnhost, &[], &["grpc-health-checking"]),
        None,
        &mut host,
    );
    assert_eq!(host.servers[&5000].grpc_health(""), Some(true));
    assert_eq!(host.get(8080, "/make-not-serving", secs(1)).status, 200);
    assert_eq!(host.servers[&5000].grpc_health(""), Some(false));

    // porter serves its variables' values.
    let mut c = container(agnhost, &[], &["porter"]);
    c.env.push(("SERVE_PORT_9001".into(), "foo".into()));
    let mut host = FakeHost::new().term_at(secs(1));
    run(&c, None, &mut host);
    assert_eq!(host.get(9001, "/", secs(1)).body, b"foo");

    // test-webserver serves the container's files.
    let mut host = FakeHost::new().term_at(secs(1));
    run(
        &container(agnhost, &[], &["test-webserver"]),
        None,
        &mut host,
    );
    assert_eq!(
        host.get(80, "/etc/alpine-release", secs(1)).body,
        b"3.21.0\n"
    );
    assert_eq!(host.get(80, "/nope", secs(1)).status, 404);

    // An unknown subcommand fails as cobra does.
    let mut host = FakeHost::new();
    assert_eq!(
        run(&container(agnhost, &[], &["bogus"]), None, &mut host),
        1
    );
    assert!(host
        .text(Stream::Stderr)
        .starts_with("Error: unknown command \"bogus\" for \"app\""));
}

#[test]
fn stress_memory_and_cpu() {
    let mut host = FakeHost::new().term_at(secs(30));
    let c = container(
        "polinux/stress",
        &["stress"],
        &["--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1"],
    );
    assert_eq!(run(&c, None, &mut host), 143);
    assert_eq!(host.memory, [(Duration::ZERO, 150 * 1024 * 1024)]);
    assert_eq!(
        host.text(Stream::Stdout),
        "stress: info: [1] dispatching hogs: 0 cpu, 0 io, 1 vm, 0 hdd\n"
    );

    let mut host = FakeHost::new().term_at(secs(60));
    let c = container(
        "polinux/stress",
        &["stress"],
        &["--cpu", "2", "--timeout", "10s"],
    );
    assert_eq!(run(&c, None, &mut host), 0);
    assert_eq!(host.now, testing::t0() + secs(10));
    assert!(host
        .text(Stream::Stdout)
        .ends_with("successful run completed in 10s\n"));

    let mut host = FakeHost::new().term_at(secs(60));
    let args = [
        "-mem-total",
        "150Mi",
        "-mem-alloc-size",
        "10Mi",
        "-mem-alloc-sleep",
        "1s",
        "-cpus",
        "2",
    ];
    assert_eq!(
        run(&container("vish/stress", &[], &args), None, &mut host),
        143
    );
    assert_eq!(host.cpu, 2000);
    assert_eq!(host.memory.len(), 15);
    assert_eq!(host.memory[0], (Duration::ZERO, 10 << 20));
    assert_eq!(host.memory[14], (secs(14), 150 << 20));
    assert!(host
        .text(Stream::Stderr)
        .contains("main.go:29] Allocated \"150Mi\" memory"));
}

#[test]
fn other_images() {
    // An unknown image answers on its declared ports and exits 0 when stopped.
    let mut c = container("example.com/team/myapp:v1", &[], &[]);
    c.ports = vec![8080, 9090];
    let mut host = FakeHost::new().term_at(secs(5));
    assert_eq!(run(&c, None, &mut host), 0);
    assert_eq!(
        host.servers.keys().copied().collect::<Vec<_>>(),
        [8080, 9090]
    );
    assert_eq!(host.get(9090, "/anything", secs(1)).status, 200);
    // pause, goproxy.
    let mut host = FakeHost::new().term_at(secs(5));
    assert_eq!(
        run(
            &container("registry.k8s.io/pause:3.10", &[], &[]),
            None,
            &mut host
        ),
        0
    );
    assert_eq!(
        host.text(Stream::Stderr),
        "Shutting down, got signal: Terminated\n"
    );
    let mut host = FakeHost::new().term_at(secs(5));
    run(
        &container("registry.k8s.io/goproxy:0.1", &[], &[]),
        None,
        &mut host,
    );
    assert_eq!(host.get(8080, "/", secs(1)).status, 500);
    // The runtime writes /etc/hostname.
    let fs = crate::root_fs("busybox");
    let mut host = FakeHost::new();
    run(&container("busybox", &[], &[]), Some(fs.clone()), &mut host);
    assert_eq!(fs.read("/etc/hostname").unwrap(), b"web-0\n");
}
