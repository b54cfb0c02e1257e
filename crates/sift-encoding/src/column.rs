//! Arrow arrays to encoded column chunks and back.
//!
//! Every supported Arrow type maps to one [`PhysicalKind`]; dates, times, timestamps and
//! durations are stored as their integers, decimals as scaled `i128`.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, make_array};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::byte_values::{ByteValues, MAX_CHUNK_BYTES, decode_budget};
use crate::domain::{FloatBits, Strings, Value, compact};
use crate::encodings::frame::{NativeInt, encode_ints};
use crate::encodings::plain;
use crate::error::{EncodingError, Result, corrupt};
use crate::predicate::{ValuePredicate, filter_values};
use crate::stats::{ChunkStats, Scalar, bytes_bounds, float_bounds, int_bounds};
use crate::tree::MAX_CASCADE;
use crate::tree::{BufferSink, Buffers, ColumnEncoding, Ctx, Node, Validity};
use sift_bits::Bitmap;

/// Integer storage types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntType {
    I8,
    I16,
    I32,
    I64,
    I128,
    U8,
    U16,
    U32,
    U64,
}

/// How an Arrow type is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhysicalKind {
    /// The Null type: nothing stored.
    Null,
    /// Booleans.
    Bool,
    /// Integers (including dates, times, timestamps, durations and decimals).
    Int(IntType),
    /// Floating point, stored by bit pattern; the width in bytes.
    Float(u32),
    /// Variable-length byte strings (utf8 and binary in all their layouts).
    Bytes,
    /// Fixed-size binary of the given width.
    FixedBytes(u32),
}

/// The storage kind of `dt`, or an error for types Sift does not store yet.
pub fn physical_kind(dt: &DataType) -> Result<PhysicalKind> {
    use DataType as D;
    use IntType as I;
    Ok(match dt {
        D::Null => PhysicalKind::Null,
        D::Boolean => PhysicalKind::Bool,
        D::Int8 => PhysicalKind::Int(I::I8),
        D::Int16 => PhysicalKind::Int(I::I16),
        D::Int32 | D::Date32 | D::Time32(_) => PhysicalKind::Int(I::I32),
        D::Int64 | D::Date64 | D::Time64(_) | D::Timestamp(_, _) | D::Duration(_) => {
            PhysicalKind::Int(I::I64)
        }
        D::Decimal128(_, _) => PhysicalKind::Int(I::I128),
        D::UInt8 => PhysicalKind::Int(I::U8),
        D::UInt16 => PhysicalKind::Int(I::U16),
        D::UInt32 => PhysicalKind::Int(I::U32),
        D::UInt64 => PhysicalKind::Int(I::U64),
        D::Float16 => PhysicalKind::Float(2),
        D::Float32 => PhysicalKind::Float(4),
        D::Float64 => PhysicalKind::Float(8),
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView => {
            PhysicalKind::Bytes
        }
        D::FixedSizeBinary(w) if *w >= 0 => PhysicalKind::FixedBytes(*w as u32),
        other => return Err(EncodingError::Unsupported(other.to_string())),
    })
}

/// Runs `$body` with `$T` bound to the native integer type of `$it`.
macro_rules! with_int {
    ($it:expr, $T:ident => $body:expr) => {
        match $it {
            IntType::I8 => {
                type $T = i8;
                $body
            }
            IntType::I16 => {
                type $T = i16;
                $body
            }
            IntType::I32 => {
                type $T = i32;
                $body
            }
            IntType::I64 => {
                type $T = i64;
                $body
            }
            IntType::I128 => {
                type $T = i128;
                $body
            }
            IntType::U8 => {
                type $T = u8;
                $body
            }
            IntType::U16 => {
                type $T = u16;
                $body
            }
            IntType::U32 => {
                type $T = u32;
                $body
            }
            IntType::U64 => {
                type $T = u64;
                $body
            }
        }
    };
}

/// An encoded column chunk: the encoding tree and the buffers it points at.
#[derive(Debug)]
pub struct EncodedColumn {
    /// The tree, stored in the footer.
    pub encoding: ColumnEncoding,
    /// The buffers, stored as segments.
    pub buffers: Vec<Vec<u8>>,
    /// Zone-map statistics of the chunk.
    pub stats: ChunkStats,
}

/// The largest value buffer of one fixed-size binary chunk (Arrow addresses it with `i32`).
/// Nulls take `width` bytes too, so the stored bytes do not bound it: a hostile footer (a
/// huge width on an all-null chunk) could otherwise ask for terabytes. Below this, the
/// chunk's decode budget applies too (see [`decode_budget`]).
const MAX_FIXED_CHUNK_BYTES: usize = i32::MAX as usize;

/// Refuses a chunk whose values decode to `decoded` bytes, more than a reader accepts for
/// its encoded size ([`decode_budget`]), so that what the writer writes stays readable.
fn check_readable(dt: &DataType, decoded: usize, col: &EncodedColumn) -> Result<()> {
    let encoded = crate::tree::encoded_bytes(&col.encoding.nodes, col.buffers.iter().map(Vec::len));
    let budget = decode_budget(encoded);
    if decoded > budget {
        return Err(EncodingError::Unsupported(format!(
            "{decoded} bytes of {dt} in one block exceed the {budget} bytes a reader accepts from {encoded} encoded bytes (use smaller blocks)"
        )));
    }
    Ok(())
}

/// `len` values of `kind` fit in one chunk (only fixed-size binary can fail).
fn fixed_chunk_fits(kind: PhysicalKind, len: usize) -> bool {
    match kind {
        PhysicalKind::FixedBytes(w) => len
            .checked_mul(w as usize)
            .is_some_and(|b| b <= MAX_FIXED_CHUNK_BYTES),
        _ => true,
    }
}

/// How one column is encoded, beyond what the chooser decides by sampling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Store the column's codes as byte slices (ByteSlice) instead of bit-packed, for
    /// faster range filters on wide codes at the cost of padding each code to whole bytes.
    /// An integer column is then stored as frame of reference (its chunk's minimum plus
    /// byte-sliced codes) whatever the chooser would pick; in other columns, every
    /// frame-of-reference leaf wider than a byte (dictionary codes, decimal integers of
    /// doubles) is byte-sliced. Codes of at most 8 bits stay bit-packed.
    pub byteslice: bool,
}

/// Encodes one column chunk with the default options.
pub fn encode_array(array: &dyn Array) -> Result<EncodedColumn> {
    encode_array_with(array, EncodeOptions::default())
}

