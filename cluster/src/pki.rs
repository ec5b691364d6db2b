//! `tinykube up --secure`: client certificates signed by the cluster CA that the API server
//! generated into its data dir (`ca.crt`, `ca.key`), one per user as kubeadm issues them: the
//! admin (`kubernetes-admin`, group `system:masters`), the scheduler, the controller manager and
//! each kubelet (`system:node:NAME`, group `system:nodes`). They are made again at every start,
//! so none outlives its one year.

use std::path::{Path, PathBuf};

use chrono::Datelike;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose,
};

/// A user's credentials for an HTTPS API server: the CA to trust, its certificate and key.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Why the certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("reading the cluster CA {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("signing a client certificate with the cluster CA: {0}")]
    Sign(#[from] rcgen::Error),
}

/// The cluster CA, read from the API server's data dir.
pub struct Ca {
    cert_pem: String,
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl Ca {
    pub fn load(apiserver_data: &Path) -> Result<Ca, PkiError> {
        let read = |name: &str| {
            let path = apiserver_data.join(name);
            std::fs::read_to_string(&path).map_err(|source| PkiError::Read { path, source })
        };
        let (cert_pem, key_pem) = (read("ca.crt")?, read("ca.key")?);
        let key = KeyPair::from_pem(&key_pem)?;
        let cert = CertificateParams::from_ca_cert_pem(&cert_pem)?.self_signed(&key)?;
        Ok(Ca {
            cert_pem,
            key,
            cert,
        })
    }

    /// A client certificate for `user` in `groups` (CN and O, as the API server reads them).
    pub fn issue(&self, user: &str, groups: &[&str]) -> Result<Credentials, PkiError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut name = DistinguishedName::new();
        for group in groups {
            name.push(DnType::OrganizationName, *group);
        }
        name.push(DnType::CommonName, user);
        params.distinguished_name = name;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let today = chrono::Utc::now().date_naive();
        let (month, day) = (today.month() as u8, today.day().min(28) as u8);
        params.not_before = rcgen::date_time_ymd(today.year(), month, day);
        params.not_after = rcgen::date_time_ymd(today.year() + 1, month, day);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(Credentials {
            ca_pem: self.cert_pem.clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// Who each component is: the admin, `scheduler`, `controller-manager`, `metrics-server`,
/// `kubelet-NODE`.
pub fn identity(component: &str) -> (String, Vec<&'static str>) {
    match component {
        "admin" => ("kubernetes-admin".into(), vec!["system:masters"]),
        "scheduler" => ("system:kube-scheduler".into(), vec![]),
        "controller-manager" => ("system:kube-controller-manager".into(), vec![]),
        // As metrics-server's manifest runs it: a ServiceAccount of kube-system.
        "metrics-server" => (
            "system:serviceaccount:kube-system:metrics-server".into(),
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
            ],
        ),
        other => {
            let node = other.strip_prefix("kubelet-").unwrap_or(other);
            (format!("system:node:{node}"), vec!["system:nodes"])
        }
    }
}
