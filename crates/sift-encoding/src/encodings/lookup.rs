//! Integer columns that are a function of another column of the same block, stored as a
//! table indexed by that column's dictionary codes: one value per dictionary entry instead
//! of one per row. Real tables carry such columns: the `hour` and `minute` of a scheduled
//! time kept as HHMM, the region of a city, the class of a product code. This is the
//! correlation-aware compression of Corra (Liu, Stoian, van Renen, Kipf, 2024) on top of
//! the per-column BtrBlocks choice; Parquet cannot use it, as it compresses every column
//! chunk on its own.
//!
//! Only exact dependencies are stored, between chunks without nulls, and a source is never
//! a lookup itself, so decoding a column needs at most one other chunk of its block.

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use sift_bits::Bitmap;

use serde::{Deserialize, Serialize};

use crate::column::{EncodedColumn, PhysicalKind, check_selection, int_array, physical_kind};
use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::tree::MAX_CASCADE;
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId, Validity};
use crate::wire::{Reader, Writer};

/// Integers that are a function of column `column` of the same block: value `i` =
/// `table[k_i]`, where `k_i` is row `i`'s dictionary code in that column's chunk (which has
/// no nulls and a dictionary of `len` entries at its root; never a lookup itself). `table`
/// holds `len` integers. Only at the root of a chunk without nulls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lookup {
    /// The source column.
    pub column: u32,
    /// The entries of the source's dictionary, and of the table.
    pub len: u32,
    /// The table.
    pub table: NodeId,
}

impl Encoding for Lookup {
    const ID: u8 = 12;
    const NAME: &'static str = "lookup";
    const DOMAINS: &'static [Domain] = &[Domain::Int];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.column));
        w.varint(u64::from(self.len));
        w.varint(u64::from(self.table));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            column: r.varint_u32("lookup column")?,
            len: r.varint_u32("lookup len")?,
            table: r.varint_u32("lookup table")?,
        })
    }

    fn label(&self) -> String {
        format!("lookup[#{}:{}]", self.column, self.len)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.table]
    }

    fn decode<V: Value>(
        &self,
        _ctx: &Ctx<'_>,
        id: NodeId,
        _count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        Err(corrupt(format!(
            "node {id} is a lookup into column {}, decoded only with that column's codes",
            self.column
        )))
    }
}

/// A lookup replaces a chunk's own encoding only if it takes at most this fraction of its
/// bytes: reading the column then also reads the source's codes, which must be paid for.
const MAX_FRACTION: f64 = 0.5;

/// Largest source dictionary considered (a table entry per dictionary entry).
const MAX_TABLE: u32 = 1 << 16;

/// The column whose codes the chunk `enc` is a table over, if it is a lookup.
pub fn lookup_source(enc: &ColumnEncoding) -> Option<usize> {
    enc.nodes
        .first()
        .and_then(|n| n.as_lookup())
        .map(|l| l.column as usize)
}

/// Replaces the encoding of integer chunks of one block (`columns`, all of the same rows)
/// by a lookup into another chunk's dictionary codes where the values are a function of
/// those codes and the table is much smaller than the chunk's own encoding. `types[c]` is
/// column `c`'s type, `None` for a column that does not hold one value per row (list
/// elements), which takes part in no lookup.
pub fn encode_lookups(columns: &mut [EncodedColumn], types: &[Option<DataType>], rows: usize) {
    let sources: Vec<usize> = (0..columns.len())
        .filter(|&a| types.get(a).is_some_and(Option::is_some))
        .filter(|&a| dictionary_root(&columns[a].encoding).is_some())
        .collect();
    if sources.is_empty() {
        return;
    }
    // Source codes, decoded once per block when first needed.
    let mut codes: Vec<Option<Option<Vec<u64>>>> = vec![None; columns.len()];
    let mut used_as_source = vec![false; columns.len()];
    for b in 0..columns.len() {
        if used_as_source[b] || !is_target(&columns[b], types.get(b).and_then(Option::as_ref)) {
            continue;
        }
        let Some(values) = own_values(&columns[b], rows) else {
            continue;
        };
        let own = stored_size(&columns[b]);
        let mut best: Option<(usize, usize, BufferSink)> = None;
        for &a in &sources {
            if a == b || lookup_source(&columns[a].encoding).is_some() {
                continue;
            }
            let Some(src) = codes[a].get_or_insert_with(|| source_codes(&columns[a], rows)) else {
                continue;
            };
            let Some(table) = table_of(src, &values, dict_len(&columns[a])) else {
                continue;
            };
            let sink = encode_table(a, &table);
            let size = sink.stored_size();
            if (size as f64) <= own as f64 * MAX_FRACTION
                && best.as_ref().is_none_or(|(s, _, _)| size < *s)
            {
                best = Some((size, a, sink));
            }
        }
        if let Some((_, a, sink)) = best {
            used_as_source[a] = true;
            let col = &mut columns[b];
            col.encoding = ColumnEncoding {
                validity: Validity::AllValid,
                nodes: sink.nodes,
            };
            col.buffers = sink.buffers;
        }
    }
}

