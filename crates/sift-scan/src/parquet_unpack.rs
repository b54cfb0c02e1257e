//! Parquet data pages whose values cannot be read where they lie (feature `parquet`):
//! DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY strings
//! (and big-endian decimals), BYTE_STREAM_SPLIT values of any width. Each such page is
//! decoded, when it is read, into the bytes a PLAIN page of the same values holds, and is
//! read as that PLAIN page from then on: its filters run on fixed-width values with the
//! range kernels (or on strings once each), selections take only the selected values.
//! Pages skipped by the page index or row selection are never decoded.
//!
//! The differences of DELTA pages are unpacked by the `parquet` crate's decoder. The
//! strings of DELTA byte-array pages are joined here, straight into the PLAIN layout (a
//! 4-byte length, then the bytes): the crate's decoder makes one buffer per value, and
//! indexes the page with lengths it does not check. Byte streams are joined here too, a
//! loop per stream over the page's own bytes.

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::data_type::Int64Type;
use parquet::encodings::decoding::{Decoder, DeltaBitPackDecoder};

use crate::parquet_pages::Layout;
use crate::parquet_source::guarded;

/// The most bytes the values of a DELTA_BYTE_ARRAY page of `page` bytes may decode to. Its
/// own size does not bound them (a long prefix repeated for every value takes a few bits
/// each), so a damaged page could ask for gigabytes: a page may decode to 1,024 times its
/// size, or 256 MiB (a page of 20,000 copies of a 12 KiB string), whichever is more, and
/// never past what 32-bit Arrow offsets address.
fn string_budget(page: usize) -> usize {
    page.saturating_mul(1024)
        .max(256 << 20)
        .min(i32::MAX as usize)
}

/// Whether pages stored as `encoding` are decoded here before they are read.
pub(crate) fn unpacks(encoding: Encoding) -> bool {
    matches!(
        encoding,
        Encoding::DELTA_BINARY_PACKED
            | Encoding::DELTA_LENGTH_BYTE_ARRAY
            | Encoding::DELTA_BYTE_ARRAY
            | Encoding::BYTE_STREAM_SPLIT
    )
}

/// Whether [`unpack`] decodes pages of `encoding` for a column of `layout` (it answers
/// `Ok(None)`, reading nothing, exactly where it does not).
pub(crate) fn applies(encoding: Encoding, layout: Layout) -> bool {
    !matches!(unpack(encoding, layout, &Bytes::new(), 0), Ok(None))
}

/// The bytes of a PLAIN page holding the same values as `values`, the values of a data
/// page of at most `count` values stored as `encoding` for a column of `layout`; `Ok(None)`
/// when `encoding` is not one decoded here (PLAIN and dictionary pages are read as they
/// are) or does not apply to the layout (left to the `parquet` crate, which names it).
pub(crate) fn unpack(
    encoding: Encoding,
    layout: Layout,
    values: &Bytes,
    count: usize,
) -> Result<Option<Bytes>, String> {
    let out = match (encoding, layout) {
        (Encoding::BYTE_STREAM_SPLIT, Layout::Fixed { width } | Layout::Unsigned { width }) => {
            join_streams(values, width)?
        }
        (Encoding::BYTE_STREAM_SPLIT, Layout::Float32) => join_streams(values, 4)?,
        (Encoding::BYTE_STREAM_SPLIT, Layout::BigEndian { width }) => join_streams(values, width)?,
        (Encoding::DELTA_BINARY_PACKED, Layout::Fixed { width } | Layout::Unsigned { width })
            if width == 4 || width == 8 =>
        {
            let mut out = Vec::new();
            deltas(values, count, |part, n| {
                out.reserve_exact(n * width);
                if width == 8 {
                    out.extend_from_slice(bytemuck::cast_slice(part));
                } else {
                    // Differences of 32-bit values wrap at 32 bits: their sums taken at
                    // 64 bits and cut to 32 are the same values.
                    out.extend(part.iter().flat_map(|&v| (v as i32).to_le_bytes()));
                }
            })?;
            out
        }
        (Encoding::DELTA_LENGTH_BYTE_ARRAY, Layout::Bytes) => {
            let (lengths, used) = all_deltas(values, count)?;
            let mut out = Strings::new(Frame::Lengths, lengths.len(), values.len());
            let mut data = &values[used..];
            for (i, &len) in lengths.iter().enumerate() {
                let bytes = take(&mut data, len, i)?;
                out.push_shared(0, bytes)?;
            }
            out.bytes
        }
        (Encoding::DELTA_BYTE_ARRAY, Layout::Bytes) => {
            prefixed(values, count, Frame::Lengths)?.bytes
        }
        (Encoding::DELTA_BYTE_ARRAY, Layout::BigEndian { width }) => {
            prefixed(values, count, Frame::Fixed(width))?.bytes
        }
        _ => return Ok(None),
    };
    Ok(Some(Bytes::from(out)))
}

