//! Applets over words and numbers: `printf`, `seq`, `basename`,
//! `dirname`, `date`, `tr`, `cut`, `xargs`, `df`.

use chrono::format::{Item, StrftimeItems};

use super::super::io::Proc;
use super::test;

pub(super) async fn run(p: &mut Proc, name: &str, args: &[String]) -> Option<i32> {
    Some(match name {
        "printf" => printf(p, args),
        "test" => test::test(p, args, false),
        "[" => test::test(p, args, true),
        "expr" => test::expr(p, args),
        "seq" => seq(p, args),
        "basename" => match args.first() {
            Some(a) => {
                let t = a.trim_end_matches('/');
                let mut b = t.rsplit('/').next().unwrap_or("").to_string();
                if b.is_empty() {
                    b = "/".into();
                }
                if let Some(suffix) = args.get(1) {
                    if b != *suffix {
                        b = b.strip_suffix(suffix.as_str()).unwrap_or(&b).to_string();
                    }
                }
                p.out(&format!("{b}\n"));
                0
            }
            None => 1,
        },
        "dirname" => match args.first() {
            Some(a) => {
                let t = a.trim_end_matches('/');
                let d = match t.rfind('/') {
                    Some(0) => "/".to_string(),
                    Some(i) => t[..i].trim_end_matches('/').to_string(),
                    None if a.starts_with('/') => "/".into(),
                    None => ".".into(),
                };
                p.out(&format!("{d}\n"));
                0
            }
            None => 1,
        },
        "date" => date(p, args),
        "tr" => {
            let input = p.io.stdin.read_all(&p.sys).await;
            let delete = args.first().is_some_and(|a| a == "-d");
            let sets: Vec<Vec<char>> = args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .map(|a| charset(a))
                .collect();
            let out: String = input
                .chars()
                .filter_map(
                    |c| match sets.first().and_then(|s| s.iter().position(|x| *x == c)) {
                        Some(_) if delete => None,
                        Some(i) => Some(
                            sets.get(1)
                                .and_then(|t| t.get(i).or(t.last()))
                                .copied()
                                .unwrap_or(c),
                        ),
                        None => Some(c),
                    },
                )
                .collect();
            p.out(&out);
            0
        }
        "cut" => {
            let input = p.io.stdin.read_all(&p.sys).await;
            let mut delim = "\t".to_string();
            let mut fields = String::new();
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                if let Some(d) = a.strip_prefix("-d") {
                    delim = if d.is_empty() {
                        i += 1;
                        args.get(i).cloned().unwrap_or_default()
                    } else {
                        d.to_string()
                    };
                } else if let Some(f) = a.strip_prefix("-f") {
                    fields = if f.is_empty() {
                        i += 1;
                        args.get(i).cloned().unwrap_or_default()
                    } else {
                        f.to_string()
                    };
                }
                i += 1;
            }
            let picked: Vec<usize> = fields.split(',').filter_map(|f| f.parse().ok()).collect();
            let mut out = String::new();
            for line in input.lines() {
                let parts: Vec<&str> = line.split(delim.as_str()).collect();
                let sel: Vec<&str> = picked
                    .iter()
                    .filter_map(|k| parts.get(k.wrapping_sub(1)).copied())
                    .collect();
                out.push_str(&format!("{}\n", sel.join(&delim)));
            }
            p.out(&out);
            0
        }
        "xargs" => {
            let input = p.io.stdin.read_all(&p.sys).await;
            let mut argv: Vec<String> = if args.is_empty() {
                vec!["echo".into()]
            } else {
                args.to_vec()
            };
            argv.extend(input.split_whitespace().map(str::to_string));
            let name = argv[0].clone();
            return super::run(p, &name, &argv).await;
        }
        "df" => {
            p.out("Filesystem           1K-blocks      Used Available Use% Mounted on\noverlay               61202244  10485760  50716484  17% /\n");
            0
        }
        _ => return None,
    })
}

fn charset(s: &str) -> Vec<char> {
    let cs: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if i + 2 < cs.len() && cs[i + 1] == '-' {
            out.extend(cs[i]..=cs[i + 2]);
            i += 3;
        } else {
            out.push(cs[i]);
            i += 1;
        }
    }
    out
}

fn number(s: &str) -> Option<i64> {
    let t = s.trim();
    if let Some(c) = t.strip_prefix('\'').or_else(|| t.strip_prefix('"')) {
        return c.chars().next().map(|c| c as i64);
    }
    t.parse().ok()
}

