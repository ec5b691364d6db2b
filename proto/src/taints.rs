//! Taints and tolerations: which toleration tolerates which taint, as upstream's
//! `ToleratesTaint`. Shared by the scheduler, the DaemonSet controller and taint eviction.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Whether a toleration tolerates a taint `key=value:effect`.
pub fn tolerates(t: &Toleration, key: &str, value: &str, effect: &str) -> bool {
    let t_effect = t.effect.as_deref().unwrap_or("");
    if !t_effect.is_empty() && t_effect != effect {
        return false;
    }
    let t_key = t.key.as_deref().unwrap_or("");
    if !t_key.is_empty() && t_key != key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == value && !t_key.is_empty(),
        _ => false,
    }
}

/// The tolerations among `tolerations` that tolerate `taint`.
pub fn tolerations_of<'a>(
    tolerations: &'a [Toleration],
    taint: &'a Taint,
) -> impl Iterator<Item = &'a Toleration> + 'a {
    let value = taint.value.as_deref().unwrap_or("");
    tolerations
        .iter()
        .filter(move |t| tolerates(t, &taint.key, value, &taint.effect))
}

/// Whether some toleration tolerates `taint`.
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations_of(tolerations, taint).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn tolerations_match_taints_as_upstream() {
        let cases = [
            (tol("k", "Equal", "v", "NoSchedule"), true),
            (tol("k", "Equal", "w", "NoSchedule"), false),
            (tol("k", "Exists", "", ""), true),
            (tol("", "Exists", "", ""), true),
            (tol("", "Exists", "", "NoExecute"), false),
            (tol("other", "Exists", "", "NoSchedule"), false),
            (tol("k", "", "v", ""), true),
        ];
        for (t, want) in cases {
            assert_eq!(tolerates(&t, "k", "v", "NoSchedule"), want, "{t:?}");
        }
    }
}
