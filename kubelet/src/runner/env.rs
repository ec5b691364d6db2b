//! A container's environment, as the kubelet builds it: the Service variables of its
//! namespace (`enableServiceLinks`), then `envFrom`, then `env` (later names win), with
//! `$(VAR)` references expanded, values from ConfigMaps, Secrets, the downward API and the
//! container's resources. A missing ConfigMap or Secret is the container's
//! `CreateContainerConfigError`, with upstream's message.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, Service};
use tinykube_client::{Api, Client};

use super::volumes::field_value;

/// The environment in order; `Err` is the `CreateContainerConfigError` message.
pub(crate) async fn build(
    client: &Client,
    pod: &Pod,
    c: &Container,
    services: &[Arc<Service>],
) -> Result<Vec<(String, String)>, String> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, k: String, v: String| {
        env.retain(|(n, _)| *n != k);
        env.push((k, v));
    };
    let links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    for svc in services {
        let svc_ns = svc.metadata.namespace.as_deref().unwrap_or("");
        let name = svc.metadata.name.as_deref().unwrap_or("");
        let is_master = svc_ns == "default" && name == "kubernetes";
        if (svc_ns == ns && links) || is_master {
            for (k, v) in service_vars(svc) {
                set(&mut env, k, v);
            }
        }
    }
    let mut configs: BTreeMap<String, Option<ConfigMap>> = BTreeMap::new();
    let mut secrets: BTreeMap<String, Option<Secret>> = BTreeMap::new();
    for from in c.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            match config_map(client, &ns, &r.name, &mut configs).await? {
                Some(cm) => {
                    for (k, v) in cm.data.unwrap_or_default() {
                        set(&mut env, format!("{prefix}{k}"), v);
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(format!("configmap \"{}\" not found", r.name)),
            }
        }
        if let Some(r) = &from.secret_ref {
            match secret(client, &ns, &r.name, &mut secrets).await? {
                Some(s) => {
                    for (k, v) in s.data.unwrap_or_default() {
                        set(
                            &mut env,
                            format!("{prefix}{k}"),
                            String::from_utf8_lossy(&v.0).into(),
                        );
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(format!("secret \"{}\" not found", r.name)),
            }
        }
    }
    for e in c.env.iter().flatten() {
        let value = match &e.value_from {
            None => expand(e.value.as_deref().unwrap_or(""), &env),
            Some(from) => {
                if let Some(r) = &from.config_map_key_ref {
                    let cm = config_map(client, &ns, &r.name, &mut configs).await?;
                    match cm.and_then(|cm| cm.data.and_then(|d| d.get(&r.key).cloned())) {
                        Some(v) => v,
                        None if r.optional == Some(true) => continue,
                        None if configs.get(&r.name).is_some_and(Option::is_some) => {
                            return Err(format!(
                                "couldn't find key {} in ConfigMap {ns}/{}",
                                r.key, r.name
                            ))
                        }
                        None => return Err(format!("configmap \"{}\" not found", r.name)),
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    let s = secret(client, &ns, &r.name, &mut secrets).await?;
                    match s.and_then(|s| s.data.and_then(|d| d.get(&r.key).cloned())) {
                        Some(v) => String::from_utf8_lossy(&v.0).into(),
                        None if r.optional == Some(true) => continue,
                        None if secrets.get(&r.name).is_some_and(Option::is_some) => {
                            return Err(format!(
                                "couldn't find key {} in Secret {ns}/{}",
                                r.key, r.name
                            ))
                        }
                        None => return Err(format!("secret \"{}\" not found", r.name)),
                    }
                } else if let Some(f) = &from.field_ref {
                    field_value(pod, &f.field_path).unwrap_or_default()
                } else if let Some(r) = &from.resource_field_ref {
                    resource_value(c, &r.resource, r.divisor.as_ref().map(|q| q.0.as_str()))
                } else {
                    String::new()
                }
            }
        };
        set(&mut env, e.name.clone(), value);
    }
    Ok(env)
}

async fn config_map(
    client: &Client,
    ns: &str,
    name: &str,
    cache: &mut BTreeMap<String, Option<ConfigMap>>,
) -> Result<Option<ConfigMap>, String> {
    if let Some(hit) = cache.get(name) {
        return Ok(hit.clone());
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let got = api.get_opt(name).await.map_err(|e| e.to_string())?;
    cache.insert(name.to_string(), got.clone());
    Ok(got)
}

async fn secret(
    client: &Client,
    ns: &str,
    name: &str,
    cache: &mut BTreeMap<String, Option<Secret>>,
) -> Result<Option<Secret>, String> {
    if let Some(hit) = cache.get(name) {
        return Ok(hit.clone());
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let got = api.get_opt(name).await.map_err(|e| e.to_string())?;
    cache.insert(name.to_string(), got.clone());
    Ok(got)
}

/// `$(VAR)` references to variables defined before, `$$(VAR)` escaping, as upstream expands.
pub(crate) fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(a) = after.strip_prefix('$') {
            out.push('$');
            rest = a;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(j) => {
                    let name = &inner[..j];
                    match env.iter().rev().find(|(k, _)| k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => out.push_str(&format!("$({name})")),
                    }
                    rest = &inner[j + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = inner;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The Docker-links style variables of a Service (`NGINX_SERVICE_HOST`, `NGINX_PORT_80_TCP`…).
fn service_vars(svc: &Service) -> Vec<(String, String)> {
    let Some(spec) = &svc.spec else {
        return Vec::new();
    };
    let ip = match spec.cluster_ip.as_deref() {
        Some(ip) if ip != "None" && !ip.is_empty() => ip,
        _ => return Vec::new(),
    };
    let name = svc
        .metadata
        .name
        .as_deref()
        .unwrap_or("")
        .to_uppercase()
        .replace('-', "_");
    let ports = spec.ports.clone().unwrap_or_default();
    let Some(first) = ports.first() else {
        return Vec::new();
    };
    let mut out = vec![
        (format!("{name}_SERVICE_HOST"), ip.to_string()),
        (format!("{name}_SERVICE_PORT"), first.port.to_string()),
    ];
    for p in &ports {
        if let Some(pn) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.push((
                format!(
                    "{name}_SERVICE_PORT_{}",
                    pn.to_uppercase().replace('-', "_")
                ),
                p.port.to_string(),
            ));
        }
    }
    let proto = |p: &k8s_openapi::api::core::v1::ServicePort| {
        p.protocol.clone().unwrap_or_else(|| "TCP".into())
    };
    out.push((
        format!("{name}_PORT"),
        format!("{}://{ip}:{}", proto(first).to_lowercase(), first.port),
    ));
    for p in &ports {
        let pr = proto(p);
        let base = format!("{name}_PORT_{}_{}", p.port, pr.to_uppercase());
        out.push((
            base.clone(),
            format!("{}://{ip}:{}", pr.to_lowercase(), p.port),
        ));
        out.push((format!("{base}_PROTO"), pr.to_lowercase()));
        out.push((format!("{base}_PORT"), p.port.to_string()));
        out.push((format!("{base}_ADDR"), ip.to_string()));
    }
    out
}

/// A `resourceFieldRef`'s value: the container's limit (or request), divided by the divisor
/// and rounded up, as upstream; an unset limit is the node's allocatable, not known here, so
/// it reads as 0.
fn resource_value(c: &Container, resource: &str, divisor: Option<&str>) -> String {
    let (list, name) = match resource.split_once('.') {
        Some(("limits", n)) => (c.resources.as_ref().and_then(|r| r.limits.clone()), n),
        Some(("requests", n)) => (c.resources.as_ref().and_then(|r| r.requests.clone()), n),
        _ => return String::new(),
    };
    use tinykube_proto::quantity::Quantity;
    let milli = |q: &str| Quantity::parse(q).map(|q| q.milli_value()).ok();
    let value = list
        .and_then(|l| l.get(name).cloned())
        .and_then(|q| milli(&q.0))
        .unwrap_or(0);
    let div = divisor.and_then(milli).filter(|d| *d > 0).unwrap_or(1000);
    format!("{}", (value + div - 1) / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_expand_as_upstream() {
        let env = vec![("A".to_string(), "x".to_string())];
        let cases = [
            ("$(A)-y", "x-y"),
            ("$$(A)", "$(A)"),
            ("$(B)", "$(B)"),
            ("a$b", "a$b"),
            ("$(A", "$(A"),
        ];
        for (v, want) in cases {
            assert_eq!(expand(v, &env), want, "{v}");
        }
    }
}
