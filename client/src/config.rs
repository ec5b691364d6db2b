//! Where the cluster is: a kubeconfig file (current context's cluster with its CA, user with
//! its token or client certificate) or a `--master` URL that overrides its server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::error::ClientError;

/// The API server's address and credentials.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `http://127.0.0.1:6443` or `https://…`, without a trailing slash.
    pub server: String,
    pub token: Option<String>,
    /// What an `https://` server is checked with and shown.
    pub tls: Tls,
}

/// The TLS side of a kubeconfig: the CA to trust, the client certificate to present.
#[derive(Clone, Default)]
pub struct Tls {
    /// PEM of the CAs trusted for the server's certificate (`certificate-authority-data` or
    /// the `certificate-authority` file); none trusted without it (no system roots).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM of the client certificate and of its key (`client-certificate-data` and
    /// `client-key-data`, or the files they name).
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// `insecure-skip-tls-verify`: any server certificate is accepted.
    pub insecure: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("ca", &self.ca_pem.is_some())
            .field("client_certificate", &self.client_cert_pem.is_some())
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl Config {
    /// A server with no credentials (plain HTTP, or HTTPS with no CA).
    pub fn new(server: &str) -> Config {
        Config {
            server: server.trim_end_matches('/').to_string(),
            ..Config::default()
        }
    }
}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(rename = "current-context", default)]
    current_context: String,
    #[serde(default)]
    clusters: Vec<Named<ClusterEntry>>,
    #[serde(default)]
    contexts: Vec<Named<ContextEntry>>,
    #[serde(default)]
    users: Vec<Named<UserEntry>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "context", alias = "user")]
    value: Option<T>,
}

#[derive(Deserialize)]
struct ClusterEntry {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    ca_data: Option<String>,
    #[serde(rename = "certificate-authority")]
    ca_file: Option<PathBuf>,
    #[serde(rename = "insecure-skip-tls-verify", default)]
    insecure: bool,
}

#[derive(Deserialize)]
struct ContextEntry {
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Deserialize, Default)]
struct UserEntry {
    token: Option<String>,
    #[serde(rename = "client-certificate-data")]
    cert_data: Option<String>,
    #[serde(rename = "client-certificate")]
    cert_file: Option<PathBuf>,
    #[serde(rename = "client-key-data")]
    key_data: Option<String>,
    #[serde(rename = "client-key")]
    key_file: Option<PathBuf>,
}

/// A kubeconfig's `…-data` (base64) or, else, the file it names (relative to the kubeconfig's
/// folder, as client-go resolves it).
fn pem_of(
    data: Option<&str>,
    file: Option<&Path>,
    base: &Path,
    what: &str,
) -> Result<Option<Vec<u8>>, String> {
    use base64::Engine;
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("{what}-data is not base64: {e}"));
    }
    match file.filter(|f| !f.as_os_str().is_empty()) {
        Some(f) => {
            let path = base.join(f);
            std::fs::read(&path)
                .map(Some)
                .map_err(|e| format!("reading {what} {}: {e}", path.display()))
        }
        None => Ok(None),
    }
}

