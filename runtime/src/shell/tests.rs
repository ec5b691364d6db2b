//! Table tests of the shell over a fake host: virtual time (a sleep advances a counter at
//! once), scheduled signals, queued stdin, and a fake cluster network.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::FutureExt;

use crate::fs::Node;
use crate::net::Resolved;
use crate::{
    BoxFuture, Container, CpuSink, Fs, Host, HttpRequest, HttpResponse, LogSink, NetError, Network,
    Server, Signal, Stream, Volume,
};

/// Virtual seconds since the start, shared with the network (a Service that appears later).
type Clock = Arc<Mutex<Duration>>;

struct FakeNet {
    clock: Clock,
}

impl Network for FakeNet {
    fn dns_server(&self) -> String {
        "10.96.0.10".into()
    }
    fn resolve(&self, name: &str) -> Option<Resolved> {
        let short = name.split('.').next().unwrap_or(name);
        let ip = match short {
            "myservice" if *self.clock.lock().unwrap() >= Duration::from_secs(6) => "10.96.5.6",
            "web" => "10.96.0.20",
            "broken" => "10.96.0.21",
            "down" => "10.96.0.22",
            _ => return None,
        };
        Some(Resolved {
            name: format!("{short}.default.svc.cluster.local"),
            ips: vec![ip.into()],
        })
    }
    fn reverse(&self, ip: &str) -> Option<String> {
        match ip {
            "10.96.0.10" => Some("kube-dns.kube-system.svc.cluster.local".into()),
            "10.96.0.20" => Some("web.default.svc.cluster.local".into()),
            _ => None,
        }
    }
    fn connect(&self, ip: &str, port: u16) -> Result<(), NetError> {
        match (ip, port) {
            ("10.96.0.20" | "10.96.0.21", 80) => Ok(()),
            _ => Err(NetError::Refused),
        }
    }
    fn http(&self, ip: &str, port: u16, req: &HttpRequest) -> Result<HttpResponse, NetError> {
        match (ip, port) {
            ("10.96.0.20", 80) => Ok(HttpResponse::new(
                200,
                "text/plain",
                format!("hello from {} {}\n", req.path, req.user_agent),
            )),
            ("10.96.0.21", 80) => Ok(HttpResponse::new(500, "text/plain", "boom")),
            ("10.9.9.9", _) => Err(NetError::TimedOut),
            _ => Err(NetError::Refused),
        }
    }
    fn grpc_health(&self, _: &str, _: u16, _: &str) -> Result<bool, NetError> {
        Err(NetError::Refused)
    }
}

#[derive(Default)]
struct Output {
    stdout: String,
    stderr: String,
}

struct FakeHost {
    clock: Clock,
    /// Virtual time after which every wait blocks for ever (the test stops polling).
    budget: Duration,
    /// Signals and the time they are sent at.
    signals: VecDeque<(Duration, Signal)>,
    stdin: VecDeque<String>,
    out: Arc<Mutex<Output>>,
    net: Arc<FakeNet>,
    listened: Vec<u16>,
}

impl FakeHost {
    fn new() -> FakeHost {
        let clock: Clock = Arc::default();
        FakeHost {
            net: Arc::new(FakeNet {
                clock: clock.clone(),
            }),
            clock,
            budget: Duration::from_secs(100_000),
            signals: VecDeque::new(),
            stdin: VecDeque::new(),
            out: Arc::default(),
            listened: Vec::new(),
        }
    }

    fn now_d(&self) -> Duration {
        *self.clock.lock().unwrap()
    }

    /// Move time forward to `t`; false past the budget.
    fn advance_to(&mut self, t: Duration) -> bool {
        if t > self.budget {
            *self.clock.lock().unwrap() = self.budget;
            return false;
        }
        let mut c = self.clock.lock().unwrap();
        *c = (*c).max(t);
        true
    }
}