/// Encodes one column chunk.
pub fn encode_array_with(array: &dyn Array, options: EncodeOptions) -> Result<EncodedColumn> {
    let kind = physical_kind(array.data_type())?;
    let len = array.len();
    if !fixed_chunk_fits(kind, len) {
        return Err(EncodingError::Unsupported(format!(
            "{len} values of {} exceed {MAX_FIXED_CHUNK_BYTES} bytes in one block (use smaller blocks)",
            array.data_type()
        )));
    }
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    let mut sink = BufferSink {
        byteslice: options.byteslice,
        ..BufferSink::default()
    };
    // Bytes the values decode to, where the encoding can expand (byte strings; fixed-size
    // values, whose nulls take their width too).
    let mut decoded = match kind {
        PhysicalKind::FixedBytes(w) => len * w as usize,
        _ => 0,
    };
    if nulls.as_ref().is_some_and(|n| n.null_count() == len) {
        let col = EncodedColumn {
            encoding: ColumnEncoding {
                validity: Validity::AllNull,
                nodes: vec![],
            },
            buffers: vec![],
            stats: ChunkStats {
                null_count: len as u64,
                ..ChunkStats::default()
            },
        };
        check_readable(array.data_type(), decoded, &col)?;
        return Ok(col);
    }
    let data = array.to_data();
    let valid = |i: &usize| nulls.as_ref().is_none_or(|n| n.is_valid(*i));
    let mut stats = ChunkStats {
        null_count: nulls.as_ref().map_or(0, |n| n.null_count() as u64),
        ..Default::default()
    };
    match kind {
        PhysicalKind::Null => {
            // Every value of the Null type is null, so `len == 0` is the only way here.
            encode_ints::<u8>(&[], &mut sink, 1);
        }
        PhysicalKind::Bool => {
            let Some(bools) = array.as_any().downcast_ref::<BooleanArray>() else {
                return Err(EncodingError::Unsupported(format!(
                    "{} as booleans",
                    array.data_type()
                )));
            };
            let values: Vec<bool> = (0..len).filter(valid).map(|i| bools.value(i)).collect();
            let ones = values.iter().filter(|&&b| b).count();
            if !values.is_empty() {
                stats.min = Some(Scalar::Bool(ones == values.len()));
                stats.max = Some(Scalar::Bool(ones > 0));
            }
            bool::encode(&values, &mut sink, MAX_CASCADE);
        }
        PhysicalKind::Int(it) => with_int!(it, T => {
            let all = &data.buffers()[0].typed_data::<T>()[data.offset()..data.offset() + len];
            let compact: std::borrow::Cow<'_, [T]> = if nulls.is_some() {
                (0..len).filter(valid).map(|i| all[i]).collect()
            } else {
                all.into()
            };
            (stats.min, stats.max) = int_bounds(&compact);
            stats.sorted = compact.windows(2).all(|w| w[0] <= w[1]);
            encode_int_column(&compact, &mut sink);
        }),
        PhysicalKind::Float(w) => {
            let w = w as usize;
            let all = &data.buffers()[0].as_slice()[data.offset() * w..(data.offset() + len) * w];
            let bytes = if nulls.is_some() {
                (0..len)
                    .filter(valid)
                    .flat_map(|i| &all[i * w..(i + 1) * w])
                    .copied()
                    .collect()
            } else {
                all.to_vec()
            };
            (stats.min, stats.max, stats.has_nan) = float_bounds(&bytes, w);
            if w == 8 {
                let values: Vec<FloatBits> = bytes
                    .chunks_exact(8)
                    .map(|c| {
                        FloatBits(u64::from_le_bytes([
                            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
                        ]))
                    })
                    .collect();
                FloatBits::encode(&values, &mut sink, MAX_CASCADE);
            } else {
                let buffer = sink.buffer(bytes);
                sink.push_node(plain::Plain {
                    width: w as u32,
                    buffer,
                });
            }
        }
        PhysicalKind::Bytes | PhysicalKind::FixedBytes(_) => {
            let values = byte_values(array)?;
            let total: usize = values.iter().map(|v| v.len()).sum();
            if total > MAX_CHUNK_BYTES {
                return Err(EncodingError::Unsupported(format!(
                    "{total} bytes of {} in one block exceed {} (use smaller blocks)",
                    array.data_type(),
                    MAX_CHUNK_BYTES
                )));
            }
            let fixed = match kind {
                PhysicalKind::FixedBytes(w) => Some(w),
                _ => {
                    decoded = total;
                    None
                }
            };
            (stats.min, stats.max) = bytes_bounds(&values);
            Strings::encode(&values, fixed, &mut sink, MAX_CASCADE);
        }
    }
    // The validity's nodes follow the values' tree, whose root must be node 0.
    let validity = match &nulls {
        Some(n) => crate::validity::encode(n.inner(), &mut sink),
        None => Validity::AllValid,
    };
    let col = EncodedColumn {
        encoding: ColumnEncoding {
            validity,
            nodes: sink.nodes,
        },
        buffers: sink.buffers,
        stats,
    };
    check_readable(array.data_type(), decoded, &col)?;
    Ok(col)
}

/// The non-null values of a byte-string array (its nulls are its logical nulls: byte
/// strings have no other kind).
fn byte_values(array: &dyn Array) -> Result<Vec<&[u8]>> {
    let mut values = Vec::with_capacity(array.len() - array.null_count());
    crate::strings::for_each_bytes(array, |_, v| values.extend(v))?;
    Ok(values)
}

/// Decodes every row of a chunk (the crate's own tests; callers use `Chunk`).
#[cfg(test)]
pub(crate) fn decode_array(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
) -> Result<ArrayRef> {
    decode_rows(enc, dt, len, buffers, None, None)
}

/// A selection, if any, must have one bit per row of the chunk (a caller's mistake, not a
/// damaged file).
pub(crate) fn check_selection(selection: Option<&Bitmap>, len: usize) -> Result<()> {
    match selection {
        Some(s) if s.len() != len => Err(EncodingError::Unsupported(format!(
            "selection of {} rows for a chunk of {len}",
            s.len()
        ))),
        _ => Ok(()),
    }
}

/// The validity of a chunk of `len` rows: `None` when every row is valid.
pub(crate) fn chunk_validity(
    enc: &ColumnEncoding,
    len: usize,
    buffers: &[&[u8]],
) -> Result<Option<Bitmap>> {
    let ctx = Ctx::new(enc, buffers);
    crate::validity::decode(&ctx, len)
}

