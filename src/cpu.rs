//! `cpu:` section of a case: how the CPU back end runs the kernels, and what it knows of the
//! machine's caches.

use serde::{Deserialize, Serialize};

use crate::error::{Result, input};
use crate::numerics::temporal::Tiling;

/// `cpu:` section of a case.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuOptions {
    /// Steps per sweep of the temporally blocked stencils: `auto` (default), `off` or a
    /// number of steps.
    #[serde(default)]
    pub temporal_block: TemporalBlock,
    /// Transcendental functions of the lskum fluxes: `exact` (default) or `fast`. The CUDA
    /// back end ignores it (its kernels keep the device's functions).
    #[serde(default)]
    pub math: Math,
    /// Floating-point numbers below the normal range: `keep` (default, IEEE) or `flush`. The
    /// CUDA back end ignores it.
    #[serde(default)]
    pub subnormals: Subnormals,
}

/// `cpu.subnormals`: whether the CPU's worker threads compute with subnormal numbers.
///
/// A disturbance spreading into water or air at rest leads a front of values that shrink
/// towards zero, and their products fall below the normal range: the CPU takes many cycles
/// per subnormal operand or result. `flush` sets the worker threads' MXCSR flags FTZ (a
/// subnormal result becomes a zero of its sign) and DAZ (a subnormal operand reads as zero)
/// for the run, in both precisions, as GCC's `-ffast-math` does. Only values below the normal
/// range change (below 1.2e-38 in f32, 2.2e-308 in f64, and what is formed from them), so the
/// results no longer equal `keep`'s (or the CUDA back end's) bit for bit; they are still the
/// same for any thread count and on restart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Subnormals {
    /// IEEE 754 gradual underflow: the reference bits.
    #[default]
    Keep,
    /// Flush subnormal results to zero and read subnormal operands as zero (x86-64 only).
    Flush,
}

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) flags.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 1 << 15 | 1 << 6;

impl Subnormals {
    pub fn name(self) -> &'static str {
        match self {
            Subnormals::Keep => "keep",
            Subnormals::Flush => "flush",
        }
    }

    /// A pool of `threads` worker threads (0: one per CPU) that compute in this mode. Work
    /// given to it with `install` runs on those threads only.
    pub fn pool(self, threads: usize) -> Result<rayon::ThreadPool> {
        let builder = rayon::ThreadPoolBuilder::new().num_threads(threads);
        let builder = match self {
            Subnormals::Keep => builder,
            Subnormals::Flush => {
                if !cfg!(target_arch = "x86_64") {
                    return input("cpu.subnormals: flush needs an x86-64 CPU (keep computes with subnormals)");
                }
                builder.start_handler(|_| flush_subnormals())
            }
        };
        builder.build().map_err(|e| crate::error::SimError::Run(format!("cannot start {threads} threads: {e}")))
    }
}

/// Sets FTZ and DAZ in the calling thread's MXCSR (x86-64; elsewhere [`Subnormals::pool`]
/// refuses `flush` before any thread starts).
fn flush_subnormals() {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr = 0u32;
        // SAFETY: stmxcsr and ldmxcsr read and write the thread's own SSE control register;
        // FTZ and DAZ change how far results underflow, nothing that memory safety relies on.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
            csr |= FTZ_DAZ;
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
        }
    }
}

/// `cpu.math`: how the lskum flux residual evaluates exp, ln and erf.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Math {
    /// std and libm, one edge end at a time: the reference bits.
    #[default]
    Exact,
    /// Branch-free versions within 1 ulp of them, a batch of edge ends at a time in AVX-512 or
    /// AVX2 where the CPU has it. The results no longer equal `exact`'s bit for bit, but do
    /// not depend on the SIMD level.
    // (The functions: `crate::numerics::fast_math`; the SIMD level: `Simd::detect`. Not
    // links here: clap prints this text in --help.)
    Fast,
}

impl Math {
    pub fn name(self) -> &'static str {
        match self {
            Math::Exact => "exact",
            Math::Fast => "fast",
        }
    }
}

/// The widest vector instructions the CPU offers of those the kernels are built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    Avx512,
    Avx2,
    /// The portable build (SSE2 on x86-64).
    None,
}

impl Simd {
    /// What this CPU has (the run-time check the dispatching kernels make).
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Simd::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Simd::Avx2;
            }
        }
        Simd::None
    }

    pub fn name(self) -> &'static str {
        match self {
            Simd::Avx512 => "avx512",
            Simd::Avx2 => "avx2",
            Simd::None => "none",
        }
    }
}