impl Host for FakeHost {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_999_000) + self.now_d()
    }
    fn sleep(&mut self, d: Duration) -> BoxFuture<'_, ()> {
        let t = self.now_d() + d;
        if self.advance_to(t) {
            Box::pin(async {})
        } else {
            Box::pin(futures::future::pending())
        }
    }
    fn wait_signal(&mut self, d: Option<Duration>) -> BoxFuture<'_, Option<Signal>> {
        let now = self.now_d();
        let until = d.map(|d| now + d);
        match self.signals.front() {
            Some(&(at, sig)) if until.is_none_or(|u| at <= u) => {
                self.signals.pop_front();
                if self.advance_to(at) {
                    Box::pin(async move { Some(sig) })
                } else {
                    Box::pin(futures::future::pending())
                }
            }
            _ => match until {
                Some(u) if self.advance_to(u) => Box::pin(async { None }),
                _ => Box::pin(futures::future::pending()),
            },
        }
    }
    fn take_signal(&mut self) -> Option<Signal> {
        match self.signals.front() {
            Some(&(at, sig)) if at <= self.now_d() => {
                self.signals.pop_front();
                Some(sig)
            }
            _ => None,
        }
    }
    fn write(&mut self, stream: Stream, text: &str) {
        let mut o = self.out.lock().unwrap();
        match stream {
            Stream::Stdout => o.stdout.push_str(text),
            Stream::Stderr => o.stderr.push_str(text),
        }
    }
    fn read(&mut self) -> BoxFuture<'_, Option<String>> {
        let chunk = self.stdin.pop_front();
        Box::pin(async move { chunk })
    }
    fn log_sink(&self) -> LogSink {
        let out = self.out.clone();
        Arc::new(move |_, text: &str| out.lock().unwrap().stdout.push_str(text))
    }
    fn cpu_sink(&self) -> CpuSink {
        Arc::new(|_| {})
    }
    fn network(&self) -> Arc<dyn Network> {
        self.net.clone()
    }
    fn listen(&mut self, port: u16, _server: Arc<dyn Server>) {
        self.listened.push(port);
    }
    fn set_memory(&mut self, _bytes: u64) {}
    fn set_cpu(&mut self, _millicores: u64) {}
}

fn container() -> Container {
    Container {
        name: "c".into(),
        image: "busybox".into(),
        env: vec![("GREETING".into(), "hello world".into())],
        hostname: "pod-1".into(),
        ..Container::default()
    }
}

fn root() -> Fs {
    let mut fs = Fs::new(Node::dir());
    for d in ["/bin", "/etc", "/tmp", "/root", "/var/run"] {
        fs.mkdir(d, true).unwrap();
    }
    fs.write("/etc/hostname", b"pod-1\n", false).unwrap();
    fs.mount(
        "/var/run/secrets/kubernetes.io/serviceaccount",
        Volume::from_files([("namespace", b"default".to_vec())]),
        true,
    );
    fs.mount(
        "/etc/config",
        Volume::from_files([("a.conf", b"A".to_vec()), ("b.conf", b"B".to_vec())]),
        true,
    );
    fs
}

/// What a run did: the exit code (`None`: still running when the budget ran out).
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    secs: u64,
    fs: Fs,
}

fn run_on(argv: &[&str], host: &mut FakeHost, fs: Fs) -> Ran {
    run_in(&container(), argv, host, fs)
}

/// Run `argv` in the container `c`.
fn run_in(c: &Container, argv: &[&str], host: &mut FakeHost, fs: Fs) -> Ran {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let code = super::exec_argv(&argv, c, fs.clone(), host).now_or_never();
    let out = host.out.lock().unwrap();
    Ran {
        code,
        stdout: out.stdout.clone(),
        stderr: out.stderr.clone(),
        secs: host.now_d().as_secs(),
        fs,
    }
}

fn sh(script: &str) -> Ran {
    run_on(&["sh", "-c", script], &mut FakeHost::new(), root())
}

