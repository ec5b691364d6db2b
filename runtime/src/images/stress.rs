//! The stress images of the resource-management tasks: `polinux/stress` ("Assign Memory
//! Resources": `stress --vm 1 --vm-bytes 150M --vm-hang 1`) holds `--vm` × `--vm-bytes` of
//! memory (1024-based suffixes, as stress counts) and burns `--cpu` cores until `--timeout`;
//! `vish/stress` ("Assign CPU Resources": `-cpus 2`) burns cores and grows its memory to
//! `-mem-total` in `-mem-alloc-size` steps, `-mem-alloc-sleep` apart (Kubernetes quantities).

use std::time::Duration;

use super::generic::{self, EXIT_TERMINATED};
use super::rootfs::{self, Base};
use super::util::{flag, glog_time, int_flag, parse_go_duration};
use super::Reference;
use crate::fs::{Fs, Node};
use crate::{BoxFuture, Container, Host, Signal, Stream};

/// Alpine with stress in `/usr/local/bin`.
pub fn polinux_root(_r: &Reference) -> Node {
    rootfs::base(Base::Alpine, "")
        .file("/usr/local/bin/stress", rootfs::BINARY)
        .build()
}

/// A scratch image holding `/stress`.
pub fn vish_root(_r: &Reference) -> Node {
    generic::scratch_with("/stress")
}

