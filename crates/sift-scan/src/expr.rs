//! Filter expressions, as users write them (before type checking).
//!
//! Build them with [`col`] and the comparison methods, or parse them from text with
//! [`parse_filter`](crate::parse_filter):
//!
//! ```
//! use sift_scan::{col, Literal};
//! let q6 = col("l_shipdate").gte(Literal::date("1994-01-01").unwrap())
//!     .and(col("l_shipdate").lt(Literal::date("1995-01-01").unwrap()))
//!     .and(col("l_discount").between(0.05, 0.07))
//!     .and(col("l_quantity").lt(24));
//! ```
//!
//! Semantics are SQL's: a comparison with a null value is unknown, and a row passes the
//! filter only when the whole expression is true. Floats compared with a literal follow
//! SQL (DuckDB, PostgreSQL): every NaN equals every other NaN and is greater than every
//! number, and −0.0 equals +0.0. Column-to-column comparisons use arrow-rs's kernels, which
//! order floats by IEEE total order (−0.0 < +0.0, a NaN with its sign bit set below −inf).
//! Literal coercion is documented on [`Literal`].

use std::fmt;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>` / `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator that holds exactly when this one does not (on non-null values).
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    /// The SQL spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A literal value in a filter.
///
/// Coercion to the column's type, when the filter is checked against a file's schema:
///
/// | literal | column types it applies to |
/// |---|---|
/// | `Int` | every integer type (a value outside the type's range makes the comparison constant, e.g. `int8_col < 1000` is true for every non-null row); floats (converted); decimals (scaled exactly) |
/// | `Decimal` | decimals and integers, compared exactly at any precision (`dec_col = 12345678901234567.89`; `int_col < 2.5` is `int_col <= 2`; `int64_col = 9007199254740993.0` matches 9007199254740993); floats (the nearest double) |
/// | `Float` | floats; integers (the double's exact value) and decimals (its shortest decimal form, what a user writes: `0.1` is 1/10) |
/// | `Str` | strings and binary; dates (`'1994-01-01'`), timestamps (`'1994-01-01 12:00:00'`, UTC), booleans (`'true'`/`'false'`) and decimals (`'12.50'`, exactly) when the text parses |
/// | `Date` | date32/date64; timestamps (midnight UTC) |
/// | `Bool` | booleans |
///
/// In filter text, a number with a point or an exponent (`0.05`, `1.5e3`) is a `Decimal`,
/// read exactly from its digits; one without is an `Int`. A literal that falls between
/// two values of the column (`2.5` on integers, `0.125` on a decimal of scale 2) compares
/// exactly: `=` matches nothing, `<` matches what is below it. On a decimal column, a
/// value that does not fit the column's 128-bit integers at its scale is an error, as is
/// anything else not listed here (naming the column, its type and the literal).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// An exact decimal number, `unscaled × 10^-scale` (`12.5` is 125 at scale 1); build
    /// one from text with [`Literal::decimal`].
    Decimal { unscaled: i128, scale: i32 },
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A date, as days since 1970-01-01.
    Date(i32),
}

impl Literal {
    /// A date literal from `YYYY-MM-DD`, or `None` if the text is not a valid date.
    pub fn date(text: &str) -> Option<Literal> {
        crate::coerce::parse_date(text).map(Literal::Date)
    }

    /// An exact decimal literal from its text, as the filter language reads numbers:
    /// `12345678901234567.89`, `-0.05`, `1.5e3`. At most 38 significant digits; an error
    /// ([`Error::Parse`](crate::Error::Parse)) says why other text is not one.
    pub fn decimal(text: &str) -> crate::Result<Literal> {
        crate::coerce::parse_decimal(text)
            .map(|(unscaled, scale)| Literal::Decimal { unscaled, scale })
            .map_err(crate::Error::Parse)
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Decimal { unscaled, scale } => {
                f.write_str(&crate::coerce::format_decimal(*unscaled, *scale))
            }
            // The shortest decimal that reads back as the same double.
            Literal::Float(x) if x.is_finite() => {
                let (unscaled, scale) = crate::coerce::float_decimal(*x);
                f.write_str(&crate::coerce::format_decimal(unscaled, scale))
            }
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Literal::Date(d) => write!(f, "date '{}'", crate::coerce::format_date(*d)),
        }
    }
}