/// The rows of a chunk of `len` rows whose value is non-null and satisfies `pred`,
/// evaluated on the encoded values (see `filter.rs`).
pub(crate) fn filter_chunk(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    pred: &ValuePredicate,
    memo: Option<&crate::predicate::DictionaryMemo>,
) -> Result<Bitmap> {
    let kind = physical_kind(dt)?;
    let validity = chunk_validity(enc, len, buffers)?;
    let count = validity.as_ref().map_or(len, Bitmap::count_ones);
    if count == 0 {
        return Ok(Bitmap::zeros(len));
    }
    if enc.nodes.is_empty() {
        return Err(corrupt(format!("{count} values but no encoding")));
    }
    let mut ctx = Ctx::new(enc, buffers);
    ctx.memo = memo;
    let compact = filter_values(&ctx, kind, count, pred)?;
    match validity {
        None => Ok(compact),
        Some(valid) => {
            sift_bits::levels::deposit(&compact, &valid).map_err(|e| corrupt(e.to_string()))
        }
    }
}

/// The shape of a decode of some rows of a chunk, before its values are read.
struct RowPlan {
    /// The output's validity.
    nulls: Option<NullBuffer>,
    /// The selection over the stored (non-null) values; `None` for all of them.
    sel: Option<Bitmap>,
    /// Non-null values stored in the chunk.
    stored: usize,
    /// Values to produce: the selected non-null ones.
    count: usize,
    /// Output rows.
    len: usize,
}

/// A chunk's rows as its stored values see them.
struct StoredRows<'a> {
    /// The rows holding a value (`None`: every row).
    valid: Option<Bitmap>,
    /// How many values are stored.
    stored: usize,
    /// The selection moved onto the stored values (PEXT by validity; the selection
    /// itself when every row is valid), `None` without a selection.
    sel: Option<std::borrow::Cow<'a, Bitmap>>,
}

/// The validity of a chunk of `len` rows decoded, and `selection` moved onto its values.
fn stored_rows<'a>(
    ctx: &Ctx<'_>,
    len: usize,
    selection: Option<&'a Bitmap>,
) -> Result<StoredRows<'a>> {
    let valid = crate::validity::decode(ctx, len)?;
    let stored = valid.as_ref().map_or(len, Bitmap::count_ones);
    let sel = match (selection, &valid) {
        (None, _) => None,
        (Some(s), None) => Some(std::borrow::Cow::Borrowed(s)),
        (Some(s), Some(v)) => Some(std::borrow::Cow::Owned(
            sift_bits::levels::extract(s, v).map_err(|e| corrupt(e.to_string()))?,
        )),
    };
    Ok(StoredRows { valid, stored, sel })
}

/// The validity and value selection of a decode of a chunk of `len` rows (all of them, or
/// the rows set in `selection`), or `None` when every row is null.
fn plan_rows(
    enc: &ColumnEncoding,
    len: usize,
    bufs: &Buffers<'_>,
    selection: Option<&Bitmap>,
) -> Result<Option<RowPlan>> {
    let out_len = selection.map_or(len, Bitmap::count_ones);
    // The chunk's validity as a bitmap (counted with the POPCNT kernel; Arrow's
    // `NullBuffer::new` counts again, so only the output's validity goes through it).
    if enc.validity == Validity::AllNull {
        return Ok(None);
    }
    let ctx = Ctx::new(enc, bufs.0);
    let StoredRows { valid, stored, sel } = stored_rows(&ctx, len, selection)?;
    if stored > 0 && enc.nodes.is_empty() {
        return Err(corrupt(format!("{stored} values but no encoding")));
    }
    let null_buffer = |b: Bitmap, n: usize| {
        NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(b.into_words()), 0, n))
    };
    // With a selection and nulls, the output's validity: PEXT of validity by the selection.
    let nulls = match (selection, valid) {
        (_, None) => None,
        (None, Some(valid)) => Some(null_buffer(valid, len)),
        (Some(s), Some(valid)) => {
            let out_valid =
                sift_bits::levels::extract(&valid, s).map_err(|e| corrupt(e.to_string()))?;
            Some(null_buffer(out_valid, out_len))
        }
    };
    let sel = sel.map(std::borrow::Cow::into_owned);
    let count = sel.as_ref().map_or(stored, Bitmap::count_ones);
    Ok(Some(RowPlan {
        nulls,
        sel,
        stored,
        count,
        len: out_len,
    }))
}

/// The Arrow type `decode_dictionary` returns for a column of type `dt`.
pub fn dictionary_type(dt: &DataType) -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(dt.clone()))
}

/// Decodes a chunk of a string or binary column of type `dt` (all `len` rows, or the rows
/// set in `selection`) as an Arrow dictionary array of type [`dictionary_type`], keyed by
/// the chunk's own stored dictionary, when the chunk is dictionary-encoded at its root:
/// only the codes are decoded and the strings are not copied or re-validated per row.
/// `Ok(None)` when the chunk is not dictionary-encoded (decode it normally instead).
pub(crate) fn decode_dictionary(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    selection: Option<&Bitmap>,
) -> Result<Option<ArrayRef>> {
    use arrow_array::{DictionaryArray, Int32Array, types::Int32Type};
    if physical_kind(dt)? != PhysicalKind::Bytes {
        return Ok(None);
    }
    check_selection(selection, len)?;
    if enc.validity == Validity::AllNull {
        let out_len = selection.map_or(len, Bitmap::count_ones);
        return Ok(Some(arrow_array::new_null_array(
            &dictionary_type(dt),
            out_len,
        )));
    }
    let Some(chunk) = dictionary_chunk(enc, dt, len, buffers, selection)? else {
        return Ok(None);
    };
    let keys = scatter(chunk.codes, chunk.nulls.as_ref(), chunk.len)?;
    let keys = Int32Array::new(keys.into(), chunk.nulls);
    // SAFETY: every valid key is a code checked to be below the dictionary's length (by
    // `keys`, or by `codes` against `dict_len - 1`); null rows' keys are not checked or read.
    Ok(Some(Arc::new(unsafe {
        DictionaryArray::<Int32Type>::new_unchecked(keys, chunk.dict)
    })))
}

/// A dictionary-encoded byte-string chunk, decoded as far as its codes.
struct DictionaryChunk {
    /// The dictionary as an array of the column's type.
    dict: ArrayRef,
    /// One code per stored (non-null, selected) row, each below `dict.len()`.
    codes: Vec<i32>,
    /// The output rows' validity, and their number.
    nulls: Option<NullBuffer>,
    len: usize,
}

