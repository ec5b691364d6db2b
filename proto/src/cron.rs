//! CronJob schedules as upstream reads them (robfig/cron's standard parser): five fields
//! (minute, hour, day of month, month, day of week) with lists, ranges, steps and names, the
//! `@yearly` … `@hourly` descriptors, `@every DURATION`, and a leading `TZ=Zone` or
//! `CRON_TZ=Zone`. Parsing is done here so that a refused schedule gets upstream's message;
//! the next occurrence in a time zone (daylight-saving gaps and repeats included) is computed by
//! the `croner` crate from the parsed fields, and zones come from `chrono-tz`.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, TimeZone as _, Utc};
use chrono_tz::Tz;

/// One field's bounds and names.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// A field: the values it allows, and whether it was written `*` or `?` (which makes the
/// day-of-month and day-of-week fields combine with AND instead of OR, as in cron).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    bits: u64,
    star: bool,
}

/// When a schedule fires.
#[derive(Debug, Clone)]
enum Rule {
    Cron(Box<croner::Cron>),
    /// `@every 1h30m`: a fixed delay, whole seconds.
    Every(Duration),
}

/// A parsed schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    rule: Rule,
    /// The zone of a `TZ=` prefix.
    zone: Option<Tz>,
}

/// The zone named `name` (an IANA name such as `Etc/UTC` or `America/New_York`; empty or
/// `UTC` is UTC, `Local` is refused: a controller's local zone is not the user's), with Go's
/// message for an unknown one.
pub fn time_zone(name: &str) -> Result<Tz, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(Tz::UTC);
    }
    name.parse::<Tz>()
        .map_err(|_| format!("unknown time zone {name}"))
}