/// `cpu.temporal_block`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TemporalBlock {
    /// Depth and bands chosen from the cache sizes and the thread count.
    #[default]
    Auto,
    /// One sweep per step.
    Off,
    /// This many steps per sweep.
    Steps(usize),
}

/// The range of steps per sweep `auto` chooses from: below 8 the gain is small, beyond 32 it
/// no longer grows (measured on heat2d).
const AUTO_DEPTH: (usize, usize) = (8, 32);

/// The deepest sweep accepted.
pub const MAX_TEMPORAL_BLOCK: usize = 1024;

impl CpuOptions {
    pub fn validate(&self) -> Result<()> {
        self.validate_as("cpu.temporal_block")
    }

    /// [`CpuOptions::validate`] naming the temporal block as `key` (`sim bench`'s flag).
    pub fn validate_as(&self, key: &str) -> Result<()> {
        if let TemporalBlock::Steps(k) = self.temporal_block
            && !(1..=MAX_TEMPORAL_BLOCK).contains(&k)
        {
            return input(format!("{key}: {k} steps; give auto, off or 1 to {MAX_TEMPORAL_BLOCK}"));
        }
        Ok(())
    }
}

impl TemporalBlock {
    /// The tiling of rows `nx` wide with `node_bytes` per node and level (all fields of a
    /// level), for steps of `levels_per_step` levels, run on `threads` threads; None when off.
    /// One band whose levels the threads share as a pipeline, or one band per thread where a
    /// sweep has fewer than two levels per thread. `auto` takes as many levels per sweep as
    /// rows fit in the L2 caches of the threads (a sweep keeps about that many rows of each
    /// of the two level buffers in flight, the older ones in L3), between 8 and 32 steps: on
    /// a 1 MiB L2, 32 for heat2d's 4096-wide rows of f64 on two threads.
    pub fn tiling(self, nx: usize, node_bytes: usize, levels_per_step: usize, threads: usize) -> Option<Tiling> {
        let threads = threads.max(1);
        let steps = match self {
            TemporalBlock::Off => return None,
            TemporalBlock::Steps(k) => k,
            TemporalBlock::Auto => {
                let rows = threads * l2_bytes() / (nx.max(1) * node_bytes);
                (rows / levels_per_step).clamp(AUTO_DEPTH.0, AUTO_DEPTH.1)
            }
        };
        if steps * levels_per_step >= 2 * threads {
            // No more stages than hardware threads: a stage waits for its neighbours by
            // spinning, and with more stages than cores it spins while the one it waits for
            // is preempted (20-30 times slower with 8 threads on 2 cores).
            let hardware = std::thread::available_parallelism().map_or(threads, |n| n.get());
            return Some(Tiling::pipelined_steps(nx, steps, levels_per_step, threads.min(hardware)));
        }
        Some(Tiling::for_steps(nx, steps, levels_per_step, threads))
    }

    /// The tiling of a line of `n` values of `bytes` each on `threads` threads; None when off.
    /// Bands of an eighth of one core's L2 cache per level buffer (16 Ki values of f64 on a
    /// 1 MiB L2), at least one per thread; `auto` takes 32 steps per sweep.
    pub fn tiling_1d(self, n: usize, bytes: usize, threads: usize) -> Option<Tiling> {
        let depth = match self {
            TemporalBlock::Off => return None,
            TemporalBlock::Steps(k) => k,
            TemporalBlock::Auto => AUTO_DEPTH.1,
        };
        let width = l2_bytes() / (8 * bytes);
        Some(Tiling::new(n, depth, (n / width).max(threads)))
    }

    pub fn name(self) -> String {
        match self {
            TemporalBlock::Auto => "auto".into(),
            TemporalBlock::Off => "off".into(),
            TemporalBlock::Steps(k) => k.to_string(),
        }
    }
}

impl std::str::FromStr for TemporalBlock {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(TemporalBlock::Auto),
            "off" => Ok(TemporalBlock::Off),
            _ => s.parse().map(TemporalBlock::Steps).map_err(|_| format!("'{s}': give auto, off or a number of steps")),
        }
    }
}

