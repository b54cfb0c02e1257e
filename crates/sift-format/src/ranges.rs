//! Files read by byte range: an object in an object store, reached through a
//! [`RangeSource`]. A Sift file opened this way reads its footer with one suffix request
//! (two when the footer is larger than the first guess), and a scan asks for the chunks of
//! several blocks at once ([`SiftFile::prefetch`](crate::SiftFile::prefetch)): their byte
//! ranges are merged across small gaps ([`coalesce`]) and requested concurrently by the
//! source.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Condvar, Mutex};

use bytes::Bytes;

/// Where the bytes of a file read by range come from (an object store, in `sift-store`).
pub trait RangeSource: Send + Sync + std::fmt::Debug {
    /// The object's address, for messages (`s3://bucket/key`).
    fn location(&self) -> &str;

    /// The last `n` bytes of the object (all of it when it is smaller) and the object's
    /// size, in one request.
    fn read_suffix(&self, n: u64) -> std::io::Result<(Bytes, u64)>;

    /// The bytes of each range, in order: one request per range, issued concurrently.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> std::io::Result<Vec<Bytes>>;
}

/// How a file read by range turns chunk reads into requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeOptions {
    /// Two ranges at most this many bytes apart are fetched by one request (the gap is
    /// read and dropped): a request's first-byte time (tens of milliseconds on an object
    /// store) costs as much as reading a megabyte or more.
    pub max_gap: u64,
    /// Merging stops at this request size, so that a scan's bytes arrive over several
    /// concurrent requests rather than one stream.
    pub max_request: u64,
    /// The size of the first (suffix) read; footers up to this size need one request.
    pub footer_guess: u64,
}

impl Default for RangeOptions {
    fn default() -> Self {
        Self {
            max_gap: 1 << 20,
            max_request: 8 << 20,
            footer_guess: 64 << 10,
        }
    }
}