#[test]
fn scripts() {
    // (script, stdout, stderr, exit code)
    let cases: &[(&str, &str, &str, i32)] = &[
        ("echo hello", "hello\n", "", 0),
        ("echo -n a; echo b", "ab\n", "", 0),
        ("echo -e 'a\\tb'", "a\tb\n", "", 0),
        ("echo \"$GREETING\" '$GREETING' $HOSTNAME", "hello world $GREETING pod-1\n", "", 0),
        ("exit 3", "", "", 3),
        ("false; echo $?", "1\n", "", 0),
        ("foo", "", "sh: foo: not found\n", 127),
        ("foo; echo $?", "127\n", "sh: foo: not found\n", 0),
        ("if true; then echo yes; else echo no; fi", "yes\n", "", 0),
        ("if false; then echo 1; elif true; then echo 2; fi", "2\n", "", 0),
        ("fi", "", "sh: syntax error: unexpected \"fi\"\n", 2),
        ("echo 'abc", "", "sh: syntax error: unterminated quoted string\n", 2),
        ("if true; then echo", "", "sh: syntax error: unexpected end of file (expecting \"fi\")\n", 2),
        ("echo a;;", "", "sh: syntax error: unexpected \";;\"\n", 2),
        ("for x in a b c; do echo $x; done", "a\nb\nc\n", "", 0),
        ("for f in /etc/config/*; do cat $f; done; echo", "AB\n", "", 0),
        ("case hello in h*) echo H;; *) echo other;; esac", "H\n", "", 0),
        ("case x.conf in *.txt|*.conf) echo conf;; esac", "conf\n", "", 0),
        ("f() { echo \"f:$1:$#\"; return 4; }; f a b; echo $?", "f:a:2\n4\n", "", 0),
        ("i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i", "3\n", "", 0),
        ("i=5; until [ $i -eq 0 ]; do i=$(( $i - 1 )); done; echo $i", "0\n", "", 0),
        ("echo $((2+3*4)) $(( (2+3)*4 )) $((7/2)) $((7%3)) $((3>2)) $((-4+1))", "14 20 3 1 1 -3\n", "", 0),
        ("x=abc; echo ${#x} ${x:-d} ${y:-d} ${y:=e} $y", "3 abc d e e\n", "", 0),
        ("f=/a/b/c.tar.gz; echo ${f##*/} ${f%.*} ${f#*.}", "c.tar.gz /a/b/c.tar tar.gz\n", "", 0),
        ("echo $(echo inner) `echo back`", "inner back\n", "", 0),
        ("x=$(printf 'a b'); set -- $x; echo $#", "2\n", "", 0),
        ("set -- \"a b\" c; for a in \"$@\"; do echo \"[$a]\"; done", "[a b]\n[c]\n", "", 0),
        ("true && echo a || echo b; false && echo c || echo d", "a\nd\n", "", 0),
        ("! false && echo negated", "negated\n", "", 0),
        ("echo one | cat", "one\n", "", 0),
        ("printf 'a\\nb\\nc\\n' | wc -l", "3\n", "", 0),
        ("printf '%s-%d\\n' a 1 b 2", "a-1\nb-2\n", "", 0),
        ("printf '%5s|%-3s|%03d|%x|%.2f|%c%%\\n' ab c 7 255 3.14159 xyz", "   ab|c  |007|ff|3.14|x%\n", "", 0),
        ("echo hi > /tmp/f; echo there >> /tmp/f; cat /tmp/f", "hi\nthere\n", "", 0),
        ("echo err 1>&2", "", "err\n", 0),
        ("cat /nope 2>/dev/null; echo $?", "1\n", "", 0),
        ("cat /nope 2>&1", "cat: can't open '/nope': No such file or directory\n", "", 1),
        ("echo x > /nodir/f", "", "sh: can't create /nodir/f: nonexistent directory\n", 1),
        ("echo x >/dev/null; echo y > /dev/stderr", "", "y\n", 0),
        ("cd /tmp && touch a && ls && pwd && cd .. && pwd", "a\n/tmp\n/\n", "", 0),
        ("ls /nope", "", "ls: /nope: No such file or directory\n", 1),
        ("ls /", "bin\netc\nroot\ntmp\nvar\n", "", 0),
        ("mkdir /tmp/d; mkdir /tmp/d", "", "mkdir: can't create directory '/tmp/d': File exists\n", 1),
        ("rm /tmp/x", "", "rm: can't remove '/tmp/x': No such file or directory\n", 1),
        ("rm -f /tmp/x; mkdir -p /tmp/a/b; rm -rf /tmp/a; ls /tmp", "", "", 0),
        ("trap 'echo bye' EXIT; echo hi", "hi\nbye\n", "", 0),
        ("trap 'echo bye' EXIT; exit 5", "bye\n", "", 5),
        ("set -e; false; echo not reached", "", "", 1),
        ("set -e; false || true; if false; then :; fi; echo reached", "reached\n", "", 0),
        ("set -x; echo a", "a\n", "+ echo a\n", 0),
        ("echo a b c | { read x y; echo \"$y|$x\"; }", "b c|a\n", "", 0),
        ("printf 'l1\\nl2\\n' > /tmp/in; while read l; do echo \"<$l>\"; done < /tmp/in", "<l1>\n<l2>\n", "", 0),
        ("cat <<EOF\nhello $HOSTNAME\nEOF\necho after", "hello pod-1\nafter\n", "", 0),
        ("cat <<'EOF'\n$x\nEOF", "$x\n", "", 0),
        ("(exit 7); echo $?; (cd /tmp); pwd", "7\n/\n", "", 0),
        ("{ echo a; echo b; } > /tmp/g; cat /tmp/g", "a\nb\n", "", 0),
        ("for i in 1 2 3 4; do [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done", "1\n3\n", "", 0),
        ("test -f /etc/hostname && [ -d /tmp ] && [ ! -e /x ] && [ -n a ] && [ -z '' ] && echo ok", "ok\n", "", 0),
        ("[ 1 -lt 2 -a abc != abd ]; echo $?; [ 3", "0\n", "[: missing ]\n", 2),
        ("expr 2 + 3 \\* 4; expr 5 - 5; echo $?", "14\n0\n1\n", "", 0),
        ("seq 3; seq 2 2 6 | head -n 2; seq -s , 1 3", "1\n2\n3\n2\n4\n1,2,3\n", "", 0),
        ("printf 'b\\na\\nb\\n' | grep -c b; echo abc | grep -q x; echo $?", "2\n1\n", "", 0),
        ("printf 'x\\nY\\ny\\n' | grep -i y; printf 'a\\nb\\n' | grep -v a", "Y\ny\nb\n", "", 0),
        ("printf '1\\n2\\n3\\n' | tail -n 2", "2\n3\n", "", 0),
        ("echo abc | wc -c; echo a b | wc -w", "4\n2\n", "", 0),
        ("basename /a/b/c.txt .txt; dirname /a/b/c.txt; dirname c", "c\n/a/b\n.\n", "", 0),
        ("id; whoami; hostname; uname; uname -r", "uid=0(root) gid=0(root) groups=0(root),10(wheel)\nroot\npod-1\nLinux\n6.8.0-tinykube\n", "", 0),
        ("printenv GREETING; env | grep ^HOME", "hello world\nHOME=/root\n", "", 0),
        ("export A=1; sh -c 'echo $A $0 $1' n x", "1 n x\n", "", 0),
        ("busybox echo via busybox; /bin/echo path", "via busybox\npath\n", "", 0),
        ("echo a > /tmp/s; cp /tmp/s /tmp/t; mv /tmp/t /tmp/u; cat /tmp/u; ls /tmp", "a\ns\nu\n", "", 0),
        ("echo hi | tee /tmp/tee; cat /tmp/tee", "hi\nhi\n", "", 0),
        ("date; date +%Y-%m-%dT%H:%M:%S; date +%s", "Mon Nov 30 00:36:40 UTC 2026\n2026-11-30T00:36:40\n1795999000\n", "", 0),
        ("echo $(( 1 / 0 ))", "", "sh: divide by zero\n", 2),
        ("eval 'echo $((1+1))'; x='echo'; $x ok", "2\nok\n", "", 0),
        ("echo ${x:?unset x}", "", "sh: x: unset x\n", 1),
        ("cat /etc/config", "", "cat: read error: Is a directory\n", 1),
        ("sleep 1.5; sleep 2m; echo $?", "0\n", "", 0),
        ("sleep x", "", "sleep: invalid number 'x'\n", 1),
        ("n=0; for i in $(seq 1 500); do n=$((n+i)); done; echo $n", "125250\n", "", 0),
        ("x=1; x=$((x+=2)); i=0; : $((i++)); echo $x $i", "3 1\n", "", 0),
    ];
    for (script, stdout, stderr, code) in cases {
        let r = sh(script);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(*code), *stdout, *stderr),
            "script: {script}"
        );
    }
}

