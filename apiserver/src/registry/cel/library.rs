//! Kubernetes' CEL libraries that the `cel` crate lacks, registered as overloads: the lists
//! library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), the regex library
//! (`find`, `findAll`) and `isURL`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

type Res<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Registers the Kubernetes functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    Ok(())
}

fn arg(args: &[CowVal<'_, '_>], i: usize) -> Result<Cel, ExecutionError> {
    match args.get(i) {
        Some(a) => Cel::try_from(a.as_ref()),
        None => Err(ExecutionError::MissingArgumentOrTarget),
    }
}

fn ret<'b, 'v>(value: Cel) -> Res<'b, 'v> {
    let boxed: Box<dyn Val> = value.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn list(args: &[CowVal<'_, '_>], function: &str) -> Result<Arc<Vec<Cel>>, ExecutionError> {
    match arg(args, 0)? {
        Cel::List(items) => Ok(items),
        other => Err(ExecutionError::no_such_member_overload(
            function,
            vec![other.type_of().to_string()],
        )),
    }
}

fn string(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<String, ExecutionError> {
    match arg(args, i)? {
        Cel::String(s) => Ok(s.to_string()),
        other => Err(ExecutionError::no_such_member_overload(
            function,
            vec![other.type_of().to_string()],
        )),
    }
}

/// Orders two list elements, as CEL's `<` does: numbers across int, uint and double; other
/// kinds only with their own kind.
fn compare(a: &Cel, b: &Cel, function: &str) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| {
        ExecutionError::no_such_overload(
            function,
            vec![a.type_of().to_string(), b.type_of().to_string()],
        )
    })
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let items = list(&args, "isSorted")?;
    for pair in items.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == Ordering::Greater {
            return ret(Cel::Bool(false));
        }
    }
    ret(Cel::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let items = list(&args, "sum")?;
    let mut acc = match items.first() {
        Some(Cel::UInt(_)) => Cel::UInt(0),
        Some(Cel::Float(_)) => Cel::Float(0.0),
        Some(Cel::Duration(_)) => Cel::Duration(chrono::Duration::zero()),
        _ => Cel::Int(0),
    };
    for item in items.iter() {
        acc = match (&acc, item) {
            (Cel::Int(a), Cel::Int(b)) => {
                Cel::Int(a.checked_add(*b).ok_or_else(|| overflow("sum"))?)
            }
            (Cel::UInt(a), Cel::UInt(b)) => {
                Cel::UInt(a.checked_add(*b).ok_or_else(|| overflow("sum"))?)
            }
            (Cel::Float(a), Cel::Float(b)) => Cel::Float(a + b),
            (Cel::Duration(a), Cel::Duration(b)) => {
                Cel::Duration(a.checked_add(b).ok_or_else(|| overflow("sum"))?)
            }
            (a, b) => {
                return Err(ExecutionError::no_such_overload(
                    "_+_",
                    vec![a.type_of().to_string(), b.type_of().to_string()],
                ))
            }
        };
    }
    ret(acc)
}

fn overflow(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "integer overflow")
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, want: Ordering) -> Res<'b, 'v> {
    let items = list(&args, function)?;
    let Some(mut best) = items.first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function}(list) argument must not be empty"),
        ));
    };
    for item in items.iter().skip(1) {
        if compare(item, best, function)? == want {
            best = item;
        }
    }
    ret(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let items = list(&args, "indexOf")?;
    let needle = arg(&args, 1)?;
    let at = items.iter().position(|i| *i == needle);
    ret(Cel::Int(at.map_or(-1, |i| i as i64)))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let items = list(&args, "lastIndexOf")?;
    let needle = arg(&args, 1)?;
    let at = items.iter().rposition(|i| *i == needle);
    ret(Cel::Int(at.map_or(-1, |i| i as i64)))
}

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| {
        ExecutionError::function_error(function, format!("'{pattern}' not a valid regex:\n{e}"))
    })
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = string(&args, 0, "find")?;
    let re = regex(&string(&args, 1, "find")?, "find")?;
    let found = re
        .find(&s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    ret(Cel::String(Arc::new(found)))
}

fn find_all_limited<'b, 'v>(args: Vec<CowVal<'b, 'v>>, limit: Option<i64>) -> Res<'b, 'v> {
    let s = string(&args, 0, "findAll")?;
    let re = regex(&string(&args, 1, "findAll")?, "findAll")?;
    let limit = match limit {
        Some(n) if n >= 0 => n as usize,
        _ => usize::MAX,
    };
    let found: Vec<Cel> = re
        .find_iter(&s)
        .take(limit)
        .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
        .collect();
    ret(Cel::List(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    find_all_limited(args, None)
}

fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let n = match arg(&args, 2)? {
        Cel::Int(n) => n,
        _ => -1,
    };
    find_all_limited(args, Some(n))
}

/// Whether `s` parses as a URL as Go's `url.ParseRequestURI` would: an absolute URI with a
/// scheme, or an absolute path.
fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Res<'b, 'v> {
    let s = string(&args, 0, "isURL")?;
    ret(Cel::Bool(url_ok(&s)))
}

fn url_ok(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}
