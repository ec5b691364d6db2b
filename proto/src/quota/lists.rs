//! Resource lists (`{"requests.cpu": "500m", "pods": "2"}`) as quota arithmetic sees them, with
//! upstream's rules: adding to a zero keeps the other side's format (`0` + `600Mi` is `600Mi`),
//! `mask` keeps named resources, `exceeded` names what is over its hard limit, and `pretty` is
//! the `k=v,k=v` form of admission messages.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::quantity::Quantity;

/// Resource name → quantity, sorted by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The resource list at `v` (quantities as strings or numbers); what does not parse is left out.
pub fn parse_list(v: Option<&Value>) -> ResourceList {
    let Some(Value::Object(m)) = v else {
        return ResourceList::new();
    };
    m.iter()
        .filter_map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Quantity::parse(&text).ok().map(|q| (k.clone(), q))
        })
        .collect()
}

/// The list as a JSON object of canonical quantities.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

fn plus(a: Quantity, b: Quantity) -> Quantity {
    if a.is_zero() {
        b
    } else {
        a + b
    }
}

/// Every resource of either list, summed.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, q) in b {
        let sum = match out.get(k) {
            Some(have) => plus(*have, *q),
            None => *q,
        };
        out.insert(k.clone(), sum);
    }
    out
}

/// `a` less `b`, for the resources of `a`.
pub fn subtract(a: &ResourceList, b: &ResourceList) -> ResourceList {
    a.iter()
        .map(|(k, q)| {
            let rest = match b.get(k) {
                Some(sub) => *q - *sub,
                None => *q,
            };
            (k.clone(), rest)
        })
        .collect()
}

/// The resources of `list` that `names` names.
pub fn mask<'a, S>(list: &ResourceList, names: impl IntoIterator<Item = &'a S>) -> ResourceList
where
    S: AsRef<str> + 'a + ?Sized,
{
    let mut out = ResourceList::new();
    for n in names {
        if let Some(q) = list.get(n.as_ref()) {
            out.insert(n.as_ref().to_string(), *q);
        }
    }
    out
}

/// The resources of `hard` that `used` exceeds (those `used` lacks are within).
pub fn exceeded(used: &ResourceList, hard: &ResourceList) -> Vec<String> {
    hard.iter()
        .filter(|(k, limit)| used.get(*k).is_some_and(|u| u > *limit))
        .map(|(k, _)| k.clone())
        .collect()
}

/// `requests.memory=700Mi,requests.cpu=1`, sorted by name.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, q)| format!("{k}={q}"))
        .collect::<Vec<_>>()
        .join(",")
}
