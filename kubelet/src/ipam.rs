//! Node addressing: each node's podCIDR (a /24) and InternalIP, and the pod IPs handed out from
//! the podCIDR.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// The podCIDR of node number `index` counting from `base` (e.g. `10.244.1.0/24`): one /24 per
/// node, carrying into the second octet.
pub fn pod_cidr(base: Ipv4Addr, index: u32) -> String {
    let start = u32::from(base) & 0xffff_ff00;
    let net = Ipv4Addr::from(start.wrapping_add(index << 8));
    format!("{net}/24")
}

/// `base + index` (a node's InternalIP).
pub fn nth_ip(base: Ipv4Addr, index: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base).wrapping_add(index))
}

/// A default InternalIP for a node nobody gave an address: stable per name, in 172.16.0.0/12.
pub fn default_node_ip(name: &str) -> Ipv4Addr {
    let h = u64::from_str_radix(&crate::hash::hex(&[name.as_bytes()], 1)[..8], 16).unwrap_or(0);
    let host = (h as u32 % ((1 << 20) - 2)) + 1;
    Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 16, 0, 0)) + host)
}

/// Whether `ip` is in `cidr` (`10.244.1.0/24`; a bare address is a /32). An unreadable CIDR
/// or address contains nothing.
pub fn cidr_contains(cidr: &str, ip: &str) -> bool {
    let (net, bits) = cidr.split_once('/').unwrap_or((cidr, "32"));
    let (Ok(net), Ok(bits), Ok(ip)) = (
        net.parse::<Ipv4Addr>(),
        bits.parse::<u32>(),
        ip.parse::<Ipv4Addr>(),
    ) else {
        return false;
    };
    if bits > 32 {
        return false;
    }
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    u32::from(net) & mask == u32::from(ip) & mask
}

/// Pod IPs of one node: `.2` to `.254` of its /24 (`.1` is the bridge), lowest free first.
#[derive(Debug, Clone)]
pub struct PodIps {
    net: u32,
    used: BTreeSet<u8>,
}

impl PodIps {
    /// From a CIDR such as `10.244.1.0/24`; `None` if it cannot be read.
    pub fn new(cidr: &str) -> Option<PodIps> {
        let addr: Ipv4Addr = cidr.split('/').next()?.parse().ok()?;
        Some(PodIps {
            net: u32::from(addr) & 0xffff_ff00,
            used: BTreeSet::new(),
        })
    }

    /// The next free address, or `None` when the /24 is full.
    pub fn allocate(&mut self) -> Option<String> {
        let host = (2..=254u8).find(|h| !self.used.contains(h))?;
        self.used.insert(host);
        Some(Ipv4Addr::from(self.net + u32::from(host)).to_string())
    }

    /// Mark an address as used (a pod found running after a restart); ignores foreign ones.
    pub fn claim(&mut self, ip: &str) {
        if let Ok(a) = ip.parse::<Ipv4Addr>() {
            let a = u32::from(a);
            if a & 0xffff_ff00 == self.net {
                self.used.insert((a & 0xff) as u8);
            }
        }
    }

    pub fn release(&mut self, ip: &str) {
        if let Ok(a) = ip.parse::<Ipv4Addr>() {
            let a = u32::from(a);
            if a & 0xffff_ff00 == self.net {
                self.used.remove(&((a & 0xff) as u8));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_and_node_ips() {
        let base = Ipv4Addr::new(10, 244, 0, 0);
        let cases = [
            (0, "10.244.0.0/24"),
            (1, "10.244.1.0/24"),
            (255, "10.244.255.0/24"),
            (256, "10.245.0.0/24"),
        ];
        for (i, want) in cases {
            assert_eq!(pod_cidr(base, i), want);
        }
        assert_eq!(
            nth_ip(Ipv4Addr::new(192, 168, 10, 10), 2).to_string(),
            "192.168.10.12"
        );
        let ip = default_node_ip("worker0");
        assert_eq!(ip, default_node_ip("worker0"));
        assert_eq!(ip.octets()[0], 172);
        assert!((16..32).contains(&ip.octets()[1]));
    }

    #[test]
    fn cidr_containment() {
        let cases = [
            ("10.244.1.0/24", "10.244.1.7", true),
            ("10.244.1.0/24", "10.244.1.255", true),
            ("10.244.1.0/24", "10.244.2.7", false),
            ("10.244.0.0/16", "10.244.200.1", true),
            ("10.244.1.9/24", "10.244.1.1", true),
            ("0.0.0.0/0", "10.9.9.9", true),
            ("192.168.10.11", "192.168.10.11", true),
            ("192.168.10.11/32", "192.168.10.12", false),
            ("10.244.1.0/33", "10.244.1.7", false),
            ("nonsense/24", "10.244.1.7", false),
            ("10.244.1.0/24", "web", false),
        ];
        for (cidr, ip, want) in cases {
            assert_eq!(cidr_contains(cidr, ip), want, "{ip} in {cidr}");
        }
    }

    #[test]
    fn allocates_lowest_free_and_reuses_released() {
        let mut ips = PodIps::new("10.244.1.0/24").unwrap();
        ips.claim("10.244.1.3");
        ips.claim("10.9.9.9");
        assert_eq!(ips.allocate().as_deref(), Some("10.244.1.2"));
        assert_eq!(ips.allocate().as_deref(), Some("10.244.1.4"));
        ips.release("10.244.1.2");
        assert_eq!(ips.allocate().as_deref(), Some("10.244.1.2"));
        for _ in 0..250 {
            ips.allocate();
        }
        assert_eq!(ips.allocate(), None);
        assert!(PodIps::new("nonsense").is_none());
    }
}
