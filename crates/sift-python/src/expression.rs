//! `pyarrow.compute.Expression` filters as Sift filters.
//!
//! pyarrow pickles an expression as an Arrow IPC file: its schema's key-value metadata
//! lists the tree in prefix order (`call` NAME, the arguments, `options` I, `end` NAME;
//! `field_ref` NAME; `literal` I) and its columns hold the literals and the functions'
//! options, typed. We read that form rather than the printed one (`str(expr)`), which
//! loses the literals' types and does not quote column names. The metadata's order
//! matters and keys repeat, so it is read from the IPC footer itself (Arrow's schema
//! conversion keeps it as a map).
//!
//! A filter is translated where Sift's engine evaluates it with pyarrow's meaning; the
//! conjuncts of the top-level AND that are translated are pushed into the scan, and the
//! caller applies the whole expression again to the scan's result when any was not.

use std::collections::BTreeSet;
use std::io::Cursor;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::ipc::reader::FileReader;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sift_scan::{CmpOp, Expr, Literal};

use crate::errors::FilterError;

/// What of an expression Sift evaluates.
pub struct Translation {
    /// The conjuncts pushed into the scan.
    pub pushed: Vec<Expr>,
    /// Whether the pushed conjuncts are the whole expression.
    pub complete: bool,
    /// The columns the whole expression reads.
    pub columns: BTreeSet<String>,
}

/// `translate_expression(pickled, schema)`: a dict with `pushed` (Sift's filter text, or
/// `None`), `complete` and `columns`, for the Python layer to plan a scan.
#[pyfunction]
pub fn translate_expression<'py>(
    py: Python<'py>,
    pickled: Vec<u8>,
    schema: arrow_pyarrow::PyArrowType<Schema>,
) -> PyResult<Bound<'py, PyDict>> {
    let t = translate(&pickled, &schema.0)?;
    let d = PyDict::new(py);
    let pushed = match t.pushed.len() {
        0 => None,
        1 => Some(t.pushed[0].to_string()),
        _ => Some(Expr::And(t.pushed).to_string()),
    };
    d.set_item("pushed", pushed)?;
    d.set_item("complete", t.complete)?;
    d.set_item("columns", t.columns.into_iter().collect::<Vec<_>>())?;
    Ok(d)
}

/// Translates a pickled expression against the rows of `schema`.
pub fn translate(pickled: &[u8], schema: &Schema) -> PyResult<Translation> {
    let tree = decode(pickled)
        .map_err(|e| FilterError::new_err(format!("cannot read the pyarrow expression: {e}")))?;
    let mut columns = BTreeSet::new();
    tree.columns(&mut columns);
    let mut conjuncts = Vec::new();
    tree.conjuncts(&mut conjuncts);
    let pushed: Vec<Expr> = conjuncts
        .iter()
        .filter_map(|c| to_sift(c, schema))
        .collect();
    Ok(Translation {
        complete: pushed.len() == conjuncts.len(),
        pushed,
        columns,
    })
}

/// A node of a pyarrow expression.
#[derive(Debug)]
enum Node {
    Field(String),
    /// A field of a struct column: its path of names from the column (`pc.field("s", "a")`).
    Nested(Vec<String>),
    Literal(ArrayRef),
    Call {
        name: String,
        args: Vec<Node>,
        options: Option<StructArray>,
    },
}

impl Node {
    fn columns(&self, out: &mut BTreeSet<String>) {
        match self {
            Node::Field(name) => {
                out.insert(name.clone());
            }
            // The struct column holds it.
            Node::Nested(path) => {
                out.extend(path.first().cloned());
            }
            Node::Literal(_) => {}
            Node::Call { args, .. } => args.iter().for_each(|a| a.columns(out)),
        }
    }

    /// The operands of a top-level AND, flattened.
    fn conjuncts<'a>(&'a self, out: &mut Vec<&'a Node>) {
        match self {
            Node::Call { name, args, .. } if name == "and_kleene" => {
                args.iter().for_each(|a| a.conjuncts(out))
            }
            _ => out.push(self),
        }
    }
}

