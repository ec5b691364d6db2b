//! Completion index sets as a Job's status writes them (`"0-2,4,7-9"`): read leniently (what
//! does not parse or is out of range is skipped, as upstream's parseIndexesFromString) and
//! written as ordered intervals (two neighbours as `3,4`, three or more as `3-5`, as
//! upstream's orderedIntervals.String).

use std::collections::BTreeSet;

/// A set of completion indexes.
pub type Indexes = BTreeSet<i64>;

/// The indexes of `text` below `completions`; fragments that do not parse are skipped.
pub fn parse(text: &str, completions: i64) -> Indexes {
    let mut out = Indexes::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i64>(), b.parse::<i64>()),
            None => (part.parse::<i64>(), part.parse::<i64>()),
        };
        let (Ok(a), Ok(b)) = (a, b) else { continue };
        if a < 0 || a > b {
            continue;
        }
        out.extend(a..=b.min(completions - 1));
    }
    out
}

/// The set as ordered intervals: `0-2,4,6,7`.
pub fn format(set: &Indexes) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(i64, i64)> = None;
    let flush = |run: (i64, i64), parts: &mut Vec<String>| {
        parts.push(match run.1 - run.0 {
            0 => run.0.to_string(),
            1 => format!("{},{}", run.0, run.1),
            _ => format!("{}-{}", run.0, run.1),
        });
    };
    for &i in set {
        run = match run {
            Some((a, b)) if b + 1 == i => Some((a, i)),
            Some(r) => {
                flush(r, &mut parts);
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut parts);
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_sets_round_trip() {
        let cases: &[(&str, i64, &[i64], &str)] = &[
            ("", 3, &[], ""),
            ("0-2", 3, &[0, 1, 2], "0-2"),
            ("0,1,2,4", 5, &[0, 1, 2, 4], "0-2,4"),
            ("1,3-5,7", 8, &[1, 3, 4, 5, 7], "1,3-5,7"),
            ("0-9", 4, &[0, 1, 2, 3], "0-3"),
            ("x,2,5-a", 4, &[2], "2"),
            ("0-1,3-4", 5, &[0, 1, 3, 4], "0,1,3,4"),
            ("0-1,2", 5, &[0, 1, 2], "0-2"),
        ];
        for (text, completions, want, back) in cases {
            let set = parse(text, *completions);
            assert_eq!(set.iter().copied().collect::<Vec<_>>(), *want, "{text}");
            assert_eq!(format(&set), *back, "{text}");
        }
    }
}