impl Serialize for TemporalBlock {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            TemporalBlock::Steps(k) => s.serialize_u64(*k as u64),
            other => s.serialize_str(&other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for TemporalBlock {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Steps(usize),
            // YAML 1.1 reads an unquoted `off` as false.
            Switch(bool),
            Name(String),
        }
        let expected = "expected auto, off or a number of steps";
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(expected))? {
            Raw::Steps(k) => Ok(TemporalBlock::Steps(k)),
            Raw::Switch(false) => Ok(TemporalBlock::Off),
            Raw::Switch(true) => Err(serde::de::Error::custom(expected)),
            Raw::Name(name) => name.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Size of one core's L2 cache (Linux sysfs), or 1 MiB where the system does not say.
pub fn l2_bytes() -> usize {
    cache_bytes(2).unwrap_or(1 << 20)
}

/// Size of the last-level (L3) cache (Linux sysfs, read once), or 32 MiB where the system
/// does not say.
pub fn l3_bytes() -> usize {
    static L3: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *L3.get_or_init(|| cache_bytes(3).unwrap_or(32 << 20))
}

/// Size of the data or unified cache of `level` of CPU 0, from sysfs.
fn cache_bytes(level: u32) -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok().map(|s| s.trim().to_string());
        if read("level")? != level.to_string() || read("type")? == "Instruction" {
            return None;
        }
        let size = read("size")?;
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit()).unwrap_or(size.len()));
        let scale = match unit {
            "" => 1,
            "K" => 1 << 10,
            "M" => 1 << 20,
            _ => return None,
        };
        digits.parse::<usize>().ok().map(|n| n * scale)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_block_reads_names_and_numbers() {
        for (text, want) in [("auto", TemporalBlock::Auto), ("off", TemporalBlock::Off), ("8", TemporalBlock::Steps(8))] {
            let o: CpuOptions = serde_saphyr::from_str(&format!("temporal_block: {text}")).unwrap();
            assert_eq!(o.temporal_block, want);
            assert_eq!(text.parse::<TemporalBlock>().unwrap(), want);
        }
        assert!(serde_saphyr::from_str::<CpuOptions>("temporal_block: fast").is_err());
        assert!(serde_saphyr::from_str::<CpuOptions>("temporal_block: -2").is_err());
        let zero: CpuOptions = serde_saphyr::from_str("temporal_block: 0").unwrap();
        assert_eq!(zero.math, Math::Exact);
        assert!(zero.validate().unwrap_err().to_string().contains("cpu.temporal_block"));
    }

    #[test]
    fn math_reads_exact_and_fast() {
        for (text, want) in [("exact", Math::Exact), ("fast", Math::Fast)] {
            let o: CpuOptions = serde_saphyr::from_str(&format!("math: {text}")).unwrap();
            assert_eq!((o.math, o.math.name()), (want, text));
        }
        assert!(serde_saphyr::from_str::<CpuOptions>("math: bogus").is_err());
    }

    #[test]
    fn subnormals_reads_its_names() {
        assert_eq!(CpuOptions::default().subnormals, Subnormals::Keep);
        for (text, want) in [("keep", Subnormals::Keep), ("flush", Subnormals::Flush)] {
            let o: CpuOptions = serde_saphyr::from_str(&format!("subnormals: {text}")).unwrap();
            assert_eq!((o.subnormals, o.subnormals.name()), (want, text));
        }
        assert!(serde_saphyr::from_str::<CpuOptions>("subnormals: zero").is_err());
    }

    /// Subnormal results and operands of both precisions, on every worker thread of a pool.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_flushing_pool_flushes_subnormals_on_every_thread() {
        use std::hint::black_box;
        let results = |mode: Subnormals| {
            mode.pool(3).unwrap().broadcast(|_| {
                let (four, one) = (black_box(4.0), black_box(1.0));
                let f32_result = black_box(f32::MIN_POSITIVE) / four as f32;
                let f32_operand = black_box(f32::from_bits(1)) * one as f32;
                let f64_result = black_box(f64::MIN_POSITIVE) / four;
                let f64_operand = black_box(f64::from_bits(1)) * one;
                (f32_result, f32_operand, f64_result, f64_operand)
            })
        };
        let keep = results(Subnormals::Keep);
        let flush = results(Subnormals::Flush);
        assert_eq!((keep.len(), flush.len()), (3, 3));
        for r in keep {
            assert_eq!(r, (f32::MIN_POSITIVE / 4.0, f32::from_bits(1), f64::MIN_POSITIVE / 4.0, f64::from_bits(1)));
        }
        for r in flush {
            assert_eq!(r, (0.0, 0.0, 0.0, 0.0));
        }
        // The thread that built the pools computes as before.
        assert!(black_box(f32::MIN_POSITIVE) / black_box(4.0) != 0.0);
    }

    #[test]
    fn the_l2_cache_size_is_plausible() {
        let l2 = l2_bytes();
        assert!((64 << 10..=64 << 20).contains(&l2), "{l2}");
    }
}
