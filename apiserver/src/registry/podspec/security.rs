//! Security contexts, as upstream validates them: user and group IDs within 32 bits, the proc
//! mount type, seccomp and AppArmor profiles, privilege escalation against privileged mode, and
//! at the pod level `shareProcessNamespace`, sysctls, the fsGroup and supplemental-groups
//! policies, and the SELinux change policy.

use serde_json::Value;

use super::super::field::FieldError;
use super::volumes::local_descending_path;
use super::{items, str_at};

const ID_RANGE: &str = "must be between 0 and 4294967295, inclusive";
const SYSCTL_RE: &str = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

fn id(sc: &Value, key: &str, path: &str) -> Option<FieldError> {
    let v = sc.get(key).and_then(Value::as_i64)?;
    (!(0..=0xffff_ffff).contains(&v))
        .then(|| FieldError::invalid(format!("{path}.{key}"), v, ID_RANGE))
}

fn seccomp(p: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(p) = p.filter(|v| !v.is_null()) else {
        return errs;
    };
    const TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];
    let kind = str_at(p, "type");
    match kind {
        "" => errs.push(FieldError::required(
            format!("{path}.type"),
            "type is required when seccompProfile is set",
        )),
        k if !TYPES.contains(&k) => {
            errs.push(FieldError::not_supported(format!("{path}.type"), k, TYPES))
        }
        _ => {}
    }
    let local = p.get("localhostProfile").and_then(Value::as_str);
    match (kind, local) {
        ("Localhost", None) => errs.push(FieldError::required(
            format!("{path}.localhostProfile"),
            "must be set when seccomp type is Localhost",
        )),
        ("Localhost", Some(l)) => errs.extend(local_descending_path(
            l,
            &format!("{path}.localhostProfile"),
        )),
        (_, Some(_)) => errs.push(FieldError::invalid(
            format!("{path}.localhostProfile"),
            p.clone(),
            "can only be set when seccomp type is Localhost",
        )),
        _ => {}
    }
    errs
}

fn apparmor(p: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(p) = p.filter(|v| !v.is_null()) else {
        return errs;
    };
    let local = p.get("localhostProfile").and_then(Value::as_str);
    let field = format!("{path}.localhostProfile");
    match str_at(p, "type") {
        "Localhost" => match local {
            None | Some("") => errs.push(FieldError::required(
                field,
                "must be set when AppArmor type is Localhost",
            )),
            Some(l) if l.trim() != l => errs.push(FieldError::invalid(
                field,
                l,
                "must not be padded with whitespace",
            )),
            Some(l) if l.len() > 4095 => errs.push(FieldError::too_long(field, "", 4095)),
            Some(_) => {}
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = local {
                errs.push(FieldError::invalid(
                    field,
                    l,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            format!("{path}.type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            format!("{path}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    errs
}

/// A container's `securityContext` at `path`.
pub fn container(sc: Option<&Value>, path: &str, host_users: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sc) = sc.filter(|v| !v.is_null()) else {
        return errs;
    };
    errs.extend(id(sc, "runAsUser", path));
    errs.extend(id(sc, "runAsGroup", path));
    if let Some(pm) = sc.get("procMount").and_then(Value::as_str) {
        let field = format!("{path}.procMount");
        if !["Default", "Unmasked"].contains(&pm) {
            errs.push(FieldError::not_supported(
                &field,
                pm,
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(FieldError::invalid(
                field,
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    errs.extend(seccomp(
        sc.get("seccompProfile"),
        &format!("{path}.seccompProfile"),
    ));
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            errs.push(FieldError::invalid(
                path,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let adds = sc.pointer("/capabilities/add");
        if items(adds).any(|(_, c)| c.as_str() == Some("CAP_SYS_ADMIN")) {
            errs.push(FieldError::invalid(
                path,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs.extend(apparmor(
        sc.get("appArmorProfile"),
        &format!("{path}.appArmorProfile"),
    ));
    errs
}

fn sysctl_name_ok(name: &str) -> bool {
    let segment = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    name.len() <= 253 && name.split(['.', '/']).all(segment)
}

/// The pod's `securityContext` (the pod spec at `spec`, the context at `path`).
pub fn pod(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sc) = spec.get("securityContext").filter(|v| !v.is_null()) else {
        return errs;
    };
    errs.extend(id(sc, "fsGroup", path));
    errs.extend(id(sc, "runAsUser", path));
    errs.extend(id(sc, "runAsGroup", path));
    for (g, gid) in items(sc.get("supplementalGroups")) {
        let v = gid.as_i64().unwrap_or(-1);
        if !(0..=0xffff_ffff).contains(&v) {
            errs.push(FieldError::invalid(
                format!("{path}.supplementalGroups[{g}]"),
                v,
                ID_RANGE,
            ));
        }
    }
    if spec.get("shareProcessNamespace").and_then(Value::as_bool) == Some(true)
        && spec.get("hostPID").and_then(Value::as_bool) == Some(true)
    {
        errs.push(FieldError::invalid(
            format!("{path}.shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, s) in items(sc.get("sysctls")) {
        let name = str_at(s, "name");
        let field = format!("{path}.sysctls[{i}].name");
        if name.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else if !sysctl_name_ok(name) {
            errs.push(FieldError::invalid(
                field,
                name,
                format!("must have at most 253 characters and match regex {SYSCTL_RE}"),
            ));
        } else if names.contains(&name) {
            errs.push(FieldError::duplicate(field, name));
        }
        names.push(name);
    }
    let one_of = |key: &str, allowed: &[&str], errs: &mut Vec<FieldError>| {
        if let Some(v) = sc.get(key).and_then(Value::as_str) {
            if !allowed.contains(&v) {
                errs.push(FieldError::not_supported(
                    format!("{path}.{key}"),
                    v,
                    allowed,
                ));
            }
        }
    };
    one_of(
        "fsGroupChangePolicy",
        &["Always", "OnRootMismatch"],
        &mut errs,
    );
    errs.extend(seccomp(
        sc.get("seccompProfile"),
        &format!("{path}.seccompProfile"),
    ));
    errs.extend(apparmor(
        sc.get("appArmorProfile"),
        &format!("{path}.appArmorProfile"),
    ));
    one_of("supplementalGroupsPolicy", &["Merge", "Strict"], &mut errs);
    one_of(
        "seLinuxChangePolicy",
        &["MountOption", "Recursive"],
        &mut errs,
    );
    errs
}
