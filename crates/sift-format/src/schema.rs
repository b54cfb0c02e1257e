//! The schema as stored in the footer: a closed, versioned set of column types.
//!
//! Arrow's own `DataType` is not stored directly: its serialized form is not a stable file
//! format, and it is recursive (a hostile footer could nest it without bound).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use sift_encoding::physical_kind;
use sift_encoding::wire::{Reader, Writer};

use crate::error::{Error, Result};

/// Time units, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds.
    Second,
    /// Milliseconds.
    Millisecond,
    /// Microseconds.
    Microsecond,
    /// Nanoseconds.
    Nanosecond,
}

impl From<TimeUnit> for Unit {
    fn from(u: TimeUnit) -> Self {
        match u {
            TimeUnit::Second => Unit::Second,
            TimeUnit::Millisecond => Unit::Millisecond,
            TimeUnit::Microsecond => Unit::Microsecond,
            TimeUnit::Nanosecond => Unit::Nanosecond,
        }
    }
}

impl From<Unit> for TimeUnit {
    fn from(u: Unit) -> Self {
        match u {
            Unit::Second => TimeUnit::Second,
            Unit::Millisecond => TimeUnit::Millisecond,
            Unit::Microsecond => TimeUnit::Microsecond,
            Unit::Nanosecond => TimeUnit::Nanosecond,
        }
    }
}

/// A column type as stored in the footer.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnType {
    Null,
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    Float32,
    Float64,
    Decimal128 { precision: u8, scale: i8 },
    Date32,
    Date64,
    Time32(Unit),
    Time64(Unit),
    Timestamp { unit: Unit, tz: Option<String> },
    Duration(Unit),
    Utf8,
    LargeUtf8,
    Utf8View,
    Binary,
    LargeBinary,
    BinaryView,
    FixedSizeBinary(i32),
}

impl ColumnType {
    /// The stored type of an Arrow type, or `None` if Sift cannot store it.
    pub fn from_arrow(dt: &DataType) -> Option<Self> {
        use ColumnType as C;
        use DataType as D;
        physical_kind(dt).ok()?;
        Some(match dt {
            D::Null => C::Null,
            D::Boolean => C::Bool,
            D::Int8 => C::Int8,
            D::Int16 => C::Int16,
            D::Int32 => C::Int32,
            D::Int64 => C::Int64,
            D::UInt8 => C::UInt8,
            D::UInt16 => C::UInt16,
            D::UInt32 => C::UInt32,
            D::UInt64 => C::UInt64,
            D::Float16 => C::Float16,
            D::Float32 => C::Float32,
            D::Float64 => C::Float64,
            D::Decimal128(p, s) => C::Decimal128 {
                precision: *p,
                scale: *s,
            },
            D::Date32 => C::Date32,
            D::Date64 => C::Date64,
            D::Time32(u) => C::Time32((*u).into()),
            D::Time64(u) => C::Time64((*u).into()),
            D::Timestamp(u, tz) => C::Timestamp {
                unit: (*u).into(),
                tz: tz.as_ref().map(|t| t.to_string()),
            },
            D::Duration(u) => C::Duration((*u).into()),
            D::Utf8 => C::Utf8,
            D::LargeUtf8 => C::LargeUtf8,
            D::Utf8View => C::Utf8View,
            D::Binary => C::Binary,
            D::LargeBinary => C::LargeBinary,
            D::BinaryView => C::BinaryView,
            D::FixedSizeBinary(w) => C::FixedSizeBinary(*w),
            _ => return None,
        })
    }

