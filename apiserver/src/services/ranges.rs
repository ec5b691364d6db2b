//! The two ranges Services draw from: `--service-cluster-ip-range` (an IPv4 CIDR, upstream's
//! 10.96.0.0/12 by default) and `--service-node-port-range` (30000-32767), with upstream's
//! static subranges: random picks come from the upper part first, so that the lower part stays
//! free for addresses and ports users ask for by hand.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use rand::Rng;

/// An IPv4 service CIDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: u32,
    prefix: u8,
}

impl FromStr for IpRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (e.g. 10.96.0.0/12)"))?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| {
            format!("{s:?} is not an IPv4 CIDR (only IPv4 service ranges are served)")
        })?;
        let prefix: u8 = bits
            .parse()
            .ok()
            .filter(|b| (8..=30).contains(b))
            .ok_or_else(|| format!("{s:?}: the prefix length must be between 8 and 30"))?;
        let mask = u32::MAX << (32 - prefix);
        Ok(IpRange {
            network: u32::from(addr) & mask,
            prefix,
        })
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

impl Default for IpRange {
    fn default() -> Self {
        "10.96.0.0/12".parse().expect("the default range parses")
    }
}

impl IpRange {
    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }

    /// The range's first usable address: the `kubernetes` Service's.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    /// Whether `ip` may be allocated: inside, neither the network nor the broadcast address.
    pub fn contains(&self, ip: &str) -> bool {
        let Ok(ip) = ip.parse::<Ipv4Addr>() else {
            return false;
        };
        let n = u32::from(ip);
        n > self.network && n < self.network + self.size() - 1
    }

    /// Upstream's static subrange: min(max(16, size/16), 256) addresses at the bottom.
    fn reserved(&self) -> u32 {
        (self.size() / 16).clamp(16, 256)
    }

    /// A random candidate: from above the static subrange on the first `tries`, then anywhere.
    pub fn random(&self, attempt: u32) -> String {
        let last = self.size() - 2;
        let low = if attempt < 16 && self.reserved() < last {
            self.reserved() + 1
        } else {
            1
        };
        let offset = rand::rng().random_range(low..=last);
        Ipv4Addr::from(self.network + offset).to_string()
    }

    /// Every allocatable address, in order (for the exhaustive search of a nearly full range).
    pub fn all(&self) -> impl Iterator<Item = String> + '_ {
        (1..self.size() - 1).map(|o| Ipv4Addr::from(self.network + o).to_string())
    }
}

/// The node port range, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl Default for PortRange {
    fn default() -> Self {
        PortRange {
            low: 30000,
            high: 32767,
        }
    }
}

impl FromStr for PortRange {
    type Err = String;
    /// `30000-32767`, or upstream's `30000+2767` (base and offset).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a port range (e.g. 30000-32767)");
        let num = |t: &str| t.trim().parse::<u16>().map_err(|_| bad());
        let (low, high) = if let Some((a, b)) = s.split_once('-') {
            (num(a)?, num(b)?)
        } else if let Some((a, b)) = s.split_once('+') {
            let base = num(a)?;
            (base, base.checked_add(num(b)?).ok_or_else(bad)?)
        } else {
            return Err(bad());
        };
        if low >= 1 && low <= high {
            Ok(PortRange { low, high })
        } else {
            Err(bad())
        }
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

impl PortRange {
    pub fn contains(&self, port: i64) -> bool {
        (i64::from(self.low)..=i64::from(self.high)).contains(&port)
    }

    fn size(&self) -> u32 {
        u32::from(self.high - self.low) + 1
    }

    /// Upstream's static subrange of node ports: min(max(16, size/32), 128).
    fn reserved(&self) -> u32 {
        (self.size() / 32).clamp(16, 128)
    }

    pub fn random(&self, attempt: u32) -> i64 {
        let low = if attempt < 16 && self.reserved() < self.size() {
            self.reserved()
        } else {
            0
        };
        let offset = rand::rng().random_range(low..self.size());
        i64::from(self.low) + i64::from(offset)
    }

    pub fn all(&self) -> impl Iterator<Item = i64> {
        i64::from(self.low)..=i64::from(self.high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_bound_as_upstream() {
        let r: IpRange = "10.96.0.0/12".parse().unwrap();
        assert_eq!(r.first().to_string(), "10.96.0.1");
        assert!(r.contains("10.96.0.5"));
        assert!(r.contains("10.111.255.254"));
        assert!(!r.contains("10.96.0.0"));
        assert!(!r.contains("10.111.255.255"));
        assert!(!r.contains("10.0.0.1"));
        for _ in 0..100 {
            let ip = r.random(0);
            assert!(r.contains(&ip));
            // Random picks stay above the 256 static addresses.
            assert!(!ip.starts_with("10.96.0."), "{ip}");
        }
        assert!("fd00::/108".parse::<IpRange>().is_err());
        assert!("10.96.0.0".parse::<IpRange>().is_err());
        let small: IpRange = "10.0.0.0/29".parse().unwrap();
        assert_eq!(small.all().count(), 6);

        let p: PortRange = "30000-32767".parse().unwrap();
        assert_eq!(p, PortRange::default());
        assert_eq!("30000+2767".parse::<PortRange>().unwrap(), p);
        assert!(p.contains(30080) && !p.contains(8080));
        for _ in 0..100 {
            let port = p.random(0);
            assert!((30086..=32767).contains(&port), "{port}");
        }
        assert!("32767-30000".parse::<PortRange>().is_err());
    }
}
