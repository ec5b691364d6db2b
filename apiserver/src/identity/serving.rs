//! The API server's own serving certificate, signed by the cluster CA: generated into the data
//! dir on the first HTTPS start (`apiserver.crt`, `apiserver.key`, kubeadm's names) and reused
//! afterwards until it expires. Its names are kubeadm's: `localhost`, the `kubernetes` Service's
//! DNS names and cluster IP, loopback, and the address the server listens on.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use chrono::Datelike;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair,
    KeyUsagePurpose, SanType,
};

use super::keys::{read, write, KeyError, Keys};

pub const CERT_FILE: &str = "apiserver.crt";
pub const KEY_FILE: &str = "apiserver.key";

/// The DNS names every serving certificate carries, as kubeadm's `apiserver.crt` (cluster
/// domain `cluster.local`).
pub const DNS_NAMES: &[&str] = &[
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// The IP addresses of the certificate: loopback, the `kubernetes` Service's cluster IP and,
/// when it names one address, the address the server listens on.
pub fn ip_addresses(service_ip: Ipv4Addr, listen: IpAddr) -> Vec<IpAddr> {
    let mut ips = vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V4(service_ip)];
    if !listen.is_unspecified() && !ips.contains(&listen) {
        ips.push(listen);
    }
    ips
}

/// The certificate and key PEMs in `dir`, made (or made again, once expired) when missing.
pub fn load_or_create(
    dir: &Path,
    keys: &Keys,
    ips: &[IpAddr],
) -> Result<(String, String), KeyError> {
    let (cert_path, key_path) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
    if cert_path.exists() && key_path.exists() {
        let cert = read(&cert_path)?;
        if !expired(&cert) {
            return Ok((cert, read(&key_path)?));
        }
    }
    let (cert, key) = generate(keys, ips).map_err(KeyError::Generate)?;
    write(&key_path, &key, true)?;
    write(&cert_path, &cert, false)?;
    Ok((cert, key))
}

/// Whether the PEM certificate's notAfter has passed (an unreadable one counts as expired).
fn expired(pem: &str) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else {
        return true;
    };
    let Ok(cert) = pem.parse_x509() else {
        return true;
    };
    cert.validity().not_after.timestamp() <= chrono::Utc::now().timestamp()
}

/// A new serving certificate (CN `kube-apiserver`, server auth, one year as kubeadm's) and
/// its key, signed by the cluster CA.
fn generate(keys: &Keys, ips: &[IpAddr]) -> Result<(String, String), rcgen::Error> {
    let ca_key = KeyPair::from_pem(&keys.key_pem)?;
    let ca = CertificateParams::from_ca_cert_pem(&keys.ca_pem)?.self_signed(&ca_key)?;
    let mut params =
        CertificateParams::new(DNS_NAMES.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params
        .subject_alt_names
        .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kube-apiserver");
    params.distinguished_name = name;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let today = chrono::Utc::now().date_naive();
    let (month, day) = (today.month() as u8, today.day().min(28) as u8);
    params.not_before = rcgen::date_time_ymd(today.year(), month, day);
    params.not_after = rcgen::date_time_ymd(today.year() + 1, month, day);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &ca, &ca_key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_with_kubeadms_names_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::load_or_create(dir.path()).unwrap();
        let ips = ip_addresses(Ipv4Addr::new(10, 96, 0, 1), "0.0.0.0".parse().unwrap());
        let (cert, _) = load_or_create(dir.path(), &keys, &ips).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
        let parsed = pem.parse_x509().unwrap();
        let sans = parsed.subject_alternative_name().unwrap().unwrap();
        use x509_parser::extensions::GeneralName;
        let (mut dns, mut ips_seen) = (Vec::new(), Vec::new());
        for name in &sans.value.general_names {
            match name {
                GeneralName::DNSName(n) => dns.push(n.to_string()),
                GeneralName::IPAddress(b) => ips_seen.push(b.to_vec()),
                other => panic!("unexpected name {other}"),
            }
        }
        assert_eq!(dns, DNS_NAMES);
        assert_eq!(ips_seen, [vec![127, 0, 0, 1], vec![10, 96, 0, 1]]);
        assert!(!expired(&cert));
        let (again, _) = load_or_create(dir.path(), &keys, &ips).unwrap();
        assert_eq!(cert, again);
    }
}