macro_rules! literal_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Literal {
            fn from(x: $t) -> Self { Literal::$v(x.into()) }
        }
    )*};
}
literal_from!(bool => Bool, i8 => Int, i16 => Int, i32 => Int, i64 => Int, u8 => Int,
    u16 => Int, u32 => Int, u64 => Int, i128 => Int, f32 => Float, f64 => Float,
    String => Str, &str => Str);

/// A predicate written in Rust over Arrow arrays, for what the expression language cannot
/// say. It receives the named columns of a batch of rows (nulls included) and returns one
/// boolean per row; a null result counts as false.
pub type UdfFn = dyn Fn(&[ArrayRef]) -> Result<BooleanArray, String> + Send + Sync;

/// A user-defined predicate: a name (for messages), the columns it reads, and the function.
#[derive(Clone)]
pub struct Udf {
    /// Shown in `Display` and error messages.
    pub name: String,
    /// The columns passed to `f`, in this order.
    pub columns: Vec<String>,
    /// The predicate.
    pub f: Arc<UdfFn>,
}

impl fmt::Debug for Udf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name, self.columns.join(", "))
    }
}

/// A filter expression.
#[derive(Debug, Clone)]
pub enum Expr {
    /// `column op literal`
    Cmp {
        column: String,
        op: CmpOp,
        value: Literal,
    },
    /// `left op right`, two columns of comparable types.
    ColumnCmp {
        left: String,
        op: CmpOp,
        right: String,
    },
    /// `column BETWEEN low AND high` (inclusive).
    Between {
        column: String,
        low: Literal,
        high: Literal,
    },
    /// `column IN (values…)`.
    In {
        column: String,
        values: Vec<Literal>,
    },
    /// `column IS NULL`, or `IS NOT NULL` when `negated`.
    IsNull { column: String, negated: bool },
    /// `column LIKE pattern` (`%` any run of characters, `_` one character, `\` escapes).
    Like { column: String, pattern: String },
    /// `starts_with(column, prefix)`.
    StartsWith { column: String, prefix: String },
    /// All of the expressions (true when empty).
    And(Vec<Expr>),
    /// Any of the expressions (false when empty).
    Or(Vec<Expr>),
    /// The negation.
    Not(Box<Expr>),
    /// A predicate written in Rust.
    Udf(Udf),
    /// `column` may be one of a join's build-side keys: true for every key and for a few
    /// other values between the smallest and largest integer key (the Bloom filter's false
    /// positives), never for a null. Built by
    /// [`KeyCollector`](crate::KeyCollector); it cannot be negated.
    InBloom {
        column: String,
        keys: Arc<crate::keys::KeyFilter>,
    },
}

/// A column reference, the start of a comparison: `col("x").lt(5)`.
pub fn col(name: impl Into<String>) -> Column {
    Column(name.into())
}

/// A named column; see [`col`].
#[derive(Debug, Clone)]
pub struct Column(pub String);

impl Column {
    fn cmp(self, op: CmpOp, value: impl Into<Literal>) -> Expr {
        Expr::Cmp {
            column: self.0,
            op,
            value: value.into(),
        }
    }
    /// `column = value`
    pub fn eq(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Eq, value)
    }
    /// `column <> value`
    pub fn ne(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Ne, value)
    }
    /// `column < value`
    pub fn lt(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Lt, value)
    }
    /// `column <= value`
    pub fn lte(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Le, value)
    }
    /// `column > value`
    pub fn gt(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Gt, value)
    }
    /// `column >= value`
    pub fn gte(self, value: impl Into<Literal>) -> Expr {
        self.cmp(CmpOp::Ge, value)
    }
    /// `column BETWEEN low AND high`
    pub fn between(self, low: impl Into<Literal>, high: impl Into<Literal>) -> Expr {
        Expr::Between {
            column: self.0,
            low: low.into(),
            high: high.into(),
        }
    }
    /// `column IN (values…)`
    pub fn in_list<L: Into<Literal>>(self, values: impl IntoIterator<Item = L>) -> Expr {
        Expr::In {
            column: self.0,
            values: values.into_iter().map(Into::into).collect(),
        }
    }
    /// `column IS NULL`
    pub fn is_null(self) -> Expr {
        Expr::IsNull {
            column: self.0,
            negated: false,
        }
    }
    /// `column IS NOT NULL`
    pub fn is_not_null(self) -> Expr {
        Expr::IsNull {
            column: self.0,
            negated: true,
        }
    }
    /// `column LIKE pattern`
    pub fn like(self, pattern: impl Into<String>) -> Expr {
        Expr::Like {
            column: self.0,
            pattern: pattern.into(),
        }
    }
    /// `starts_with(column, prefix)`
    pub fn starts_with(self, prefix: impl Into<String>) -> Expr {
        Expr::StartsWith {
            column: self.0,
            prefix: prefix.into(),
        }
    }
    /// `column op other` for another column.
    pub fn cmp_column(self, op: CmpOp, other: impl Into<String>) -> Expr {
        Expr::ColumnCmp {
            left: self.0,
            op,
            right: other.into(),
        }
    }
}

