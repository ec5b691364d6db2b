//! Resource quantities (`100m`, `200Mi`, `1.5Gi`, `2e3`): parsing, arithmetic and canonical form.

use std::fmt;
use std::ops::{Add, Sub};

const NANO: i128 = 1_000_000_000;

/// How a quantity is written; the canonical form keeps the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    BinarySI,
    DecimalSI,
    DecimalExponent,
}

/// An exact quantity, held in nano-units.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)]
pub struct QuantityError;

fn pow(base: i128, exp: u32) -> i128 {
    base.pow(exp)
}

impl Quantity {
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(split);
        let (negative, digits) = match number.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, number.strip_prefix('+').unwrap_or(number)),
        };
        if digits.is_empty()
            || digits == "."
            || digits.matches('.').count() > 1
            || digits.contains(['+', '-'])
        {
            return Err(QuantityError);
        }
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        // The mantissa is what an i128 holds (parsing fails beyond), and the scaling below is
        // checked too: a quantity too large to hold is refused, never wrapped.
        // Value as an exact fraction: mantissa / 10^frac_len, then scaled by the suffix.
        let mantissa: i128 = format!("{int_part}{frac_part}")
            .parse()
            .map_err(|_| QuantityError)?;
        let frac_len = frac_part.len() as u32;
        let (num, den, format): (i128, i128, Format) = match suffix {
            "" => (1, 1, Format::DecimalSI),
            "n" => (1, NANO, Format::DecimalSI),
            "u" => (1, 1_000_000, Format::DecimalSI),
            "m" => (1, 1000, Format::DecimalSI),
            "k" => (1000, 1, Format::DecimalSI),
            "M" => (pow(10, 6), 1, Format::DecimalSI),
            "G" => (pow(10, 9), 1, Format::DecimalSI),
            "T" => (pow(10, 12), 1, Format::DecimalSI),
            "P" => (pow(10, 15), 1, Format::DecimalSI),
            "E" => (pow(10, 18), 1, Format::DecimalSI),
            "Ki" => (1 << 10, 1, Format::BinarySI),
            "Mi" => (1 << 20, 1, Format::BinarySI),
            "Gi" => (1 << 30, 1, Format::BinarySI),
            "Ti" => (1 << 40, 1, Format::BinarySI),
            "Pi" => (1 << 50, 1, Format::BinarySI),
            "Ei" => (1 << 60, 1, Format::BinarySI),
            e if e.starts_with(['e', 'E']) => {
                let exp: i32 = e[1..].parse().map_err(|_| QuantityError)?;
                if exp.unsigned_abs() > 18 {
                    return Err(QuantityError);
                }
                if exp >= 0 {
                    (pow(10, exp as u32), 1, Format::DecimalExponent)
                } else {
                    (1, pow(10, exp.unsigned_abs()), Format::DecimalExponent)
                }
            }
            _ => return Err(QuantityError),
        };
        // nanos = mantissa * num * 10^9 / (den * 10^frac), with the common factor cancelled
        // first so that no representable quantity overflows on the way.
        let mut scale = num.checked_mul(NANO).ok_or(QuantityError)?;
        let mut total_den = 10i128
            .checked_pow(frac_len)
            .and_then(|p| den.checked_mul(p))
            .ok_or(QuantityError)?;
        let common = gcd(scale, total_den);
        scale /= common;
        total_den /= common;
        let scaled = mantissa.checked_mul(scale).ok_or(QuantityError)?;
        // Round up to whole nano-units, as upstream rounds up below its precision.
        let mut nanos = (scaled + total_den - 1) / total_den;
        if negative {
            nanos = -nanos;
        }
        Ok(Quantity { nanos, format })
    }

    /// Value in thousandths, rounded up (cpu in millicores).
    pub fn milli_value(&self) -> i64 {
        saturate(ceil_div(self.nanos, 1_000_000))
    }

    /// Value in whole units, rounded up (bytes, pods).
    pub fn value(&self) -> i64 {
        saturate(ceil_div(self.nanos, NANO))
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn from_milli(milli: i64) -> Quantity {
        Quantity {
            nanos: i128::from(milli) * 1_000_000,
            format: Format::DecimalSI,
        }
    }

    /// A quantity of `nanos` nano-units (`1500000n` for 1.5 millicores).
    pub fn from_nanos(nanos: i128, format: Format) -> Quantity {
        Quantity { nanos, format }
    }

    pub fn from_value(value: i64, format: Format) -> Quantity {
        Quantity {
            nanos: i128::from(value) * NANO,
            format,
        }
    }
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs().max(1)
}

