//! A column's smallest and largest value over a block's selected rows, which a scan
//! returns instead of the rows when asked ([`ScanBuilder::extremes_only`]): all that `MIN`
//! and `MAX` aggregates need of it.
//!
//! Extremes travel as a two-row array `[min, max]` of the column's type (both null when
//! no non-null value is selected). The form composes: the extremes of any rows of such
//! arrays, joined, are the extremes of everything they summarise, so a block's pages are
//! combined by taking the extremes of their pairs, and the aggregate above takes `MIN` and
//! `MAX` over the pairs of every block. A count of the block's selected rows can travel
//! beside them as `[count, 0]`, which sums to the scan's count in the same way.
//!
//! [`ScanBuilder::extremes_only`]: crate::ScanBuilder::extremes_only

use arrow_array::ArrowNumericType;
use arrow_array::{Array, ArrayRef, PrimitiveArray, downcast_primitive_array};
use arrow_schema::{ArrowError, DataType};

/// The name of the count of a block's selected rows that a scan returning extremes adds
/// as its last column when asked ([`ScanBuilder::count_selected`]).
///
/// [`ScanBuilder::count_selected`]: crate::ScanBuilder::count_selected
pub const SELECTED_ROWS: &str = "__selected_rows";

/// Whether a column of type `dt` has extremes a scan can return: integers, dates,
/// times, timestamps and decimals (what Sift stores as integers).
pub fn has_extremes(dt: &DataType) -> bool {
    matches!(
        sift_encoding::physical_kind(dt),
        Ok(sift_encoding::PhysicalKind::Int(_))
    )
}

/// `[min, max]` of `values`, nulls ignored (both null when every value is null or there is
/// none), in `values`' type. Integers, dates, times, timestamps and decimals: a float's
/// NaN has no single order, so floats are refused, as is any other type.
pub(crate) fn of(values: &dyn Array) -> Result<ArrayRef, ArrowError> {
    if !has_extremes(values.data_type()) {
        return Err(refused(values));
    }
    downcast_primitive_array!(
        values => Ok(pair(values)),
        _ => Err(refused(values))
    )
}

fn pair<T: ArrowNumericType>(values: &PrimitiveArray<T>) -> ArrayRef {
    let pair = [
        arrow_arith::aggregate::min(values),
        arrow_arith::aggregate::max(values),
    ];
    let out = PrimitiveArray::<T>::from_iter(pair).with_data_type(values.data_type().clone());
    std::sync::Arc::new(out)
}

/// The extremes of a column's consecutive pieces, each a `[min, max]` pair.
pub(crate) fn combine(pieces: Vec<ArrayRef>) -> Result<ArrayRef, ArrowError> {
    match <[ArrayRef; 1]>::try_from(pieces) {
        Ok([one]) => Ok(one),
        Err(pieces) => {
            let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
            of(arrow_select::concat::concat(&refs)?.as_ref())
        }
    }
}

fn refused(values: &dyn Array) -> ArrowError {
    ArrowError::NotYetImplemented(format!(
        "the extremes of {} values (integers, dates, times, timestamps and decimals have them)",
        values.data_type()
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Date32Type, Int64Type};
    use arrow_array::{Date32Array, Float64Array, Int64Array};

    #[test]
    fn pairs_of_values_and_of_pairs() {
        let a = Int64Array::from(vec![Some(5), None, Some(-3), Some(9)]);
        let p = of(&a).unwrap();
        assert_eq!(
            p.as_primitive::<Int64Type>(),
            &Int64Array::from(vec![-3, 9])
        );
        let none = of(&Int64Array::from(vec![None, None])).unwrap();
        assert_eq!(none.null_count(), 2);
        let empty = of(&Int64Array::from(Vec::<i64>::new())).unwrap();
        assert_eq!((empty.len(), empty.null_count()), (2, 2));
        // Pieces: an all-null pair does not hide the others.
        let b: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![-7, 2]));
        let all = combine(vec![p, none, b]).unwrap();
        assert_eq!(
            all.as_primitive::<Int64Type>(),
            &Int64Array::from(vec![-7, 9])
        );
        // The type is kept.
        let d = of(&Date32Array::from(vec![3, 1, 2])).unwrap();
        assert_eq!(
            d.as_primitive::<Date32Type>(),
            &Date32Array::from(vec![1, 3])
        );
        assert!(of(&Float64Array::from(vec![1.0])).is_err());
    }
}
