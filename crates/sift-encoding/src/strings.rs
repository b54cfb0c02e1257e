//! The seven Arrow layouts of byte strings (`Utf8`, `LargeUtf8`, `Utf8View`, `Binary`,
//! `LargeBinary`, `BinaryView`, `FixedSizeBinary`) behind one way of reading their values,
//! so that code handling strings matches on the layout in one place.

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_schema::DataType;

use crate::error::{EncodingError, Result};

/// Whether `dt` is a byte-string layout: one [`for_each_bytes`] reads.
pub fn is_byte_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// Calls `f(i, value)` for every row `i` of a byte-string array, in order, with `None` for
/// a null row. Strings come as their UTF-8 bytes. The layout is matched once; `f` then
/// runs in a loop over the concrete array.
pub fn for_each_bytes<'a>(
    array: &'a dyn Array,
    mut f: impl FnMut(usize, Option<&'a [u8]>),
) -> Result<()> {
    fn each<'a>(
        values: impl Iterator<Item = Option<&'a [u8]>>,
        f: &mut impl FnMut(usize, Option<&'a [u8]>),
    ) {
        values.enumerate().for_each(|(i, v)| f(i, v));
    }
    let text = |v: Option<&'a str>| v.map(str::as_bytes);
    match array.data_type() {
        DataType::Utf8 => each(array.as_string::<i32>().iter().map(text), &mut f),
        DataType::LargeUtf8 => each(array.as_string::<i64>().iter().map(text), &mut f),
        DataType::Utf8View => each(array.as_string_view().iter().map(text), &mut f),
        DataType::Binary => each(array.as_binary::<i32>().iter(), &mut f),
        DataType::LargeBinary => each(array.as_binary::<i64>().iter(), &mut f),
        DataType::BinaryView => each(array.as_binary_view().iter(), &mut f),
        DataType::FixedSizeBinary(_) => each(array.as_fixed_size_binary().iter(), &mut f),
        other => {
            return Err(EncodingError::Unsupported(format!(
                "{other} is not a byte-string type"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BinaryArray, BinaryViewArray, FixedSizeBinaryArray, Int32Array, LargeBinaryArray,
        LargeStringArray, StringArray, StringViewArray,
    };

    use super::*;

    fn read(a: &dyn Array) -> Vec<Option<Vec<u8>>> {
        let mut out = Vec::new();
        for_each_bytes(a, |i, v| {
            assert_eq!(i, out.len());
            out.push(v.map(<[u8]>::to_vec));
        })
        .unwrap();
        out
    }

    /// Every layout reads back the same values, nulls in place; a view longer than its
    /// inline 12 bytes included.
    #[test]
    fn every_layout_reads_the_same_values() {
        let texts = [
            Some("ab"),
            None,
            Some(""),
            Some("a string of 24 characters"),
        ];
        let want: Vec<Option<Vec<u8>>> = texts
            .iter()
            .map(|t| t.map(|t| t.as_bytes().to_vec()))
            .collect();
        let bytes: Vec<Option<&[u8]>> = texts.iter().map(|t| t.map(str::as_bytes)).collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(texts.to_vec())),
            Arc::new(LargeStringArray::from(texts.to_vec())),
            Arc::new(StringViewArray::from(texts.to_vec())),
            Arc::new(BinaryArray::from(bytes.clone())),
            Arc::new(LargeBinaryArray::from(bytes.clone())),
            Arc::new(BinaryViewArray::from(bytes)),
        ];
        for a in &arrays {
            assert!(is_byte_string(a.data_type()));
            assert_eq!(read(a.as_ref()), want, "{}", a.data_type());
        }
        let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
            [Some(b"xy".as_slice()), None, Some(b"zw".as_slice())].into_iter(),
            2,
        )
        .unwrap();
        assert!(is_byte_string(fixed.data_type()));
        assert_eq!(
            read(&fixed),
            vec![Some(b"xy".to_vec()), None, Some(b"zw".to_vec())]
        );
    }

    #[test]
    fn other_types_are_refused() {
        let a = Int32Array::from(vec![1, 2]);
        assert!(!is_byte_string(a.data_type()));
        let e = for_each_bytes(&a, |_, _| unreachable!()).unwrap_err();
        assert!(e.to_string().contains("Int32"), "{e}");
    }
}
