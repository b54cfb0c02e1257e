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

/// The sizes a page header states (its bytes checked by [`check_struct`] first).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PageSizes {
    /// `uncompressed_page_size`, field 2.
    pub(crate) raw: i64,
    /// `compressed_page_size`, field 3.
    pub(crate) stored: i64,
    /// A version-2 data page's level bytes, stored uncompressed before its values (fields
    /// 5 and 6 of `data_page_header_v2`, field 8); 0 for other pages.
    pub(crate) levels: i64,
    /// False for a version-2 data page whose values are stored uncompressed (its field 7).
    pub(crate) compressed: bool,
}

/// The [`PageSizes`] of the page header `bytes`; `None` when it lacks either size.
pub(crate) fn page_sizes(bytes: &[u8]) -> Option<PageSizes> {
    let mut walk = Walk {
        bytes,
        pos: 0,
        base: 0,
    };
    let (mut raw, mut stored, mut levels, mut compressed) = (None, None, 0i64, true);
    walk.each_field(|walk, id, t| {
        match (id, t) {
            (2, kind::I32) => raw = Some(zigzag(walk.varint().ok()?)),
            (3, kind::I32) => stored = Some(zigzag(walk.varint().ok()?)),
            (8, kind::STRUCT) => walk.each_field(|walk, id, t| {
                match (id, t) {
                    (5 | 6, kind::I32) => {
                        levels = levels.saturating_add(zigzag(walk.varint().ok()?).max(0))
                    }
                    (7, kind::FALSE) => compressed = false,
                    _ => return Some(false),
                }
                Some(true)
            })?,
            _ => return Some(false),
        }
        Some(true)
    })?;
    Some(PageSizes {
        raw: raw?,
        stored: stored?,
        levels,
        compressed,
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

    /// Hands each field of the struct at the walk's position to `visit`, with its id and
    /// type (a boolean's value is its type), to read its value and say so; the values it
    /// leaves are skipped. `None` when the struct is damaged or `visit` says so.
    fn each_field(
        &mut self,
        mut visit: impl FnMut(&mut Self, i64, u8) -> Option<bool>,
    ) -> Option<()> {
        let mut id = 0i64;
        while let Some(t) = self.field_header(&mut id).ok()? {
            if !visit(self, id, t)? && !matches!(t, kind::TRUE | kind::FALSE) {
                self.value(t, 1, false).ok()?;
            }
        }
        Some(())
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
        if depth > MAX_DEPTH {
            return Err(format!(
                "Thrift structs nested deeper than {MAX_DEPTH} at byte {}",
                self.at(self.pos)
            )
            .into());
        }
        let mut id: i64 = 0;
        while let Some(t) = self.field_header(&mut id)? {
            match t {
                kind::TRUE | kind::FALSE => {}
                _ => {
                    let bool_list = depth == 0 && id == 1 && bools == BoolLists::FirstField;
                    self.value(t, depth + 1, bool_list)?;
                }
            }
        }
        Ok(())
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A field header with a short delta.
    fn field(delta: u8, t: u8) -> u8 {
        (delta << 4) | t
    }

    #[test]
    fn page_sizes_read_a_version_2_headers_levels() {
        let i32_field = |v: u8| [field(1, kind::I32), v << 1];
        let mut v2 = vec![field(1, kind::I32), 6, field(1, kind::I32), 0xC8, 0x01];
        v2.extend([field(1, kind::I32), 120, field(5, kind::STRUCT)]);
        // num_values, num_nulls, num_rows, encoding, then levels of 3 and 2 bytes.
        for v in [10, 0, 10, 0, 3, 2] {
            v2.extend(i32_field(v));
        }
        v2.extend([field(1, kind::FALSE), 0, 0]);
        assert_eq!(check_struct(&v2, 0, BoolLists::None), Ok(v2.len()));
        let sizes = PageSizes {
            raw: 100,
            stored: 60,
            levels: 5,
            compressed: false,
        };
        assert_eq!(page_sizes(&v2), Some(sizes));
        // A version-1 page: type, sizes, and a data page header holding a boolean.
        let v1 = [21, 0, 21, 8, 21, 6, 0x2C, 0x11, 0, 0];
        assert_eq!(check_struct(&v1, 0, BoolLists::None), Ok(v1.len()));
        let sizes = PageSizes {
            raw: 4,
            stored: 3,
            levels: 0,
            compressed: true,
        };
        assert_eq!(page_sizes(&v1), Some(sizes));
        assert_eq!(page_sizes(&v1[..3]), None);
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
        }
    }
}