    /// The Arrow type, or an error message if the stored type is invalid.
    pub fn to_arrow(&self) -> std::result::Result<DataType, String> {
        use ColumnType as C;
        use DataType as D;
        let valid_time32 = |u: Unit| matches!(u, Unit::Second | Unit::Millisecond);
        Ok(match self {
            C::Null => D::Null,
            C::Bool => D::Boolean,
            C::Int8 => D::Int8,
            C::Int16 => D::Int16,
            C::Int32 => D::Int32,
            C::Int64 => D::Int64,
            C::UInt8 => D::UInt8,
            C::UInt16 => D::UInt16,
            C::UInt32 => D::UInt32,
            C::UInt64 => D::UInt64,
            C::Float16 => D::Float16,
            C::Float32 => D::Float32,
            C::Float64 => D::Float64,
            C::Decimal128 { precision, scale } => {
                if *precision == 0 || *precision > 38 || i16::from(*scale).abs() > 38 {
                    return Err(format!(
                        "invalid decimal precision {precision} / scale {scale}"
                    ));
                }
                D::Decimal128(*precision, *scale)
            }
            C::Date32 => D::Date32,
            C::Date64 => D::Date64,
            C::Time32(u) if valid_time32(*u) => D::Time32((*u).into()),
            C::Time64(u) if !valid_time32(*u) => D::Time64((*u).into()),
            C::Time32(u) | C::Time64(u) => return Err(format!("invalid time unit {u:?}")),
            C::Timestamp { unit, tz } => D::Timestamp((*unit).into(), tz.as_deref().map(Arc::from)),
            C::Duration(u) => D::Duration((*u).into()),
            C::Utf8 => D::Utf8,
            C::LargeUtf8 => D::LargeUtf8,
            C::Utf8View => D::Utf8View,
            C::Binary => D::Binary,
            C::LargeBinary => D::LargeBinary,
            C::BinaryView => D::BinaryView,
            C::FixedSizeBinary(w) if *w >= 0 => D::FixedSizeBinary(*w),
            C::FixedSizeBinary(w) => return Err(format!("invalid fixed-size binary width {w}")),
        })
    }
}

/// Type ids of the footer's field records, in [`ColumnType`]'s order (`Null` = 0 …
/// `FixedSizeBinary` = 26); the file format fixes them.
const TYPE_IDS: u8 = 27;

impl Unit {
    fn id(self) -> u8 {
        match self {
            Unit::Second => 0,
            Unit::Millisecond => 1,
            Unit::Microsecond => 2,
            Unit::Nanosecond => 3,
        }
    }

    fn read(r: &mut Reader<'_>) -> sift_encoding::Result<Self> {
        Ok(match r.u8("time unit")? {
            0 => Unit::Second,
            1 => Unit::Millisecond,
            2 => Unit::Microsecond,
            3 => Unit::Nanosecond,
            other => return Err(r.error(format!("unknown time unit {other}"))),
        })
    }
}

impl ColumnType {
    /// Writes the type: its id (a byte), then its parameters.
    pub(crate) fn write_wire(&self, w: &mut Writer) {
        use ColumnType as C;
        w.u8(self.id());
        match self {
            C::Decimal128 { precision, scale } => {
                w.u8(*precision);
                w.u8(*scale as u8);
            }
            C::Time32(u) | C::Time64(u) | C::Duration(u) => w.u8(u.id()),
            C::Timestamp { unit, tz } => {
                w.u8(unit.id());
                match tz {
                    None => w.u8(0),
                    Some(tz) => {
                        w.u8(1);
                        w.bytes(tz.as_bytes());
                    }
                }
            }
            C::FixedSizeBinary(width) => w.u32_le(*width as u32),
            _ => {}
        }
    }

    /// The type's id in the file format.
    fn id(&self) -> u8 {
        use ColumnType as C;
        match self {
            C::Null => 0,
            C::Bool => 1,
            C::Int8 => 2,
            C::Int16 => 3,
            C::Int32 => 4,
            C::Int64 => 5,
            C::UInt8 => 6,
            C::UInt16 => 7,
            C::UInt32 => 8,
            C::UInt64 => 9,
            C::Float16 => 10,
            C::Float32 => 11,
            C::Float64 => 12,
            C::Decimal128 { .. } => 13,
            C::Date32 => 14,
            C::Date64 => 15,
            C::Time32(_) => 16,
            C::Time64(_) => 17,
            C::Timestamp { .. } => 18,
            C::Duration(_) => 19,
            C::Utf8 => 20,
            C::LargeUtf8 => 21,
            C::Utf8View => 22,
            C::Binary => 23,
            C::LargeBinary => 24,
            C::BinaryView => 25,
            C::FixedSizeBinary(_) => 26,
        }
    }