impl Schedule {
    /// Parse as robfig/cron's `ParseStandard`, with its messages.
    pub fn parse(spec: &str) -> Result<Schedule, String> {
        if spec.is_empty() {
            return Err("empty spec string".into());
        }
        let mut rest = spec;
        let mut zone = None;
        if rest.starts_with("TZ=") || rest.starts_with("CRON_TZ=") {
            let space = rest.find(' ').unwrap_or(rest.len());
            let eq = rest.find('=').unwrap_or(0);
            let name = &rest[eq + 1..space];
            zone = Some(time_zone(name).map_err(|e| format!("provided bad location {name}: {e}"))?);
            rest = rest[space..].trim();
        }
        if rest.starts_with('@') {
            return Ok(Schedule {
                rule: descriptor(rest)?,
                zone,
            });
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let parsed = [
            field(fields[0], &MINUTES)?,
            field(fields[1], &HOURS)?,
            field(fields[2], &DOM)?,
            field(fields[3], &MONTHS)?,
            field(fields[4], &DOW)?,
        ];
        Ok(Schedule {
            rule: Rule::Cron(Box::new(to_croner(&parsed)?)),
            zone,
        })
    }

    /// The first time strictly after `t` when the schedule fires, evaluated in the `TZ=` zone
    /// of the schedule, else in `zone`, else in UTC. `None` when it never fires again
    /// (`0 0 30 2 *`) within croner's search horizon.
    pub fn next_after(&self, t: DateTime<Utc>, zone: Option<Tz>) -> Option<DateTime<Utc>> {
        match &self.rule {
            Rule::Every(d) => {
                // robfig: the delay from t, with t's sub-second part dropped.
                let whole = Utc.timestamp_opt(t.timestamp(), 0).single()?;
                Some(whole + chrono::Duration::from_std(*d).ok()?)
            }
            Rule::Cron(cron) => {
                let tz = self.zone.or(zone).unwrap_or(Tz::UTC);
                let local = t.with_timezone(&tz);
                cron.find_next_occurrence(&local, false)
                    .ok()
                    .map(|n| n.with_timezone(&Utc))
            }
        }
    }
}

fn descriptor(spec: &str) -> Result<Rule, String> {
    let cron = match spec {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => {
            if let Some(d) = spec.strip_prefix("@every ") {
                let delay = crate::duration::parse(d).map_err(|_| {
                    format!("failed to parse duration {spec}: time: invalid duration \"{d}\"")
                })?;
                // robfig: at least a second, whole seconds.
                let secs = delay.as_secs().max(1);
                return Ok(Rule::Every(Duration::from_secs(secs)));
            }
            return Err(format!("unrecognized descriptor: {spec}"));
        }
    };
    let fields: Vec<&str> = cron.split(' ').collect();
    let parsed = [
        field(fields[0], &MINUTES)?,
        field(fields[1], &HOURS)?,
        field(fields[2], &DOM)?,
        field(fields[3], &MONTHS)?,
        field(fields[4], &DOW)?,
    ];
    Ok(Rule::Cron(Box::new(to_croner(&parsed)?)))
}

/// A field: comma-separated ranges.
fn field(text: &str, b: &Bounds) -> Result<Field, String> {
    let mut out = Field {
        bits: 0,
        star: false,
    };
    for part in text.split(',') {
        let (bits, star) = range(part, b)?;
        out.bits |= bits;
        out.star |= star;
    }
    Ok(out)
}

/// One range: `*`, `?`, `N`, `N-M`, each optionally `/STEP`.
fn range(expr: &str, b: &Bounds) -> Result<(u64, bool), String> {
    let slash: Vec<&str> = expr.split('/').collect();
    let hyphen: Vec<&str> = slash[0].split('-').collect();
    let single = hyphen.len() == 1;
    let (start, mut end, mut star) = if hyphen[0] == "*" || hyphen[0] == "?" {
        (b.min, b.max, true)
    } else {
        let start = int_or_name(hyphen[0], b)?;
        let end = match hyphen.len() {
            1 => start,
            2 => int_or_name(hyphen[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end, false)
    };
    let step = match slash.len() {
        1 => 1,
        2 => {
            let step = number(slash[1])?;
            // `N/STEP` runs from N to the field's end.
            if single && !star {
                end = b.max;
            }
            if step > 1 {
                star = false;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    let mut bits = 0u64;
    let mut v = start;
    while v <= end {
        bits |= 1 << v;
        v += step;
    }
    Ok((bits, star))
}

fn int_or_name(text: &str, b: &Bounds) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = b.names.iter().position(|n| *n == lower) {
        // Month names start at 1, day names at 0.
        return Ok(i as u32 + b.min);
    }
    number(text)
}

/// Go's strconv.Atoi through robfig's mustParseInt, with their messages.
fn number(text: &str) -> Result<u32, String> {
    let n: i64 = text.parse().map_err(|_| {
        let why = if text
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit())
            && !text.trim_start_matches(['+', '-']).is_empty()
        {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("failed to parse int from {text}: strconv.Atoi: parsing \"{text}\": {why}")
    })?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {text}"));
    }
    u32::try_from(n).map_err(|_| format!("failed to parse int from {text}: value out of range"))
}

/// The parsed fields as a numeric croner pattern (day fields written `*` when they were, which
/// is what makes croner combine them as cron does).
fn to_croner(fields: &[Field; 5]) -> Result<croner::Cron, String> {
    let mut pattern = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            pattern.push(' ');
        }
        let full = i == 2 || i == 4;
        if full && f.star {
            pattern.push('*');
            continue;
        }
        let mut first = true;
        for v in 0..64 {
            if f.bits & (1 << v) != 0 {
                if !first {
                    pattern.push(',');
                }
                first = false;
                let _ = write!(pattern, "{v}");
            }
        }
    }
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(&pattern)
        .map_err(|e| format!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn refusals_carry_robfigs_messages() {
        for (spec, want) in [
            ("", "empty spec string"),
            ("bad", "expected exactly 5 fields, found 1: [bad]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            (
                "5-2 * * * *",
                "beginning of range (5) beyond end of range (2): 5-2",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/2/3 * * * *", "too many slashes: */2/3"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            (
                "TZ=Mars/Olympus * * * * *",
                "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
            ),
        ] {
            assert_eq!(Schedule::parse(spec).unwrap_err(), want, "{spec:?}");
        }
    }

    #[test]
    fn next_occurrences_follow_the_fields() {
        for (spec, from, want) in [
            (
                "*/1 * * * *",
                "2026-11-25T03:29:37Z",
                "2026-11-25T03:30:00Z",
            ),
            (
                "*/5 * * * *",
                "2026-11-25T03:30:00Z",
                "2026-11-25T03:35:00Z",
            ),
            ("0 * * * *", "2026-11-25T03:29:37Z", "2026-11-25T04:00:00Z"),
            ("@hourly", "2026-11-25T03:29:37Z", "2026-11-25T04:00:00Z"),
            ("@daily", "2026-11-25T03:29:37Z", "2026-11-26T00:00:00Z"),
            ("@weekly", "2026-11-25T03:29:37Z", "2026-11-29T00:00:00Z"),
            (
                "30 6 * * mon-fri",
                "2026-11-27T07:00:00Z",
                "2026-11-30T06:30:00Z",
            ),
            (
                "0 0 1 jan *",
                "2026-11-25T00:00:00Z",
                "2027-01-01T00:00:00Z",
            ),
            // Day of month and day of week both restricted: either matches.
            ("0 0 1 * 1", "2026-11-25T00:00:00Z", "2026-11-30T00:00:00Z"),
            // One of them `*`: both must.
            ("0 0 * * 1", "2026-11-25T00:00:00Z", "2026-11-30T00:00:00Z"),
            (
                "5/20 * * * *",
                "2026-11-25T03:26:00Z",
                "2026-11-25T03:45:00Z",
            ),
            (
                "@every 90s",
                "2026-11-25T03:00:00.500Z",
                "2026-11-25T03:01:30Z",
            ),
            (
                "TZ=America/New_York 0 9 * * *",
                "2026-11-25T03:00:00Z",
                "2026-11-25T14:00:00Z",
            ),
        ] {
            let s = Schedule::parse(spec).unwrap();
            assert_eq!(s.next_after(at(from), None), Some(at(want)), "{spec}");
        }
    }

    #[test]
    fn a_time_zone_moves_the_wall_clock() {
        let s = Schedule::parse("0 9 * * *").unwrap();
        let tokyo = time_zone("Asia/Tokyo").unwrap();
        assert_eq!(
            s.next_after(at("2026-11-25T03:00:00Z"), Some(tokyo)),
            Some(at("2026-11-26T00:00:00Z"))
        );
        assert_eq!(
            time_zone("Nowhere/Land").unwrap_err(),
            "unknown time zone Nowhere/Land"
        );
        assert_eq!(time_zone("").unwrap(), Tz::UTC);
    }
}
