//! Boolean columns: random, constant and long runs.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sift_encoding::ValuePredicate;

use super::{Checked, Nulls, Rng, lengths, nulls, offsets, validity, with_nulls};

#[derive(Debug, Clone, Copy)]
pub enum BoolShape {
    /// True with this probability (per mille).
    Random(u16),
    Constant(bool),
    Runs {
        mean_run: u16,
    },
}

pub fn bool_shape() -> impl Strategy<Value = BoolShape> {
    prop_oneof![
        2 => (0u16..=1000).prop_map(BoolShape::Random),
        1 => any::<bool>().prop_map(BoolShape::Constant),
        1 => (1u16..500).prop_map(|mean_run| BoolShape::Runs { mean_run }),
    ]
}

#[derive(Debug, Clone)]
pub struct BoolCase {
    shape: BoolShape,
    len: usize,
    nulls: Nulls,
    offset: usize,
    seed: u64,
}

pub fn bool_case() -> impl Strategy<Value = BoolCase> {
    (bool_shape(), lengths(), nulls(), offsets(), any::<u64>()).prop_map(
        |(shape, len, nulls, offset, seed)| BoolCase {
            shape,
            len,
            nulls,
            offset,
            seed,
        },
    )
}

impl BoolCase {
    pub fn build(&self) -> ArrayRef {
        let mut rng = Rng::new(self.seed);
        let total = self.len + self.offset;
        let values: Vec<bool> = match self.shape {
            BoolShape::Random(p) => (0..total).map(|_| rng.chance(u32::from(p))).collect(),
            BoolShape::Constant(b) => vec![b; total],
            BoolShape::Runs { mean_run } => {
                let mut out = Vec::with_capacity(total);
                let mut v = rng.chance(500);
                while out.len() < total {
                    let run = 1 + rng.index(2 * usize::from(mean_run));
                    out.extend(std::iter::repeat_n(v, run));
                    v = !v;
                }
                out.truncate(total);
                out
            }
        };
        let valid = validity(self.nulls, total, &mut rng);
        let array: ArrayRef = Arc::new(BooleanArray::from(with_nulls(values, &valid)));
        array.slice(self.offset, self.len)
    }

    pub fn run(&self) -> Result<Checked, TestCaseError> {
        let c = Checked::encode(self.build(), format!("{self:?}"))?;
        c.check_round_trip()?;
        let input = c.input.clone();
        let bools = input.as_boolean();
        let mut answers = Vec::new();
        for value in [true, false] {
            let pred = ValuePredicate::Bool { value };
            answers.push(c.check_filter(
                &pred,
                &format!("{pred:?}"),
                |i| bools.value(i) == value,
                |i| bools.value(i).to_string(),
            )?);
        }
        let mut rng = Rng::new(self.seed ^ 0x0005_EED0_F00D);
        c.check_selections(&mut rng, &answers)?;
        Ok(c)
    }
}
