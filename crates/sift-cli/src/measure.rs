//! How many bytes data takes as Arrow arrays in memory.

use arrow::array::{Array, ArrayData, RecordBatch};

/// Bytes of an array's buffers (values, offsets/views, validity, children), counting
/// lengths rather than allocated capacity so that the number does not depend on how the
/// array was built.
pub fn array_bytes(array: &dyn Array) -> u64 {
    data_bytes(&array.to_data())
}

fn data_bytes(data: &ArrayData) -> u64 {
    let buffers: usize = data.buffers().iter().map(|b| b.len()).sum();
    let nulls = data.nulls().map_or(0, |n| n.buffer().len());
    let children: u64 = data.child_data().iter().map(data_bytes).sum();
    (buffers + nulls) as u64 + children
}

/// Bytes of all columns of a batch.
pub fn batch_bytes(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .iter()
        .map(|c| array_bytes(c.as_ref()))
        .sum()
}
