//! Making data printable with Arrow's formatters.
//!
//! Arrow formats timestamps in their time zone: fixed offsets (`+02:00`) and the named
//! zones of the tz database (`Europe/Paris`, through the `chrono-tz` feature DataFusion
//! turns on), and fails on a zone name it does not know. Timestamp values are UTC instants
//! whatever the zone, so for printing we relabel unknown zones as `+00:00`: the instant
//! shown is exact, only expressed in UTC rather than local time.

use std::sync::Arc;

use anyhow::Result;
use arrow::array::timezone::Tz;
use arrow::array::{ArrayRef, RecordBatch, make_array};
use arrow::datatypes::{DataType, Field, Schema};

/// `dt` with time zones Arrow cannot resolve replaced by `+00:00`; other types unchanged.
pub fn printable_type(dt: &DataType) -> DataType {
    match dt {
        DataType::Timestamp(unit, Some(tz)) if tz.parse::<Tz>().is_err() => {
            DataType::Timestamp(*unit, Some("+00:00".into()))
        }
        other => other.clone(),
    }
}

/// Refuses, before anything is written, a CSV output of a schema with nested columns
/// (CSV has no notation for them), naming the column and what to use instead.
pub fn check_csv(schema: &arrow::datatypes::Schema) -> Result<()> {
    match schema.fields().iter().find(|f| f.data_type().is_nested()) {
        None => Ok(()),
        Some(f) => anyhow::bail!(
            "column '{}' is nested ({}), which CSV cannot hold: print it with -o json or \
             -o table, write it with --out FILE.parquet, .arrow or .sift, or select its \
             fields (--columns {}.<field>)",
            f.name(),
            f.data_type(),
            f.name()
        ),
    }
}

/// `batch` with every column's type made printable (a metadata-only change).
pub fn printable_batch(batch: RecordBatch) -> Result<RecordBatch> {
    let schema = batch.schema();
    if schema
        .fields()
        .iter()
        .all(|f| printable_type(f.data_type()) == *f.data_type())
    {
        return Ok(batch);
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        let dt = printable_type(field.data_type());
        if dt == *field.data_type() {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
        } else {
            let data = column
                .to_data()
                .into_builder()
                .data_type(dt.clone())
                .build()?;
            fields.push(Field::new(field.name(), dt, field.is_nullable()));
            columns.push(make_array(data));
        }
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    Ok(RecordBatch::try_new(schema, columns)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow::array::TimestampSecondArray;
    use arrow::datatypes::TimeUnit;

    #[test]
    fn unknown_zones_print_as_utc() {
        let a = TimestampSecondArray::from(vec![0, 3600]).with_timezone("Mars/Olympus_Mons");
        let batch = RecordBatch::try_from_iter([("t", Arc::new(a) as ArrayRef)]).unwrap();
        let p = printable_batch(batch).unwrap();
        assert_eq!(
            p.schema().field(0).data_type(),
            &DataType::Timestamp(TimeUnit::Second, Some("+00:00".into()))
        );
        let s = arrow::util::pretty::pretty_format_batches(&[p])
            .unwrap()
            .to_string();
        assert!(s.contains("1970-01-01T01:00:00Z"), "{s}");
        // Known zones print in local time.
        for zone in ["+02:00", "Europe/Paris", "UTC"] {
            let dt = DataType::Timestamp(TimeUnit::Second, Some(zone.into()));
            assert_eq!(printable_type(&dt), dt);
        }
        let a = TimestampSecondArray::from(vec![3600]).with_timezone("Europe/Paris");
        let batch = RecordBatch::try_from_iter([("t", Arc::new(a) as ArrayRef)]).unwrap();
        let s = arrow::util::pretty::pretty_format_batches(&[printable_batch(batch).unwrap()])
            .unwrap()
            .to_string();
        assert!(s.contains("1970-01-01T02:00:00+01:00"), "{s}");
    }
}