/// Values decoded from a DELTA_BINARY_PACKED stream at a time: a few KiB, so that each
/// part is still in cache when it is copied out.
const DELTA_PART: usize = 1024;

/// Decodes the integers of a DELTA_BINARY_PACKED stream at the start of `values`, at most
/// `count` of them, handing them to `each` a part at a time with the number of them still
/// to come (this part's included); returns the bytes the stream takes.
fn deltas(
    values: &Bytes,
    count: usize,
    mut each: impl FnMut(&[i64], usize),
) -> Result<usize, String> {
    guarded(|| {
        let mut decoder = DeltaBitPackDecoder::<Int64Type>::new();
        decoder.set_data(values.clone(), count)?;
        // The header's count, checked before anything is decoded.
        let n = decoder.values_left();
        if n > count {
            return Err(parquet::errors::ParquetError::General(format!(
                "a DELTA_BINARY_PACKED stream of {n} values in a page of {count}"
            )));
        }
        let mut part = [0i64; DELTA_PART];
        let mut left = n;
        while left > 0 {
            let got = decoder.get(&mut part[..left.min(DELTA_PART)])?;
            if got == 0 {
                return Err(parquet::errors::ParquetError::General(format!(
                    "a DELTA_BINARY_PACKED stream ends after {} of its {n} values",
                    n - left
                )));
            }
            each(&part[..got], left);
            left -= got;
        }
        Ok(decoder.get_offset())
    })
}

/// The integers of a DELTA_BINARY_PACKED stream at the start of `values` (at most
/// `count`) and the bytes the stream takes, which the callers' data follows: a stream
/// whose blocks end past `values` is an error (the crate's decoder reports the end its
/// last block's bit widths give, which a damaged page may put anywhere).
fn all_deltas(values: &Bytes, count: usize) -> Result<(Vec<i64>, usize), String> {
    let mut out = Vec::new();
    let used = deltas(values, count, |part, n| {
        out.reserve_exact(n);
        out.extend_from_slice(part)
    })?;
    if used > values.len() {
        return Err(format!(
            "a DELTA_BINARY_PACKED stream of {} values ends at byte {used}, past the {} bytes it is read from",
            out.len(),
            values.len()
        ));
    }
    Ok((out, used))
}

/// The next `len` bytes of `data` (value `i`'s), taken off its front.
fn take<'a>(data: &mut &'a [u8], len: i64, i: usize) -> Result<&'a [u8], String> {
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|len| data.get(..len))
        .ok_or_else(|| {
            format!(
                "value {i} has length {len}, {} bytes are left in the page",
                data.len()
            )
        })?;
    *data = &data[bytes.len()..];
    Ok(bytes)
}

/// The values of a DELTA_BYTE_ARRAY page (`values`, at most `count` of them): each the
/// first bytes of the value before it (as many as its prefix length says) followed by its
/// suffix (a DELTA_LENGTH_BYTE_ARRAY stream after the prefix lengths).
fn prefixed(values: &Bytes, count: usize, frame: Frame) -> Result<Strings, String> {
    let (prefixes, used) = all_deltas(values, count)?;
    let rest = values.slice(used..);
    let (suffixes, used) = all_deltas(&rest, count)?;
    if suffixes.len() != prefixes.len() {
        return Err(format!(
            "a DELTA_BYTE_ARRAY page of {} prefix lengths and {} suffix lengths",
            prefixes.len(),
            suffixes.len()
        ));
    }
    let mut out = Strings::new(frame, prefixes.len(), values.len());
    let mut data = &rest[used..];
    for (i, (&prefix, &len)) in prefixes.iter().zip(&suffixes).enumerate() {
        let suffix = take(&mut data, len, i)?;
        let shared = usize::try_from(prefix)
            .ok()
            .filter(|&p| p <= out.last.len())
            .ok_or_else(|| {
                format!(
                    "value {i} shares {prefix} bytes with the value before it, of {}",
                    out.last.len()
                )
            })?;
        out.push_shared(shared, suffix)?;
    }
    Ok(out)
}

/// How values are framed in the PLAIN layout being written.
#[derive(Clone, Copy)]
enum Frame {
    /// Each a 4-byte little-endian length, then its bytes (byte arrays).
    Lengths,
    /// Each exactly this many bytes (fixed-length byte arrays).
    Fixed(usize),
}