    /// Reads a type written by [`ColumnType::write_wire`].
    pub(crate) fn read_wire(r: &mut Reader<'_>) -> sift_encoding::Result<Self> {
        use ColumnType as C;
        const SIMPLE: [ColumnType; 13] = [
            C::Null,
            C::Bool,
            C::Int8,
            C::Int16,
            C::Int32,
            C::Int64,
            C::UInt8,
            C::UInt16,
            C::UInt32,
            C::UInt64,
            C::Float16,
            C::Float32,
            C::Float64,
        ];
        let id = r.u8("type id")?;
        Ok(match id {
            0..=12 => SIMPLE[id as usize].clone(),
            13 => C::Decimal128 {
                precision: r.u8("decimal precision")?,
                scale: r.u8("decimal scale")? as i8,
            },
            14 => C::Date32,
            15 => C::Date64,
            16 => C::Time32(Unit::read(r)?),
            17 => C::Time64(Unit::read(r)?),
            18 => C::Timestamp {
                unit: Unit::read(r)?,
                tz: match r.bool("time zone flag")? {
                    false => None,
                    true => Some(utf8(r.bytes("time zone")?, r)?),
                },
            },
            19 => C::Duration(Unit::read(r)?),
            20 => C::Utf8,
            21 => C::LargeUtf8,
            22 => C::Utf8View,
            23 => C::Binary,
            24 => C::LargeBinary,
            25 => C::BinaryView,
            26 => C::FixedSizeBinary(r.u32_le("fixed-size binary width")? as i32),
            other => {
                return Err(r.error(format!(
                    "unknown column type id {other} (0..{TYPE_IDS} known)"
                )));
            }
        })
    }
}

/// Bytes as a string, or an error at the reader's position.
pub(crate) fn utf8(bytes: &[u8], r: &Reader<'_>) -> sift_encoding::Result<String> {
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| r.error("text is not UTF-8"))
}

/// Writes `(key, value)` pairs: a varint count, then each as two length-prefixed strings.
pub(crate) fn write_pairs(pairs: &[(String, String)], w: &mut Writer) {
    w.varint(pairs.len() as u64);
    for (k, v) in pairs {
        w.bytes(k.as_bytes());
        w.bytes(v.as_bytes());
    }
}

/// Reads pairs written by [`write_pairs`].
pub(crate) fn read_pairs(r: &mut Reader<'_>) -> sift_encoding::Result<Vec<(String, String)>> {
    let n = r.count(2, "metadata entries")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let k = utf8(r.bytes("metadata key")?, r)?;
        let v = utf8(r.bytes("metadata value")?, r)?;
        out.push((k, v));
    }
    Ok(out)
}

/// A field as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredField {
    /// Column name.
    pub name: String,
    /// Column type.
    pub ty: ColumnType,
    /// Whether nulls are allowed.
    pub nullable: bool,
    /// Field metadata.
    pub metadata: Vec<(String, String)>,
}

/// Field metadata key marking a column written from an Arrow dictionary: its value is the
/// key type (`Int8` … `UInt64`). The column is stored as its value type, with Sift's own
/// encoding choice, and read back as the dictionary type. Kept as metadata so the footer
/// layout does not change (a reader that does not know the key reads the values).
pub const DICTIONARY_KEY: &str = "sift.dictionary_key";