/// The dictionary size of a chunk without nulls whose root is a dictionary.
fn dictionary_root(enc: &ColumnEncoding) -> Option<u32> {
    match (enc.validity, enc.nodes.first()) {
        (Validity::AllValid, Some(root)) => root
            .as_dict()
            .map(|d| d.len)
            .filter(|&len| len <= MAX_TABLE),
        _ => None,
    }
}

fn dict_len(c: &EncodedColumn) -> usize {
    dictionary_root(&c.encoding).unwrap_or(0) as usize
}

/// Integer chunks without nulls.
fn is_target(c: &EncodedColumn, dt: Option<&DataType>) -> bool {
    c.encoding.validity == Validity::AllValid
        && dt.is_some_and(|dt| matches!(physical_kind(dt), Ok(PhysicalKind::Int(_))))
}

fn ctx_of<'a>(c: &'a EncodedColumn, bufs: &'a [&'a [u8]]) -> Ctx<'a> {
    Ctx::new(&c.encoding, bufs)
}

/// The chunk's values through the `i64` cascade (`None` for values outside it).
fn own_values(c: &EncodedColumn, rows: usize) -> Option<Vec<i64>> {
    let bufs: Vec<&[u8]> = c.buffers.iter().map(Vec::as_slice).collect();
    i64::decode(&ctx_of(c, &bufs), 0, rows, 0).ok()
}

/// The dictionary code of every row of a source chunk.
fn source_codes(c: &EncodedColumn, rows: usize) -> Option<Vec<u64>> {
    let bufs: Vec<&[u8]> = c.buffers.iter().map(Vec::as_slice).collect();
    codes_of(&ctx_of(c, &bufs), rows)
        .ok()
        .map(|(codes, _)| codes)
}

/// The dictionary codes of the `rows` rows of a chunk without nulls whose root is a
/// dictionary, and the dictionary's size.
fn codes_of(ctx: &Ctx<'_>, rows: usize) -> Result<(Vec<u64>, u32)> {
    let (Validity::AllValid, Some(dict)) = (
        ctx.enc.validity,
        ctx.enc.nodes.first().and_then(|n| n.as_dict()),
    ) else {
        return Err(corrupt(
            "the source of a lookup must have no nulls and a dictionary at its root",
        ));
    };
    let n = dict.checked_len(ctx, rows)?;
    let codes = dict.codes(ctx, 0, rows, n, 0, None)?;
    Ok((codes, dict.len))
}

/// One value per code if `values` is a function of `codes`, else `None` (stops at the
/// first row that contradicts an earlier one).
fn table_of(codes: &[u64], values: &[i64], len: usize) -> Option<Vec<i64>> {
    if codes.len() != values.len() {
        return None;
    }
    let mut table = vec![0i64; len];
    let mut seen = vec![false; len];
    for (&c, &v) in codes.iter().zip(values) {
        let c = c as usize;
        if seen[c] {
            if table[c] != v {
                return None;
            }
        } else {
            seen[c] = true;
            table[c] = v;
        }
    }
    Some(table)
}

fn encode_table(source: usize, table: &[i64]) -> BufferSink {
    let mut sink = BufferSink::default();
    let id = sink.reserve_node();
    let values = i64::encode(table, &mut sink, MAX_CASCADE - 1);
    sink.set_node(
        id,
        Lookup {
            column: source as u32,
            len: table.len() as u32,
            table: values,
        },
    );
    sink
}

fn stored_size(c: &EncodedColumn) -> usize {
    crate::tree::stored_size(&c.encoding.nodes, &c.buffers)
}