/// Values written in a PLAIN layout, the last one's bytes at hand for the next prefix.
struct Strings {
    frame: Frame,
    bytes: Vec<u8>,
    /// The most bytes `bytes` may hold ([`string_budget`]).
    budget: usize,
    /// Where the last value's bytes are in `bytes`.
    last: std::ops::Range<usize>,
    /// Values written.
    values: usize,
}

impl Strings {
    /// For `values` values of a page of `page` bytes.
    fn new(frame: Frame, values: usize, page: usize) -> Strings {
        let per_value = match frame {
            Frame::Lengths => 4,
            Frame::Fixed(width) => width,
        };
        Strings {
            frame,
            bytes: Vec::with_capacity(values.saturating_mul(per_value)),
            budget: string_budget(page),
            last: 0..0,
            values: 0,
        }
    }

    /// Appends a value: the first `shared` bytes of the last one, then `tail`.
    fn push_shared(&mut self, shared: usize, tail: &[u8]) -> Result<(), String> {
        self.frame(shared + tail.len())?;
        let start = self.bytes.len();
        let from = self.last.start;
        self.bytes.extend_from_within(from..from + shared);
        self.bytes.extend_from_slice(tail);
        self.last = start..self.bytes.len();
        Ok(())
    }

    /// Writes the framing of a value of `len` bytes (checked to fit).
    fn frame(&mut self, len: usize) -> Result<(), String> {
        let value = self.values;
        self.values += 1;
        if self.bytes.len() + 4 + len > self.budget {
            return Err(format!(
                "the page's values pass {} bytes at value {value}, more than a page of \
                 this size decodes to",
                self.budget
            ));
        }
        match self.frame {
            Frame::Lengths => self.bytes.extend_from_slice(&(len as u32).to_le_bytes()),
            Frame::Fixed(width) if width == len => {}
            Frame::Fixed(width) => {
                return Err(format!(
                    "value {value} has {len} bytes in a column of {width}-byte values"
                ));
            }
        }
        Ok(())
    }
}

