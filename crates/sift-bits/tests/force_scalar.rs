//! `SIFT_FORCE_SCALAR=1` pins the default level to scalar (its own test binary, so the
//! variable is set before the level is first read), and the default entry points then agree
//! with the explicitly forced fast levels.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::Rng;
use sift_bits::pack::pack;
use sift_bits::select::{select, select_into};
use sift_bits::unpack::{unpack_for_at, unpack_to};
use sift_bits::{Level, with_level};

#[test]
fn env_var_forces_scalar_default() {
    // SAFETY: this binary's only test sets the variable before any thread reads the
    // environment or the cached level.
    unsafe { std::env::set_var("SIFT_FORCE_SCALAR", "1") };
    assert_eq!(Level::active(), Level::Scalar);
    // Overrides still reach the fast paths in the same process.
    with_level(Level::detected(), || {
        assert_eq!(Level::active(), Level::detected())
    });

    let mut rng = Rng(42);
    let codes = rng.codes(13, 5000);
    let packed = pack(&codes, 13);
    let sel = rng.bitmap(5000, 0.3);
    let scalar = select(&packed, 13, &sel);
    let mut fast = Vec::new();
    assert!(select_into(Level::detected(), &packed, 13, &sel, &mut fast).is_ok());
    assert_eq!(scalar, Ok(fast));

    let mut a = vec![0u16; 5000];
    let mut b = vec![0u16; 5000];
    assert!(unpack_to(&packed, 13, &mut a).is_ok());
    assert!(unpack_for_at(Level::detected(), &packed, 13, 0, &mut b).is_ok());
    assert_eq!(a, b);
}
