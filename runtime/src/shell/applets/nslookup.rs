//! `nslookup` as the container's busybox has it. From 1.29 on (busybox:latest) it is its own
//! DNS client printing `Name:\tFQDN` and `Address: IP`; before that (busybox:1.28, which the
//! Kubernetes docs pin for it) it asks the libc resolver and prints each address numbered,
//! with the name the DNS gives it back (`Address 1: 10.96.0.1 kubernetes.default.svc.cluster.local`),
//! and a name that does not resolve is `nslookup: can't resolve 'NAME'` on stderr.

use std::net::IpAddr;

use super::super::io::Proc;
use crate::images::parse_reference;

pub(super) fn run(p: &mut Proc, args: &[String]) -> i32 {
    if before_1_29(&p.c.image) {
        old(p, args)
    } else {
        current(p, args)
    }
}

/// Whether `image` is a busybox older than 1.29, whose nslookup is the old one.
fn before_1_29(image: &str) -> bool {
    let r = parse_reference(image);
    if r.repo != "busybox" && !r.repo.ends_with("/busybox") {
        return false;
    }
    let mut numbers = r.tag.split(['.', '-']).map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(1), Some(minor)) => minor < 29,
        (Some(0), _) => true,
        _ => false,
    }
}

/// busybox 1.28 and before: `nslookup HOST [SERVER]`.
fn old(p: &mut Proc, args: &[String]) -> i32 {
    let name = match args {
        [name] | [name, _] if !name.starts_with('-') => name,
        _ => {
            p.err("BusyBox v1.28.4 (2018-05-22 17:00:17 UTC) multi-call binary.\n\nUsage: nslookup [HOST] [SERVER]\n\nQuery the nameserver for the IP address of the given HOST\noptionally using a specified DNS server\n");
            return 1;
        }
    };
    let net = p.sys.network();
    let server = args.get(1).cloned().unwrap_or_else(|| net.dns_server());
    let numbered = |ips: &[String]| -> String {
        ips.iter()
            .enumerate()
            .map(|(i, ip)| match net.reverse(ip) {
                Some(host) => format!("Address {}: {ip} {host}\n", i + 1),
                None => format!("Address {}: {ip}\n", i + 1),
            })
            .collect()
    };
    let mut out = format!(
        "{:<10} {server}\n{}\n",
        "Server:",
        numbered(std::slice::from_ref(&server))
    );
    match net.resolve(name) {
        Some(r) if !r.ips.is_empty() => {
            out.push_str(&format!("{:<10} {name}\n{}", "Name:", numbered(&r.ips)));
            p.out(&out);
            0
        }
        _ => {
            p.out(&out);
            p.err(&format!("nslookup: can't resolve '{name}'\n"));
            1
        }
    }
}

/// busybox 1.29 and later: its own resolver, one `Address:` line per answer.
fn current(p: &mut Proc, args: &[String]) -> i32 {
    let ops: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some(name) = ops.first() else {
        p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n");
        return 1;
    };
    let net = p.sys.network();
    let server = ops
        .get(1)
        .map(|s| s.to_string())
        .unwrap_or_else(|| net.dns_server());
    let mut out = format!("Server:\t\t{server}\nAddress:\t{server}:53\n\n");
    if name.parse::<IpAddr>().is_ok() {
        out.push_str(&format!("** server can't find {name}: NXDOMAIN\n\n"));
        p.out(&out);
        return 1;
    }
    match net.resolve(name) {
        Some(r) if !r.ips.is_empty() => {
            out.push_str(&format!("Name:\t{}\n", r.name));
            for ip in &r.ips {
                out.push_str(&format!("Address: {ip}\n"));
            }
            out.push('\n');
            p.out(&out);
            0
        }
        _ => {
            out.push_str(&format!("** server can't find {name}: NXDOMAIN\n\n"));
            p.out(&out);
            1
        }
    }
}