impl Expr {
    /// The conjunction of `items`: `None` when there are none, the one item alone.
    pub fn all(mut items: Vec<Expr>) -> Option<Expr> {
        match items.len() {
            0 | 1 => items.pop(),
            _ => Some(Expr::And(items)),
        }
    }

    /// `self AND other`
    pub fn and(self, other: Expr) -> Expr {
        match self {
            Expr::And(mut v) => {
                v.push(other);
                Expr::And(v)
            }
            e => Expr::And(vec![e, other]),
        }
    }

    /// `self OR other`
    pub fn or(self, other: Expr) -> Expr {
        match self {
            Expr::Or(mut v) => {
                v.push(other);
                Expr::Or(v)
            }
            e => Expr::Or(vec![e, other]),
        }
    }

    /// `NOT self`
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    /// A predicate written in Rust over the arrays of `columns`.
    pub fn udf(
        name: impl Into<String>,
        columns: &[&str],
        f: impl Fn(&[ArrayRef]) -> Result<BooleanArray, String> + Send + Sync + 'static,
    ) -> Expr {
        Expr::Udf(Udf {
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            f: Arc::new(f),
        })
    }

    /// Every column the expression reads, in first-use order, without repeats.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        self.visit_columns(&mut |c| {
            if !out.iter().any(|o| o == c) {
                out.push(c.to_string());
            }
        });
        out
    }

    fn visit_columns(&self, f: &mut dyn FnMut(&str)) {
        match self {
            Expr::Cmp { column, .. }
            | Expr::Between { column, .. }
            | Expr::In { column, .. }
            | Expr::IsNull { column, .. }
            | Expr::Like { column, .. }
            | Expr::StartsWith { column, .. }
            | Expr::InBloom { column, .. } => f(column),
            Expr::ColumnCmp { left, right, .. } => {
                f(left);
                f(right);
            }
            Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| e.visit_columns(f)),
            Expr::Not(e) => e.visit_columns(f),
            Expr::Udf(u) => u.columns.iter().for_each(|c| f(c)),
        }
    }
}

fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    // Keywords of the parser's grammar, and its one function name, must be quoted.
    let keyword = crate::parse::KEYWORDS
        .iter()
        .chain(&["starts_with"])
        .any(|k| k.eq_ignore_ascii_case(name));
    if plain && !keyword {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl fmt::Display for Expr {
    /// The expression in the syntax [`parse_filter`](crate::parse_filter) reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &[Expr], sep: &str, empty: &str| -> String {
            if v.is_empty() {
                return empty.to_string();
            }
            let parts: Vec<String> = v.iter().map(|e| format!("({e})")).collect();
            parts.join(sep)
        };
        match self {
            Expr::Cmp { column, op, value } => {
                write!(f, "{} {} {value}", ident(column), op.symbol())
            }
            Expr::ColumnCmp { left, op, right } => {
                write!(f, "{} {} {}", ident(left), op.symbol(), ident(right))
            }
            Expr::Between { column, low, high } => {
                write!(f, "{} between {low} and {high}", ident(column))
            }
            Expr::In { column, values } => {
                let v: Vec<String> = values.iter().map(ToString::to_string).collect();
                write!(f, "{} in ({})", ident(column), v.join(", "))
            }
            Expr::IsNull { column, negated } => {
                let not = if *negated { " not" } else { "" };
                write!(f, "{} is{not} null", ident(column))
            }
            Expr::Like { column, pattern } => {
                write!(f, "{} like {}", ident(column), quote(pattern))
            }
            Expr::StartsWith { column, prefix } => {
                write!(f, "starts_with({}, {})", ident(column), quote(prefix))
            }
            Expr::And(v) => f.write_str(&list(v, " and ", "true")),
            Expr::Or(v) => f.write_str(&list(v, " or ", "false")),
            Expr::Not(e) => write!(f, "not ({e})"),
            Expr::Udf(u) => write!(f, "{u:?}"),
            Expr::InBloom { column, keys } => write!(f, "{} in {keys:?}", ident(column)),
        }
    }
}
