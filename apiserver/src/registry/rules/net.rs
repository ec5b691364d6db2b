//! IP addresses and CIDRs as upstream parses them (`netutils.ParseIPSloppy`: IPv4 octets may
//! carry leading zeros), with upstream's messages, and the one-per-family rule of dual-stack
//! lists (`podIPs`, `hostIPs`, `podCIDRs`).

use std::net::{IpAddr, Ipv4Addr};

use serde_json::Value;

use super::super::field::FieldError;

const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// An IP address, accepting IPv4 octets with leading zeros as upstream's sloppy parser does.
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u8>().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// An IP address at `field`, as upstream's IsValidIP.
pub fn ip(field: &str, s: &str) -> Option<FieldError> {
    parse_ip(s)
        .is_none()
        .then(|| FieldError::invalid(field, s, IP_MSG))
}

/// A CIDR (`10.244.1.0/24`, `fd00::/64`) at `field`, as upstream's IsValidCIDR.
pub fn cidr(field: &str, s: &str) -> Option<FieldError> {
    let ok = s.split_once('/').is_some_and(|(addr, bits)| {
        let max = match parse_ip(addr) {
            Some(IpAddr::V4(_)) => 32,
            Some(IpAddr::V6(_)) => 128,
            None => return false,
        };
        !bits.is_empty()
            && bits.bytes().all(|b| b.is_ascii_digit())
            && bits.parse::<u32>().is_ok_and(|b| b <= max)
    });
    (!ok).then(|| FieldError::invalid(field, s, CIDR_MSG))
}

fn is_v4(s: &str) -> Option<bool> {
    let addr = s.split('/').next().unwrap_or(s);
    parse_ip(addr).map(|ip| ip.is_ipv4())
}

/// A list of addresses (or CIDRs) that may hold one of each family: more than one entry must
/// be exactly an IPv4 and an IPv6 one. `list` is the value the error shows.
pub fn one_per_family(field: &str, list: &Value, addrs: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if addrs.len() <= 1 {
        return errs;
    }
    let families: Vec<Option<bool>> = addrs.iter().map(|a| is_v4(a)).collect();
    let dual = families.iter().all(Option::is_some)
        && families.contains(&Some(true))
        && families.contains(&Some(false));
    if !dual || addrs.len() > 2 {
        errs.push(FieldError::invalid(
            field,
            list.clone(),
            if addrs.iter().any(|a| a.contains('/')) {
                "may specify no more than one CIDR for each IP family"
            } else {
                "may specify no more than one IP for each IP family"
            },
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn addresses_as_upstream() {
        for ok in ["10.244.1.2", "fd00::1", "010.001.1.1", "::ffff:1.2.3.4"] {
            assert!(ip("f", ok).is_none(), "{ok}");
        }
        for bad in ["999.1.1.1", "1.2.3", "", "a.b.c.d", "1.2.3.4/24"] {
            assert!(ip("f", bad).is_some(), "{bad}");
        }
        assert_eq!(
            ip("status.podIPs[0]", "999.1.1.1").unwrap().to_string(),
            "status.podIPs[0]: Invalid value: \"999.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        );
        for ok in ["10.244.1.0/24", "fd00::/64", "0.0.0.0/0", "10.0.0.1/32"] {
            assert!(cidr("f", ok).is_none(), "{ok}");
        }
        for bad in [
            "10.244.1.0",
            "10.244.1.0/33",
            "fd00::/129",
            "x/8",
            "10.0.0.0/",
        ] {
            assert!(cidr("f", bad).is_some(), "{bad}");
        }
        assert_eq!(
            cidr("spec.podCIDRs[0]", "10.0.0.0/40").unwrap().to_string(),
            "spec.podCIDRs[0]: Invalid value: \"10.0.0.0/40\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
        );
    }

    #[test]
    fn one_address_per_family() {
        let v = json!([]);
        assert!(one_per_family("f", &v, &["10.0.0.1"]).is_empty());
        assert!(one_per_family("f", &v, &["10.0.0.1", "fd00::1"]).is_empty());
        assert_eq!(one_per_family("f", &v, &["10.0.0.1", "10.0.0.2"]).len(), 1);
        assert_eq!(
            one_per_family("f", &v, &["10.0.0.0/24", "10.1.0.0/24"])[0].detail,
            "may specify no more than one CIDR for each IP family"
        );
        assert_eq!(
            one_per_family("f", &v, &["10.0.0.1", "fd00::1", "fd00::2"]).len(),
            1
        );
    }
}
