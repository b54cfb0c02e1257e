//! Bit-level building blocks of Sift.
//!
//! This crate owns the bit layouts that the rest of Sift relies on: plain little-endian
//! contiguous bit-packing ([`pack`]) and bitmaps ([`bitmap`]). Every later fast path (BMI
//! select, ByteSlice compare, SIMD unpacking) lives here too, next to the scalar reference it
//! must agree with.

pub mod bitmap;
pub mod pack;

pub use bitmap::Bitmap;
