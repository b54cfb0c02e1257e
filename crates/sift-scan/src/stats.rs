//! What a scan did: blocks pruned, values decoded, bytes read.

use std::fmt;

/// Counters of one scan, updated as it runs (see [`Scan::stats`](crate::Scan::stats)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Blocks in the scanned row range.
    pub blocks_total: u64,
    /// Blocks whose zone maps proved the filter false: not read at all.
    pub blocks_pruned: u64,
    /// Blocks read whose filter matched no row: projected columns not read.
    pub blocks_empty: u64,
    /// Rows in the blocks that were evaluated.
    pub rows_scanned: u64,
    /// Rows that passed the filter and were returned (a scan stops reading blocks once it
    /// reaches its limit).
    pub rows_matched: u64,
    /// Values decoded into Arrow arrays (projections and decode-then-evaluate
    /// predicates); predicates evaluated on encoded data decode nothing.
    pub values_decoded: u64,
    /// Bytes of column data read: whole chunks for encoded predicates and full decodes,
    /// only the mini-blocks holding a selected row for bit-packed projections (Parquet:
    /// the column chunks, or with a page index only the pages, that were read).
    pub bytes_read: u64,
    /// Parquet data pages read in place as Sift chunks (filters on their encoded values,
    /// selections decoding only selected values).
    pub parquet_pages_in_place: u64,
    /// Of those, pages stored in a DELTA encoding or BYTE_STREAM_SPLIT: decoded into the
    /// values a PLAIN page holds when read, then read as such.
    pub parquet_pages_unpacked: u64,
    /// Parquet column chunks decoded by the `parquet` crate's Arrow reader instead (their
    /// pages use encodings or types not read in place, or only some rows were wanted).
    pub parquet_chunks_decoded: u64,
    /// A file read by byte range (an object store): requests made for column chunks
    /// (the footer's, made when the file was opened, aside).
    pub requests: u64,
    /// Bytes those requests received (gaps read to merge nearby chunks included).
    pub bytes_fetched: u64,
}

impl ScanStats {
    /// Adds another scan's counters (of other blocks) to these.
    pub fn add(&mut self, other: &ScanStats) {
        self.blocks_total += other.blocks_total;
        self.blocks_pruned += other.blocks_pruned;
        self.blocks_empty += other.blocks_empty;
        self.rows_scanned += other.rows_scanned;
        self.rows_matched += other.rows_matched;
        self.values_decoded += other.values_decoded;
        self.bytes_read += other.bytes_read;
        self.parquet_pages_in_place += other.parquet_pages_in_place;
        self.parquet_pages_unpacked += other.parquet_pages_unpacked;
        self.parquet_chunks_decoded += other.parquet_chunks_decoded;
        self.requests += other.requests;
        self.bytes_fetched += other.bytes_fetched;
    }
}

impl fmt::Display for ScanStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blocks {} (pruned {}, no match {}), rows scanned {}, matched {}, values decoded {}, bytes read {}",
            self.blocks_total,
            self.blocks_pruned,
            self.blocks_empty,
            self.rows_scanned,
            self.rows_matched,
            self.values_decoded,
            self.bytes_read
        )?;
        if self.parquet_pages_in_place + self.parquet_chunks_decoded > 0 {
            write!(
                f,
                "; Parquet: {} pages read in place",
                self.parquet_pages_in_place
            )?;
            if self.parquet_pages_unpacked > 0 {
                write!(
                    f,
                    " ({} of them decoded to PLAIN values first)",
                    self.parquet_pages_unpacked
                )?;
            }
            write!(
                f,
                ", {} column chunks decoded by the parquet crate",
                self.parquet_chunks_decoded
            )?;
        }
        if self.requests > 0 {
            write!(
                f,
                "; {} requests fetched {} bytes",
                self.requests, self.bytes_fetched
            )?;
        }
        Ok(())
    }
}
