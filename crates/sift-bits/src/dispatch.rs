//! Which instruction set the kernels run on, chosen once per process.
//!
//! Detection runs once and is cached in a [`OnceLock`]. `SIFT_FORCE_SCALAR=1` in the
//! environment pins the default to [`Level::Scalar`], so the same test binary exercises the
//! fallbacks. [`with_level`] overrides the level for the current thread, which lets one test
//! process compare every path that the CPU supports; a request above what the CPU has is
//! clamped down, so forcing a level can never execute an unsupported instruction.
//!
//! PDEP/PEXT are tracked apart from the SIMD level: AMD Zen 1/Zen 2 (family 0x17) and Hygon
//! (family 0x18) implement them in microcode at ~250 cycles, slower than the scalar loops, so
//! there BMI2 counts as absent even though CPUID reports it. Zen 3+ (family 0x19, 0x1A) is fast.

use std::cell::Cell;
use std::sync::OnceLock;

/// An instruction-set level, ordered from least to most capable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Portable Rust only: the reference every other path must agree with.
    Scalar,
    /// AVX2 (256-bit) kernels, plus BMI2 where it is fast.
    Avx2,
    /// AVX-512 F/BW/VL/VBMI/VBMI2 kernels, plus BMI2 where it is fast.
    Avx512,
}

/// What the CPU offers, detected once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Caps {
    /// Highest SIMD level the CPU supports.
    best: Level,
    /// BMI2 present and implemented in hardware (not Zen 1/2 microcode).
    fast_bmi2: bool,
    /// The level used when no thread override is set (honours `SIFT_FORCE_SCALAR`).
    default: Level,
}

static CAPS: OnceLock<Caps> = OnceLock::new();

thread_local! {
    static OVERRIDE: Cell<Option<Level>> = const { Cell::new(None) };
}

fn caps() -> Caps {
    *CAPS.get_or_init(|| {
        let best = detect_best();
        let forced = std::env::var("SIFT_FORCE_SCALAR").is_ok_and(|v| v == "1");
        Caps {
            best,
            fast_bmi2: detect_fast_bmi2(),
            default: if forced { Level::Scalar } else { best },
        }
    })
}

#[cfg(target_arch = "x86_64")]
fn detect_best() -> Level {
    use std::arch::is_x86_feature_detected as has;
    if has!("avx512f")
        && has!("avx512bw")
        && has!("avx512vl")
        && has!("avx512dq")
        && has!("avx512vbmi")
        && has!("avx512vbmi2")
        && has!("popcnt")
    {
        Level::Avx512
    } else if has!("avx2") && has!("popcnt") {
        Level::Avx2
    } else {
        Level::Scalar
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_best() -> Level {
    Level::Scalar
}

#[cfg(target_arch = "x86_64")]
fn detect_fast_bmi2() -> bool {
    use std::arch::is_x86_feature_detected as has;
    if !(has!("bmi1") && has!("bmi2") && has!("popcnt") && has!("lzcnt")) {
        return false;
    }
    !slow_pdep_family()
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_fast_bmi2() -> bool {
    false
}

/// True on AMD family 0x17 (Zen 1, Zen+, Zen 2) and Hygon family 0x18, whose PDEP/PEXT
/// are microcoded with a data-dependent latency of up to hundreds of cycles.
#[cfg(target_arch = "x86_64")]
fn slow_pdep_family() -> bool {
    use std::arch::x86_64::__cpuid;
    let leaf0 = __cpuid(0);
    let mut vendor = [0u8; 12];
    vendor[..4].copy_from_slice(&leaf0.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&leaf0.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&leaf0.ecx.to_le_bytes());
    if &vendor != b"AuthenticAMD" && &vendor != b"HygonGenuine" {
        return false;
    }
    family(__cpuid(1).eax) <= 0x18 && family(__cpuid(1).eax) >= 0x17
}

/// The display family from CPUID leaf 1 EAX: base family, plus the extended family when the
/// base family is 0xF (which it is for every Zen part).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn family(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xF;
    if base == 0xF {
        base + ((eax >> 20) & 0xFF)
    } else {
        base
    }
}

impl Level {
    /// The best level this CPU supports, ignoring overrides.
    pub fn detected() -> Level {
        caps().best
    }

    /// The level kernels use on this thread right now: the [`with_level`] override if one is
    /// active, else the detected level (or [`Level::Scalar`] under `SIFT_FORCE_SCALAR=1`).
    pub fn active() -> Level {
        OVERRIDE.with(Cell::get).unwrap_or_else(|| caps().default)
    }

    /// True if the CPU can run this level.
    pub fn is_supported(self) -> bool {
        self <= caps().best
    }

    /// This level, lowered to what the CPU supports. Kernels call this before dispatching, so
    /// an explicit request can never reach an instruction the CPU lacks.
    pub fn clamp(self) -> Level {
        self.min(caps().best)
    }

    /// Every level the CPU supports, lowest first (for tests and benchmarks).
    pub fn supported() -> Vec<Level> {
        [Level::Scalar, Level::Avx2, Level::Avx512]
            .into_iter()
            .filter(|l| l.is_supported())
            .collect()
    }

    /// True if kernels at this level may use PDEP/PEXT: any non-scalar level on a CPU with
    /// hardware BMI2.
    pub fn uses_bmi2(self) -> bool {
        self != Level::Scalar && caps().fast_bmi2
    }
}

/// True if the CPU has BMI2 implemented in hardware (false on Zen 1/2 even though CPUID
/// lists it).
pub fn fast_bmi2() -> bool {
    caps().fast_bmi2
}

/// Runs `f` compiled for the active [`Level`]'s instruction set: the plain loops inlined
/// into it (sums, products, comparisons, table lookups over slices) that LLVM vectorises
/// get AVX2 or AVX-512 code where the CPU has it, rather than the SSE2 of the baseline
/// target, with no hand-written kernel and the same source as the scalar path. Only what
/// LLVM inlines into the wrapper is compiled so: `f` itself only when marked
/// `#[inline(always)]` (a closure can be: called from one wrapper per level, a large
/// closure is not inlined on LLVM's own judgement), and the functions it calls only
/// when they are `#[inline(always)]` too; anything else runs as compiled for the baseline.
#[inline(always)]
pub fn compiled_for_active<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,popcnt")]
        fn avx512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2,popcnt")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        match Level::active() {
            // SAFETY: the active level is clamped to what the CPU was found to support
            // (`detect_best` checks each of these features).
            Level::Avx512 => return unsafe { avx512(f) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { avx2(f) },
            Level::Scalar => {}
        }
    }
    f()
}

/// Runs `f` with kernels on this thread forced to `level` (clamped to what the CPU supports).
/// The previous setting is restored afterwards, also if `f` unwinds.
pub fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Level>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(level.clamp()))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_decoding() {
        // Zen 2 (EPYC 7002): family 0x17; Zen 4: 0x19; Zen 5: 0x1A; Intel: 6.
        assert_eq!(family(0x0083_0F10), 0x17);
        assert_eq!(family(0x00A0_0F11), 0x19);
        assert_eq!(family(0x00B0_0F00), 0x1A);
        assert_eq!(family(0x0006_06A6), 6);
    }

    #[test]
    fn override_is_scoped_and_clamped() {
        let outer = Level::active();
        with_level(Level::Scalar, || assert_eq!(Level::active(), Level::Scalar));
        with_level(Level::Avx512, || {
            assert_eq!(Level::active(), Level::Avx512.clamp());
        });
        assert_eq!(Level::active(), outer);
        assert!(Level::supported().contains(&Level::Scalar));
    }
}