#[test]
fn network_applets() {
    let cases: &[(&str, &str, &str, i32)] = &[
        ("wget -qO- http://web/x", "hello from /x Wget\n", "", 0),
        ("wget -q -O - web:80/", "hello from / Wget\n", "", 0),
        ("wget -O /tmp/page http://web/p; cat /tmp/page", "hello from /p Wget\n",
         "Connecting to web (10.96.0.20:80)\nsaving to '/tmp/page'\n/tmp/page            100% |********************************|    19  0:00:00 ETA\n'/tmp/page' saved\n", 0),
        ("wget -q --spider http://web/", "", "", 0),
        ("wget -qO- http://nosuch/", "", "wget: bad address 'nosuch'\n", 1),
        ("wget -qO- http://down/", "", "wget: can't connect to remote host (10.96.0.22): Connection refused\n", 1),
        ("wget -qO- http://10.9.9.9/", "", "wget: can't connect to remote host (10.9.9.9): Connection timed out\n", 1),
        ("wget -qO- -T 2 http://10.9.9.9/", "", "wget: download timed out\n", 1),
        ("wget -q --timeout=2 -O- http://10.9.9.9/", "", "wget: download timed out\n", 1),
        ("wget -qO- -T 1 http://broken/", "", "wget: server returned error: HTTP/1.1 500 Internal Server Error\n", 1),
        ("curl -s http://web/c", "hello from /c curl/8.11.1\n", "", 0),
        ("curl http://nosuch/", "", "curl: (6) Could not resolve host: nosuch\n", 6),
        ("curl -s http://nosuch/", "", "", 6),
        ("curl http://down/", "", "curl: (7) Failed to connect to down port 80 after 0 ms: Couldn't connect to server\n", 7),
        ("curl -sf http://broken/; echo $?", "22\n", "", 0),
        ("nc -z web 80 && echo open; nc -z down 80 || echo closed", "open\nclosed\n", "", 0),
        ("nslookup web", "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tweb.default.svc.cluster.local\nAddress: 10.96.0.20\n\n", "", 0),
        ("nslookup nosuch", "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n** server can't find nosuch: NXDOMAIN\n\n", "", 1),
    ];
    for (script, stdout, stderr, code) in cases {
        let r = sh(script);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(*code), *stdout, *stderr),
            "script: {script}"
        );
    }
}

