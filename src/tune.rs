//! `sim tune CASE`: the block-shape sweep. Times the case's solver on the CUDA device for a
//! grid of block shapes in each kernel variant, prints the table, and keeps the fastest shape
//! per device, solver, scheme, precision and variant in the kernel cache folder, so that later
//! runs and benchmarks whose case (or command line) sets no `gpu.block` use it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::case::Case;
use crate::cuda::{Flux, Gpu, GpuOptions, Variant};
use crate::error::{Result, SimError, input};
use crate::real::Precision;
use crate::solvers::Device;

/// What `sim tune` sweeps.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    pub case: PathBuf,
    pub precision: Option<Precision>,
    /// Minimum timed seconds per block shape.
    pub seconds: f64,
    /// Block shapes to time (default: [`candidates`]).
    pub blocks: Option<Vec<[u32; 2]>>,
    /// Variants to time (default: both).
    pub variant: Option<Variant>,
}

/// Block shapes of the default sweep: widths 8 to 1024 and heights 1 to 32 (GPU Ocean swept
/// 4 to 32 each way), from 32 threads (a warp) to 1024.
pub fn candidates() -> Vec<[u32; 2]> {
    let mut v = Vec::new();
    for bx in [8, 16, 32, 64, 128, 256, 512, 1024] {
        for by in [1, 2, 4, 8, 16, 32] {
            if (32..=1024).contains(&(bx * by)) {
                v.push([bx, by]);
            }
        }
    }
    v
}

/// The file of tuned shapes: a JSON object from [`key`] to `[bx, by]`.
pub fn cache_file() -> Option<PathBuf> {
    crate::cuda::cache_dir().map(|d| d.join("tuned_blocks.json"))
}

/// What a tuned shape holds for: device, solver (and scheme or method), precision, variant,
/// and for lskum's split flux the flux (its kernels take other shapes than the fused one's).
pub fn key(gpu: &Gpu, solver: &str, scheme: Option<&str>, precision: Precision, opts: &GpuOptions) -> String {
    let solver = scheme.map_or(solver.to_string(), |s| format!("{solver} {s}"));
    let flux = if opts.flux == Flux::Split { " split" } else { "" };
    format!("{} | {solver} | {} | {}{flux}", gpu.name, precision.name(), opts.variant.name())
}

/// The tuned shapes in `path`; none where the file does not exist (nothing is tuned yet). A
/// file that is not such a map is an error naming it, rather than ignored (its shapes would
/// silently not be used) or overwritten by `sim tune` (its other entries would be lost).
fn read(path: &Path) -> Result<BTreeMap<String, [u32; 2]>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return input(format!("{}: cannot read the tuned block shapes: {e}", path.display())),
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        SimError::Input(format!(
            "{}: not a map of tuned block shapes (\"device | solver | precision | variant\": [bx, by]): {e}; \
             correct it, or remove it and run sim tune again",
            path.display()
        ))
    })
}

/// `opts` with the tuned block shape where it sets none, and a note saying so. A stored shape
/// that no kernel could take is an error naming the file.
pub fn resolve(
    gpu: &Gpu,
    opts: &GpuOptions,
    solver: &str,
    scheme: Option<&str>,
    precision: Precision,
) -> Result<(GpuOptions, Option<String>)> {
    let Some(file) = cache_file().filter(|_| opts.block.is_none()) else { return Ok((opts.clone(), None)) };
    let key = key(gpu, solver, scheme, precision, opts);
    match read(&file)?.get(&key) {
        Some(&block) => {
            let tuned = GpuOptions { block: Some(block), ..opts.clone() };
            tuned.validate().and_then(|()| gpu.check_block(block)).map_err(|e| {
                SimError::Input(format!("{}: entry {key:?}: {e}; run sim tune again or remove the entry", file.display()))
            })?;
            let note = format!("gpu.block: {block:?}, the fastest `sim tune` found on {} ({})", gpu.name, file.display());
            Ok((tuned, Some(note)))
        }
        None => Ok((opts.clone(), None)),
    }
}