/// Decodes a lookup chunk of `len` rows of type `dt` (all rows, or those set in
/// `selection`) given its source chunk of the same block (`source`, `source_buffers`).
pub(crate) fn decode_lookup(
    enc: &ColumnEncoding,
    dt: &DataType,
    len: usize,
    buffers: &[&[u8]],
    (source, source_buffers): (&ColumnEncoding, &[&[u8]]),
    selection: Option<&Bitmap>,
) -> Result<ArrayRef> {
    let (Validity::AllValid, Some(&Lookup { table, len: n, .. })) =
        (enc.validity, enc.nodes.first().and_then(|n| n.as_lookup()))
    else {
        return Err(corrupt("not a lookup chunk without nulls"));
    };
    if lookup_source(source).is_some() {
        return Err(corrupt("the source of a lookup is a lookup itself"));
    }
    check_selection(selection, len)?;
    let src = Ctx::new(source, source_buffers);
    let (codes, dict) = codes_of(&src, len)?;
    if n != dict {
        return Err(corrupt(format!(
            "lookup table of {n} values for a dictionary of {dict}"
        )));
    }
    let ctx = Ctx::new(enc, buffers);
    let table = i64::decode(&ctx, ctx.child(0, table)?, n as usize, 1)?;
    // Every code is below the dictionary's size (checked by `codes_of`), which is the
    // table's length (checked above).
    let values: Vec<i64> = match selection {
        None => codes.iter().map(|&c| table[c as usize]).collect(),
        Some(s) => s.iter_ones().map(|i| table[codes[i] as usize]).collect(),
    };
    int_array(dt, values)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Node;
    use crate::column::{decode_array, encode_array};
    use arrow_array::{Array, Int16Array, Int64Array, StringArray};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A pseudo-random non-negative number for `i` (scheduled times drawn without a period).
    fn mix(i: i64) -> i64 {
        ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) as i64
    }

    fn bufs(c: &EncodedColumn) -> Vec<&[u8]> {
        c.buffers.iter().map(Vec::as_slice).collect()
    }

    /// Encodes the arrays as one block, with lookups.
    fn block(arrays: &[ArrayRef]) -> Vec<EncodedColumn> {
        let mut cols: Vec<EncodedColumn> = arrays
            .iter()
            .map(|a| encode_array(a.as_ref()).unwrap())
            .collect();
        let types: Vec<Option<DataType>> =
            arrays.iter().map(|a| Some(a.data_type().clone())).collect();
        encode_lookups(&mut cols, &types, arrays[0].len());
        cols
    }

    /// Column `c` of a block decoded, through its source if it is a lookup.
    fn decode(
        cols: &[EncodedColumn],
        arrays: &[ArrayRef],
        c: usize,
        sel: Option<&Bitmap>,
    ) -> Result<ArrayRef> {
        let dt = arrays[c].data_type();
        let n = arrays[c].len();
        let b = bufs(&cols[c]);
        match lookup_source(&cols[c].encoding) {
            Some(s) => {
                let sb = bufs(&cols[s]);
                decode_lookup(&cols[c].encoding, dt, n, &b, (&cols[s].encoding, &sb), sel)
            }
            None => match sel {
                None => decode_array(&cols[c].encoding, dt, n, &b),
                Some(s) => crate::column::decode_rows(&cols[c].encoding, dt, n, &b, Some(s), None),
            },
        }
    }

    /// Scheduled times as HHMM (a dictionary), their hour and minute (functions of it), a
    /// column that is not, and a string key with a derived integer.
    fn flights(times: &[i64], noise: &[i64]) -> Vec<ArrayRef> {
        let mode = ["AIR", "RAIL", "SHIP", "TRUCK"];
        vec![
            Arc::new(Int64Array::from(times.to_vec())),
            Arc::new(Int64Array::from_iter_values(times.iter().map(|t| t / 100))),
            Arc::new(Int16Array::from_iter_values(
                times.iter().map(|t| (t % 100) as i16),
            )),
            Arc::new(Int64Array::from(noise.to_vec())),
            Arc::new(StringArray::from_iter_values(
                times.iter().map(|t| mode[(t % 4) as usize]),
            )),
            Arc::new(Int64Array::from_iter_values(
                times.iter().map(|t| (t % 4) * 1_000_000 + 7),
            )),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Every column decodes to its input, all rows and selected rows, whichever
        /// columns became lookups.
        #[test]
        fn lookups_decode_to_the_input(
            slots in proptest::collection::vec(0usize..40, 2..3000),
            seed in any::<u64>(),
            keep in proptest::collection::vec(any::<bool>(), 3000),
        ) {
            let pool: Vec<i64> = (0..40).map(|i| ((seed >> (i % 32)) % 24) as i64 * 100 + (i as i64 * 7) % 60).collect();
            let times: Vec<i64> = slots.iter().map(|&s| pool[s]).collect();
            let noise: Vec<i64> = (0..times.len() as i64).map(|i| (i * 7919 + seed as i64 % 1000) % 1013).collect();
            let arrays = flights(&times, &noise);
            let cols = block(&arrays);
            let sel = Bitmap::from_bools(keep[..times.len()].iter().copied());
            for c in 0..arrays.len() {
                let all = decode(&cols, &arrays, c, None).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(all.as_ref(), arrays[c].as_ref(), "column {}", c);
                let some = decode(&cols, &arrays, c, Some(&sel)).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let data = arrays[c].to_data();
                let mut want = arrow_data::transform::MutableArrayData::new(vec![&data], false, 0);
                for i in sel.iter_ones() {
                    want.try_extend(0, i, i + 1).unwrap();
                }
                let want = arrow_array::make_array(want.freeze());
                prop_assert_eq!(some.as_ref(), want.as_ref(), "column {} selected", c);
            }
            // The noise never depends on anything; a lookup never points at a lookup.
            prop_assert_eq!(lookup_source(&cols[3].encoding), None);
            for c in &cols {
                if let Some(s) = lookup_source(&c.encoding) {
                    prop_assert_eq!(lookup_source(&cols[s].encoding), None);
                }
            }
        }
    }

    #[test]
    fn derived_columns_become_lookups() {
        let times: Vec<i64> = (0..20_000)
            .map(|i| (mix(i) % 24) * 100 + mix(i + 7) % 60 / 5 * 5)
            .collect();
        let noise: Vec<i64> = (0..20_000).map(|i| i * 7919 % 1013).collect();
        let arrays = flights(&times, &noise);
        let cols = block(&arrays);
        let sources: Vec<Option<usize>> = cols.iter().map(|c| lookup_source(&c.encoding)).collect();
        // hour, minute (an Int16 column) and the string key's derived integer.
        assert_eq!(sources, vec![None, Some(0), Some(0), None, None, Some(4)]);
        for (c, a) in arrays.iter().enumerate() {
            assert_eq!(
                decode(&cols, &arrays, c, None).unwrap().as_ref(),
                a.as_ref()
            );
        }
    }

    #[test]
    fn sources_with_nulls_are_not_used() {
        let times: Vec<Option<i64>> = (0..5_000)
            .map(|i| (i % 97 != 0).then_some(i % 24 * 100))
            .collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(times.clone())),
            Arc::new(Int64Array::from_iter_values(
                times.iter().map(|t| t.unwrap_or(0) / 100),
            )),
        ];
        let cols = block(&arrays);
        assert_eq!(lookup_source(&cols[1].encoding), None);
    }

    #[test]
    fn hostile_lookups_are_errors() {
        let times: Vec<i64> = (0..5_000)
            .map(|i| (mix(i) % 24) * 100 + mix(i + 7) % 60)
            .collect();
        let noise: Vec<i64> = (0..5_000).map(|i| i * 7919 % 100_003).collect();
        let arrays = flights(&times, &noise);
        let cols = block(&arrays);
        assert_eq!(
            lookup_source(&cols[1].encoding),
            Some(0),
            "{}",
            cols[0].encoding.describe()
        );
        let dt = DataType::Int64;
        let hour = &cols[1];
        let hb = bufs(hour);
        let try_with = |enc: &ColumnEncoding, src: &EncodedColumn, rows: usize| {
            let sb = bufs(src);
            decode_lookup(enc, &dt, rows, &hb, (&src.encoding, &sb), None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        // A source that is not a dictionary.
        assert!(try_with(&hour.encoding, &cols[3], 5_000).contains("dictionary at its root"));
        // A source that is a lookup.
        assert!(try_with(&hour.encoding, &cols[2], 5_000).contains("is a lookup itself"));
        // A table length that is not the dictionary's.
        let mut wrong = hour.encoding.clone();
        if let Node::Lookup(crate::encodings::Lookup { len, .. }) = &mut wrong.nodes[0] {
            *len += 1;
        }
        assert!(try_with(&wrong, &cols[0], 5_000).contains("lookup table of"));
        // Nulls in a lookup chunk.
        let mut nulls = hour.encoding.clone();
        nulls.validity = Validity::AllNull;
        assert!(try_with(&nulls, &cols[0], 5_000).contains("not a lookup chunk"));
        // A selection that is not one bit per row.
        let sb = bufs(&cols[0]);
        let short = Bitmap::ones(10);
        let err = decode_lookup(
            &hour.encoding,
            &dt,
            5_000,
            &hb,
            (&cols[0].encoding, &sb),
            Some(&short),
        )
        .err()
        .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("selection of 10 rows for a chunk of 5000")));
        let plain = crate::column::decode_rows(
            &cols[3].encoding,
            &dt,
            5_000,
            &bufs(&cols[3]),
            Some(&short),
            None,
        )
        .err()
        .map(|e| e.to_string());
        assert!(plain.is_some_and(|e| e.contains("selection of 10 rows for a chunk of 5000")));
        // Decoded without its source, a lookup is an error naming the source.
        let plain = decode_array(&hour.encoding, &dt, 5_000, &hb)
            .err()
            .map(|e| e.to_string());
        assert!(plain.is_some_and(|e| e.contains("lookup into column 0")));
    }
}
