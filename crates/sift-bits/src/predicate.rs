//! Comparison predicates on unsigned codes, shared by the packed and ByteSlice scans.
//!
//! Every predicate is an inclusive range test, or the negation of one (`≠`). Kernels only
//! implement the range test; `Predicate::range` reduces a predicate to it once per call,
//! after clamping the constants to the codes' width, so a constant beyond the width (e.g.
//! `< 300` on 8-bit codes) yields an all-true or all-false answer without a scan.

/// A comparison of each code `x` with constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// `x == c`
    Eq(u64),
    /// `x != c`
    Ne(u64),
    /// `x < c`
    Lt(u64),
    /// `x <= c`
    Le(u64),
    /// `x > c`
    Gt(u64),
    /// `x >= c`
    Ge(u64),
    /// `lo <= x <= hi` (SQL `BETWEEN`, inclusive)
    Between(u64, u64),
}

/// A predicate reduced for codes in `0..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Range {
    /// No code matches.
    Empty,
    /// Every code matches.
    All,
    /// Codes in `lo..=hi` match, with `lo <= hi <= max` and not both bounds trivial.
    In { lo: u64, hi: u64 },
    /// Codes outside `lo..=hi` match (same invariants).
    Out { lo: u64, hi: u64 },
}

impl Predicate {
    /// Evaluates the predicate on one value (the reference semantics).
    pub fn eval(self, x: u64) -> bool {
        match self {
            Predicate::Eq(c) => x == c,
            Predicate::Ne(c) => x != c,
            Predicate::Lt(c) => x < c,
            Predicate::Le(c) => x <= c,
            Predicate::Gt(c) => x > c,
            Predicate::Ge(c) => x >= c,
            Predicate::Between(lo, hi) => lo <= x && x <= hi,
        }
    }

    /// Reduces the predicate to a range test on codes in `0..=max`.
    pub(crate) fn range(self, max: u64) -> Range {
        let (lo, hi, negate) = match self {
            Predicate::Eq(c) => (c, c, false),
            Predicate::Ne(c) => (c, c, true),
            Predicate::Lt(0) => return Range::Empty,
            Predicate::Lt(c) => (0, c - 1, false),
            Predicate::Le(c) => (0, c, false),
            Predicate::Gt(u64::MAX) => return Range::Empty,
            Predicate::Gt(c) => (c + 1, u64::MAX, false),
            Predicate::Ge(c) => (c, u64::MAX, false),
            Predicate::Between(lo, hi) => (lo, hi, false),
        };
        let hi = hi.min(max);
        let inner = if lo > hi {
            Range::Empty
        } else if lo == 0 && hi == max {
            Range::All
        } else {
            Range::In { lo, hi }
        };
        match (inner, negate) {
            (r, false) => r,
            (Range::Empty, true) => Range::All,
            (Range::All, true) => Range::Empty,
            (Range::In { lo, hi }, true) => Range::Out { lo, hi },
            (Range::Out { lo, hi }, true) => Range::In { lo, hi },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_agrees_with_eval() {
        let preds = |c: u64, d: u64| {
            [
                Predicate::Eq(c),
                Predicate::Ne(c),
                Predicate::Lt(c),
                Predicate::Le(c),
                Predicate::Gt(c),
                Predicate::Ge(c),
                Predicate::Between(c, d),
            ]
        };
        for max in [0u64, 1, 7, 255] {
            for c in [0, 1, 3, 7, 8, 255, 256, u64::MAX] {
                for d in [0, 2, 7, 300, u64::MAX] {
                    for p in preds(c, d) {
                        let r = p.range(max);
                        for x in 0..=max {
                            let got = match r {
                                Range::Empty => false,
                                Range::All => true,
                                Range::In { lo, hi } => lo <= x && x <= hi,
                                Range::Out { lo, hi } => !(lo <= x && x <= hi),
                            };
                            assert_eq!(got, p.eval(x), "{p:?} max={max} x={x}");
                        }
                    }
                }
            }
        }
    }
}