/// Run the sweep; returns the table as text.
pub fn tune(o: &TuneOptions) -> Result<String> {
    crate::validate::timed_seconds(o.seconds)?;
    let (case, _) = Case::load(&o.case)?;
    let spec = case.solver.spec();
    let kind = case.solver.kind();
    if !spec.has_cuda() {
        return input(format!("sim tune: solver {kind} has no CUDA kernels"));
    }
    let precision = o.precision.unwrap_or(case.precision);
    // The case's own faults (a precision the solver lacks, a missing input file) are refused
    // once here, not reported as a shape that could not launch.
    spec.describe(precision)?;
    let gpu = Gpu::open("sim tune needs a CUDA device", "it times CUDA block shapes only")?;
    let scheme = spec.scheme_name();
    let blocks = o.blocks.clone().unwrap_or_else(candidates);
    let variants = o.variant.map_or(vec![Variant::L2, Variant::Shared], |v| vec![v]);
    let mut text = format!(
        "sim tune {} ({kind}{}, {}) on {}\n  variant  block        Mcells/s   s/step\n",
        o.case.display(),
        scheme.map(|s| format!(" {s}")).unwrap_or_default(),
        precision.name(),
        gpu.name
    );
    let mut best: Vec<(Variant, [u32; 2], f64)> = Vec::new();
    for &variant in &variants {
        let mut fastest: Option<([u32; 2], f64)> = None;
        for &block in &blocks {
            let opts = GpuOptions { variant, block: Some(block), ..case.gpu.clone() };
            let shape = format!("{} x {}", block[0], block[1]);
            let device = Device::Cuda(gpu.clone(), opts);
            let timed = crate::solvers::build_on(&case, precision, &device).and_then(|mut s| {
                crate::bench::time_steps(s.as_mut(), o.seconds, &device).map(|(_, t)| (s.mesh().len() as f64 / t / 1e6, t))
            });
            match timed {
                Ok((mcells, t)) => {
                    text += &format!("  {:<8} {shape:<11} {mcells:>9.1}   {t:.3e}\n", variant.name());
                    if fastest.is_none_or(|(_, m)| mcells > m) {
                        fastest = Some((block, mcells));
                    }
                }
                // A shape the device or the kernel cannot launch is a row, not the end.
                Err(SimError::Input(why)) => text += &format!("  {:<8} {shape:<11} not launchable: {why}\n", variant.name()),
                Err(e) => return Err(e),
            }
        }
        if let Some((block, mcells)) = fastest {
            best.push((variant, block, mcells));
        }
    }
    if best.is_empty() {
        return input(format!("sim tune: no block shape could be launched:\n{}", text.trim_end()));
    }
    // The table stays in a refusal: the timings are not lost with the file.
    let not_kept = |text: &str, why: String| SimError::Input(format!("{text}sim tune: the result is not kept: {why}"));
    let file = cache_file().ok_or_else(|| not_kept(&text, "no cache folder (set SIM_CACHE_DIR or HOME)".into()))?;
    let mut tuned = read(&file).map_err(|e| not_kept(&text, e.to_string()))?;
    for &(variant, block, mcells) in &best {
        tuned.insert(key(&gpu, kind, scheme, precision, &GpuOptions { variant, ..case.gpu.clone() }), block);
        text += &format!("fastest {}: {block:?} ({mcells:.1} Mcells/s)\n", variant.name());
    }
    let folder = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(|e| not_kept(&text, format!("cache folder {}: {e}", folder.display())))?;
    let json = serde_json::to_vec_pretty(&tuned).expect("a map of strings to pairs serialises");
    crate::io::write_atomic(&file, &json).map_err(|e| not_kept(&text, e.to_string()))?;
    text += &format!("kept in {} for runs that set no gpu.block\n", file.display());
    Ok(text)
}

/// `--blocks 16x8,32x4`.
pub fn parse_blocks(s: &str) -> Result<Vec<[u32; 2]>> {
    s.split(',')
        .map(|b| {
            let (x, y) = b.trim().split_once('x').unwrap_or((b.trim(), "1"));
            match (x.parse::<u32>(), y.parse::<u32>()) {
                (Ok(x), Ok(y)) if x > 0 && y > 0 => Ok([x, y]),
                (Ok(_), Ok(_)) => input(format!("--blocks {s}: {}: a block has at least one thread each way", b.trim())),
                _ => input(format!("--blocks {s}: give shapes as BXxBY, comma-separated (e.g. 16x8,32x4)")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sweep_and_block_lists() {
        let c = candidates();
        assert!(c.contains(&[16, 16]) && c.contains(&[32, 8]) && c.contains(&[1024, 1]));
        assert!(c.iter().all(|[x, y]| (32..=1024).contains(&(x * y))));
        assert_eq!(parse_blocks("16x8, 32x4,256").unwrap(), [[16, 8], [32, 4], [256, 1]]);
        assert!(parse_blocks("16x0").is_err_and(|e| e.to_string().contains("16x0: a block has at least one thread")));
        assert!(parse_blocks("a").is_err());
    }
}