/// An i64 as upstream's int64 accessors give it: clamped to the range, never wrapped.
fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v > 0 { i64::MAX } else { i64::MIN })
}

fn ceil_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && a > 0 {
        q + 1
    } else {
        q
    }
}

/// Whether a string is a valid quantity.
pub fn is_quantity(s: &str) -> bool {
    Quantity::parse(s).is_ok()
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}
impl Eq for Quantity {}
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Add for Quantity {
    type Output = Quantity;
    fn add(self, o: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(o.nanos),
            format: self.format,
        }
    }
}

impl Sub for Quantity {
    type Output = Quantity;
    fn sub(self, o: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(o.nanos),
            format: self.format,
        }
    }
}

impl fmt::Display for Quantity {
    /// Canonical form: the largest suffix of the quantity's family that keeps an integer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let n = self.nanos.unsigned_abs();
        let nano = NANO as u128;
        if n == 0 {
            return write!(f, "0");
        }
        if !n.is_multiple_of(nano) {
            for (div, suffix) in [(1_000_000, "m"), (1000, "u"), (1, "n")] {
                if n.is_multiple_of(div) {
                    return write!(f, "{sign}{}{suffix}", n / div);
                }
            }
        }
        let units = n / nano;
        let (base, suffixes): (u128, &[&str]) = match self.format {
            Format::BinarySI if units >= 1024 => (1024, &["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
            _ => (1000, &["", "k", "M", "G", "T", "P", "E"]),
        };
        let mut value = units;
        let mut idx = 0;
        while value.is_multiple_of(base) && idx + 1 < suffixes.len() && value >= base {
            value /= base;
            idx += 1;
        }
        if self.format == Format::DecimalExponent && idx > 0 {
            return write!(f, "{sign}{value}e{}", idx * 3);
        }
        write!(f, "{sign}{value}{}", suffixes[idx])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz targets: large and fine-grained quantities print in a form that parses
    /// back to them, and int64 accessors clamp instead of wrapping.
    #[test]
    fn extreme_quantities_round_trip_and_clamp() {
        for text in [
            "12456789012345678.0123",
            "1123456789012345678901.34567890",
            "123456789012345678923456789012.34567890",
        ] {
            let q = Quantity::parse(text).unwrap();
            assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q, "{text}");
        }
        let huge = Quantity::parse("100000000000000000000000").unwrap();
        assert_eq!(huge.value(), i64::MAX);
        assert_eq!(Quantity::from_value(-1, Format::DecimalSI).value(), -1);
        assert!(Quantity::parse("1.0000000000000000000000000000000000000001").is_err());
    }

    #[test]
    fn parses_values() {
        let cases = [
            ("100m", 100, 1),
            ("1", 1000, 1),
            ("1.5", 1500, 2),
            ("200Mi", 200 * 1024 * 1024 * 1000, 200 * 1024 * 1024),
            ("2e3", 2_000_000, 2000),
            (".5", 500, 1),
            ("1Ki", 1_024_000, 1024),
            ("0.1", 100, 1),
        ];
        for (s, milli, value) in cases {
            let q = Quantity::parse(s).unwrap();
            assert_eq!((q.milli_value(), q.value()), (milli, value), "{s}");
        }
        for bad in ["", "abc", "1.2.3", "1Zi", "--1", "1e", "m"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compares_and_prints_canonically() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("1"), q("1000m"));
        assert!(q("100m") < q("1"));
        for (input, canonical) in [
            ("1.5Gi", "1536Mi"),
            ("0.5", "500m"),
            ("1000m", "1"),
            ("2e3", "2e3"),
            ("1024Ki", "1Mi"),
            ("100m", "100m"),
            ("4", "4"),
            ("8Gi", "8Gi"),
        ] {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
        assert_eq!((q("1") + q("500m")).to_string(), "1500m");
        assert_eq!((q("1Gi") - q("512Mi")).to_string(), "512Mi");
    }
}