/// The dictionary key types, by the names [`DICTIONARY_KEY`] stores.
const KEY_TYPES: [(&str, DataType); 8] = [
    ("Int8", DataType::Int8),
    ("Int16", DataType::Int16),
    ("Int32", DataType::Int32),
    ("Int64", DataType::Int64),
    ("UInt8", DataType::UInt8),
    ("UInt16", DataType::UInt16),
    ("UInt32", DataType::UInt32),
    ("UInt64", DataType::UInt64),
];

/// Checks that every column of `schema` can be stored, naming the first that cannot, and
/// returns the footer columns that store them: one per column, and for a nested column one
/// per node of its type (see the `nested` module), whose names must all be distinct.
pub fn check_schema(schema: &Schema) -> Result<Vec<StoredField>> {
    check_unique_names(schema)?;
    let mut out = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        if crate::nested::expand(f, f.name().clone(), false, 0, &mut out)?.is_none() {
            return Err(Error::UnsupportedType {
                column: f.name().clone(),
                data_type: f.data_type().to_string(),
            });
        }
    }
    unique_names(out.iter().map(|f| f.name.as_str()))?;
    Ok(out)
}

/// The stored type of a leaf of type `dt` (not nested); a dictionary is stored as its
/// values, with its key type recorded in `metadata` under [`DICTIONARY_KEY`]. `None` if
/// Sift cannot store it.
pub(crate) fn leaf_type(dt: &DataType, metadata: &mut Vec<(String, String)>) -> Option<ColumnType> {
    match dt {
        DataType::Dictionary(key, values) => {
            let (name, _) = KEY_TYPES.iter().find(|(_, k)| k == key.as_ref())?;
            let ty = ColumnType::from_arrow(values)?;
            metadata.push((DICTIONARY_KEY.into(), (*name).into()));
            Some(ty)
        }
        other => ColumnType::from_arrow(other),
    }
}

/// Refuses a schema in which two columns have the same name (a filter or projection by
/// name could only ever reach the first), naming every repeated name.
pub fn check_unique_names(schema: &Schema) -> Result<()> {
    unique_names(schema.fields().iter().map(|f| f.name().as_str()))
}

/// [`check_unique_names`] over names (a schema's, or its footer columns').
fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut repeated: Vec<String> = Vec::new();
    for (i, name) in names.enumerate() {
        match first.get(name) {
            Some(&j) => repeated.push(format!("'{name}' (columns {j} and {i})")),
            None => {
                first.insert(name, i);
            }
        }
    }
    if repeated.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "duplicate column names: {}; every column needs its own name",
        repeated.join(", ")
    )))
}

/// The Arrow fields of a stored field: as written, and as stored (what chunks decode to:
/// a dictionary column's value type).
pub(crate) fn to_arrow_fields(f: &StoredField) -> std::result::Result<(Field, Field), String> {
    let dt =
        f.ty.to_arrow()
            .map_err(|e| format!("column '{}': {e}", f.name))?;
    let mut md: HashMap<String, String> = f.metadata.iter().cloned().collect();
    md.remove(crate::nested::NESTED_KEY);
    md.remove(crate::nested::REQUIRED_KEY);
    let written_dt = match md.remove(DICTIONARY_KEY) {
        None => dt.clone(),
        Some(name) => {
            let (_, key) = KEY_TYPES.iter().find(|(n, _)| *n == name).ok_or_else(|| {
                format!("column '{}': unknown dictionary key type {name:?}", f.name)
            })?;
            DataType::Dictionary(Box::new(key.clone()), Box::new(dt.clone()))
        }
    };
    Ok((
        Field::new(&f.name, written_dt, f.nullable).with_metadata(md.clone()),
        Field::new(&f.name, dt, f.nullable).with_metadata(md),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_names_are_refused_by_name() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let err = check_schema(&schema).unwrap_err().to_string();
        assert!(err.contains("'a' (columns 0 and 2)"), "{err}");
        assert!(err.contains("'b' (columns 1 and 3)"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("dup.sift");
        let writer = crate::SiftWriter::create(&target, Arc::new(schema), Default::default());
        assert!(writer.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