/// Merges byte ranges that are at most `max_gap` apart, as long as the merged range stays
/// within `max_request` bytes (a single longer range stays whole). Returns the merged
/// ranges in file order. Overlapping and repeated ranges merge whatever the limits.
pub fn coalesce(ranges: &[Range<u64>], max_gap: u64, max_request: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    sorted.sort_unstable_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        if let Some(last) = out.last_mut() {
            let overlaps = r.start < last.end;
            let near = r.start - last.end.min(r.start) <= max_gap;
            let fits = r.end.max(last.end) - last.start <= max_request;
            if overlaps || (near && fits) {
                last.end = last.end.max(r.end);
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// Requests a fetch made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeCounts {
    /// Requests issued (the footer's included).
    pub requests: u64,
    /// Bytes received (gaps read to merge ranges included).
    pub bytes: u64,
}

/// A chunk, `(block, column)`, and its byte range in the file.
pub type ChunkRange = ((usize, usize), Range<u64>);

/// A chunk fetched ahead, or being fetched by another thread.
#[derive(Debug, Clone)]
enum Slot {
    Pending,
    Ready(Bytes),
}

/// A file read by range: its source, settings and the chunks fetched ahead of their use,
/// by `(block, column)` (for a Parquet file read by Sift's scan: row group and leaf
/// column). Scan threads share it: a chunk one thread is fetching
/// is claimed (pending), and another thread that needs it waits for it instead of
/// fetching it again.
#[derive(Debug)]
pub struct Remote {
    pub(crate) source: std::sync::Arc<dyn RangeSource>,
    pub(crate) options: RangeOptions,
    held: Mutex<HashMap<(usize, usize), Slot>>,
    /// Signalled when pending chunks arrive (or their fetch failed).
    arrived: Condvar,
}

impl Remote {
    pub fn new(source: std::sync::Arc<dyn RangeSource>, options: RangeOptions) -> Self {
        Self {
            source,
            options,
            held: Mutex::new(HashMap::new()),
            arrived: Condvar::new(),
        }
    }

    /// The location errors name (an object's URL).
    pub fn location(&self) -> &str {
        self.source.location()
    }

    /// Reads one range with one request.
    pub fn read(&self, range: Range<u64>) -> std::io::Result<Bytes> {
        if range.start >= range.end {
            return Ok(Bytes::new());
        }
        let got = self.source.read_ranges(std::slice::from_ref(&range))?;
        let bytes = got.into_iter().next().unwrap_or_default();
        check_len(self.source.location(), &range, bytes.len())?;
        Ok(bytes)
    }

    /// A fetched chunk's bytes, waiting for them while another thread fetches them;
    /// `None` if the chunk is neither held nor being fetched.
    pub fn held(&self, key: (usize, usize)) -> Option<Bytes> {
        let mut held = self.held.lock().ok()?;
        loop {
            match held.get(&key)? {
                Slot::Ready(b) => return Some(b.clone()),
                Slot::Pending => held = self.arrived.wait(held).ok()?,
            }
        }
    }

    /// Whether a chunk is held or being fetched.
    pub fn claimed(&self, key: (usize, usize)) -> bool {
        self.held.lock().is_ok_and(|h| h.contains_key(&key))
    }

    /// Claims and fetches chunks, given block by block in the order a scan reads them
    /// (each a list of chunks and their byte ranges), with coalesced, concurrent requests,
    /// and holds them; returns the requests made. Claiming stops at the first block
    /// another thread has claimed (of the first block, only its unclaimed chunks are
    /// taken) or at a block `finished` says was read already, so the claimed blocks are a
    /// run no other thread's claims lie inside, and merging across gaps never reads
    /// another thread's chunks.
    pub fn fetch(
        &self,
        blocks: Vec<(usize, Vec<ChunkRange>)>,
        finished: &dyn Fn(usize) -> bool,
    ) -> std::io::Result<RangeCounts> {
        let wanted: Vec<ChunkRange> = {
            let mut held = self
                .held
                .lock()
                .map_err(|_| std::io::Error::other("a reader thread panicked"))?;
            let mut wanted = Vec::new();
            for (i, (block, chunks)) in blocks.into_iter().enumerate() {
                // Checked under the lock: a block read (and released) since the caller
                // chose its blocks is not fetched again.
                let taken = chunks.iter().any(|(k, _)| held.contains_key(k)) || finished(block);
                if taken && i > 0 {
                    break;
                }
                for (k, r) in chunks {
                    if let std::collections::hash_map::Entry::Vacant(slot) = held.entry(k) {
                        slot.insert(Slot::Pending);
                        wanted.push((k, r));
                    }
                }
            }
            wanted
        };
        if wanted.is_empty() {
            return Ok(RangeCounts::default());
        }
        let result = self.fetch_claimed(&wanted);
        if result.is_err() {
            // Unclaim, so that waiting threads read their chunks themselves (and report
            // the error where they need them).
            if let Ok(mut held) = self.held.lock() {
                for (k, _) in &wanted {
                    if matches!(held.get(k), Some(Slot::Pending)) {
                        held.remove(k);
                    }
                }
            }
        }
        self.arrived.notify_all();
        result
    }

    fn fetch_claimed(&self, wanted: &[ChunkRange]) -> std::io::Result<RangeCounts> {
        let ranges: Vec<Range<u64>> = wanted.iter().map(|(_, r)| r.clone()).collect();
        let merged = coalesce(&ranges, self.options.max_gap, self.options.max_request);
        let got = self.source.read_ranges(&merged)?;
        let made = RangeCounts {
            requests: merged.len() as u64,
            bytes: got.iter().map(|b| b.len() as u64).sum(),
        };
        for (range, bytes) in merged.iter().zip(&got) {
            check_len(self.source.location(), range, bytes.len())?;
        }
        let mut held = self
            .held
            .lock()
            .map_err(|_| std::io::Error::other("a reader thread panicked"))?;
        for (key, range) in wanted {
            if range.start >= range.end {
                held.insert(*key, Slot::Ready(Bytes::new()));
                continue;
            }
            // The merged range holding this one: the last that starts at or before it.
            let i = merged.partition_point(|m| m.start <= range.start);
            let Some(i) = i.checked_sub(1).filter(|&i| range.end <= merged[i].end) else {
                return Err(std::io::Error::other(format!(
                    "{}: bytes {}..{} were not fetched",
                    self.source.location(),
                    range.start,
                    range.end
                )));
            };
            let from = (range.start - merged[i].start) as usize;
            let to = from + (range.end - range.start) as usize;
            held.insert(*key, Slot::Ready(got[i].slice(from..to)));
        }
        Ok(made)
    }

    /// Drops the fetched chunks of `block`.
    pub fn release(&self, block: usize) {
        if let Ok(mut held) = self.held.lock() {
            // A chunk another thread is fetching stays claimed.
            held.retain(|(b, _), slot| *b != block || matches!(slot, Slot::Pending));
        }
    }
}

/// A source that returned another number of bytes than asked is an error, not a panic.
fn check_len(location: &str, range: &Range<u64>, got: usize) -> std::io::Result<()> {
    let want = range.end - range.start;
    if got as u64 != want {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "{location}: asked for bytes {}..{} ({want} bytes), received {got}",
                range.start, range.end
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_near_ranges_up_to_the_request_size() {
        let r = coalesce(&[0..10, 15..20, 100..110, 105..108, 200..300], 5, 1000);
        assert_eq!(r, vec![0..20, 100..110, 200..300]);
        // The request size stops a merge; an overlap merges anyway.
        let r = coalesce(&[0..10, 12..30, 25..40], 5, 20);
        assert_eq!(r, vec![0..10, 12..40]);
        assert_eq!(coalesce(&[5..5, 3..4], 0, 10), vec![3..4]);
    }

    proptest! {
        #[test]
        fn coalesced_ranges_cover_every_range_and_respect_the_limits(
            ranges in proptest::collection::vec((0u64..10_000, 1u64..500), 0..60),
            max_gap in 0u64..300,
            max_request in 1u64..3000,
        ) {
            let ranges: Vec<Range<u64>> = ranges.iter().map(|&(s, l)| s..s + l).collect();
            let merged = coalesce(&ranges, max_gap, max_request);
            for w in merged.windows(2) {
                prop_assert!(w[0].end <= w[1].start, "sorted and apart: {:?}", w);
            }
            for r in &ranges {
                prop_assert!(merged.iter().any(|m| m.start <= r.start && r.end <= m.end));
            }
            // A merged range longer than the request size grew through an overlap (or is
            // one long range); every byte it reads lies within max_gap of a range.
            for m in &merged {
                let mut inside: Vec<&Range<u64>> =
                    ranges.iter().filter(|r| m.start <= r.start && r.end <= m.end).collect();
                inside.sort_unstable_by_key(|r| r.start);
                if m.end - m.start > max_request {
                    let long = inside.iter().any(|r| r.end - r.start > max_request);
                    let overlap = inside.windows(2).any(|w| w[1].start < w[0].end);
                    prop_assert!(long || overlap, "{:?} from {:?}", m, inside);
                }
                let mut end = m.start;
                for r in &inside {
                    prop_assert!(r.start <= end + max_gap);
                    end = end.max(r.end);
                }
                prop_assert_eq!(end, m.end);
            }
        }
    }
}
