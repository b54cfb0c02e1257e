//! Bit-level building blocks of Sift.
//!
//! This crate owns the bit layouts that the rest of Sift relies on and every kernel that
//! touches them, each fast path next to the scalar reference it must agree with:
//!
//! - [`pack`]: plain little-endian contiguous bit-packing (the stable API of the format).
//! - [`unpack`]: SIMD unpacking into `u8`/`u16`/`u32`/`u64`, with a frame-of-reference base.
//! - [`select`]: Parquet-Select on packed codes (PDEP/PEXT), fused select-and-unpack;
//!   cache-line prefetches for readers that walk a buffer serially.
//! - [`compact`]: filtering decoded values by a bitmap (AVX-512 VPCOMPRESS); [`expand`],
//!   its inverse, spreads values over a bitmap's set bits (VPEXPAND).
//! - [`float`]: integers to scaled doubles (ALP decoding's inner loop).
//! - [`levels`]: bitmap transforms: `extend`, `deposit`, `compress`.
//! - [`predicate`]: range predicates; [`packed_cmp`] evaluates them on packed codes (fused
//!   unpack-and-compare), [`range`] on decoded values.
//! - [`code_set`]: membership of dictionary codes in a set of codes (VPERMI2B table lookups).
//! - [`byteslice`]: the ByteSlice layout and its early-stopping SIMD scan.
//! - [`bloom`]: a register-blocked Bloom filter with an AVX2 batch probe (join keys tested
//!   during a scan).
//! - [`extreme`]: the smallest or largest of 64-bit integers, masked by validity bits
//!   (`MIN`/`MAX` aggregates).
//! - [`lookup`]: dictionary codes mapped to 8-byte entries, small tables held in registers
//!   (VPERMI2Q).
//! - [`bitmap`]: the bitmap type; [`dispatch`]: CPU detection and the forced levels.
//!
//! # Where Sift's `unsafe` code is
//!
//! Every `unsafe` block has a `SAFETY:` comment saying why it holds. Most of them are in
//! this crate: the x86 kernels (SIMD intrinsics in `#[target_feature]` functions) and the
//! calls into them, made only at a [`Level`] that [`dispatch`] found the CPU to support.
//! Outside this crate there are two more places, each where safe code would cost speed or
//! cannot express the operation:
//!
//! - sift-encoding's decoders: stores into reserved capacity in the hot loops of
//!   `bytes.rs`, `fsst.rs` and `rle.rs`, and Arrow's unchecked array constructors in
//!   `column.rs` for offsets, views and UTF-8 the decoder has already checked; and
//!   `domain.rs`'s `bytemuck::Pod` for the `u64` newtype that holds doubles, so that their
//!   dictionaries go through [`lookup`] as `u64`s.
//! - sift-format's reader (`reader.rs`): `memmap2::Mmap::map`, `unsafe` because the
//!   mapped bytes could change if another process wrote the file. Sift files are
//!   immutable once written (the writer renames a finished file into place);
//!   `ReadOptions::mmap` turns the mapping off.
//!
//! sift-scan and the `sift` binary contain none (`#![forbid(unsafe_code)]`). Tests and
//! benchmarks are not counted: they set environment variables, read the CPU's time-stamp
//! counter and install a counting allocator.

pub mod bitmap;
mod bitwriter;
pub mod bloom;
pub mod byteslice;
pub mod code_set;
pub mod compact;
pub mod dispatch;
pub mod error;
pub mod expand;
pub mod extreme;
pub mod float;
pub mod levels;
pub mod lookup;
pub mod pack;
pub mod packed_cmp;
pub mod predicate;
pub mod range;
pub mod running_sum;
pub mod select;
pub mod unpack;

pub use bitmap::Bitmap;
pub use dispatch::{Level, with_level};
pub use error::BitsError;
pub use predicate::Predicate;