#[test]
fn nslookup_of_busybox_before_1_29() {
    // (image, arguments, stdout, stderr, exit code)
    let server =
        "Server:    10.96.0.10\nAddress 1: 10.96.0.10 kube-dns.kube-system.svc.cluster.local\n\n";
    let cases: &[(&str, &[&str], String, &str, i32)] = &[
        ("busybox:1.28", &["web"], format!("{server}Name:      web\nAddress 1: 10.96.0.20 web.default.svc.cluster.local\n"), "", 0),
        ("registry.k8s.io/busybox:1.27.2", &["broken.default"], format!("{server}Name:      broken.default\nAddress 1: 10.96.0.21\n"), "", 0),
        ("busybox:1.28.4", &["nosuch"], server.to_string(), "nslookup: can't resolve 'nosuch'\n", 1),
        ("busybox:1.28", &[], String::new(), "BusyBox v1.28.4 (2018-05-22 17:00:17 UTC) multi-call binary.\n\nUsage: nslookup [HOST] [SERVER]\n\nQuery the nameserver for the IP address of the given HOST\noptionally using a specified DNS server\n", 1),
        ("busybox:1.36", &["web"], "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tweb.default.svc.cluster.local\nAddress: 10.96.0.20\n\n".into(), "", 0),
        ("busybox", &["nosuch"], "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n** server can't find nosuch: NXDOMAIN\n\n".into(), "", 1),
    ];
    for (image, args, stdout, stderr, code) in cases {
        let c = Container {
            image: image.to_string(),
            ..container()
        };
        let argv: Vec<&str> = std::iter::once("nslookup")
            .chain(args.iter().copied())
            .collect();
        let r = run_in(&c, &argv, &mut FakeHost::new(), root());
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(*code), stdout.as_str(), *stderr),
            "{image} {args:?}"
        );
    }
}

#[test]
fn the_docs_counter_runs_until_it_is_killed() {
    let mut host = FakeHost::new();
    host.budget = Duration::from_secs(3);
    let r = run_on(
        &[
            "/bin/sh",
            "-c",
            "i=0; while true; do echo \"$i: $(date)\"; i=$((i+1)); sleep 1; done",
        ],
        &mut host,
        root(),
    );
    assert_eq!(r.code, None);
    assert_eq!(
        r.stdout,
        "0: Mon Nov 30 00:36:40 UTC 2026\n1: Mon Nov 30 00:36:41 UTC 2026\n\
         2: Mon Nov 30 00:36:42 UTC 2026\n3: Mon Nov 30 00:36:43 UTC 2026\n"
    );
}