fn printf(p: &mut Proc, args: &[String]) -> i32 {
    let Some(fmt) = args.first() else {
        p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: printf FORMAT [ARG]...\n");
        return 1;
    };
    let fmt: Vec<char> = fmt.chars().collect();
    let mut rest = args[1..].iter();
    let mut out = String::new();
    let mut status = 0;
    loop {
        let mut used = false;
        let mut i = 0;
        while i < fmt.len() {
            let c = fmt[i];
            if c == '\\' {
                let mut j = i + 1;
                if fmt.get(j).is_some_and(|d| d.is_digit(8)) {
                    while j < fmt.len() && j < i + 4 && fmt[j].is_digit(8) {
                        j += 1;
                    }
                } else {
                    j += 1;
                }
                let esc: String = fmt[i..j.min(fmt.len())].iter().collect();
                if !super::unescape(&esc, &mut out) {
                    p.out(&out);
                    return status;
                }
                i = j;
                continue;
            }
            if c != '%' {
                out.push(c);
                i += 1;
                continue;
            }
            if fmt.get(i + 1) == Some(&'%') {
                out.push('%');
                i += 2;
                continue;
            }
            let start = i + 1;
            let mut j = start;
            while j < fmt.len() && "-+ #0123456789.".contains(fmt[j]) {
                j += 1;
            }
            let Some(&conv) = fmt.get(j) else {
                out.extend(&fmt[i..]);
                break;
            };
            let spec: String = fmt[start..j].iter().collect();
            i = j + 1;
            let arg = rest.next();
            used |= arg.is_some();
            let arg = arg.map(String::as_str).unwrap_or("");
            let text = match conv {
                's' => arg.to_string(),
                'b' => {
                    let mut s = String::new();
                    super::unescape(arg, &mut s);
                    s
                }
                'c' => arg.chars().next().map(String::from).unwrap_or_default(),
                'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                    let n = if arg.is_empty() {
                        0
                    } else if let Some(n) = number(arg) {
                        n
                    } else {
                        p.err(&format!("printf: invalid number '{arg}'\n"));
                        status = 1;
                        0
                    };
                    match conv {
                        'x' => format!("{n:x}"),
                        'X' => format!("{n:X}"),
                        'o' => format!("{n:o}"),
                        _ => n.to_string(),
                    }
                }
                'f' | 'e' | 'g' => {
                    let f: f64 = if arg.is_empty() {
                        0.0
                    } else {
                        arg.trim().parse().unwrap_or_else(|_| {
                            p.err(&format!("printf: invalid number '{arg}'\n"));
                            status = 1;
                            0.0
                        })
                    };
                    let prec = spec
                        .split_once('.')
                        .and_then(|(_, p)| p.parse().ok())
                        .unwrap_or(6);
                    match conv {
                        'e' => format!("{f:.prec$e}"),
                        'g' => f.to_string(),
                        _ => format!("{f:.prec$}"),
                    }
                }
                other => {
                    p.err(&format!("printf: %{other}: invalid format\n"));
                    return 1;
                }
            };
            out.push_str(&pad(&spec, text, conv));
        }
        if !used || rest.len() == 0 {
            break;
        }
    }
    p.out(&out);
    status
}

/// Apply a conversion's flags, width and (for strings) precision.
fn pad(spec: &str, mut text: String, conv: char) -> String {
    let left = spec.contains('-');
    let zero = spec.starts_with('0') || spec.contains("-0") || spec.contains("+0");
    let (w, prec) = match spec
        .trim_start_matches(['-', '+', ' ', '#', '0'])
        .split_once('.')
    {
        Some((w, p)) => (w.to_string(), p.parse::<usize>().ok()),
        None => (
            spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                .to_string(),
            None,
        ),
    };
    if conv == 's' {
        if let Some(p) = prec {
            text = text.chars().take(p).collect();
        }
    }
    if spec.contains('+') && "di".contains(conv) && !text.starts_with('-') {
        text.insert(0, '+');
    }
    let width: usize = w.parse().unwrap_or(0);
    let len = text.chars().count();
    if len >= width {
        return text;
    }
    let fill = width - len;
    if left {
        format!("{text}{}", " ".repeat(fill))
    } else if zero && conv != 's' {
        let (sign, digits) = if text.starts_with(['-', '+']) {
            text.split_at(1)
        } else {
            ("", text.as_str())
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{text}", " ".repeat(fill))
    }
}

fn seq(p: &mut Proc, args: &[String]) -> i32 {
    let mut sep = "\n".to_string();
    let mut nums = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-s" {
            sep = args.get(i + 1).cloned().unwrap_or_default();
            i += 2;
            continue;
        }
        nums.push(args[i].clone());
        i += 1;
    }
    let parsed: Option<Vec<f64>> = nums.iter().map(|n| n.parse().ok()).collect();
    let Some(v) = parsed.filter(|v| (1..=3).contains(&v.len())) else {
        let bad = nums.iter().find(|n| n.parse::<f64>().is_err());
        match bad {
            Some(b) => p.err(&format!("seq: invalid number '{b}'\n")),
            None => p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: seq [-w] [-s SEP] [FIRST [INC]] LAST\n"),
        }
        return 1;
    };
    let (first, inc, last) = match v.len() {
        1 => (1.0, 1.0, v[0]),
        2 => (v[0], 1.0, v[1]),
        _ => (v[0], v[1], v[2]),
    };
    if inc == 0.0 {
        return 1;
    }
    let decimals = nums
        .iter()
        .map(|n| n.split_once('.').map_or(0, |(_, d)| d.len()))
        .max()
        .unwrap_or(0);
    let mut items = Vec::new();
    let mut x = first;
    while (inc > 0.0 && x <= last + 1e-9) || (inc < 0.0 && x >= last - 1e-9) {
        items.push(format!("{x:.decimals$}"));
        x += inc;
        if items.len() > 1_000_000 {
            break;
        }
    }
    if !items.is_empty() {
        p.out(&format!("{}\n", items.join(&sep)));
    }
    0
}

fn date(p: &mut Proc, args: &[String]) -> i32 {
    let now: chrono::DateTime<chrono::Utc> = p.sys.now().into();
    let mut fmt = "%a %b %e %H:%M:%S UTC %Y".to_string();
    for a in args {
        if let Some(f) = a.strip_prefix('+') {
            fmt = f.to_string();
        } else if a == "-I" {
            fmt = "%Y-%m-%d".into();
        } else if a == "-R" {
            fmt = "%a, %d %b %Y %H:%M:%S +0000".into();
        } else if a == "-u" || a == "--utc" {
        } else {
            p.err(&format!("date: invalid date '{a}'\n"));
            return 1;
        }
    }
    let items: Vec<Item> = StrftimeItems::new(&fmt).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        p.out(&format!("{fmt}\n"));
        return 0;
    }
    p.out(&format!("{}\n", now.format_with_items(items.into_iter())));
    0
}
