//! Literals coerced to a column's storage domain (the rules are listed on [`Literal`]).

use std::cmp::Ordering;

use arrow_schema::{DataType, TimeUnit};
use sift_encoding::is_byte_string;
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
        (dt, Literal::Str(s)) if is_byte_string(dt) => Coerced::Bytes(s.as_bytes().to_vec()),
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
        (D::Decimal128(_, scale), Literal::Int(i)) => on_decimal(*i, 0, *scale, err)?,
        (D::Decimal128(_, scale), Literal::Decimal { unscaled, scale: s }) => {
            on_decimal(*unscaled, *s, *scale, err)?
        }
        (D::Decimal128(_, scale), Literal::Float(x)) => {
            if x.is_nan() || x.is_infinite() {
                // NaN sorts above every number, as on float columns.
                Coerced::IntOutside(x.is_nan() || *x > 0.0)
            } else {
                let (unscaled, s) = float_decimal(*x);
                on_decimal(unscaled, s, *scale, err)?
            }
        }
        (D::Decimal128(_, scale), Literal::Str(text)) => {
            let (unscaled, s) = parse_decimal(text)
                .map_err(|why| err(&format!(" (a quoted decimal must be a number: {why})")))?;
            on_decimal(unscaled, s, *scale, err)?
        }
        (d, Literal::Int(i)) if d.is_integer() || is_int_like(d) => int_in_type(d, *i),
        (d, Literal::Decimal { unscaled, scale }) if d.is_integer() || is_int_like(d) => {
            match rescale(*unscaled, *scale, 0) {
                Scaled::Exact(k) => int_in_type(d, k),
                Scaled::Between(k) => between_in_type(d, k),
                Scaled::Beyond(above) => Coerced::IntOutside(above),
            }
        }
        (D::Float16 | D::Float32 | D::Float64, Literal::Decimal { unscaled, scale }) => {
            Coerced::Float(decimal_to_f64(*unscaled, *scale))
        }
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
                between_in_type(d, floor as i128)
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