/// Reads the tree out of the IPC file.
fn decode(bytes: &[u8]) -> Result<Node, String> {
    let entries = metadata_in_order(bytes)?;
    let reader = FileReader::try_new(Cursor::new(bytes), None).map_err(|e| e.to_string())?;
    let mut batches = Vec::new();
    for b in reader {
        batches.push(b.map_err(|e| e.to_string())?);
    }
    let batch = match batches.len() {
        0 => RecordBatch::new_empty(SchemaRef::new(Schema::empty())),
        1 => batches.remove(0),
        n => return Err(format!("{n} record batches, expected one")),
    };
    let mut pos = 0;
    let node = parse(&entries, &mut pos, &batch)?;
    if pos != entries.len() {
        return Err("trailing entries".into());
    }
    Ok(node)
}

fn parse(
    entries: &[(String, String)],
    pos: &mut usize,
    batch: &RecordBatch,
) -> Result<Node, String> {
    let (key, value) = entries.get(*pos).ok_or("the expression ends early")?;
    *pos += 1;
    let column = |v: &str| -> Result<ArrayRef, String> {
        let i: usize = v.parse().map_err(|_| format!("bad column index '{v}'"))?;
        if i >= batch.num_columns() || batch.num_rows() != 1 {
            return Err(format!("no literal {i}"));
        }
        Ok(batch.column(i).clone())
    };
    match key.as_str() {
        "field_ref" => Ok(Node::Field(value.clone())),
        "nested_field_ref" => {
            let n: usize = value
                .parse()
                .map_err(|_| format!("bad nested field count '{value}'"))?;
            let names = (0..n)
                .map(|_| {
                    let (k, v) = entries.get(*pos).ok_or("a nested field ends early")?;
                    *pos += 1;
                    match k.as_str() {
                        "field_ref" => Ok(v.clone()),
                        other => Err(format!("'{other}' in a nested field")),
                    }
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Node::Nested(names))
        }
        "literal" => Ok(Node::Literal(column(value)?)),
        "call" => {
            let mut args = Vec::new();
            let mut options = None;
            loop {
                let (k, v) = entries.get(*pos).ok_or("a call is not closed")?;
                match k.as_str() {
                    "end" => {
                        *pos += 1;
                        break;
                    }
                    "options" => {
                        *pos += 1;
                        options = column(v)?.as_struct_opt().cloned();
                    }
                    _ => args.push(parse(entries, pos, batch)?),
                }
            }
            Ok(Node::Call {
                name: value.clone(),
                args,
                options,
            })
        }
        other => Err(format!("unknown entry '{other}'")),
    }
}

/// The schema's custom metadata, in the order the file stores it.
fn metadata_in_order(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    // The file ends with the footer, its length (4 bytes) and the magic `ARROW1`.
    let n = bytes.len();
    if n < 10 || &bytes[n - 6..] != b"ARROW1" {
        return Err("not an Arrow IPC file".into());
    }
    let len_bytes: [u8; 4] = bytes[n - 10..n - 6].try_into().map_err(|_| "short file")?;
    let len = usize::try_from(i32::from_le_bytes(len_bytes)).map_err(|_| "bad footer length")?;
    let start = (n - 10).checked_sub(len).ok_or("bad footer length")?;
    let footer = arrow::ipc::root_as_footer(&bytes[start..n - 10]).map_err(|e| e.to_string())?;
    let schema = footer.schema().ok_or("no schema")?;
    Ok(schema
        .custom_metadata()
        .map(|kv| {
            kv.iter()
                .map(|e| {
                    (
                        e.key().unwrap_or_default().to_string(),
                        e.value().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

/// The Sift filter meaning exactly what `node` means as a pyarrow filter, or `None`.
fn to_sift(node: &Node, schema: &Schema) -> Option<Expr> {
    let Node::Call {
        name,
        args,
        options,
    } = node
    else {
        return match node {
            // A boolean column as the whole filter.
            Node::Field(_) | Node::Nested(_) => {
                let (column, dt) = field(node, schema)?;
                (dt == &DataType::Boolean).then(|| Expr::Cmp {
                    column,
                    op: CmpOp::Eq,
                    value: Literal::Bool(true),
                })
            }
            Node::Literal(a) if a.data_type() == &DataType::Boolean && a.null_count() == 0 => {
                Some(match a.as_boolean().value(0) {
                    true => Expr::And(vec![]),
                    false => Expr::Or(vec![]),
                })
            }
            _ => None,
        };
    };
    let option = |key: &str| {
        options
            .as_ref()
            .and_then(|o| o.column_by_name(key))
            .cloned()
    };
    let ignore_case = || {
        option("ignore_case")
            .and_then(|a| a.as_boolean_opt().map(|b| b.value(0)))
            .unwrap_or(true)
    };
    match (name.as_str(), args.as_slice()) {
        // `and`/`or` without Kleene logic differ from SQL's under `invert`; pyarrow's
        // `&` and `|` are the Kleene ones.
        ("and_kleene", _) => Some(Expr::And(
            args.iter()
                .map(|a| to_sift(a, schema))
                .collect::<Option<_>>()?,
        )),
        ("or_kleene", _) => Some(Expr::Or(
            args.iter()
                .map(|a| to_sift(a, schema))
                .collect::<Option<_>>()?,
        )),
        ("invert", [a]) => Some(Expr::Not(Box::new(to_sift(a, schema)?))),
        ("equal", [l, r]) => comparison(l, CmpOp::Eq, r, schema),
        ("not_equal", [l, r]) => comparison(l, CmpOp::Ne, r, schema),
        ("less", [l, r]) => comparison(l, CmpOp::Lt, r, schema),
        ("less_equal", [l, r]) => comparison(l, CmpOp::Le, r, schema),
        ("greater", [l, r]) => comparison(l, CmpOp::Gt, r, schema),
        ("greater_equal", [l, r]) => comparison(l, CmpOp::Ge, r, schema),
        ("is_null", [a]) => {
            let (column, dt) = field(a, schema)?;
            let nan_is_null = option("nan_is_null")
                .and_then(|o| o.as_boolean_opt().map(|b| b.value(0)))
                .unwrap_or(false);
            (!nan_is_null || !dt.is_floating()).then_some(Expr::IsNull {
                column,
                negated: false,
            })
        }
        ("is_valid", [a]) => Some(Expr::IsNull {
            column: field(a, schema)?.0,
            negated: true,
        }),
        ("is_in", [a]) => {
            let (column, dt) = field(a, schema)?;
            let set = option("value_set")?;
            let set = set.as_list_opt::<i32>()?;
            if set.is_null(0) {
                return None;
            }
            let values = set.value(0);
            if values.null_count() > 0 {
                return None;
            }
            let values = (0..values.len())
                .map(|i| literal(&values, i, dt))
                .collect::<Option<Vec<_>>>()?;
            // pyarrow's `is_in` is false (not null) on a null value, so its negation keeps
            // null rows: `x IN (…) AND x IS NOT NULL` says the same in SQL's logic.
            Some(Expr::And(vec![
                Expr::In {
                    column: column.clone(),
                    values,
                },
                Expr::IsNull {
                    column,
                    negated: true,
                },
            ]))
        }
        ("match_like", [a]) if !ignore_case() => {
            let (column, dt) = field(a, schema)?;
            Some(Expr::Like {
                column,
                pattern: string_option(option("pattern")?, dt)?,
            })
        }
        ("starts_with", [a]) if !ignore_case() => {
            let (column, dt) = field(a, schema)?;
            Some(Expr::StartsWith {
                column,
                prefix: string_option(option("pattern")?, dt)?,
            })
        }
        _ => None,
    }
}

/// A string-valued function option on a string column.
fn string_option(option: ArrayRef, column_type: &DataType) -> Option<String> {
    if !is_string(column_type) {
        return None;
    }
    let s = option.as_string_opt::<i32>()?;
    (!s.is_null(0)).then(|| s.value(0).to_string())
}

/// `field op literal`, `literal op field` or `field op field`.
fn comparison(left: &Node, op: CmpOp, right: &Node, schema: &Schema) -> Option<Expr> {
    let cmp = match (field(left, schema), field(right, schema)) {
        // Columns of one type; not floats, where NaN = NaN in SQL's order only.
        (Some((l, lt)), Some((r, rt))) => {
            return (lt == rt && !lt.is_floating()).then_some(Expr::ColumnCmp {
                left: l,
                op,
                right: r,
            });
        }
        (Some((column, dt)), None) => (column, dt, op, node_literal(right, dt)?),
        (None, Some((column, dt))) => (column, dt, op.flip(), node_literal(left, dt)?),
        (None, None) => return None,
    };
    let (column, dt, op, value) = cmp;
    let expr = Expr::Cmp {
        column: column.clone(),
        op,
        value,
    };
    // Sift orders NaN above every number, as SQL does; pyarrow's `>` is false on NaN.
    // `x <= inf` excludes NaN in Sift's order and keeps every other value.
    if dt.is_floating() && matches!(op, CmpOp::Gt | CmpOp::Ge) {
        return Some(Expr::And(vec![
            expr,
            Expr::Cmp {
                column,
                op: CmpOp::Le,
                value: Literal::Float(f64::INFINITY),
            },
        ]));
    }
    Some(expr)
}

/// A column of the schema, or a field of a struct column (named by its path, `s.a`, as the
/// scan names it: a Sift file stores it as a column of its own, null where the struct is,
/// as pyarrow's `struct_field` reads it): its name and type.
fn field<'a>(node: &Node, schema: &'a Schema) -> Option<(String, &'a DataType)> {
    let (name, dt) = match node {
        Node::Field(name) => (name.clone(), schema.field_with_name(name).ok()?.data_type()),
        Node::Nested(path) => {
            let (first, rest) = path.split_first()?;
            let top = schema.field_with_name(first).ok()?.data_type();
            let dt = sift_scan::field_type_at(top, rest.iter().map(String::as_str))?;
            (path.join("."), dt)
        }
        _ => return None,
    };
    // Dictionary columns (Parquet files can declare them) stay with pyarrow: the scan
    // compares their values only where the file stores them as a Sift dictionary.
    (!matches!(dt, DataType::Dictionary(..))).then_some((name, dt))
}

fn node_literal(node: &Node, column_type: &DataType) -> Option<Literal> {
    let Node::Literal(a) = node else {
        return None;
    };
    literal(a, 0, column_type)
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Value `i` of `a` as Sift's literal of the same value, where Sift compares it with a
/// `column_type` column as pyarrow would (numbers by value, strings by bytes, dates by
/// day); `None` for nulls, NaN, and types the filter language has no exact form for.
fn literal(a: &ArrayRef, i: usize, column_type: &DataType) -> Option<Literal> {
    if a.is_null(i) {
        return None;
    }
    use arrow::datatypes::*;
    let int = |v: i128| Some(Literal::Int(v));
    let numeric_column = column_type.is_numeric();
    let value = match a.data_type() {
        DataType::Boolean if column_type == &DataType::Boolean => {
            Literal::Bool(a.as_boolean().value(i))
        }
        DataType::Int8 if numeric_column => int(a.as_primitive::<Int8Type>().value(i).into())?,
        DataType::Int16 if numeric_column => int(a.as_primitive::<Int16Type>().value(i).into())?,
        DataType::Int32 if numeric_column => int(a.as_primitive::<Int32Type>().value(i).into())?,
        DataType::Int64 if numeric_column => int(a.as_primitive::<Int64Type>().value(i).into())?,
        DataType::UInt8 if numeric_column => int(a.as_primitive::<UInt8Type>().value(i).into())?,
        DataType::UInt16 if numeric_column => int(a.as_primitive::<UInt16Type>().value(i).into())?,
        DataType::UInt32 if numeric_column => int(a.as_primitive::<UInt32Type>().value(i).into())?,
        DataType::UInt64 if numeric_column => int(a.as_primitive::<UInt64Type>().value(i).into())?,
        DataType::Float32 | DataType::Float64 if numeric_column => {
            let x = match a.data_type() {
                DataType::Float32 => a.as_primitive::<Float32Type>().value(i).into(),
                _ => a.as_primitive::<Float64Type>().value(i),
            };
            if x.is_nan() {
                return None;
            }
            Literal::Float(x)
        }
        DataType::Decimal128(_, scale) if numeric_column => Literal::Decimal {
            unscaled: a.as_primitive::<Decimal128Type>().value(i),
            scale: (*scale).into(),
        },
        DataType::Utf8 if is_string(column_type) => {
            Literal::Str(a.as_string::<i32>().value(i).to_string())
        }
        DataType::LargeUtf8 if is_string(column_type) => {
            Literal::Str(a.as_string::<i64>().value(i).to_string())
        }
        DataType::Utf8View if is_string(column_type) => {
            Literal::Str(a.as_string_view().value(i).to_string())
        }
        DataType::Date32 if column_type == &DataType::Date32 => {
            Literal::Date(a.as_primitive::<Date32Type>().value(i))
        }
        _ => return None,
    };
    Some(value)
}