/// `4k`, `150M`, `1G`, `512` (bytes): stress's `atoll_b`, 1024-based.
pub fn stress_bytes(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'b' | 'B' => (&s[..s.len() - 1], 1),
        'k' | 'K' => (&s[..s.len() - 1], 1 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// `10s`, `5m`, `1h`, `30` (seconds): stress's `atoll_s`.
fn stress_seconds(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        's' => (&s[..s.len() - 1], 1),
        'm' => (&s[..s.len() - 1], 60),
        'h' => (&s[..s.len() - 1], 3600),
        'd' => (&s[..s.len() - 1], 86400),
        'y' => (&s[..s.len() - 1], 31_536_000),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// A Kubernetes quantity in bytes (`150Mi`, `1G`, `4Ki`, `0`).
pub fn quantity_bytes(s: &str) -> Option<u64> {
    const SUFFIXES: &[(&str, u64)] = &[
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    let (num, mult) = SUFFIXES
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((s, 1));
    let n: f64 = num.parse().ok()?;
    (n >= 0.0).then(|| (n * mult as f64).round() as u64)
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Hogs {
    cpu: u64,
    io: u64,
    vm: u64,
    vm_bytes: u64,
    vm_hang: u64,
    hdd: u64,
    timeout: u64,
}

/// stress's options, or the option it fails on.
fn parse_stress(args: &[String]) -> Result<Hogs, String> {
    let mut h = Hogs {
        vm_bytes: 256 << 20,
        ..Hogs::default()
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |parse: fn(&str) -> Option<u64>| {
            it.next()
                .and_then(|v| parse(v))
                .ok_or_else(|| format!("invalid value for {a}"))
        };
        let count = |s: &str| s.parse::<u64>().ok();
        match a.as_str() {
            "-c" | "--cpu" => h.cpu = value(count)?,
            "-i" | "--io" => h.io = value(count)?,
            "-m" | "--vm" => h.vm = value(count)?,
            "--vm-bytes" => h.vm_bytes = value(stress_bytes)?,
            "--vm-stride" => drop(value(stress_bytes)?),
            "--vm-hang" => h.vm_hang = value(stress_seconds)?,
            "-d" | "--hdd" => h.hdd = value(count)?,
            "--hdd-bytes" => drop(value(stress_bytes)?),
            "-t" | "--timeout" => h.timeout = value(stress_seconds)?,
            "--backoff" => drop(value(count)?),
            "-v" | "--verbose" | "-q" | "--quiet" | "-n" | "--dry-run" | "--vm-keep" => {}
            _ => return Err(format!("unrecognized option: {a}")),
        }
    }
    Ok(h)
}

const USAGE: &str = "`stress' imposes certain types of compute stress on your system

Usage: stress [OPTION [ARG]] ...
 -?, --help         show this help statement
     --version      show version statement
 -v, --verbose      be verbose
 -q, --quiet        be quiet
 -n, --dry-run      show what would have been done
 -t, --timeout N    timeout after N seconds
 -c, --cpu N        spawn N workers spinning on sqrt()
 -i, --io N         spawn N workers spinning on sync()
 -m, --vm N         spawn N workers spinning on malloc()/free()
     --vm-bytes B   malloc B bytes per vm worker (default is 256MB)
     --vm-hang N    sleep N secs before free (default none, 0 is inf)
 -d, --hdd N        spawn N workers spinning on write()/unlink()

Example: stress --cpu 8 --io 4 --vm 2 --vm-bytes 128M --timeout 10s

Note: Numbers may be suffixed with s,m,h,d,y (time) or B,K,M,G (size).
";

/// polinux/stress's `stress`.
pub fn stress<'a>(
    argv: &'a [String],
    _c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let args = &argv[1.min(argv.len())..];
        if args.iter().any(|a| a == "--help" || a == "-?") {
            host.write(Stream::Stdout, USAGE);
            return 0;
        }
        if args.iter().any(|a| a == "--version") {
            host.write(Stream::Stdout, "stress 1.0.4\n");
            return 0;
        }
        let h = match parse_stress(args) {
            Ok(h) => h,
            Err(msg) => {
                host.write(Stream::Stderr, &format!("stress: FAIL: [1] (244) {msg}\n"));
                return 1;
            }
        };
        if h.cpu + h.io + h.vm + h.hdd == 0 {
            host.write(Stream::Stdout, USAGE);
            return 0;
        }
        let line = format!(
            "stress: info: [1] dispatching hogs: {} cpu, {} io, {} vm, {} hdd\n",
            h.cpu, h.io, h.vm, h.hdd
        );
        host.write(Stream::Stdout, &line);
        // A vm worker that does not hang spins on malloc/free: a core of its own.
        let spinning_vm = if h.vm_hang == 0 { h.vm } else { 0 };
        host.set_cpu((h.cpu + spinning_vm) * 1000);
        host.set_memory(h.vm * h.vm_bytes);
        if h.timeout == 0 {
            generic::until_term(host).await;
            return EXIT_TERMINATED;
        }
        let limit = Duration::from_secs(h.timeout);
        let started = host.now();
        loop {
            let passed = host.now().duration_since(started).unwrap_or_default();
            let Some(left) = limit.checked_sub(passed).filter(|d| !d.is_zero()) else {
                break;
            };
            if host.wait_signal(Some(left)).await == Some(Signal::Term) {
                return EXIT_TERMINATED;
            }
        }
        host.set_cpu(0);
        host.set_memory(0);
        let done = format!(
            "stress: info: [1] successful run completed in {}s\n",
            h.timeout
        );
        host.write(Stream::Stdout, &done);
        0
    })
}

/// How many allocation steps share one sleep, so a 1 ms `-mem-alloc-sleep` does not wake the
/// process tens of thousands of times (the memory curve is the same at 100 ms grain).
fn steps_per_sleep(sleep: Duration) -> u64 {
    let grain = Duration::from_millis(100);
    if sleep.is_zero() || sleep >= grain {
        return 1;
    }
    grain.as_nanos().div_ceil(sleep.as_nanos()) as u64
}

/// vish/stress's `/stress` (Go flags, glog lines on stderr with `-logtostderr`).
pub fn vish<'a>(
    argv: &'a [String],
    _c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let total_s = flag(argv, "mem-total").unwrap_or_else(|| "0".into());
        let step_s = flag(argv, "mem-alloc-size").unwrap_or_else(|| "4Ki".into());
        let sleep_s = flag(argv, "mem-alloc-sleep").unwrap_or_else(|| "1ms".into());
        let (Some(total), Some(step), Some(sleep), Some(cpus)) = (
            quantity_bytes(&total_s),
            quantity_bytes(&step_s),
            parse_go_duration(&sleep_s),
            int_flag(argv, "cpus", 0),
        ) else {
            host.write(Stream::Stderr, "invalid value for a flag\n");
            return 2;
        };
        let glog = |host: &mut dyn Host, line: u32, msg: &str| {
            let text = format!("{}       1 main.go:{line}] {msg}\n", glog_time(host.now()));
            host.write(Stream::Stderr, &text);
        };
        glog(
            host,
            26,
            &format!(
                "Allocating \"{total_s}\" memory, in \"{step_s}\" chunks, with a {} sleep between allocations",
                super::util::go_duration(sleep)
            ),
        );
        for _ in 0..cpus.max(0) {
            glog(host, 39, "Spawning a thread to consume CPU");
        }
        host.set_cpu(cpus.max(0) as u64 * 1000);
        let batch = steps_per_sleep(sleep);
        let mut held = 0u64;
        let mut i = 1u64;
        while step > 0 && i * step <= total {
            let steps = batch.min(total / step - (i - 1));
            held += steps * step;
            i += steps;
            host.set_memory(held);
            let nap = sleep * steps as u32;
            if host.wait_signal(Some(nap)).await == Some(Signal::Term) {
                return EXIT_TERMINATED;
            }
        }
        glog(host, 29, &format!("Allocated \"{total_s}\" memory"));
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times() {
        let bytes = [
            ("150M", Some(150 << 20)),
            ("250M", Some(250 << 20)),
            ("4k", Some(4096)),
            ("1G", Some(1 << 30)),
            ("512", Some(512)),
            ("x", None),
        ];
        for (s, want) in bytes {
            assert_eq!(stress_bytes(s), want, "{s}");
        }
        let quantities = [
            ("150Mi", Some(150 << 20)),
            ("10Mi", Some(10 << 20)),
            ("1G", Some(1_000_000_000)),
            ("0", Some(0)),
            ("1.5Ki", Some(1536)),
        ];
        for (s, want) in quantities {
            assert_eq!(quantity_bytes(s), want, "{s}");
        }
        assert_eq!(stress_seconds("10s"), Some(10));
        assert_eq!(stress_seconds("2m"), Some(120));
        assert_eq!(steps_per_sleep(Duration::from_millis(1)), 100);
        assert_eq!(steps_per_sleep(Duration::from_secs(1)), 1);
    }

    #[test]
    fn stress_options() {
        let args: Vec<String> = ["--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let h = parse_stress(&args).unwrap();
        assert_eq!((h.vm, h.vm_bytes, h.vm_hang), (1, 150 << 20, 1));
        let bad = vec!["--bogus".to_string()];
        assert_eq!(
            parse_stress(&bad),
            Err("unrecognized option: --bogus".into())
        );
    }
}
