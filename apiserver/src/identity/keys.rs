//! The cluster's CA: a self-signed ECDSA P-256 certificate (`CN=kubernetes`, ten years, as
//! kubeadm's) and its key, generated with rcgen into the API server's data dir on first start
//! and read back afterwards. The CA's PEM is what `kube-root-ca.crt` publishes; its key signs
//! ServiceAccount tokens (ES256).

use std::path::{Path, PathBuf};

use chrono::Datelike;
use jsonwebtoken::{DecodingKey, EncodingKey};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

pub const CERT_FILE: &str = "ca.crt";
pub const KEY_FILE: &str = "ca.key";

/// Why the CA could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("generating the CA: {0}")]
    Generate(#[source] rcgen::Error),
    #[error("the key in {path} is not a usable ECDSA key: {reason}")]
    BadKey { path: PathBuf, reason: String },
}

/// The CA certificate and the token keys made from its private key.
pub struct Keys {
    /// PEM of the CA certificate.
    pub ca_pem: String,
    /// PEM of the CA's private key, to sign the serving certificate.
    pub(super) key_pem: String,
    pub(super) signing: EncodingKey,
    pub(super) verifying: DecodingKey,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

pub(super) fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn write(path: &Path, text: &str, private: bool) -> Result<(), KeyError> {
    let err = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(path, text).map_err(err)?;
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    Ok(())
}

/// A new self-signed CA: its certificate PEM and key.
fn generate() -> Result<(String, KeyPair), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kubernetes");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    let today = chrono::Utc::now().date_naive();
    let (month, day) = (today.month() as u8, today.day().min(28) as u8);
    params.not_before = rcgen::date_time_ymd(today.year(), month, day);
    params.not_after = rcgen::date_time_ymd(today.year() + 10, month, day);
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key))
}

/// How long an API server waits for another one that is creating the CA in the same directory.
const CREATING_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Create the CA, once even when several API servers sharing `dir` start together: the key is
/// claimed by hard-linking a finished file into place (which fails if one is there), the
/// certificate renamed into place after it; whoever loses the claim reads the winner's files.
/// A key without its certificate (a start that died in between) is replaced.
fn create(cert_path: &Path, key_path: &Path) -> Result<(String, String), KeyError> {
    let (pem, key) = generate().map_err(KeyError::Generate)?;
    let key_pem = key.serialize_pem();
    // Unique per process and call, so no two starts stage into one file.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let staged = |path: &Path| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("ca");
        path.with_file_name(format!(".{name}.{}.{call}", std::process::id()))
    };
    let (key_tmp, cert_tmp) = (staged(key_path), staged(cert_path));
    write(&key_tmp, &key_pem, true)?;
    write(&cert_tmp, &pem, false)?;
    let claimed = std::fs::hard_link(&key_tmp, key_path);
    let _ = std::fs::remove_file(&key_tmp);
    let moved = |from: &Path, to: &Path| {
        std::fs::rename(from, to).map_err(|source| KeyError::Write {
            path: to.to_path_buf(),
            source,
        })
    };
    match claimed {
        Ok(()) => {
            moved(&cert_tmp, cert_path)?;
            Ok((pem, key_pem))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let deadline = std::time::Instant::now() + CREATING_WITHIN;
            while std::time::Instant::now() < deadline {
                if cert_path.exists() {
                    let _ = std::fs::remove_file(&cert_tmp);
                    return Ok((read(cert_path)?, read(key_path)?));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            write(key_path, &key_pem, true)?;
            moved(&cert_tmp, cert_path)?;
            Ok((pem, key_pem))
        }
        Err(source) => {
            let _ = std::fs::remove_file(&cert_tmp);
            Err(KeyError::Write {
                path: key_path.to_path_buf(),
                source,
            })
        }
    }
}

impl Keys {
    /// Read `ca.crt` and `ca.key` from `dir`, creating both when either is missing.
    pub fn load_or_create(dir: &Path) -> Result<Keys, KeyError> {
        let (cert_path, key_path) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
        let (ca_pem, key_pem) = if cert_path.exists() && key_path.exists() {
            (read(&cert_path)?, read(&key_path)?)
        } else {
            create(&cert_path, &key_path)?
        };
        let bad = |reason: String| KeyError::BadKey {
            path: key_path.clone(),
            reason,
        };
        let pair = KeyPair::from_pem(&key_pem).map_err(|e| bad(e.to_string()))?;
        let signing =
            EncodingKey::from_ec_pem(key_pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let verifying = DecodingKey::from_ec_pem(pair.public_key_pem().as_bytes())
            .map_err(|e| bad(e.to_string()))?;
        Ok(Keys {
            ca_pem,
            key_pem,
            signing,
            verifying,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let first = Keys::load_or_create(dir.path()).unwrap();
        assert!(first.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let again = Keys::load_or_create(dir.path()).unwrap();
        assert_eq!(first.ca_pem, again.ca_pem);
    }

    #[test]
    fn servers_starting_together_share_one_ca() {
        let dir = tempfile::tempdir().unwrap();
        let cas: Vec<String> = std::thread::scope(|scope| {
            let starts: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| Keys::load_or_create(dir.path()).unwrap().ca_pem))
                .collect();
            starts.into_iter().map(|s| s.join().unwrap()).collect()
        });
        assert!(cas.iter().all(|ca| *ca == cas[0]), "one CA for all");
        // And the key on disk is that CA's key.
        let keys = Keys::load_or_create(dir.path()).unwrap();
        use base64::Engine;
        use rcgen::PublicKeyData;
        let pair = KeyPair::from_pem(&keys.key_pem).unwrap();
        let body: String = cas[0].lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        let point = pair.der_bytes();
        assert!(
            der.windows(point.len()).any(|w| w == point),
            "the certificate carries the key's public key"
        );
        let on_disk = std::fs::read_to_string(dir.path().join(CERT_FILE)).unwrap();
        assert_eq!(on_disk, cas[0]);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "only ca.crt and ca.key are left");
    }
}
