//! Literals coerced to a column's storage domain (the rules are listed on [`Literal`]).

use std::cmp::Ordering;

use arrow_schema::{DataType, TimeUnit};
use sift_format::Scalar;

use crate::error::{Error, Result};
use crate::expr::Literal;

/// Days since 1970-01-01 of a proleptic Gregorian date `YYYY-MM-DD`.
pub(crate) fn parse_date(text: &str) -> Option<i32> {
    let text = text.trim();
    // A leading '-' is the sign of the year, not a separator.
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text),
    };
    let mut parts = text.splitn(3, '-');
    let y: i64 = sign * parts.next()?.parse::<i64>().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    let days_in = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d == 0 || d > days_in[m as usize - 1] {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

fn leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` of days since 1970-01-01.
pub(crate) fn format_date(days: i32) -> String {
    let z = i64::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    if y < 0 {
        format!("-{:04}-{m:02}-{d:02}", -y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

/// Seconds since the epoch of `YYYY-MM-DD[ T]HH:MM:SS[.fff…]` (UTC), as (seconds, nanos).
fn parse_timestamp(text: &str) -> Option<(i64, u32)> {
    let text = text.trim();
    let (date, time) = match text.find([' ', 'T']) {
        Some(i) => (&text[..i], text[i + 1..].trim_end_matches('Z')),
        None => (text, "00:00:00"),
    };
    let days = i64::from(parse_date(date)?);
    let mut hms = time.splitn(3, ':');
    let h: i64 = hms.next()?.parse().ok()?;
    let mi: i64 = hms.next()?.parse().ok()?;
    let sec_text = hms.next().unwrap_or("0");
    let (s, frac) = match sec_text.split_once('.') {
        Some((s, f)) => (s, f),
        None => (sec_text, ""),
    };
    let s: i64 = s.parse().ok()?;
    if h > 23 || mi > 59 || s > 60 || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().ok()?
    };
    Some((days * 86_400 + h * 3600 + mi * 60 + s, nanos))
}

/// A literal in a column's domain: exactly representable, or between two representable
/// values (for example `2.5` on an integer column), which comparisons resolve exactly.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Coerced {
    Int(i128),
    /// Strictly between `k` and `k + 1` (a fractional literal on an integer column).
    IntBetween(i128),
    /// Beyond every value of the column's type, below (`false`) or above (`true`).
    IntOutside(bool),
    Float(f64),
    Bytes(Vec<u8>),
    Bool(bool),
}

fn mismatch(column: &str, dt: &DataType, lit: &Literal, why: &str) -> Error {
    Error::Type(format!(
        "column '{column}' of type {dt} cannot be compared with {}{why}",
        crate::error::shorten(&lit.to_string())
    ))
}

/// Coerces `lit` to the domain of `column`, of type `dt`.
pub(crate) fn coerce(column: &str, dt: &DataType, lit: &Literal) -> Result<Coerced> {
    use DataType as D;
    let err = |why: &str| mismatch(column, dt, lit, why);
    Ok(match (dt, lit) {
        (D::Boolean, Literal::Bool(b)) => Coerced::Bool(*b),
        (D::Boolean, Literal::Str(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => Coerced::Bool(true),
            "false" => Coerced::Bool(false),
            _ => return Err(err(" (expected 'true' or 'false')")),
        },
        (D::Float16 | D::Float32 | D::Float64, Literal::Float(x)) => Coerced::Float(*x),
        (D::Float16 | D::Float32 | D::Float64, Literal::Int(i)) => Coerced::Float(*i as f64),
        (
            D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView,
            Literal::Str(s),
        ) => Coerced::Bytes(s.as_bytes().to_vec()),
        (D::FixedSizeBinary(_), Literal::Str(s)) => Coerced::Bytes(s.as_bytes().to_vec()),
        (D::Date32, Literal::Date(d)) => Coerced::Int(i128::from(*d)),
        (D::Date32, Literal::Str(s)) => Coerced::Int(i128::from(
            parse_date(s).ok_or_else(|| err(" (not a date YYYY-MM-DD)"))?,
        )),
        (D::Date64, Literal::Date(d)) => Coerced::Int(i128::from(*d) * 86_400_000),
        (D::Date64, Literal::Str(s)) => Coerced::Int(
            i128::from(parse_date(s).ok_or_else(|| err(" (not a date YYYY-MM-DD)"))?) * 86_400_000,
        ),
        (D::Timestamp(unit, _), Literal::Date(d)) => {
            Coerced::Int(scale_seconds(i128::from(*d) * 86_400, 0, *unit))
        }
        (D::Timestamp(unit, _), Literal::Str(s)) => {
            let (secs, nanos) = parse_timestamp(s).ok_or_else(|| err(" (not a timestamp)"))?;
            Coerced::Int(scale_seconds(i128::from(secs), nanos, *unit))
        }
        (D::Decimal128(_, scale), Literal::Int(i)) => {
            scaled_decimal(i128::from(*scale), *i).ok_or_else(|| err(" (out of range)"))?
        }
        (D::Decimal128(_, scale), Literal::Float(x)) => decimal_from_float(*scale, *x),
        (d, Literal::Int(i)) if d.is_integer() || is_int_like(d) => int_in_type(d, *i),
        (d, Literal::Float(x)) if d.is_integer() || is_int_like(d) => {
            if x.is_nan() {
                return Err(err(" (NaN)"));
            }
            let floor = x.floor();
            if !(-1.8e38..=1.7e38).contains(&floor) {
                Coerced::IntOutside(*x > 0.0)
            } else if floor == *x {
                int_in_type(d, floor as i128)
            } else {
                match int_in_type(d, floor as i128) {
                    Coerced::Int(k) => Coerced::IntBetween(k),
                    other => other,
                }
            }
        }
        _ => return Err(err("")),
    })
}

fn is_int_like(d: &DataType) -> bool {
    matches!(
        d,
        DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Duration(_)
            | DataType::Timestamp(_, _)
    )
}

/// An integer literal against an integer type's range.
fn int_in_type(dt: &DataType, v: i128) -> Coerced {
    use DataType as D;
    let (lo, hi): (i128, i128) = match dt {
        D::Int8 => (i8::MIN.into(), i8::MAX.into()),
        D::Int16 => (i16::MIN.into(), i16::MAX.into()),
        D::Int32 | D::Date32 | D::Time32(_) => (i32::MIN.into(), i32::MAX.into()),
        D::UInt8 => (0, u8::MAX.into()),
        D::UInt16 => (0, u16::MAX.into()),
        D::UInt32 => (0, u32::MAX.into()),
        D::UInt64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    if v < lo {
        Coerced::IntOutside(false)
    } else if v > hi {
        Coerced::IntOutside(true)
    } else {
        Coerced::Int(v)
    }
}

fn scale_seconds(secs: i128, nanos: u32, unit: TimeUnit) -> i128 {
    let n = i128::from(nanos);
    match unit {
        TimeUnit::Second => secs,
        TimeUnit::Millisecond => secs * 1000 + n / 1_000_000,
        TimeUnit::Microsecond => secs * 1_000_000 + n / 1000,
        TimeUnit::Nanosecond => secs * 1_000_000_000 + n,
    }
}

fn scaled_decimal(scale: i128, v: i128) -> Option<Coerced> {
    if scale >= 0 {
        let m = 10i128.checked_pow(u32::try_from(scale).ok()?)?;
        v.checked_mul(m).map(Coerced::Int)
    } else {
        None
    }
}

/// A float literal on a decimal column, exactly: the literal's shortest decimal form (what
/// the user wrote, for any literal that is a double) scaled by `10^scale` — an integer, or
/// strictly between two (`IntBetween` of the lower one).
fn decimal_from_float(scale: i8, x: f64) -> Coerced {
    if x.is_nan() {
        return Coerced::IntOutside(true);
    }
    if x.is_infinite() {
        return Coerced::IntOutside(x > 0.0);
    }
    // Rust prints doubles in their shortest round-trip form, without an exponent.
    let text = format!("{}", x.abs());
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, ""));
    let scale = i32::from(scale);
    let digits = format!("{int_part}{frac}");
    // value = digits × 10^(-frac.len()); scaled = digits × 10^(scale - frac.len()).
    let shift = scale - frac.len() as i32;
    let parsed = digits.trim_start_matches('0');
    let Ok(mut n) = (if parsed.is_empty() {
        Ok(0i128)
    } else {
        parsed.parse::<i128>()
    }) else {
        return Coerced::IntOutside(x > 0.0);
    };
    let mut exact = true;
    if shift >= 0 {
        match 10i128
            .checked_pow(shift as u32)
            .and_then(|m| n.checked_mul(m))
        {
            Some(v) => n = v,
            None => return Coerced::IntOutside(x > 0.0),
        }
    } else {
        let d = 10i128.checked_pow((-shift) as u32).unwrap_or(i128::MAX);
        exact = n % d == 0;
        n /= d;
    }
    match (x < 0.0, exact) {
        (false, true) => Coerced::Int(n),
        (false, false) => Coerced::IntBetween(n),
        (true, true) => Coerced::Int(-n),
        // -(n + fraction) lies between -n - 1 and -n.
        (true, false) => Coerced::IntBetween(-n - 1),
    }
}

/// Compares two zone-map scalars of the same kind (`None` if the kinds differ).
pub(crate) fn scalar_cmp(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => Some(x.cmp(y)),
        (Scalar::Float(x), Scalar::Float(y)) => Some(x.total_cmp(y)),
        (Scalar::Bool(x), Scalar::Bool(y)) => Some(x.cmp(y)),
        (Scalar::Bytes(x), Scalar::Bytes(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("1994-01-01"), Some(8766));
        assert_eq!(parse_date("1998-09-02"), Some(10471));
        assert_eq!(parse_date("2000-02-29"), Some(11016));
        assert_eq!(parse_date("1999-02-29"), None);
        assert_eq!(parse_date("1994-13-01"), None);
        for d in [-800_000, -1, 0, 1, 8766, 10471, 2_000_000] {
            assert_eq!(parse_date(&format_date(d)), Some(d), "{d}");
        }
    }

    #[test]
    fn fractional_literals_on_integers() {
        let dt = DataType::Int32;
        assert_eq!(
            coerce("x", &dt, &Literal::Float(2.5)).unwrap(),
            Coerced::IntBetween(2)
        );
        assert_eq!(
            coerce("x", &dt, &Literal::Float(-2.5)).unwrap(),
            Coerced::IntBetween(-3)
        );
        assert_eq!(
            coerce("x", &dt, &Literal::Float(3.0)).unwrap(),
            Coerced::Int(3)
        );
        assert_eq!(
            coerce("x", &dt, &Literal::Int(1 << 40)).unwrap(),
            Coerced::IntOutside(true)
        );
        assert!(coerce("x", &dt, &Literal::Str("a".into())).is_err());
        let dec = DataType::Decimal128(9, 2);
        let c = |x: f64| coerce("d", &dec, &Literal::Float(x)).unwrap();
        assert_eq!(c(0.05), Coerced::Int(5));
        assert_eq!(c(1.1000000001), Coerced::IntBetween(110));
        assert_eq!(c(-9999999.985), Coerced::IntBetween(-999999999));
        assert_eq!(c(-1.5), Coerced::Int(-150));
        assert_eq!(c(123.0), Coerced::Int(12300));
    }
}
