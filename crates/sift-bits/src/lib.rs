//! Bit-level building blocks of Sift.
//!
//! This crate owns the bit layouts that the rest of Sift relies on and every kernel that
//! touches them, each fast path next to the scalar reference it must agree with:
//!
//! - [`pack`]: plain little-endian contiguous bit-packing (the stable API of the format).
//! - [`unpack`]: SIMD unpacking into `u8`/`u16`/`u32`/`u64`, with a frame-of-reference base.
//! - [`select`]: Parquet-Select on packed codes (PDEP/PEXT), fused select-and-unpack.
//! - [`compact`]: filtering decoded values by a bitmap (AVX-512 VPCOMPRESS).
//! - [`float`]: integers to scaled doubles (ALP decoding's inner loop).
//! - [`levels`]: bitmap transforms: `extend`, `deposit`, `compress`.
//! - [`predicate`]: range predicates; [`packed_cmp`] evaluates them on packed codes (fused
//!   unpack-and-compare), [`range`] on decoded values.
//! - [`byteslice`]: the ByteSlice layout and its early-stopping SIMD scan.
//! - [`bitmap`]: the bitmap type; [`dispatch`]: CPU detection and the forced levels.
//!
//! All `unsafe` code of Sift is here, in the x86 kernel files, each block with a `SAFETY:`
//! comment.

pub mod bitmap;
mod bitwriter;
pub mod byteslice;
pub mod compact;
pub mod dispatch;
pub mod error;
pub mod float;
pub mod levels;
pub mod pack;
pub mod packed_cmp;
pub mod predicate;
pub mod range;
pub mod select;
pub mod unpack;

pub use bitmap::Bitmap;
pub use dispatch::{Level, with_level};
pub use error::BitsError;
pub use predicate::Predicate;