/// The dictionary and codes of a chunk that is dictionary-encoded at its root (`None`
/// otherwise, and for a chunk with no stored values).
fn dictionary_chunk(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    selection: Option<&Bitmap>,
) -> Result<Option<DictionaryChunk>> {
    let Some(root) = enc.nodes.first().and_then(|n| n.as_dict()) else {
        return Ok(None);
    };
    let bufs = Buffers(buffers);
    let Some(plan) = plan_rows(enc, len, &bufs, selection)? else {
        return Ok(None);
    };
    let ctx = Ctx::new(enc, buffers);
    let dict_len = root.checked_len(&ctx, plan.stored)?;
    // Block dictionaries hold at most a block's rows, far below i32::MAX.
    if i32::try_from(dict_len).is_err() {
        return Err(corrupt(format!("dictionary of {dict_len} entries")));
    }
    let dict = root.byte_entries(&ctx, 0, dict_len, 0)?;
    let dict = bytes_array(dict, dt, dict_len, None)?;
    let sel = plan.sel.as_ref();
    let codes = match root.keys(&ctx, 0, plan.stored, dict_len, sel)? {
        Some(keys) => keys,
        // Every code is below the dictionary's length, which fits i32: the cast is exact.
        None => (root
            .codes(&ctx, 0, plan.stored, dict_len, 0, sel)?
            .into_iter())
        .map(|c| c as i32)
        .collect(),
    };
    Ok(Some(DictionaryChunk {
        dict,
        codes,
        nulls: plan.nulls,
        len: plan.len,
    }))
}

/// A dictionary-encoded chunk read as views (`dt` is Utf8View or BinaryView): each row's
/// view is gathered from the dictionary's views, 16 bytes per row, and no string is
/// copied. `Ok(None)` when the chunk is not dictionary-encoded.
fn gather_views(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    selection: Option<&Bitmap>,
) -> Result<Option<ArrayRef>> {
    use arrow_array::GenericByteViewArray;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{BinaryViewType, ByteViewType, StringViewType};
    fn gather<T: ByteViewType>(chunk: DictionaryChunk) -> Result<ArrayRef> {
        let dict = chunk.dict.as_byte_view::<T>();
        let views = dict.views();
        // Codes were checked against the dictionary's length when decoded.
        let gathered: Vec<u128> = chunk.codes.iter().map(|&c| views[c as usize]).collect();
        // Null rows get the zero view: an empty inline string.
        let gathered = scatter(gathered, chunk.nulls.as_ref(), chunk.len)?;
        // SAFETY: every view is copied from a valid array whose data buffers are passed
        // along unchanged, so each points at valid (UTF-8, for strings) bytes in them; the
        // zero view of a null row is a valid empty inline view.
        Ok(Arc::new(unsafe {
            GenericByteViewArray::<T>::new_unchecked(
                gathered.into(),
                dict.data_buffers().to_vec(),
                chunk.nulls,
            )
        }))
    }
    let Some(chunk) = dictionary_chunk(enc, dt, len, buffers, selection)? else {
        return Ok(None);
    };
    Ok(Some(match dt {
        DataType::Utf8View => gather::<StringViewType>(chunk)?,
        _ => gather::<BinaryViewType>(chunk)?,
    }))
}

/// All `len` rows of a chunk (`selection` = `None`) or the selected ones as an Arrow
/// array of type `dt`; a root dictionary shared with other chunks keeps its decoded
/// entries in `memo` (see [`DictionaryMemo`](crate::predicate::DictionaryMemo)).
pub(crate) fn decode_rows(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    selection: Option<&Bitmap>,
    memo: Option<&crate::predicate::DictionaryMemo>,
) -> Result<ArrayRef> {
    check_selection(selection, len)?;
    let kind = physical_kind(dt)?;
    if !fixed_chunk_fits(kind, len) {
        return Err(corrupt(format!(
            "{len} values of {dt} exceed {MAX_FIXED_CHUNK_BYTES} bytes"
        )));
    }
    if matches!(dt, DataType::Utf8View | DataType::BinaryView)
        && let Some(views) = gather_views(enc, dt, len, buffers, selection)?
    {
        return Ok(views);
    }
    let bufs = Buffers(buffers);
    let mut ctx = Ctx::new(enc, buffers);
    ctx.memo = memo;
    if let PhysicalKind::FixedBytes(w) = kind {
        // Nulls included: an all-null chunk stores nothing yet decodes to `len × w` bytes.
        ctx.check_decoded(None, len, len.checked_mul(w as usize))?;
    }
    let Some(RowPlan {
        nulls,
        sel,
        stored: all_count,
        count,
        len,
    }) = plan_rows(enc, len, &bufs, selection)?
    else {
        return Ok(arrow_array::new_null_array(
            dt,
            selection.map_or(len, Bitmap::count_ones),
        ));
    };
    let builder = ArrayDataBuilder::new(dt.clone())
        .len(len)
        .nulls(nulls.clone());
    let data = match kind {
        PhysicalKind::Null => {
            if len > 0 {
                return Err(corrupt("values stored for a Null column"));
            }
            return Ok(arrow_array::new_null_array(dt, 0));
        }
        PhysicalKind::Bool => {
            let compact = Bitmap::from_bools(values_of::<bool>(&ctx, all_count, sel.as_ref())?);
            // Nulls: the values deposited at the valid rows (PDEP), the null rows false.
            let values = match &nulls {
                None => compact,
                Some(n) => Bitmap::from_words(validity_words(n), len)
                    .ok_or_else(|| corrupt("validity shorter than its rows"))
                    .and_then(|valid| {
                        sift_bits::levels::deposit(&compact, &valid)
                            .map_err(|e| corrupt(e.to_string()))
                    })?,
            };
            let values = BooleanBuffer::new(Buffer::from_vec(values.into_words()), 0, len);
            return Ok(Arc::new(BooleanArray::new(values, nulls)));
        }
        PhysicalKind::Int(it) => with_int!(it, T => {
            let values = scatter(int_values::<T>(&ctx, all_count, sel.as_ref())?, nulls.as_ref(), len)?;
            builder.add_buffer(Buffer::from_vec(values))
        }),
        PhysicalKind::Float(8) => {
            let bits: Vec<u64> = values_of::<FloatBits>(&ctx, all_count, sel.as_ref())?
                .into_iter()
                .map(|f| f.0)
                .collect();
            builder.add_buffer(Buffer::from_vec(scatter(bits, nulls.as_ref(), len)?))
        }
        // 4-byte floats under a dictionary of plain 4-byte entries (a Parquet dictionary
        // read in place): the entries are looked up as the integer domain reads 4-byte
        // values, sign-extended, so each value's low 32 bits are its float's bits, with no
        // widening of every entry to a double and narrowing of every value back.
        PhysicalKind::Float(4) if plain_dictionary(enc, 4)? => {
            let bits: Vec<u32> = values_of::<i64>(&ctx, all_count, sel.as_ref())?
                .into_iter()
                .map(|v| v as u32)
                .collect();
            builder.add_buffer(Buffer::from_vec(scatter(bits, nulls.as_ref(), len)?))
        }
        // 4-byte floats under another root than plain: decoded in the double domain, which
        // widens them exactly, and narrowed.
        PhysicalKind::Float(4) if enc.node(0)?.as_plain().is_none() => {
            let bits: Vec<u32> = values_of::<FloatBits>(&ctx, all_count, sel.as_ref())?
                .into_iter()
                .map(FloatBits::to_f32_bits)
                .collect();
            builder.add_buffer(Buffer::from_vec(scatter(bits, nulls.as_ref(), len)?))
        }
        PhysicalKind::Float(w) => {
            let w = w as usize;
            let Some((width, buffer)) = enc.node(0)?.as_plain() else {
                return Err(corrupt("floats need a plain node"));
            };
            if width as usize != w {
                return Err(corrupt(format!("plain width {width} for a {w}-byte float")));
            }
            let all = &bufs.get(buffer, all_count * w)?[..all_count * w];
            // The values (as integers of their width), the selected ones compacted by the
            // SIMD kernel, spread over the valid rows.
            fn values<T>(
                all: &[u8],
                sel: Option<&Bitmap>,
                nulls: Option<&NullBuffer>,
                len: usize,
            ) -> Result<Buffer>
            where
                T: sift_bits::unpack::Lane + bytemuck::Pod + arrow_buffer::ArrowNativeType,
            {
                let values: Vec<T> = match sel {
                    None => bytemuck::pod_collect_to_vec(all),
                    Some(s) => match bytemuck::try_cast_slice(all) {
                        Ok(aligned) => sift_bits::compact::filter(aligned, s)
                            .map_err(|e| corrupt(e.to_string()))?,
                        Err(_) => compact_unaligned(all, s)?,
                    },
                };
                Ok(Buffer::from_vec(scatter(values, nulls, len)?))
            }
            // `physical_kind` gives floats of 2, 4 or 8 bytes, and 8 took the arm above.
            let values = match w {
                2 => values::<u16>(all, sel.as_ref(), nulls.as_ref(), len)?,
                4 => values::<u32>(all, sel.as_ref(), nulls.as_ref(), len)?,
                _ => return Err(corrupt(format!("a {w}-byte float"))),
            };
            builder.add_buffer(values)
        }
        PhysicalKind::Bytes | PhysicalKind::FixedBytes(_) => {
            let values = match &sel {
                None => Strings::decode(&ctx, 0, count, 0)?,
                Some(s) => Strings::select(&ctx, 0, all_count, 0, s)?,
            };
            return bytes_array(values, dt, len, nulls);
        }
    };
    Ok(make_array(data.build()?))
}