#[test]
fn liveness_file_goes_away_after_thirty_seconds() {
    let fs = root();
    let script = "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600";
    for (secs, code, stderr) in [
        (10, 0, ""),
        (
            40,
            1,
            "cat: can't open '/tmp/healthy': No such file or directory\n",
        ),
    ] {
        let mut host = FakeHost::new();
        host.budget = Duration::from_secs(secs);
        let r = run_on(&["sh", "-c", script], &mut host, fs.clone());
        assert_eq!(r.code, None);
        // An exec probe into the same container.
        let probe = run_on(&["cat", "/tmp/healthy"], &mut FakeHost::new(), r.fs.clone());
        assert_eq!((probe.code, probe.stderr.as_str()), (Some(code), stderr));
        fs.write("/tmp/healthy", b"", false).ok();
        fs.remove("/tmp/healthy", false).ok();
    }
}

#[test]
fn init_container_waits_for_its_service() {
    let r = sh("until nslookup myservice.$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace).svc.cluster.local; do echo waiting for myservice; sleep 2; done");
    assert_eq!(r.code, Some(0));
    assert_eq!(r.secs, 6);
    assert_eq!(r.stdout.matches("waiting for myservice").count(), 3);
    assert!(r
        .stdout
        .ends_with("Name:\tmyservice.default.svc.cluster.local\nAddress: 10.96.5.6\n\n"));
    assert!(r
        .stdout
        .contains("** server can't find myservice.default.svc.cluster.local: NXDOMAIN\n"));
}

/// (script, TERM sent at, budget, exit code, stdout, seconds passed).
type JobCase = (
    &'static str,
    Option<u64>,
    u64,
    Option<i32>,
    &'static str,
    u64,
);

#[test]
fn traps_and_background_jobs() {
    // (script, signal at, budget, code, stdout, seconds passed)
    let cases: &[JobCase] = &[
        // A trapped TERM interrupts `wait`.
        (
            "trap 'echo term; exit 0' TERM; sleep 3600 & wait",
            Some(5),
            10_000,
            Some(0),
            "term\n",
            5,
        ),
        (
            "trap 'exit 0' SIGTERM; sleep 3600 & wait; echo no",
            Some(5),
            10_000,
            Some(0),
            "",
            5,
        ),
        // Without a trap TERM is ignored: the kubelet's SIGKILL ends it.
        ("sleep 3600 & wait", Some(5), 100, None, "", 100),
        // A foreground sleep is not cut short: the trap runs after it.
        (
            "trap 'echo late; exit 1' TERM; sleep 20; echo never",
            Some(5),
            10_000,
            Some(1),
            "late\n",
            20,
        ),
        (
            "trap 'echo x' TERM; trap - TERM; sleep 3600 & wait",
            Some(5),
            100,
            None,
            "",
            100,
        ),
        // Jobs run beside the foreground.
        (
            "(sleep 2; echo bg) & echo fg; sleep 5; echo end",
            None,
            10_000,
            Some(0),
            "fg\nbg\nend\n",
            5,
        ),
        (
            "for i in 1 2; do (sleep $i; echo job$i) & done; wait; echo all",
            None,
            10_000,
            Some(0),
            "job1\njob2\nall\n",
            2,
        ),
        (
            "sleep 2 & p=$!; wait $p; echo $?; false & wait $!; echo $?",
            None,
            10_000,
            Some(0),
            "0\n1\n",
            2,
        ),
        (
            "while true; do echo tick; sleep 10; done & sleep 25; kill %1; wait; echo done",
            None,
            10_000,
            Some(0),
            "tick\ntick\ntick\ndone\n",
            25,
        ),
        ("sleep infinity", None, 50, None, "", 0),
    ];
    for (script, signal, budget, code, stdout, secs) in cases {
        let mut host = FakeHost::new();
        host.budget = Duration::from_secs(*budget);
        if let Some(at) = signal {
            host.signals
                .push_back((Duration::from_secs(*at), Signal::Term));
        }
        let r = run_on(&["sh", "-c", script], &mut host, root());
        assert_eq!(
            (r.code, r.stdout.as_str(), r.secs),
            (*code, *stdout, *secs),
            "script: {script} (stderr {})",
            r.stderr
        );
    }
}

