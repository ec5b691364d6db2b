//! The `perl` image of the docs' "Jobs" page: `perl -Mbignum=bpi -wle 'print bpi(2000)'`
//! prints π to that many significant digits (rounded, as Math::BigFloat's `bpi` does) and exits
//! 0, so the pi Job completes and `kubectl logs job/pi` shows the digits. Only `print bpi(N)`
//! with the bignum module is simulated: any other Perl program gets an honest error and exit 2,
//! as a real perl does on a script it cannot run. The image is Debian with perl on its PATH.

use super::rootfs::{self, Base};
use super::Reference;
use crate::fs::{Fs, Node};
use crate::{BoxFuture, Container, Host, Stream};

/// Debian with `/usr/local/bin/perl`, as the official image.
pub fn root(r: &Reference) -> Node {
    rootfs::base(Base::Debian, r.tag)
        .file("/usr/local/bin/perl", rootfs::BINARY)
        .build()
}

/// `perl ARGS…`.
pub fn perl<'a>(
    argv: &'a [String],
    _c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        match bpi_request(argv) {
            Some(digits) => {
                let mut out = pi(digits);
                out.push('\n');
                host.write(Stream::Stdout, &out);
                0
            }
            None => {
                host.write(
                    Stream::Stderr,
                    "perl: tinykube simulates only `perl -Mbignum=bpi -wle 'print bpi(N)'` (the docs' pi Job)\n",
                );
                2
            }
        }
    })
}

/// The N of `-Mbignum=bpi … 'print bpi(N)'`, if that is the program.
fn bpi_request(argv: &[String]) -> Option<usize> {
    let args = argv.get(1..)?;
    if !args.iter().any(|a| a == "-Mbignum=bpi") {
        return None;
    }
    // The program is the argument after the -e/-le/-wle switch cluster.
    let at = args
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("-M") && a.ends_with('e'))?;
    let program = args.get(at + 1)?.trim().trim_end_matches(';');
    let n = program
        .strip_prefix("print")?
        .trim()
        .strip_prefix("bpi(")?
        .strip_suffix(')')?
        .trim()
        .parse::<usize>()
        .ok()?;
    (1..=100_000).contains(&n).then_some(n)
}

/// π to `digits` significant digits, rounded half up: `3.14159…`.
pub fn pi(digits: usize) -> String {
    // A few guard digits decide the rounding of the last one.
    let raw = spigot(digits + 10);
    let mut d: Vec<u8> = raw[..digits].to_vec();
    if raw[digits] >= 5 {
        let mut i = d.len();
        loop {
            if i == 0 {
                d.insert(0, 1);
                break;
            }
            i -= 1;
            if d[i] == 9 {
                d[i] = 0;
            } else {
                d[i] += 1;
                break;
            }
        }
    }
    let mut out = String::with_capacity(digits + 1);
    for (i, v) in d.iter().enumerate() {
        if i == 1 {
            out.push('.');
        }
        out.push(char::from(b'0' + v));
    }
    out
}

/// The first `n` decimal digits of π (3, 1, 4, 1, 5, …) by Rabinowitz and Wagon's spigot.
fn spigot(n: usize) -> Vec<u8> {
    let len = n * 10 / 3 + 2;
    let mut a = vec![2u64; len];
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let mut held: Vec<u8> = Vec::new();
    while out.len() + held.len() < n + 1 {
        let mut carry = 0u64;
        for i in (1..len).rev() {
            let x = a[i] * 10 + carry * (i as u64 + 1);
            let den = 2 * i as u64 + 1;
            a[i] = x % den;
            carry = x / den;
        }
        let x = a[0] * 10 + carry;
        a[0] = x % 10;
        let q = (x / 10) as u8;
        // `held` is the last digit that may still change, then the 9s after it.
        match q {
            9 => held.push(9),
            10 => {
                if let Some(first) = held.first_mut() {
                    *first += 1;
                }
                for nine in held.iter_mut().skip(1) {
                    *nine = 0;
                }
                out.append(&mut held);
                held.push(0);
            }
            _ => {
                out.append(&mut held);
                held.push(q);
            }
        }
    }
    out.append(&mut held);
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_has_the_digits_and_the_rounding_of_bpi() {
        assert_eq!(pi(1), "3");
        assert_eq!(pi(5), "3.1416");
        assert_eq!(
            pi(50),
            "3.1415926535897932384626433832795028841971693993751"
        );
        // Rounding inside the run of six 9s from digit 763 carries through it.
        assert_eq!(&pi(767)[755..], "7072113500000");
        let p = pi(2000);
        assert_eq!(p.len(), 2001);
        assert!(p.ends_with("4780275901"), "{}", &p[1990..]);
    }

    #[test]
    fn only_the_bpi_program_runs() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            bpi_request(&argv(&["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"])),
            Some(2000)
        );
        assert_eq!(
            bpi_request(&argv(&["perl", "-Mbignum=bpi", "-le", "print bpi(10);"])),
            Some(10)
        );
        assert_eq!(bpi_request(&argv(&["perl", "-e", "print 1"])), None);
        assert_eq!(bpi_request(&argv(&["perl", "script.pl"])), None);
    }
}
