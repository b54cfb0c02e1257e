//! A bounds check of the Thrift structs of a Parquet file (footer, page headers, page
//! index, Bloom filter headers), run on their bytes before the `parquet` crate decodes
//! them (feature `parquet`).
//!
//! Written here because the crate's decoder is not public and its skipping of fields it
//! does not know reads no bytes for the elements of a list, set or map of booleans, while
//! the compact protocol stores each of them in a byte. Six bytes of list header can
//! declare 2^31 - 1 such elements, and the crate then loops for seconds per list: a
//! 104-byte file held a reader for ten seconds. This walk reads the bytes as the protocol
//! lays them out and rejects what no Parquet writer produces: a container of booleans
//! (Parquet's only one, the column index's `null_pages`, is allowed where it stands), more
//! elements than bytes left, nesting deeper than [`MAX_DEPTH`], unknown types, a struct
//! cut short. On what it accepts, the crate's decoder reads the same fields from the same
//! bytes, so its own loops are bounded by the bytes too.

/// Nesting the walk follows, structs and containers each a level (a column chunk's
/// statistics, Parquet's deepest, lie about ten levels into the footer).
const MAX_DEPTH: usize = 32;

/// Where a list of booleans is valid.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolLists {
    /// Nowhere (the footer, page headers, offset indexes, Bloom filter headers).
    None,
    /// As field 1 of the outer struct (a column index's `null_pages`).
    FirstField,
}

/// Compact-protocol type codes (field types; list elements use the same codes, 1 or 2 for
/// booleans).
mod kind {
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

/// What is wrong with a struct.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Damage {
    /// The damage and its file offset.
    pub(crate) message: String,
    /// Whether the bytes ended inside the struct (more bytes could complete it).
    pub(crate) cut_off: bool,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for Damage {
    fn from(message: String) -> Damage {
        Damage {
            message,
            cut_off: false,
        }
    }
}

/// Checks the struct at the start of `bytes` (bytes after it are ignored), which start at
/// byte `base` of the file, and returns its length in bytes; the error names the file
/// offset of the damage.
pub(crate) fn check_struct(bytes: &[u8], base: u64, bools: BoolLists) -> Result<usize, Damage> {
    let mut walk = Walk {
        bytes,
        pos: 0,
        base,
    };
    walk.fields(0, bools)?;
    Ok(walk.pos)
}

/// A page header's fields the scan reads (`PageHeader` and its page structs in
/// `parquet.thrift`); its CRC, statistics and any other field are checked and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHeader {
    /// The header's own length in bytes.
    pub(crate) len: usize,
    /// `uncompressed_page_size`, field 2.
    pub(crate) raw: i32,
    /// `compressed_page_size`, field 3.
    pub(crate) stored: i32,
    /// The page by its `type` (field 1), with that type's header.
    pub(crate) page: PageKind,
}

/// A page's type with its type's header (encodings as the `Encoding` enum's numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageKind {
    /// `DATA_PAGE` and its `data_page_header` (field 5).
    Data {
        num_values: i32,
        encoding: i32,
        def_encoding: i32,
        rep_encoding: i32,
    },
    /// `DICTIONARY_PAGE` and its `dictionary_page_header` (field 7).
    Dictionary {
        num_values: i32,
        encoding: i32,
        is_sorted: bool,
    },
    /// `DATA_PAGE_V2` and its `data_page_header_v2` (field 8); `compressed` is false when
    /// the values are stored uncompressed. Its levels precede the values, uncompressed.
    DataV2 {
        num_values: i32,
        num_nulls: i32,
        num_rows: i32,
        encoding: i32,
        def_len: i32,
        rep_len: i32,
        compressed: bool,
    },
    /// A page of another type (an index page), which readers skip.
    Other,
}

impl PageHeader {
    /// The bytes of levels stored uncompressed before the values (a version-2 page's).
    pub(crate) fn levels(&self) -> i64 {
        match self.page {
            PageKind::DataV2 {
                def_len, rep_len, ..
            } => i64::from(def_len.max(0)) + i64::from(rep_len.max(0)),
            _ => 0,
        }
    }