impl Config {
    /// From a kubeconfig file: the current context's cluster server and user token.
    pub fn from_kubeconfig(path: &Path) -> Result<Config, ClientError> {
        let fail = |reason: String| ClientError::Config {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let kc: Kubeconfig = serde_yaml_ng::from_str(&text).map_err(|e| fail(e.to_string()))?;
        let context = kc
            .contexts
            .iter()
            .find(|c| c.name == kc.current_context)
            .and_then(|c| c.value.as_ref())
            .ok_or_else(|| {
                fail(format!(
                    "current context {:?} is not defined",
                    kc.current_context
                ))
            })?;
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .and_then(|c| c.value.as_ref())
            .ok_or_else(|| fail(format!("cluster {:?} is not defined", context.cluster)))?;
        let default_user = UserEntry::default();
        let user = kc
            .users
            .iter()
            .find(|u| u.name == context.user)
            .and_then(|u| u.value.as_ref())
            .unwrap_or(&default_user);
        let base = path.parent().unwrap_or(Path::new("."));
        let tls = Tls {
            ca_pem: pem_of(
                cluster.ca_data.as_deref(),
                cluster.ca_file.as_deref(),
                base,
                "certificate-authority",
            )
            .map_err(fail)?,
            client_cert_pem: pem_of(
                user.cert_data.as_deref(),
                user.cert_file.as_deref(),
                base,
                "client-certificate",
            )
            .map_err(fail)?,
            client_key_pem: pem_of(
                user.key_data.as_deref(),
                user.key_file.as_deref(),
                base,
                "client-key",
            )
            .map_err(fail)?,
            insecure: cluster.insecure,
        };
        Ok(Config {
            server: cluster.server.trim_end_matches('/').to_string(),
            token: user.token.clone(),
            tls,
        })
    }

    /// Resolve `--kubeconfig` and `--master` as upstream components do (client-go's
    /// BuildConfigFromFlags): `master` overrides the kubeconfig's server, and `master` alone is
    /// enough. Only when neither flag is given is `$KUBECONFIG` read, so a component told where
    /// its cluster is never follows a kubeconfig the user's shell happens to point at.
    pub fn load(kubeconfig: Option<&Path>, master: Option<&str>) -> Result<Config, ClientError> {
        let path: Option<PathBuf> = match (kubeconfig, master) {
            (Some(p), _) => Some(p.to_path_buf()),
            (None, Some(_)) => None,
            (None, None) => std::env::var_os("KUBECONFIG").map(PathBuf::from),
        };
        let mut config = match (&path, master) {
            (Some(p), _) => Config::from_kubeconfig(p)?,
            (None, Some(m)) => Config::new(m),
            (None, None) => {
                return Err(ClientError::Config {
                    path: String::new(),
                    reason: "neither --kubeconfig nor --master was given".into(),
                })
            }
        };
        if let Some(m) = master {
            config.server = m.trim_end_matches('/').to_string();
        }
        Ok(config)
    }
}

/// A connection to the API server; cheap to clone.
#[derive(Clone)]
pub struct Client(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    pub(crate) server: String,
    pub(crate) token: Option<String>,
}

/// Whether requests to `url` go direct whatever the proxy variables say: as Go's
/// `http.ProxyFromEnvironment` (what kubectl and upstream's components use), a proxy is never
/// used for `localhost` or a loopback address. reqwest, left alone, would send a local
/// cluster's traffic to `$HTTP_PROXY`.
pub fn proxy_exempt(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A reqwest client builder for talking to `url`: the proxy variables are honoured except
/// where [`proxy_exempt`] says a proxy is never used.
pub fn http_builder(url: &str) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    if proxy_exempt(url) {
        builder.no_proxy()
    } else {
        builder
    }
}

impl Client {
    pub fn new(config: Config) -> Result<Client, ClientError> {
        let mut builder = http_builder(&config.server)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("tinykube/", env!("CARGO_PKG_VERSION")));
        let tls = &config.tls;
        if let Some(pem) = &tls.ca_pem {
            for ca in reqwest::Certificate::from_pem_bundle(pem).map_err(ClientError::Tls)? {
                builder = builder.add_root_certificate(ca);
            }
        }
        if let (Some(cert), Some(key)) = (&tls.client_cert_pem, &tls.client_key_pem) {
            let pem = [key.as_slice(), b"\n", cert.as_slice()].concat();
            let identity = reqwest::Identity::from_pem(&pem).map_err(ClientError::Tls)?;
            builder = builder.identity(identity);
        }
        let http = builder.danger_accept_invalid_certs(tls.insecure).build()?;
        Ok(Client(Arc::new(Inner {
            http,
            server: config.server,
            token: config.token,
        })))
    }

    pub(crate) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .0
            .http
            .request(method, format!("{}{path}", self.0.server));
        if let Some(t) = &self.0.token {
            req = req.bearer_auth(t);
        }
        req
    }

    pub fn server(&self) -> &str {
        &self.0.server
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_servers_bypass_proxies_as_in_go() {
        for url in [
            "http://127.0.0.1:6443",
            "https://localhost:6443/api",
            "http://[::1]:80",
            "http://127.9.8.7",
        ] {
            assert!(proxy_exempt(url), "{url}");
        }
        for url in ["http://10.0.0.1:6443", "https://example.com", "not a url"] {
            assert!(!proxy_exempt(url), "{url}");
        }
    }

    #[test]
    fn kubeconfig_current_context_and_master_override() {
        let dir = std::env::temp_dir().join(format!("tk-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: one\n  cluster: {server: 'http://127.0.0.1:1/'}\n- name: two\n  cluster: {server: 'http://127.0.0.1:2'}\ncontexts:\n- name: a\n  context: {cluster: one, user: u}\n- name: b\n  context: {cluster: two, user: u}\nusers:\n- name: u\n  user: {token: abc}\n",
        )
        .unwrap();
        let c = Config::from_kubeconfig(&path).unwrap();
        assert_eq!(
            (c.server.as_str(), c.token.as_deref()),
            ("http://127.0.0.1:2", Some("abc"))
        );
        let m = Config::load(Some(&path), Some("http://127.0.0.1:9/")).unwrap();
        assert_eq!(m.server, "http://127.0.0.1:9");
        assert!(Config::from_kubeconfig(&dir.join("missing")).is_err());
        // TLS: the CA inline, the client certificate and key as files beside the kubeconfig.
        std::fs::write(dir.join("me.crt"), "CERT").unwrap();
        std::fs::write(dir.join("me.key"), "KEY").unwrap();
        std::fs::write(
            &path,
            "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://127.0.0.1:3', certificate-authority-data: Q0E=, insecure-skip-tls-verify: true}\ncontexts:\n- name: c\n  context: {cluster: k, user: me}\nusers:\n- name: me\n  user: {client-certificate: me.crt, client-key: me.key}\n",
        )
        .unwrap();
        let c = Config::from_kubeconfig(&path).unwrap();
        assert_eq!(c.tls.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(c.tls.client_cert_pem.as_deref(), Some(&b"CERT"[..]));
        assert_eq!(c.tls.client_key_pem.as_deref(), Some(&b"KEY"[..]));
        assert!(c.tls.insecure && c.token.is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
