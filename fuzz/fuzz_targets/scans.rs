//! The scans the scan targets run on a fuzzed file (Sift or Parquet): every column whole
//! and as dictionaries, each predicate on its own column (selective decode), negated in a
//! window of rows, and all of them at once; the integer columns' extremes (the codes
//! folded without decoding) over every row and under each predicate. Errors are fine;
//! panics, hangs and huge allocations are what the fuzzer looks for.

use std::path::Path;

use sift_format::ColumnType as T;
use sift_scan::{Expr, Literal, ScanBuilder, Table, col, has_extremes};

/// Columns given predicates of their own (the rest are still projected).
const MAX_FILTERED: usize = 12;

fn is_string(t: &T) -> bool {
    matches!(
        t,
        T::Utf8 | T::LargeUtf8 | T::Utf8View | T::Binary | T::LargeBinary | T::BinaryView
    )
}

/// Predicates on column `c` of stored type `t` that bind (a literal of a fitting kind):
/// ranges, sets, equality, LIKE shapes (prefix, infix), and IS NULL.
fn predicates(c: &str, t: Option<T>) -> Vec<Expr> {
    let mut v = vec![col(c).is_null()];
    match t {
        Some(T::Bool) => v.push(col(c).eq(true)),
        Some(T::Float16 | T::Float32 | T::Float64) => {
            v.push(col(c).lt(1.5));
            v.push(col(c).between(-10.25, 1e6));
            v.push(col(c).in_list([0.0, 12.34, f64::NAN]));
        }
        Some(T::Date32 | T::Date64) => {
            if let (Some(lo), Some(hi)) = (Literal::date("1994-01-01"), Literal::date("1996-12-31"))
            {
                v.push(col(c).between(lo, hi));
            }
        }
        Some(
            T::Int8
            | T::Int16
            | T::Int32
            | T::Int64
            | T::UInt8
            | T::UInt16
            | T::UInt32
            | T::UInt64
            | T::Decimal128 { .. },
        ) => {
            v.push(col(c).lt(7));
            v.push(col(c).between(-5, 1000));
            v.push(col(c).in_list([0, 1, 42]));
        }
        Some(t) if is_string(&t) => {
            v.push(col(c).eq("AIR"));
            v.push(col(c).in_list(["MAIL", "SHIP"]));
            v.push(col(c).like("%a%"));
            v.push(col(c).like("AI%"));
            v.push(col(c).starts_with("A"));
            v.push(col(c).gt("M"));
        }
        _ => {}
    }
    v
}

/// Runs a scan to the end; errors are fine, panics are what the fuzzer looks for.
fn drain(b: ScanBuilder) {
    if let Ok(scan) = b.build() {
        for batch in scan {
            if batch.is_err() {
                break;
            }
        }
    }
}

/// Writes `data` to `path` (whose extension picks the reader) and scans it.
pub fn scan(path: &Path, data: &[u8]) {
    if std::fs::write(path, data).is_err() {
        return;
    }
    let Ok(table) = Table::open_with(path, false) else {
        return;
    };
    let schema = table.schema();
    let strings: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| T::from_arrow(f.data_type()).is_some_and(|t| is_string(&t)))
        .map(|f| f.name().clone())
        .collect();
    // Every column whole, and the string columns as dictionaries.
    drain(table.scan());
    drain(table.scan().read_dictionary(strings.iter().cloned()));
    let with_extremes: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| has_extremes(f.data_type()))
        .map(|f| f.name().clone())
        .collect();
    if !with_extremes.is_empty() {
        drain(
            table
                .scan()
                .project(with_extremes.iter().cloned())
                .extremes_only(),
        );
    }
    // Each predicate on the encoded chunk, projecting its column (a selection: decoded
    // selectively), negated in a window of rows (a sparse selection from the start).
    let mut all = Vec::new();
    for f in schema.fields().iter().take(MAX_FILTERED) {
        let c = f.name().as_str();
        for p in predicates(c, T::from_arrow(f.data_type())) {
            let dict = strings.iter().filter(|s| *s == c).cloned();
            drain(
                table
                    .scan()
                    .project([c])
                    .filter(p.clone())
                    .read_dictionary(dict),
            );
            drain(
                table
                    .scan()
                    .project([c])
                    .filter(p.clone().not())
                    .rows(100..116),
            );
            if has_extremes(f.data_type()) {
                // Extremes, and the selected rows counted beside them.
                drain(
                    table
                        .scan()
                        .project([c])
                        .filter(p.clone())
                        .extremes_only()
                        .count_selected(),
                );
            }
            all.push(p);
        }
    }
    if all.is_empty() {
        return;
    }
    // Every predicate at once, all columns projected: on the whole file, in a window of
    // rows, and behind a narrow first predicate (later ones decode selectively).
    let any = Expr::Or(all.clone());
    drain(table.scan().filter(any.clone()));
    drain(
        table
            .scan()
            .filter(any.clone())
            .rows(1000..1016)
            .read_dictionary(strings.iter().cloned()),
    );
    drain(table.scan().filter(all[0].clone().and(any.not())));
    drain(table.scan().filter(Expr::And(all)).limit(100));
}