/// The smallest and largest value of a chunk of an integer column of type `dt` (over all
/// `len` rows, or the rows set in `selection`), nulls ignored, as a two-row array
/// `[min, max]` of type `dt` (both null when no value counts), when the chunk is
/// dictionary-encoded at its root (over a Parquet hybrid code stream or
/// frame-of-reference codes) or frame-of-reference-encoded: the selected codes are folded
/// as they are unpacked, and no value is materialised. `Ok(None)` for any other chunk and
/// where the fold declines (decode it and take the extremes of its values).
pub(crate) fn decode_extremes(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    selection: Option<&Bitmap>,
    memo: Option<&crate::predicate::DictionaryMemo>,
) -> Result<Option<ArrayRef>> {
    check_selection(selection, len)?;
    let PhysicalKind::Int(it) = physical_kind(dt)? else {
        return Ok(None);
    };
    if !matches!(enc.nodes.first(), Some(Node::Dict(_) | Node::For(_))) {
        return Ok(None);
    }
    if enc.validity == Validity::AllNull {
        return Ok(Some(arrow_array::new_null_array(dt, 2)));
    }
    let mut ctx = Ctx::new(enc, buffers);
    ctx.memo = memo;
    let StoredRows { stored, sel, .. } = stored_rows(&ctx, len, selection)?;
    let sel = sel.as_deref();
    with_int!(it, T => {
        if enc.node(0)?.beyond_i64(T::BYTES) {
            return Ok(None);
        }
        let range = match enc.node(0)? {
            Node::Dict(dict) => dict.extremes(&ctx, 0, stored, 0, sel)?,
            Node::For(f) => f.extremes(&ctx, stored, sel)?,
            _ => None,
        };
        let Some(range) = range else {
            return Ok(None);
        };
        let Some((lo, hi)) = range else {
            return Ok(Some(arrow_array::new_null_array(dt, 2)));
        };
        pair_array::<T>(dt, narrow(vec![lo, hi])?).map(Some)
    })
}

/// The `[min, max]` pair of a chunk of an integer column of type `dt` over all its `len`
/// rows, from its statistics alone: Sift's writer records the exact smallest and largest
/// non-null value of every integer chunk, so no byte of the chunk is read. `Ok(None)` for
/// other types and where the statistics lack a bound of the column's type. Statistics that
/// may only bound the values (a Parquet file's, unless they say they are exact) are not
/// for this.
pub fn extremes_of_stats(
    dt: &DataType,
    stats: &ChunkStats,
    len: usize,
) -> Result<Option<ArrayRef>> {
    let PhysicalKind::Int(it) = physical_kind(dt)? else {
        return Ok(None);
    };
    if stats.null_count >= len as u64 {
        return Ok(Some(arrow_array::new_null_array(dt, 2)));
    }
    let (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))) = (&stats.min, &stats.max) else {
        return Ok(None);
    };
    with_int!(it, T => {
        let (Some(lo), Some(hi)) = (T::from_i128(*lo), T::from_i128(*hi)) else {
            return Ok(None);
        };
        pair_array::<T>(dt, vec![lo, hi]).map(Some)
    })
}

/// A two-row array of type `dt` holding `pair` (`[min, max]`).
fn pair_array<T: arrow_buffer::ArrowNativeType>(dt: &DataType, pair: Vec<T>) -> Result<ArrayRef> {
    let data = ArrayDataBuilder::new(dt.clone())
        .len(2)
        .add_buffer(Buffer::from_vec(pair));
    Ok(make_array(data.build()?))
}

/// Whether the root of `enc` is a dictionary whose entries are plain `width`-byte values.
fn plain_dictionary(enc: &ColumnEncoding, width: u32) -> Result<bool> {
    Ok(match enc.node(0)? {
        Node::Dict(d) => enc
            .node(d.values)?
            .as_plain()
            .is_some_and(|(w, _)| w == width),
        _ => false,
    })
}