    /// Whether the values are stored compressed (when the chunk has a codec).
    pub(crate) fn compressed(&self) -> bool {
        !matches!(
            self.page,
            PageKind::DataV2 {
                compressed: false,
                ..
            }
        )
    }
}

/// The page header at the start of `bytes` (which start at file offset `base`), checked
/// as [`check_struct`] checks a struct and read in the same walk.
pub(crate) fn page_header(bytes: &[u8], base: u64) -> Result<PageHeader, Damage> {
    let mut walk = Walk {
        bytes,
        pos: 0,
        base,
    };
    let (mut page_type, mut raw, mut stored) = (None, None, None);
    let (mut data, mut dictionary, mut v2) = (None, None, None);
    walk.visit_fields(0, |w, id, t| {
        match (id, t) {
            (1, kind::I32) => page_type = Some(w.i32()?),
            (2, kind::I32) => raw = Some(w.i32()?),
            (3, kind::I32) => stored = Some(w.i32()?),
            (5, kind::STRUCT) => {
                let [num_values, encoding, def_encoding, rep_encoding] =
                    w.required_i32s("data page header", None)?.0;
                data = Some(PageKind::Data {
                    num_values,
                    encoding,
                    def_encoding,
                    rep_encoding,
                });
            }
            (7, kind::STRUCT) => {
                let ([num_values, encoding], sorted) =
                    w.required_i32s("dictionary page header", Some(3))?;
                dictionary = Some(PageKind::Dictionary {
                    num_values,
                    encoding,
                    is_sorted: sorted == Some(true),
                });
            }
            (8, kind::STRUCT) => {
                let (fields, compressed) =
                    w.required_i32s("version-2 data page header", Some(7))?;
                let [num_values, num_nulls, num_rows, encoding, def_len, rep_len] = fields;
                v2 = Some(PageKind::DataV2 {
                    num_values,
                    num_nulls,
                    num_rows,
                    encoding,
                    def_len,
                    rep_len,
                    compressed: compressed != Some(false),
                });
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let lacks = |what: &str| Damage::from(format!("it lacks its {what}"));
    let page = match page_type.ok_or_else(|| lacks("type"))? {
        0 => data.ok_or_else(|| lacks("data page header"))?,
        2 => dictionary.ok_or_else(|| lacks("dictionary page header"))?,
        3 => v2.ok_or_else(|| lacks("version-2 data page header"))?,
        _ => PageKind::Other,
    };
    Ok(PageHeader {
        len: walk.pos,
        raw: raw.ok_or_else(|| lacks("uncompressed size"))?,
        stored: stored.ok_or_else(|| lacks("compressed size"))?,
        page,
    })
}

/// A zigzag-encoded integer's value.
fn zigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

struct Walk<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The file offset of `bytes[0]`.
    base: u64,
}

impl Walk<'_> {
    /// The file offset of byte `pos`.
    fn at(&self, pos: usize) -> u64 {
        self.base + pos as u64
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn byte(&mut self) -> Result<u8, Damage> {
        let b = *self.bytes.get(self.pos).ok_or_else(|| Damage {
            message: format!("Thrift struct cut off at byte {}", self.at(self.pos)),
            cut_off: true,
        })?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), Damage> {
        if n > self.left() {
            return Err(Damage {
                message: format!(
                    "Thrift value of {n} bytes at byte {} runs past the {} bytes there",
                    self.at(self.pos),
                    self.left()
                ),
                cut_off: true,
            });
        }
        self.pos += n;
        Ok(())
    }

    /// A ULEB128 varint of at most 10 bytes.
    fn varint(&mut self) -> Result<u64, Damage> {
        let at = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("Thrift varint at byte {} longer than 10 bytes", self.at(at)).into())
    }

    /// Hands each field of the struct at the walk's position (`depth` structs and
    /// containers deep) to `visit` with its id and type (a boolean's value is its type),
    /// to read its value and say so; the values it leaves are checked and skipped.
    fn visit_fields(
        &mut self,
        depth: usize,
        mut visit: impl FnMut(&mut Self, i64, u8) -> Result<bool, Damage>,
    ) -> Result<(), Damage> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "Thrift structs nested deeper than {MAX_DEPTH} at byte {}",
                self.at(self.pos)
            )
            .into());
        }
        let mut id = 0i64;
        while let Some(t) = self.field_header(&mut id)? {
            if !visit(self, id, t)? && !matches!(t, kind::TRUE | kind::FALSE) {
                self.value(t, depth + 1, false)?;
            }
        }
        Ok(())
    }

    /// The struct at the walk's position (one level deep) whose fields 1 to `N` are
    /// required `i32`s, and the value of its boolean field `flag` (an id), if present;
    /// `what` names the struct in errors.
    fn required_i32s<const N: usize>(
        &mut self,
        what: &str,
        flag: Option<i64>,
    ) -> Result<([i32; N], Option<bool>), Damage> {
        let at = self.at(self.pos);
        let (mut values, mut flagged) = ([None; N], None);
        self.visit_fields(1, |w, id, t| {
            match (usize::try_from(id).ok().and_then(|i| i.checked_sub(1)), t) {
                (Some(i), kind::I32) if i < N => values[i] = Some(w.i32()?),
                (_, kind::TRUE | kind::FALSE) if flag == Some(id) => {
                    flagged = Some(t == kind::TRUE)
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let mut out = [0i32; N];
        for (i, (o, v)) in out.iter_mut().zip(values).enumerate() {
            *o = v.ok_or_else(|| format!("{what} at byte {at} lacks field {}", i + 1))?;
        }
        Ok((out, flagged))
    }

    /// A zigzag varint that must fit an `i32`.
    fn i32(&mut self) -> Result<i32, Damage> {
        let at = self.pos;
        let v = zigzag(self.varint()?);
        i32::try_from(v).map_err(|_| format!("Thrift i32 at byte {} holds {v}", self.at(at)).into())
    }

    /// The type of the next field of a struct, its id read into `id` (which holds the
    /// previous field's: most ids are stored as a delta from it); `None` at the struct's
    /// stop byte.
    fn field_header(&mut self, id: &mut i64) -> Result<Option<u8>, Damage> {
        let header = self.byte()?;
        if header == 0 {
            return Ok(None);
        }
        let (delta, t) = (header >> 4, header & 0x0F);
        *id = match delta {
            // A zigzag i16 field id.
            0 => zigzag(self.varint()?),
            d => *id + i64::from(d),
        };
        Ok(Some(t))
    }

    /// The fields of a struct up to its stop byte.
    fn fields(&mut self, depth: usize, bools: BoolLists) -> Result<(), Damage> {
        let first_bools = depth == 0 && bools == BoolLists::FirstField;
        self.visit_fields(depth, |w, id, t| {
            if first_bools && id == 1 && !matches!(t, kind::TRUE | kind::FALSE) {
                w.value(t, depth + 1, true)?;
                return Ok(true);
            }
            Ok(false)
        })
    }

    /// One value of type `t` (booleans outside structs are a byte each).
    fn value(&mut self, t: u8, depth: usize, bool_list: bool) -> Result<(), Damage> {
        let at = self.pos;
        match t {
            kind::TRUE | kind::FALSE | kind::BYTE => self.skip(1),
            kind::I16 | kind::I32 | kind::I64 => self.varint().map(drop),
            kind::DOUBLE => self.skip(8),
            kind::UUID => self.skip(16),
            kind::BINARY => {
                let n = self.varint()?;
                self.skip(usize::try_from(n).unwrap_or(usize::MAX))
            }
            kind::STRUCT => self.fields(depth, BoolLists::None),
            kind::LIST | kind::SET => {
                let h = self.byte()?;
                let (short, elem) = (h >> 4, h & 0x0F);
                let n = match short {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.elements(at, n, 1, depth)?;
                if matches!(elem, kind::TRUE | kind::FALSE) && !bool_list && n > 0 {
                    return Err(format!("Thrift list of booleans at byte {}", self.at(at)).into());
                }
                for _ in 0..n {
                    self.value(elem, depth + 1, false)?;
                }
                Ok(())
            }
            kind::MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                let (k, v) = (kv >> 4, kv & 0x0F);
                self.elements(at, n, 2, depth)?;
                if [k, v]
                    .iter()
                    .any(|t| matches!(*t, kind::TRUE | kind::FALSE))
                {
                    return Err(format!("Thrift map of booleans at byte {}", self.at(at)).into());
                }
                for _ in 0..n {
                    self.value(k, depth + 1, false)?;
                    self.value(v, depth + 1, false)?;
                }
                Ok(())
            }
            other => Err(format!(
                "Thrift value of unknown type {other} at byte {}",
                self.at(at)
            )
            .into()),
        }
    }

    /// Checks that `n` elements of at least `min` bytes each fit in the bytes left, and
    /// that the container is not nested too deep.
    fn elements(&self, at: usize, n: u64, min: u64, depth: usize) -> Result<(), Damage> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "Thrift containers nested deeper than {MAX_DEPTH} at byte {}",
                self.at(at)
            )
            .into());
        }
        if n.saturating_mul(min) > self.left() as u64 {
            return Err(format!(
                "Thrift container at byte {} declares {n} elements in {} bytes",
                self.at(at),
                self.left()
            )
            .into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A field header with a short delta.
    fn field(delta: u8, t: u8) -> u8 {
        (delta << 4) | t
    }

    #[test]
    fn page_header_reads_version_1_and_2_headers() {
        let i32_field = |v: u8| [field(1, kind::I32), v << 1];
        let mut v2 = vec![field(1, kind::I32), 6, field(1, kind::I32), 0xC8, 0x01];
        v2.extend([field(1, kind::I32), 120, field(5, kind::STRUCT)]);
        // num_values, num_nulls, num_rows, encoding, then levels of 3 and 2 bytes.
        for v in [10, 0, 10, 0, 3, 2] {
            v2.extend(i32_field(v));
        }
        v2.extend([field(1, kind::FALSE), 0, 0, 0xFF]);
        let header = page_header(&v2, 0).unwrap();
        assert_eq!(check_struct(&v2, 0, BoolLists::None), Ok(header.len));
        assert_eq!(
            (header.len, header.raw, header.stored),
            (v2.len() - 1, 100, 60)
        );
        let page = PageKind::DataV2 {
            num_values: 10,
            num_nulls: 0,
            num_rows: 10,
            encoding: 0,
            def_len: 3,
            rep_len: 2,
            compressed: false,
        };
        assert_eq!(header.page, page);
        assert_eq!((header.levels(), header.compressed()), (5, false));
        // A version-1 page: type, sizes, and a data page header of four i32s, then an
        // unknown boolean and an unknown binary (statistics are skipped the same way).
        let mut v1 = vec![21, 0, 21, 8, 21, 6, field(2, kind::STRUCT)];
        for v in [7, 8, 3, 3] {
            v1.extend(i32_field(v));
        }
        v1.extend([field(1, kind::TRUE), field(1, kind::BINARY), 1, b'x', 0, 0]);
        let header = page_header(&v1, 0).unwrap();
        let page = PageKind::Data {
            num_values: 7,
            encoding: 8,
            def_encoding: 3,
            rep_encoding: 3,
        };
        assert_eq!((header.len, header.raw, header.stored), (v1.len(), 4, 3));
        assert_eq!(
            (header.page, header.levels(), header.compressed()),
            (page, 0, true)
        );
        // Cut short, lacking a required field, or an i32 out of range: errors.
        assert!(page_header(&v1[..v1.len() - 1], 0).unwrap_err().cut_off);
        assert!(page_header(&v1[2..], 0).is_err());
        let mut no_encoding = vec![21, 0, 21, 8, 21, 6, field(2, kind::STRUCT)];
        no_encoding.extend([i32_field(7), i32_field(8), i32_field(3)].concat());
        no_encoding.extend([0, 0]);
        assert!(page_header(&no_encoding, 0).is_err());
        // Sizes but no type; a data page's type but no data page header: named.
        let untyped = [field(2, kind::I32), 8, field(1, kind::I32), 6, 0];
        let e = page_header(&untyped, 0).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.cut_off),
            ("it lacks its type", false)
        );
        let headless = [21, 0, 21, 8, 21, 6, 0];
        let e = page_header(&headless, 0).unwrap_err().message;
        assert_eq!(e, "it lacks its data page header");
        let huge = [field(1, kind::I32), 0x80, 0x80, 0x80, 0x80, 0x10, 0];
        assert!(page_header(&huge, 0).is_err());
    }

    #[test]
    fn accepts_structs_and_reports_their_length() {
        // i32 field 1 = 5, binary field 2 = "ab", struct field 3 { bool field 1 true },
        // list field 4 of three i64, stop; then a byte after the struct.
        let bytes = [
            field(1, kind::I32),
            10,
            field(1, kind::BINARY),
            2,
            b'a',
            b'b',
            field(1, kind::STRUCT),
            field(1, kind::TRUE),
            0,
            field(1, kind::LIST),
            (3 << 4) | kind::I64,
            1,
            2,
            3,
            0,
            0xFF,
        ];
        assert_eq!(
            check_struct(&bytes, 0, BoolLists::None),
            Ok(bytes.len() - 1)
        );
    }

    #[test]
    fn rejects_lists_of_booleans_except_the_column_index_pages() {
        // A list of 2^31 booleans in 7 bytes: the bytes a reader skipping it would loop on.
        let bomb = [field(1, kind::LIST), 0xF1, 0x80, 0x80, 0x80, 0x80, 0x08, 0];
        assert!(check_struct(&bomb, 0, BoolLists::None).is_err());
        assert!(check_struct(&bomb, 0, BoolLists::FirstField).is_err());
        // Two booleans as field 1: a column index's `null_pages`.
        let pages = [field(1, kind::LIST), (2 << 4) | kind::TRUE, 1, 0, 0];
        assert!(check_struct(&pages, 0, BoolLists::None).is_err());
        assert_eq!(check_struct(&pages, 0, BoolLists::FirstField), Ok(5));
        // The same list as field 2 or inside a nested struct stays refused.
        let second = [field(2, kind::LIST), (2 << 4) | kind::TRUE, 1, 0, 0];
        assert!(check_struct(&second, 0, BoolLists::FirstField).is_err());
        let map = [
            field(1, kind::MAP),
            1,
            (kind::I32 << 4) | kind::TRUE,
            2,
            1,
            0,
        ];
        assert!(check_struct(&map, 0, BoolLists::None).is_err());
    }

    #[test]
    fn rejects_containers_longer_than_their_bytes_and_deep_nesting() {
        let long = [field(1, kind::LIST), 0xF5, 0x7F, 1, 2, 0];
        assert!(check_struct(&long, 0, BoolLists::None).is_err());
        let binary = [field(1, kind::BINARY), 0x7F, 1, 0];
        assert!(check_struct(&binary, 0, BoolLists::None).is_err());
        let mut deep = vec![field(1, kind::STRUCT); 40];
        deep.extend(vec![0u8; 41]);
        assert!(check_struct(&deep, 0, BoolLists::None).is_err());
        assert!(check_struct(&[field(1, kind::I32)], 0, BoolLists::None).is_err());
        assert!(check_struct(&[field(1, 14), 0], 0, BoolLists::None).is_err());
    }

    proptest! {
        /// Any bytes: the walk ends (within steps proportional to the bytes: a container
        /// is refused unless its elements fit), and an accepted struct lies inside them.
        #[test]
        fn any_bytes_end(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(n) = check_struct(&bytes, 0, BoolLists::FirstField) {
                prop_assert!(n >= 1 && n <= bytes.len());
            }
            if let Ok(header) = page_header(&bytes, 0) {
                prop_assert_eq!(check_struct(&bytes, 0, BoolLists::None), Ok(header.len));
            }
        }
    }
}