/// A value strictly between `k` and `k + 1` against an integer type's range.
fn between_in_type(dt: &DataType, k: i128) -> Coerced {
    match int_in_type(dt, k) {
        Coerced::Int(k) => Coerced::IntBetween(k),
        other => other,
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

/// `unscaled × 10^-scale` at another scale: exactly, strictly between two values (the
/// lower one given), or beyond every `i128` (above or below).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scaled {
    Exact(i128),
    Between(i128),
    Beyond(bool),
}

/// The largest power of ten an `i128` holds.
const MAX_POW10: i64 = 38;

pub(crate) fn rescale(unscaled: i128, scale: i32, target: i32) -> Scaled {
    if unscaled == 0 {
        return Scaled::Exact(0);
    }
    let shift = i64::from(target) - i64::from(scale);
    if shift >= 0 {
        let scaled = (shift <= MAX_POW10)
            .then(|| 10i128.pow(shift as u32))
            .and_then(|m| unscaled.checked_mul(m));
        return scaled.map_or(Scaled::Beyond(unscaled > 0), Scaled::Exact);
    }
    if -shift > MAX_POW10 {
        // 10^39 exceeds every i128, so the value is a nonzero fraction: floor 0 or -1.
        return Scaled::Between(if unscaled > 0 { 0 } else { -1 });
    }
    let d = 10i128.pow((-shift) as u32);
    let (q, r) = (unscaled.div_euclid(d), unscaled.rem_euclid(d));
    if r == 0 {
        Scaled::Exact(q)
    } else {
        Scaled::Between(q)
    }
}

/// A decimal value on a decimal column of scale `target`; one beyond the 128-bit integers
/// the column stores cannot be compared and is an error (never a silently empty result).
fn on_decimal(
    unscaled: i128,
    scale: i32,
    target: i8,
    err: impl Fn(&str) -> Error,
) -> Result<Coerced> {
    match rescale(unscaled, scale, i32::from(target)) {
        Scaled::Exact(k) => Ok(Coerced::Int(k)),
        Scaled::Between(k) => Ok(Coerced::IntBetween(k)),
        Scaled::Beyond(_) => Err(err(&format!(
            " (out of range: at scale {target} the value does not fit in 128 bits)"
        ))),
    }
}

/// A decimal literal's scale at most (a negative scale is bounded by the doubles' range):
/// beyond the smallest double, and far beyond any decimal column's scale.
const MAX_SCALE: i64 = 400;

/// A decimal number `[+-]digits[.digits][e[+-]digits]` (or `.digits…`), exactly, as
/// `(unscaled, scale)` meaning `unscaled × 10^-scale`: trailing zeros folded into the
/// scale, so one value has one form. The error says why the text is not one.
pub(crate) fn parse_decimal(text: &str) -> std::result::Result<(i128, i32), String> {
    let t = text.trim();
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int_part.len() + frac.len() == 0 || !all_digits(int_part) || !all_digits(frac) {
        return Err(format!("'{}' is not a number", crate::error::shorten(text)));
    }
    let exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !all_digits(digits) {
                return Err(format!("'{}' is not a number", crate::error::shorten(text)));
            }
            // Saturate: any exponent this long is out of range below.
            let magnitude = digits.parse::<i64>().unwrap_or(i64::MAX / 2);
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    let digits = format!("{int_part}{frac}");
    let digits = digits.trim_start_matches('0');
    let significant = digits.trim_end_matches('0');
    if significant.is_empty() {
        return Ok((0, 0));
    }
    let trailing = (digits.len() - significant.len()) as i64;
    let scale = frac.len() as i64 - exp.clamp(-i64::MAX / 4, i64::MAX / 4) - trailing;
    if scale.abs() > MAX_SCALE {
        return Err(format!("'{}' is out of range", crate::error::shorten(text)));
    }
    // Every 38-digit number fits, and some of 39.
    let magnitude: i128 = significant.parse().map_err(|_| {
        format!(
            "'{}' has {} significant digits; exact decimals have at most 38",
            crate::error::shorten(text),
            significant.len()
        )
    })?;
    let unscaled = if negative { -magnitude } else { magnitude };
    // Within the doubles' range, so the literal means the same on a float column.
    if !decimal_to_f64(unscaled, scale as i32).is_finite() {
        return Err(format!("'{}' is out of range", crate::error::shorten(text)));
    }
    Ok((unscaled, scale as i32))
}

/// The shortest decimal that reads back as `x` (finite), as `(unscaled, scale)`: the
/// number a user wrote for any double literal.
pub(crate) fn float_decimal(x: f64) -> (i128, i32) {
    // `{:e}` prints the shortest round-trip digits, so at most 17 and always parseable.
    parse_decimal(&format!("{x:e}")).unwrap_or((0, 0))
}

/// The double nearest to `unscaled × 10^-scale` (correctly rounded by the standard parser).
pub(crate) fn decimal_to_f64(unscaled: i128, scale: i32) -> f64 {
    format!("{unscaled}e{}", -i64::from(scale))
        .parse()
        .unwrap_or(f64::NAN)
}

/// `unscaled × 10^-scale` as the filter language writes it: a point always (so it reads
/// back as a decimal, not an integer), an exponent when the plain form would be long.
pub(crate) fn format_decimal(unscaled: i128, scale: i32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = unscaled.unsigned_abs().to_string();
    let n = digits.len() as i64;
    let scale = i64::from(scale);
    if scale <= 0 && -scale <= 20 {
        format!("{sign}{digits}{}.0", "0".repeat((-scale) as usize))
    } else if scale > 0 && scale < n {
        let (int_part, frac) = digits.split_at((n - scale) as usize);
        format!("{sign}{int_part}.{frac}")
    } else if scale >= n && scale - n <= 6 {
        format!("{sign}0.{}{digits}", "0".repeat((scale - n) as usize))
    } else {
        // d.ddd × 10^(n - 1 - scale)
        let (head, tail) = digits.split_at(1);
        let tail = tail.trim_end_matches('0');
        let point = if tail.is_empty() { "" } else { "." };
        format!("{sign}{head}{point}{tail}e{}", n - 1 - scale)
    }
}

/// Compares two zone-map scalars of the same kind (`None` if the kinds differ).
pub fn scalar_cmp(a: &Scalar, b: &Scalar) -> Option<Ordering> {
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

    fn dec(text: &str) -> Literal {
        Literal::decimal(text).unwrap()
    }

    #[test]
    fn decimal_literals_are_exact_on_decimal_columns() {
        let c = |dt: &DataType, text: &str| coerce("d", dt, &dec(text));
        let d20 = DataType::Decimal128(20, 2);
        // 12345678901234567.89 is not a double: the nearest one is ...568.
        assert_eq!(
            c(&d20, "12345678901234567.89").unwrap(),
            Coerced::Int(1_234_567_890_123_456_789)
        );
        assert_eq!(
            c(&d20, "12345678901234567.00").unwrap(),
            Coerced::Int(1_234_567_890_123_456_700)
        );
        assert_eq!(
            c(&d20, "1.2345678901234567e16").unwrap(),
            Coerced::Int(1_234_567_890_123_456_700)
        );
        // More fractional digits than the scale: strictly between two column values.
        assert_eq!(
            c(&d20, "12345678901234567.891").unwrap(),
            Coerced::IntBetween(1_234_567_890_123_456_789)
        );
        assert_eq!(
            c(&d20, "-12345678901234567.891").unwrap(),
            Coerced::IntBetween(-1_234_567_890_123_456_790)
        );
        assert_eq!(c(&d20, "1e-300").unwrap(), Coerced::IntBetween(0));
        assert_eq!(c(&d20, "-1e-300").unwrap(), Coerced::IntBetween(-1));
        assert_eq!(c(&d20, "1.5e3").unwrap(), Coerced::Int(150_000));
        // Negative scales: the column stores hundreds.
        let hundreds = DataType::Decimal128(5, -2);
        assert_eq!(c(&hundreds, "1200.0").unwrap(), Coerced::Int(12));
        assert_eq!(c(&hundreds, "1250.0").unwrap(), Coerced::IntBetween(12));
        assert_eq!(
            coerce("d", &hundreds, &Literal::Int(-1250)).unwrap(),
            Coerced::IntBetween(-13)
        );
        // The widest column: 38 digits at scale 10, and the i128 extremes at scale 0.
        let d38 = DataType::Decimal128(38, 10);
        assert_eq!(
            c(&d38, "9999999999999999999999999999.9999999999").unwrap(),
            Coerced::Int(10i128.pow(38) - 1)
        );
        let max = i128::MAX.to_string();
        let d38_0 = DataType::Decimal128(38, 0);
        assert_eq!(
            c(&d38_0, &format!("{max}.0")).unwrap(),
            Coerced::Int(i128::MAX)
        );
        assert_eq!(
            c(&DataType::Decimal128(38, 1), &format!("{max}.0"))
                .unwrap_err()
                .to_string(),
            "column 'd' of type Decimal128(38, 1) cannot be compared with \
             170141183460469231731687303715884105727.0 (out of range: at scale 1 the value \
             does not fit in 128 bits)"
        );
        // Beyond 128 bits once scaled: an error, never an empty result.
        let e = c(&d38, "1e30").unwrap_err().to_string();
        assert!(e.contains("out of range: at scale 10"), "{e}");
        let e = coerce("d", &d38, &Literal::Int(i128::MAX))
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = coerce("d", &d38, &Literal::Float(1e300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
        // Quoted decimals read exactly; other text is refused with the reason.
        let s = |text: &str| coerce("d", &d20, &Literal::Str(text.into()));
        assert_eq!(
            s("12345678901234567.89").unwrap(),
            Coerced::Int(1_234_567_890_123_456_789)
        );
        assert_eq!(s(" -0.5 ").unwrap(), Coerced::Int(-50));
        let e = s("12,5").unwrap_err().to_string();
        assert!(e.contains("a quoted decimal must be a number: '12,5' is not a number"));
    }

    #[test]
    fn decimal_literals_on_integer_and_float_columns() {
        let c = |dt: &DataType, text: &str| coerce("x", dt, &dec(text)).unwrap();
        let i64t = DataType::Int64;
        // 2^53 + 1: a double would make it 2^53.
        assert_eq!(
            c(&i64t, "9007199254740993.0"),
            Coerced::Int(9_007_199_254_740_993)
        );
        assert_eq!(
            c(&i64t, "9007199254740993.5"),
            Coerced::IntBetween(9_007_199_254_740_993)
        );
        assert_eq!(
            c(&i64t, "9223372036854775807.0"),
            Coerced::Int(i64::MAX.into())
        );
        assert_eq!(
            c(&i64t, "9223372036854775807.5"),
            Coerced::IntBetween(i64::MAX.into())
        );
        assert_eq!(c(&i64t, "9223372036854775808.0"), Coerced::IntOutside(true));
        assert_eq!(c(&i64t, "1e300"), Coerced::IntOutside(true));
        assert_eq!(c(&i64t, "-1e300"), Coerced::IntOutside(false));
        assert_eq!(c(&DataType::Int8, "127.5"), Coerced::IntBetween(127));
        assert_eq!(c(&DataType::Int8, "-128.5"), Coerced::IntOutside(false));
        assert_eq!(c(&DataType::Int8, "-2.5"), Coerced::IntBetween(-3));
        assert_eq!(c(&DataType::Date32, "3.0"), Coerced::Int(3));
        // Float columns: the nearest double.
        assert_eq!(c(&DataType::Float64, "0.1"), Coerced::Float(0.1));
        assert_eq!(
            c(&DataType::Float64, "12345678901234567.89"),
            Coerced::Float(12345678901234567.89)
        );
        assert_eq!(c(&DataType::Float32, "-1e-400"), Coerced::Float(-0.0));
    }

    #[test]
    fn rescaling() {
        assert_eq!(rescale(15, 1, 2), Scaled::Exact(150));
        assert_eq!(rescale(15, 1, 0), Scaled::Between(1));
        assert_eq!(rescale(-15, 1, 0), Scaled::Between(-2));
        assert_eq!(rescale(-20, 1, 0), Scaled::Exact(-2));
        assert_eq!(rescale(0, -300, 38), Scaled::Exact(0));
        assert_eq!(rescale(1, 0, 38), Scaled::Exact(10i128.pow(38)));
        assert_eq!(rescale(2, 0, 38), Scaled::Beyond(true));
        assert_eq!(rescale(-1, -1, 38), Scaled::Beyond(false));
        assert_eq!(rescale(i128::MAX, 0, 0), Scaled::Exact(i128::MAX));
        assert_eq!(rescale(i128::MIN, 38, 0), Scaled::Between(-2));
        assert_eq!(rescale(i128::MIN, 39, 0), Scaled::Between(-1));
        assert_eq!(rescale(i128::MAX, 39, 0), Scaled::Between(0));
        assert_eq!(rescale(7, 400, -400), Scaled::Between(0));
    }

    #[test]
    fn decimal_text_round_trips() {
        for (text, unscaled, scale, shown) in [
            ("0", 0, 0, "0.0"),
            ("-0.0", 0, 0, "0.0"),
            ("1.10", 11, 1, "1.1"),
            ("-1e20", -1, -20, "-100000000000000000000.0"),
            ("1e21", 1, -21, "1e21"),
            ("1.25e21", 125, -19, "1250000000000000000000.0"),
            ("1.25e22", 125, -20, "12500000000000000000000.0"),
            ("1.25e23", 125, -21, "1.25e23"),
            ("0.000001", 1, 6, "0.000001"),
            ("0.00000012", 12, 8, "0.00000012"),
            ("0.0000000123", 123, 10, "1.23e-8"),
            (
                "12345678901234567.89",
                1_234_567_890_123_456_789,
                2,
                "12345678901234567.89",
            ),
        ] {
            assert_eq!(parse_decimal(text), Ok((unscaled, scale)), "{text}");
            assert_eq!(format_decimal(unscaled, scale), shown, "{text}");
            assert_eq!(parse_decimal(shown), Ok((unscaled, scale)), "{shown}");
        }
        // Values a caller builds by hand, with trailing zeros, print as the same number.
        assert_eq!(format_decimal(1100, 3), "1.100");
        assert_eq!(parse_decimal("1.100"), Ok((11, 1)));
        assert_eq!(float_decimal(0.1), (1, 1));
        assert_eq!(float_decimal(-2.5e-300), (-25, 301));
        assert_eq!(decimal_to_f64(-25, 301), -2.5e-300);
    }
}