#[test]
fn interactive_shell_reads_stdin_with_a_prompt() {
    let mut host = FakeHost::new();
    host.stdin = [
        "cd /tmp\n",
        "echo hi; if true\n",
        "then echo multi; fi\n",
        "exit 4\n",
        "echo never\n",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let r = run_on(&["sh"], &mut host, root());
    assert_eq!(r.code, Some(4));
    // ash reads a whole line before running it, `if` and all.
    assert_eq!(r.stdout, "/ # /tmp # > hi\nmulti\n/tmp # ");
    let mut host = FakeHost::new();
    host.stdin = ["echo a\n".to_string(), "fi\n".to_string()].into();
    let r = run_on(&["sh", "-i"], &mut host, root());
    assert_eq!((r.code, r.stdout.as_str()), (Some(2), "/ # a\n/ # / # "));
    assert_eq!(r.stderr, "sh: syntax error: unexpected \"fi\"\n");
}

#[test]
fn programs_run_directly() {
    let cases: &[(&[&str], &str, &str, i32)] = &[
        (&["echo", "a", "b"], "a b\n", "", 0),
        (&["/bin/sh", "-c", "echo $0", "name"], "name\n", "", 0),
        (&["ls", "/etc/config"], "a.conf\nb.conf\n", "", 0),
        (&["nosuch"], "", "sh: nosuch: not found\n", 127),
        (&["busybox", "sleep", "1"], "", "", 0),
        (&["sh", "/tmp/script.sh", "arg"], "script arg\n", "", 3),
    ];
    for (argv, stdout, stderr, code) in cases {
        let fs = root();
        fs.write(
            "/tmp/script.sh",
            b"#!/bin/sh\necho script $1\nexit 3\n",
            false,
        )
        .unwrap();
        let r = run_on(argv, &mut FakeHost::new(), fs);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(*code), *stdout, *stderr),
            "argv: {argv:?}"
        );
    }
}

#[test]
fn odd_scripts_fail_without_panicking() {
    // (script, exit code, stderr)
    let cases: &[(&str, i32, &str)] = &[
        ("echo ${", 2, "sh: syntax error: missing '}'\n"),
        ("echo ${a:x}", 2, "sh: syntax error: bad substitution\n"),
        (
            "echo $(echo",
            2,
            "sh: syntax error: unexpected end of file (expecting \")\")\n",
        ),
        (
            "(echo",
            2,
            "sh: syntax error: unexpected end of file (expecting \")\")\n",
        ),
        (
            "{ echo; ",
            2,
            "sh: syntax error: unexpected end of file (expecting \"}\")\n",
        ),
        ("echo >", 2, "sh: syntax error: unexpected end of file\n"),
        ("| cat", 2, "sh: syntax error: unexpected \"|\"\n"),
        (
            "while true; do done",
            2,
            "sh: syntax error: unexpected \"done\"\n",
        ),
        (
            "case x in",
            2,
            "sh: syntax error: unexpected end of file (expecting \"esac\")\n",
        ),
        (
            "echo \"unterminated",
            2,
            "sh: syntax error: unterminated quoted string\n",
        ),
        (
            "echo `echo",
            2,
            "sh: syntax error: unterminated quoted string\n",
        ),
        ("echo $((1 +))", 2, "sh: arithmetic syntax error\n"),
        (
            "echo ${00} $00 >/dev/null; expr -9223372036854775808 / -1 >/dev/null",
            0,
            "",
        ),
        (
            "printf '%'; printf '%q' x",
            1,
            "printf: %q: invalid format\n",
        ),
        ("shift 3", 2, "sh: shift: can't shift that many\n"),
        (
            "cd /nope",
            2,
            "sh: cd: can't cd to /nope: No such file or directory\n",
        ),
        (
            "trap 'x' BOGUS",
            1,
            "sh: trap: BOGUS: invalid signal specification\n",
        ),
        ("break; continue; return 0", 0, ""),
        (
            "/nope/prog",
            127,
            "sh: /nope/prog: No such file or directory\n",
        ),
        ("", 0, ""),
    ];
    for (script, code, stderr) in cases {
        let r = sh(script);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (Some(*code), *stderr),
            "script: {script}"
        );
    }
}