/// Joins the `width` byte streams of a BYTE_STREAM_SPLIT page (stream `k` holding byte
/// `k` of every value, in order) into the values' bytes.
fn join_streams(values: &[u8], width: usize) -> Result<Vec<u8>, String> {
    if width == 0 || !values.len().is_multiple_of(width) {
        return Err(format!(
            "a BYTE_STREAM_SPLIT page of {}-byte values holds {} bytes",
            width,
            values.len()
        ));
    }
    let n = values.len() / width;
    let mut out = vec![0u8; values.len()];
    for (k, stream) in values.chunks_exact(n.max(1)).enumerate() {
        for (value, &b) in out.chunks_exact_mut(width).zip(stream) {
            value[k] = b;
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type};
    use parquet::encodings::encoding::{
        DeltaBitPackEncoder, DeltaByteArrayEncoder, DeltaLengthByteArrayEncoder, Encoder,
    };

    use super::*;

    fn encoded<T: parquet::data_type::DataType>(
        mut encoder: impl Encoder<T>,
        values: &[T::T],
    ) -> Bytes {
        encoder.put(values).unwrap();
        encoder.flush_buffer().unwrap()
    }

    fn strings(values: &[&str]) -> Vec<ByteArray> {
        values.iter().map(|v| ByteArray::from(*v)).collect()
    }

    /// The PLAIN layout of byte arrays: each a 4-byte length, then its bytes.
    fn plain_strings(values: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v.as_bytes());
        }
        out
    }

    /// 32-bit integers whose differences overflow 32 bits come back exactly, though their
    /// sums are taken at 64 bits.
    #[test]
    fn delta_integers_unpack_to_plain_values() {
        let values = [
            i32::MIN,
            i32::MAX,
            0,
            -1,
            i32::MIN,
            7,
            i32::MAX,
            i32::MAX - 1,
        ];
        let values: Vec<i32> = values.iter().cycle().take(300).copied().collect();
        let page = encoded(DeltaBitPackEncoder::<Int32Type>::new(), &values);
        let out = unpack(
            Encoding::DELTA_BINARY_PACKED,
            Layout::Fixed { width: 4 },
            &page,
            300,
        );
        assert_eq!(
            out.unwrap().unwrap(),
            bytemuck::cast_slice::<i32, u8>(&values)
        );
        // A stream counting more values than the page holds is refused before anything
        // is allocated for them.
        let err = unpack(
            Encoding::DELTA_BINARY_PACKED,
            Layout::Fixed { width: 4 },
            &page,
            299,
        );
        assert!(err.unwrap_err().contains("of 300 values in a page of 299"));
        // Cut short: the crate's decoder names the miniblock it cannot read whole.
        let cut = page.slice(..page.len() / 2);
        let err = unpack(
            Encoding::DELTA_BINARY_PACKED,
            Layout::Fixed { width: 4 },
            &cut,
            300,
        );
        let err = err.unwrap_err();
        assert!(err.contains("values from miniblock"), "{err}");
    }

    #[test]
    fn delta_strings_unpack_to_plain_values() {
        let values = ["apple", "applesauce", "apply", "", "b", "banana", "banana"];
        let plain = plain_strings(&values);
        let lengths = encoded(
            DeltaLengthByteArrayEncoder::<ByteArrayType>::new(),
            &strings(&values),
        );
        let prefixed = encoded(
            DeltaByteArrayEncoder::<ByteArrayType>::new(),
            &strings(&values),
        );
        // Cut short by two bytes, a value's bytes are missing: the last "banana" after 27
        // of 31 bytes, or the first one's suffix "anana" after 12 of 15 (the last one is
        // all prefix).
        for (encoding, page, cut_at) in [
            (
                Encoding::DELTA_LENGTH_BYTE_ARRAY,
                &lengths,
                "value 6 has length 6, 4 bytes are left",
            ),
            (
                Encoding::DELTA_BYTE_ARRAY,
                &prefixed,
                "value 5 has length 5, 3 bytes are left",
            ),
        ] {
            let out = unpack(encoding, Layout::Bytes, page, values.len()).unwrap();
            assert_eq!(out.unwrap(), plain, "{encoding}");
            let cut = page.slice(..page.len() - 2);
            let err = unpack(encoding, Layout::Bytes, &cut, values.len()).unwrap_err();
            assert!(err.contains(cut_at), "{encoding}: {err}");
        }
        // Fixed-length values of another length are refused.
        let err = unpack(
            Encoding::DELTA_BYTE_ARRAY,
            Layout::BigEndian { width: 5 },
            &prefixed,
            values.len(),
        );
        assert!(
            err.unwrap_err()
                .contains("value 1 has 10 bytes in a column of 5-byte values")
        );
    }

    /// A prefix longer than the value before it is refused (the crate's decoder checks
    /// this too); so is a negative length.
    #[test]
    fn damaged_delta_strings_are_refused() {
        let ints = |v: &[i32]| encoded(DeltaBitPackEncoder::<Int32Type>::new(), v);
        let page = |prefixes: &[i32], lengths: &[i32], data: &[u8]| {
            let mut out = ints(prefixes).to_vec();
            out.extend_from_slice(&ints(lengths));
            out.extend_from_slice(data);
            Bytes::from(out)
        };
        let long_prefix = page(&[0, 3], &[2, 1], b"abc");
        let err = unpack(Encoding::DELTA_BYTE_ARRAY, Layout::Bytes, &long_prefix, 2);
        assert!(
            err.unwrap_err()
                .contains("value 1 shares 3 bytes with the value before it, of 2")
        );
        let negative = page(&[0, 0], &[2, -1], b"abc");
        let err = unpack(Encoding::DELTA_BYTE_ARRAY, Layout::Bytes, &negative, 2);
        assert!(err.unwrap_err().contains("value 1 has length -1"));
        let mismatched = page(&[0, 0, 0], &[1, 1], b"ab");
        let err = unpack(Encoding::DELTA_BYTE_ARRAY, Layout::Bytes, &mismatched, 3);
        assert!(
            err.unwrap_err()
                .contains("3 prefix lengths and 2 suffix lengths")
        );
        // Each value the whole one before it and one byte more: 40,000 values of a 40 kB
        // page would take 800 MB; the values stop at 256 MiB.
        let n = 40_000;
        let prefixes: Vec<i32> = (0..n).collect();
        let growing = page(&prefixes, &vec![1; n as usize], &vec![b'x'; n as usize]);
        let err = unpack(
            Encoding::DELTA_BYTE_ARRAY,
            Layout::Bytes,
            &growing,
            n as usize,
        );
        let err = err.unwrap_err();
        assert!(
            err.contains("pass 268435456 bytes at value 23165,"),
            "{err}"
        );
    }

    #[test]
    fn byte_streams_join_into_values() {
        let values: Vec<u32> = vec![0x0403_0201, 0x0807_0605, 0xdead_beef];
        let mut split = Vec::new();
        for k in 0..4 {
            split.extend(values.iter().map(|v| v.to_le_bytes()[k]));
        }
        let joined = join_streams(&split, 4).unwrap();
        assert_eq!(joined, bytemuck::cast_slice::<u32, u8>(&values));
        let err = join_streams(&split[1..], 4).unwrap_err();
        assert!(
            err.contains("a BYTE_STREAM_SPLIT page of 4-byte values holds 11 bytes"),
            "{err}"
        );
        assert_eq!(join_streams(&[], 8).unwrap(), Vec::<u8>::new());
    }
}