/// The values of `bytes` (little-endian `T`s, not aligned to `T`: a page's values lie
/// where the page puts them) that `sel` selects, compacted by the SIMD kernel a block at a
/// time from an aligned scratch copy that stays in cache, rather than from a copy of every
/// value made in memory first.
fn compact_unaligned<T>(bytes: &[u8], sel: &Bitmap) -> Result<Vec<T>>
where
    T: sift_bits::unpack::Lane + bytemuck::Pod,
{
    /// Values a block: a multiple of 64, so that blocks start on a selection word.
    const BLOCK: usize = 4096;
    let width = std::mem::size_of::<T>();
    let n = bytes.len() / width;
    if sel.len() != n {
        return Err(corrupt(format!(
            "a selection of {} rows for {n} values",
            sel.len()
        )));
    }
    let (level, ones) = (sift_bits::Level::active(), sel.count_ones());
    let (mut out, mut scratch) = (
        vec![T::zeroed(); ones + sift_bits::compact::SLACK],
        vec![T::zeroed(); BLOCK],
    );
    let mut written = 0;
    for (b, block) in bytes[..n * width].chunks(BLOCK * width).enumerate() {
        let values = &mut scratch[..block.len() / width];
        bytemuck::cast_slice_mut::<T, u8>(values).copy_from_slice(block);
        let words = &sel.words()[b * BLOCK / 64..];
        written += sift_bits::compact::compact_words(level, values, words, &mut out[written..]);
    }
    out.truncate(written.min(ones));
    Ok(out)
}

/// All values of the root (`sel` = None) or the selected ones.
fn values_of<V: Value>(ctx: &Ctx<'_>, count: usize, sel: Option<&Bitmap>) -> Result<Vec<V>> {
    match sel {
        None => V::decode(ctx, 0, count, 0),
        Some(s) => V::select(ctx, 0, count, 0, s),
    }
}

/// The integers of a chunk, all or the selected ones.
fn int_values<T: NativeInt>(ctx: &Ctx<'_>, count: usize, sel: Option<&Bitmap>) -> Result<Vec<T>> {
    let Some(s) = sel else {
        return decode_int_column::<T>(ctx, count);
    };
    // Roots outside the i64 cascade (plain in the column's own width, or bit-packed over a
    // range beyond i64 such as large u64 values or wide decimals) read their selected
    // values in their own type where they can (plain: each at its offset; Parquet's
    // PLAIN pages), else decode all of them and compact; the others (decimals that fit
    // i64 too) select their codes first.
    let root = ctx.enc.node(0)?;
    if root.beyond_i64(T::BYTES) {
        if let Some(values) = root.select_native::<T>(ctx, 0, count, s)? {
            return Ok(values);
        }
        return Ok(compact(&decode_int_column::<T>(ctx, count)?, s));
    }
    let wide = i64::select(ctx, 0, count, 0, s)?;
    narrow(wide)
}

/// Encodes integers through the `i64` cascade when they fit (every type but `u64` and
/// decimals can), else with bit-packing over their own range.
fn encode_int_column<T: NativeInt>(values: &[T], sink: &mut BufferSink) {
    if sink.byteslice {
        encode_ints(values, sink, 1);
        return;
    }
    let as_i64: Option<Vec<i64>> = values
        .iter()
        .map(|v| i64::try_from(v.to_i128()).ok())
        .collect();
    match as_i64 {
        Some(v) => {
            i64::encode(&v, sink, MAX_CASCADE);
        }
        None => {
            encode_ints(values, sink, 1);
        }
    }
}

/// Decodes the integers of a chunk: bit-packed or plain roots directly into `T`, cascades
/// through `i64` with a checked narrowing.
fn decode_int_column<T: NativeInt>(ctx: &Ctx<'_>, count: usize) -> Result<Vec<T>> {
    // Roots in the column's own type; a plain root of another width holds the i64
    // cascade's values (e.g. decimals that fit i64), widened below.
    match ctx.enc.node(0)?.decode_native::<T>(ctx, 0, count)? {
        Some(values) => Ok(values),
        None => narrow(i64::decode(ctx, 0, count, 0)?),
    }
}

/// An integer array of type `dt` (no nulls) from `i64` values, range-checked.
pub(crate) fn int_array(dt: &DataType, values: Vec<i64>) -> Result<ArrayRef> {
    let PhysicalKind::Int(it) = physical_kind(dt)? else {
        return Err(corrupt(format!("integers stored for a {dt} column")));
    };
    let len = values.len();
    let data = with_int!(it, T => {
        ArrayDataBuilder::new(dt.clone())
            .len(len)
            .add_buffer(Buffer::from_vec(narrow::<T>(values)?))
    });
    Ok(make_array(data.build()?))
}

/// Narrows `i64` cascade output to the column's type, checking the range.
fn narrow<T: NativeInt>(wide: Vec<i64>) -> Result<Vec<T>> {
    // No copy when `T` is `i64` itself (most keys and timestamps).
    let any: Box<dyn std::any::Any> = Box::new(wide);
    match any.downcast::<Vec<T>>() {
        Ok(same) => Ok(*same),
        Err(any) => {
            let wide = any
                .downcast::<Vec<i64>>()
                .map_err(|_| corrupt("integer cascade type mix-up"))?;
            // One range check (the dispatched extremes kernel: baseline x86-64 has no
            // 64-bit compare, so `iter().min()` is a compare and a branch per value), then
            // a plain (vectorizable) narrowing loop.
            let level = sift_bits::Level::active();
            let extreme = |max| sift_bits::extreme::extreme_i64(level, &wide, None, max);
            let (lo, hi) = (extreme(false), extreme(true));
            if let Some(bad) = [lo, hi]
                .into_iter()
                .flatten()
                .find(|&v| T::from_i128(i128::from(v)).is_none())
            {
                return Err(corrupt(format!(
                    "value {bad} out of range for the column type"
                )));
            }
            Ok(wide.iter().map(|&v| T::from_i64_wrapping(v)).collect())
        }
    }
}

