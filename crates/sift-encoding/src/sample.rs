//! The sample that schemes are estimated on (BtrBlocks): 10 runs of 64 values from 10
//! non-overlapping, equally sized parts of the block, at deterministic offsets so that the
//! same input always gives the same choice (and the same bytes).

use std::borrow::Cow;

/// Runs per sample.
pub(crate) const RUNS: usize = 10;
/// Values per run.
pub(crate) const RUN_LEN: usize = 64;

/// The values to estimate on: all of them when the input is small, else the runs.
pub(crate) fn sample<V: Clone>(values: &[V]) -> Cow<'_, [V]> {
    let n = values.len();
    if n <= 2 * RUNS * RUN_LEN {
        return Cow::Borrowed(values);
    }
    let part = n / RUNS;
    let slack = part - RUN_LEN;
    let mut out = Vec::with_capacity(RUNS * RUN_LEN);
    for r in 0..RUNS {
        // A fixed pseudo-random offset inside each part: deterministic, but not always the
        // start of the part (which would over-sample block-initial patterns).
        let offset = (r.wrapping_mul(0x9E37_79B9) ^ n) % (slack + 1);
        let start = r * part + offset;
        out.extend_from_slice(&values[start..start + RUN_LEN]);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_is_small_and_in_range() {
        let v: Vec<u32> = (0..65536).collect();
        let s = sample(&v);
        assert_eq!(s.len(), RUNS * RUN_LEN);
        // Runs are contiguous and come from distinct parts, in order.
        for r in 0..RUNS {
            let run = &s[r * RUN_LEN..(r + 1) * RUN_LEN];
            assert!(run.windows(2).all(|w| w[1] == w[0] + 1));
            assert_eq!(run[0] as usize / (65536 / RUNS), r);
        }
        assert_eq!(sample(&v[..100]).len(), 100);
    }
}
