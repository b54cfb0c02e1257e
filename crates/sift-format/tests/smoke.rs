use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use sift_format::{SiftFile, SiftWriter, WriteOptions};

#[test]
fn smoke_round_trip() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("t.sift");
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let n = 200_000;
    let a: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..n).map(|i| if i % 7 == 0 { None } else { Some(i * 3 - 5) }),
    ));
    let s: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| {
        if i % 5 == 0 {
            None
        } else {
            Some(format!("v{}", i % 13))
        }
    })));
    let batch = RecordBatch::try_new(schema.clone(), vec![a, s])?;
    let mut w = SiftWriter::create(&path, schema.clone(), WriteOptions::default())?;
    w.write(&batch.slice(0, 1000))?;
    w.write(&batch.slice(1000, n as usize - 1000))?;
    let summary = w.finish()?;
    assert_eq!(summary.blocks, 4);
    let f = SiftFile::open(&path)?;
    let batches = f.read_all(None)?;
    let all = arrow::compute::concat_batches(&schema, &batches)?;
    assert_eq!(all, batch);
    Ok(())
}