/// Spreads compacted values over their valid positions, filling nulls with zero: values of
/// 1, 2, 4 or 8 bytes through the expand kernel, wider ones a word of validity at a time.
fn scatter<T: bytemuck::Pod + Default>(
    compact: Vec<T>,
    nulls: Option<&NullBuffer>,
    len: usize,
) -> Result<Vec<T>> {
    fn expand<L: sift_bits::unpack::Lane + bytemuck::Pod, T: bytemuck::Pod>(
        compact: &[L],
        words: &[u64],
        len: usize,
    ) -> Result<Vec<T>> {
        let out =
            sift_bits::expand::expand(compact, words, len).map_err(|e| corrupt(e.to_string()))?;
        bytemuck::allocation::try_cast_vec(out)
            .map_err(|(e, _)| corrupt(format!("spreading values over rows: {e}")))
    }
    let Some(n) = nulls else { return Ok(compact) };
    let words = validity_words(n);
    let lanes = (
        bytemuck::try_cast_slice::<T, u8>(&compact),
        bytemuck::try_cast_slice::<T, u16>(&compact),
        bytemuck::try_cast_slice::<T, u32>(&compact),
        bytemuck::try_cast_slice::<T, u64>(&compact),
    );
    match (size_of::<T>(), lanes) {
        (1, (Ok(c), ..)) => expand(c, &words, len),
        (2, (_, Ok(c), ..)) => expand(c, &words, len),
        (4, (_, _, Ok(c), _)) => expand(c, &words, len),
        (8, (.., Ok(c))) => expand(c, &words, len),
        _ => {
            let mut out = vec![T::default(); len];
            let mut values = compact.into_iter();
            for (c, mut w) in words.into_iter().enumerate() {
                while w != 0 {
                    let row = c * 64 + w.trailing_zeros() as usize;
                    w &= w - 1;
                    if let (Some(slot), Some(v)) = (out.get_mut(row), values.next()) {
                        *slot = v;
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The validity's bits as words from bit 0 (the last one zero-padded).
fn validity_words(nulls: &NullBuffer) -> Vec<u64> {
    nulls.inner().bit_chunks().iter_padded().collect()
}

fn bytes_array(
    values: ByteValues,
    dt: &DataType,
    len: usize,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    use arrow_array::{BinaryViewArray, StringViewArray};
    match dt {
        DataType::Utf8 | DataType::Binary => offsets_array::<i32>(values, dt, len, nulls),
        DataType::LargeUtf8 | DataType::LargeBinary => offsets_array::<i64>(values, dt, len, nulls),
        // Views are built over the decoded bytes as one Arrow buffer, without copying a
        // string: the offsets array is checked (and UTF-8 validated once) as for Utf8, then
        // Arrow turns each offset pair into a view into that same buffer.
        DataType::Utf8View | DataType::BinaryView => {
            use arrow_array::cast::AsArray;
            let text = *dt == DataType::Utf8View;
            let large = values.offsets.last().is_some_and(|&o| o > i32::MAX as u32);
            let plain = match (text, large) {
                (true, false) => DataType::Utf8,
                (true, true) => DataType::LargeUtf8,
                (false, false) => DataType::Binary,
                (false, true) => DataType::LargeBinary,
            };
            let array = if large {
                offsets_array::<i64>(values, &plain, len, nulls)?
            } else {
                offsets_array::<i32>(values, &plain, len, nulls)?
            };
            Ok(match (text, large) {
                (true, false) => Arc::new(StringViewArray::from(array.as_string::<i32>())),
                (true, true) => Arc::new(StringViewArray::from(array.as_string::<i64>())),
                (false, false) => Arc::new(BinaryViewArray::from(array.as_binary::<i32>())),
                (false, true) => Arc::new(BinaryViewArray::from(array.as_binary::<i64>())),
            })
        }
        DataType::FixedSizeBinary(w) => {
            let w = *w as usize;
            if let Some(bad) = values
                .offsets
                .windows(2)
                .map(|o| (o[1] - o[0]) as usize)
                .find(|&l| l != w)
            {
                return Err(corrupt(format!(
                    "a {bad}-byte value in a {w}-byte fixed-size binary column"
                )));
            }
            let data = match &nulls {
                None => values.data,
                Some(n) => {
                    let mut out = vec![0u8; len * w];
                    for (i, pos) in n.valid_indices().enumerate() {
                        out[pos * w..(pos + 1) * w].copy_from_slice(values.value(i));
                    }
                    out
                }
            };
            let data = ArrayDataBuilder::new(dt.clone())
                .len(len)
                .nulls(nulls)
                .add_buffer(Buffer::from_vec(data));
            Ok(make_array(data.build()?))
        }
        other => Err(EncodingError::Unsupported(format!("{other} as bytes"))),
    }
}

fn offsets_array<O: arrow_array::OffsetSizeTrait>(
    values: ByteValues,
    dt: &DataType,
    len: usize,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    // Checked here without a branch per offset, which vectorizes; `OffsetBuffer::new`'s
    // own check (a short-circuiting loop) cost about as much as gathering 1-byte strings.
    let monotone = values
        .offsets
        .iter()
        .zip(values.offsets.iter().skip(1))
        .fold(true, |ok, (a, b)| ok & (a <= b));
    if values.offsets.is_empty() || !monotone {
        return Err(corrupt("string offsets out of order"));
    }
    // Offsets only grow, so checking the last one covers them all.
    let total = values.offsets.last().copied().unwrap_or(0);
    if O::from_usize(total as usize).is_none() {
        return Err(corrupt(format!("{total} bytes overflow {dt} offsets")));
    }
    let to_o = |o: u32| O::usize_as(o as usize);
    let offsets: arrow_buffer::ScalarBuffer<O> = match &nulls {
        // 32-bit offsets below i32::MAX (checked above) are the same bytes as u32: the
        // buffer is reused as is.
        None if !O::IS_LARGE => {
            let n = values.offsets.len();
            arrow_buffer::ScalarBuffer::new(Buffer::from_vec(values.offsets), 0, n)
        }
        None => values.offsets.iter().map(|&o| to_o(o)).collect(),
        Some(n) => {
            let mut out = Vec::with_capacity(len + 1);
            out.push(O::usize_as(0));
            let mut next = 0usize;
            for i in 0..len {
                if n.is_valid(i) {
                    next += 1;
                }
                out.push(to_o(values.offsets[next]));
            }
            out.into()
        }
    };
    // The typed constructors validate UTF-8 once and then char boundaries in a plain loop,
    // much faster than ArrayData's generic offset walk.
    // SAFETY: `OffsetBuffer::new_unchecked` needs a non-empty, non-negative, monotonic
    // sequence: checked above on the u32 offsets, which all fit `O` (the last, largest one
    // was checked), and the null slots above repeat the offset before them.
    let offsets = unsafe { arrow_buffer::OffsetBuffer::new_unchecked(offsets) };
    let data = Buffer::from_vec(values.data);
    Ok(match dt {
        // SAFETY: `new_unchecked` needs offsets within `data` (they come from checked
        // lengths and end at `data`'s length), UTF-8 data and char-boundary offsets:
        // `utf8_checked` says every value was checked to be UTF-8 on its own, and the
        // offsets (also those repeated for null slots) fall between values.
        DataType::Utf8 | DataType::LargeUtf8 if values.utf8_checked => Arc::new(unsafe {
            arrow_array::GenericStringArray::<O>::new_unchecked(offsets, data, nulls)
        }),
        DataType::Utf8 | DataType::LargeUtf8 => Arc::new(
            arrow_array::GenericStringArray::<O>::try_new(offsets, data, nulls)?,
        ),
        _ => Arc::new(arrow_array::GenericBinaryArray::<O>::try_new(
            offsets, data, nulls,
        )?),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, StringArray};
    use proptest::prelude::*;

    proptest! {
        /// Compacting values that lie unaligned, a block at a time, keeps exactly the
        /// selected ones in order, across block edges and ragged ends, at every level the
        /// CPU supports.
        #[test]
        fn unaligned_values_compact_as_selected(
            values in prop::collection::vec(any::<u32>(), 0..10_000),
            density in 0.0f64..=1.0,
            seed in any::<u64>(),
            offset in 1usize..4,
        ) {
            let mut bytes = vec![0u8; offset];
            bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            let mut state = seed | 1;
            let sel = Bitmap::from_bools(values.iter().map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 1000) as f64 / 1000.0 < density
            }));
            let want: Vec<u32> = sel.iter_ones().map(|i| values[i]).collect();
            for level in sift_bits::Level::supported() {
                let got = sift_bits::with_level(level, || compact_unaligned::<u32>(&bytes[offset..], &sel));
                prop_assert_eq!(got.unwrap(), want.clone(), "{:?}", level);
            }
            let wrong = Bitmap::zeros(values.len() + 1);
            let err = compact_unaligned::<u32>(&bytes[offset..], &wrong).unwrap_err().to_string();
            let want = format!("a selection of {} rows for {} values", values.len() + 1, values.len());
            prop_assert!(err.contains(&want), "{}", err);
        }
    }

    /// `rows` copies of `value`, as a view array whose views all share one buffer (so the
    /// test does not hold rows × length bytes).
    fn repeated(value: &str, rows: usize) -> arrow_array::StringViewArray {
        let mut b = arrow_array::builder::StringViewBuilder::new().with_deduplicate_strings();
        for _ in 0..rows {
            b.append_value(value);
        }
        b.finish()
    }

    /// Narrowing keeps values at the type's bounds and refuses one past them, wherever it
    /// lies and whichever kernel finds the extremes.
    #[test]
    fn narrow_checks_the_range() {
        for level in sift_bits::Level::supported() {
            sift_bits::with_level(level, || {
                let mut wide: Vec<i64> = (0..1000).map(|i| i % 77 - 30).collect();
                wide[500] = i64::from(i16::MAX);
                wide[3] = i64::from(i16::MIN);
                let narrow16 = narrow::<i16>(wide.clone()).unwrap();
                assert!(narrow16.iter().zip(&wide).all(|(&n, &w)| i64::from(n) == w));
                for (at, bad) in [(999, i64::from(i16::MAX) + 1), (0, i64::from(i16::MIN) - 1)] {
                    let mut past = wide.clone();
                    past[at] = bad;
                    let err = narrow::<i16>(past).unwrap_err().to_string();
                    assert!(err.contains(&format!("value {bad} out of range")), "{err}");
                }
                assert!(narrow::<u8>(vec![0, 255, 256]).is_err());
                assert!(narrow::<u8>(vec![-1, 3]).is_err());
                assert_eq!(narrow::<u8>(vec![0, 255]).unwrap(), vec![0, 255]);
            });
        }
    }

    /// Long strings that repeat decode to far more than they store: up to the floor, the
    /// writer writes them and the reader reads them back; beyond it (for so small an
    /// encoding) the writer refuses, naming the sizes, so it never writes what a reader
    /// would refuse.
    #[test]
    fn repeated_long_strings_up_to_the_floor() {
        let rows = 65_536;
        let value = "é".repeat(500); // 1,000 bytes: 62.5 MiB over the block
        let array = repeated(&value, rows);
        let enc = encode_array(&array).unwrap();
        assert_eq!(enc.encoding.describe(), "const");
        let bufs: Vec<&[u8]> = enc.buffers.iter().map(Vec::as_slice).collect();
        let out = decode_array(&enc.encoding, &DataType::Utf8, rows, &bufs).unwrap();
        let out = out.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((out.len(), out.value(rows - 1)), (rows, value.as_str()));

        let longer = "x".repeat(1025); // 65.6 MiB over the block
        let err = encode_array(&repeated(&longer, rows))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("67174400 bytes of Utf8View in one block exceed the 67108864 bytes"),
            "{err}"
        );
        assert!(err.contains("use smaller blocks"), "{err}");
    }

    /// Fixed-size values take their width for nulls too: an all-null chunk stores nothing,
    /// so its width × rows is held to the floor, by the writer and the reader alike.
    #[test]
    fn all_null_fixed_size_binary_is_held_to_the_floor() {
        let dt = DataType::FixedSizeBinary(2048);
        let err = encode_array(&arrow_array::new_null_array(&dt, 65_536))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("134217728 bytes of FixedSizeBinary(2048)"),
            "{err}"
        );
        let all_null = ColumnEncoding {
            validity: Validity::AllNull,
            nodes: vec![],
        };
        let err = decode_array(&all_null, &dt, 65_536, &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("chunk: 65536 values decode to 134217728 bytes"),
            "{err}"
        );
        assert!(decode_array(&all_null, &dt, 32_768, &[]).is_ok());
    }

    /// Strings gathered from a dictionary skip Arrow's UTF-8 check only when every entry
    /// was checked: a dictionary holding invalid UTF-8, decoded as Utf8, is still an error.
    #[test]
    fn dictionary_strings_are_checked_once_not_skipped() {
        let decode = |values: Vec<&[u8]>| {
            let array = BinaryArray::from(values);
            let enc = encode_array(&array).unwrap();
            assert!(
                enc.encoding.describe().starts_with("dict"),
                "{}",
                enc.encoding.describe()
            );
            let bufs: Vec<&[u8]> = enc.buffers.iter().map(Vec::as_slice).collect();
            decode_array(&enc.encoding, &DataType::Utf8, array.len(), &bufs)
        };
        let ok: Vec<&[u8]> = (0..1000)
            .map(|i| [&b"AIR"[..], b"R\xc3\xa9G"][i % 2])
            .collect();
        let got = decode(ok).unwrap();
        let want: StringArray = (0..1000).map(|i| Some(["AIR", "RéG"][i % 2])).collect();
        assert_eq!(got.as_ref(), &want as &dyn Array);
        let bad: Vec<&[u8]> = (0..1000).map(|i| [&b"AIR"[..], b"R\xc3G"][i % 2]).collect();
        assert!(decode(bad).is_err());
    }
}
