//! CUDA back end: device discovery, run-time compilation of the kernels in `kernels/` with
//! NVRTC (to a cubin for the device's architecture, cached on disk), and launch helpers.
//!
//! cudarc loads the driver and NVRTC at run time and panics when a library or symbol is
//! missing, so every entry point probes first and contains panics of the loader.

use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, sys::CUdevice_attribute};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError, input};
use crate::real::Precision;

/// Header compiled in front of every kernel file.
pub const COMMON: &str = include_str!("../kernels/common.cuh");
/// Kernel files, by name.
pub const KERNELS: &[(&str, &str)] = &[
    ("heat", include_str!("../kernels/heat.cu")),
    ("cavity", include_str!("../kernels/cavity.cu")),
    ("tridiag", include_str!("../kernels/tridiag.cu")),
    ("shallow_water_fbl", include_str!("../kernels/shallow_water_fbl.cu")),
    ("shallow_water_ctcs", include_str!("../kernels/shallow_water_ctcs.cu")),
    ("shallow_water_cdklm16", include_str!("../kernels/shallow_water_cdklm16.cu")),
    ("shallow_water_kp07", include_str!("../kernels/shallow_water_kp07.cu")),
    ("lskum", include_str!("../kernels/lskum.cu")),
];

/// The kernels of one file in `kernels/`: a typed handle per `__global__` function (those of
/// the common header included, which is compiled in front of every file). [`Gpu::kernels`]
/// loads all of them at once.
pub trait Kernel: Copy + Eq + std::fmt::Debug + 'static {
    /// The kernel file, as named in [`KERNELS`] (`kernels/<FILE>.cu`).
    const FILE: &'static str;
    /// Every kernel of the file.
    const ALL: &'static [Self];
    /// The kernel's name in the file.
    fn name(self) -> &'static str;
}

/// Declares the handle enum of a kernel file, one `Variant = "kernel_name"` per kernel, with
/// its [`Kernel`] implementation (so `ALL` and `name` list every variant).
macro_rules! kernel_handles {
    ($(#[$doc:meta])* $ty:ident in $file:literal { $($(#[$vdoc:meta])* $v:ident = $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $ty {
            $($(#[$vdoc])* $v,)*
        }

        impl Kernel for $ty {
            const FILE: &'static str = $file;
            const ALL: &'static [Self] = &[$(Self::$v,)*];
            fn name(self) -> &'static str {
                match self {
                    $(Self::$v => $name,)*
                }
            }
        }
    };
}

kernel_handles! {
    /// The kernels of `kernels/heat.cu`.
    HeatKernel in "heat" {
        /// `copy1d` of the common header: the bandwidth reference.
        Copy1d = "copy1d",
        Heat1d = "heat1d",
        Heat2dL2 = "heat2d_l2",
        Heat2dShared = "heat2d_shared",
    }
}

kernel_handles! {
    /// The kernels of `kernels/cavity.cu`.
    CavityKernel in "cavity" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        PredictorL2 = "cavity_predictor_l2",
        CorrectorL2 = "cavity_corrector_l2",
        PredictorShared = "cavity_predictor_shared",
        CorrectorShared = "cavity_corrector_shared",
        Walls = "cavity_walls",
    }
}

kernel_handles! {
    /// The kernels of `kernels/tridiag.cu`: the implicit heat methods.
    TridiagKernel in "tridiag" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        Explicit1d = "implicit_explicit1d",
        Explicit2d = "implicit_explicit2d",
        ThomasRows = "thomas_rows",
        ThomasInterleaved = "thomas_interleaved",
        SpikeLocal = "spike_local",
        SpikeInterfaces = "spike_interfaces",
        SpikeCorrections = "spike_corrections",
        SpikeFused32 = "spike_fused32",
        SpikeFused64 = "spike_fused64",
        SpikeFused128 = "spike_fused128",
        SpikeLine32 = "spike_line32",
        SpikeLine64 = "spike_line64",
        SpikeLine128 = "spike_line128",
        SpikeLineEdges = "spike_line_edges",
    }
}

kernel_handles! {
    /// The kernels of `kernels/shallow_water_fbl.cu`: FBL's fused step.
    FblKernel in "shallow_water_fbl" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        StepL2 = "fbl_step_l2",
        StepShared = "fbl_step_shared",
        /// The boundary passes of `kernels/shallow_water_fd.cuh`.
        FillNs = "sw_fd_fill_ns",
        FillEw = "sw_fd_fill_ew",
        Sponge = "sw_fd_sponge",
    }
}

kernel_handles! {
    /// The kernels of `kernels/shallow_water_ctcs.cu`: CTCS's fused step.
    CtcsKernel in "shallow_water_ctcs" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        StepL2 = "ctcs_step_l2",
        StepShared = "ctcs_step_shared",
        /// The boundary passes of `kernels/shallow_water_fd.cuh`.
        FillNs = "sw_fd_fill_ns",
        FillEw = "sw_fd_fill_ew",
        Sponge = "sw_fd_sponge",
    }
}

kernel_handles! {
    /// The kernels of `kernels/shallow_water_cdklm16.cu` (with the finite-volume header).
    Cdklm16Kernel in "shallow_water_cdklm16" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        PeriodicY = "fv_periodic_y",
        PeriodicX = "fv_periodic_x",
        Walls = "fv_walls",
        SpongeRows = "fv_sponge_rows",
        SpongeCols = "fv_sponge_cols",
        DtBlocks = "fv_dt_blocks",
        DtFinal = "fv_dt_final",
        Clock = "fv_clock",
        StageL2 = "cdklm16_stage_l2",
        StageShared = "cdklm16_stage_shared",
    }
}

kernel_handles! {
    /// The kernels of `kernels/shallow_water_kp07.cu` (with the finite-volume header).
    Kp07Kernel in "shallow_water_kp07" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        PeriodicY = "fv_periodic_y",
        PeriodicX = "fv_periodic_x",
        Walls = "fv_walls",
        SpongeRows = "fv_sponge_rows",
        SpongeCols = "fv_sponge_cols",
        DtBlocks = "fv_dt_blocks",
        DtFinal = "fv_dt_final",
        Clock = "fv_clock",
        StageL2 = "kp07_stage_l2",
        StageShared = "kp07_stage_shared",
    }
}

kernel_handles! {
    /// The kernels of `kernels/lskum.cu`: q-LSKUM on a point cloud (f64 whatever the
    /// precision it is compiled with).
    LskumKernel in "lskum" {
        /// `copy1d` of the common header.
        Copy1d = "copy1d",
        Timestep = "lskum_timestep",
        QVariables = "lskum_q_variables",
        QDerivatives = "lskum_q_derivatives",
        Inner = "lskum_inner",
        FluxFused = "lskum_flux_fused",
        FluxFusedShared = "lskum_flux_fused_shared",
        FluxGxPos = "lskum_flux_gxpos",
        FluxGxPosShared = "lskum_flux_gxpos_shared",
        FluxGxNeg = "lskum_flux_gxneg",
        FluxGxNegShared = "lskum_flux_gxneg_shared",
        FluxGyPos = "lskum_flux_gypos",
        FluxGyPosShared = "lskum_flux_gypos_shared",
        FluxGyNeg = "lskum_flux_gyneg",
        FluxGyNegShared = "lskum_flux_gyneg_shared",
        Update = "lskum_update",
        ResidualPartials = "lskum_residual_partials",
    }
}

/// The names of the `__global__` functions defined in `src`, in order.
pub fn global_names(src: &str) -> Vec<&str> {
    src.match_indices("__global__ void ")
        .map(|(k, m)| {
            let mut rest = &src[k + m.len()..];
            // `__global__ void __launch_bounds__(...) name(`
            if let Some(bounds) = rest.strip_prefix("__launch_bounds__") {
                rest = after_parentheses(bounds);
            }
            rest[..rest.find('(').unwrap_or(rest.len())].trim()
        })
        .collect()
}

/// What follows the balanced parentheses that `s` starts with.
fn after_parentheses(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => return &s[i + 1..],
            ')' => depth -= 1,
            _ => {}
        }
    }
    ""
}

/// `rows` rows of blocks as a grid of `gy x gz` blocks with `gy` within CUDA's 65 535 and
/// `gy * gz >= rows`; the few rows past `rows` fall outside the domain.
fn fold_rows(rows: u64) -> (u64, u64) {
    let gz = rows.div_ceil(65_535).max(1);
    (rows.div_ceil(gz), gz)
}

/// A kernel file loaded on a device with every one of its kernels, taken by handle.
pub struct Kernels<K: Kernel> {
    functions: Vec<(K, CudaFunction)>,
}

impl<K: Kernel> Kernels<K> {
    /// The kernel `k` (a cheap handle to the loaded module).
    pub fn get(&self, k: K) -> CudaFunction {
        let found = self.functions.iter().find(|(h, _)| *h == k);
        found.map(|(_, f)| f.clone()).expect("Kernels holds every kernel of its file")
    }

    /// `opts` with the block the kernels `launched` can all run with. A kernel's registers
    /// per thread cap its threads per block (the driver refuses a larger launch): a block the
    /// case or `sim tune` set is refused with the kernel named, and the default block
    /// narrowed to the cap (a multiple of the 32-thread warp).
    pub fn fit_block(&self, gpu: &Gpu, opts: &GpuOptions, launched: &[K]) -> Result<GpuOptions> {
        use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as MOST;
        let mut tightest = None;
        for &k in launched {
            let most = self.get(k).get_attribute(MOST).map_err(driver_err("reading a kernel's thread limit"))? as u32;
            if tightest.is_none_or(|(_, m)| most < m) {
                tightest = Some((k, most));
            }
        }
        let [bx, by] = opts.block();
        let Some((k, most)) = tightest.filter(|&(_, most)| bx * by > most) else {
            return Ok(opts.clone());
        };
        if opts.block.is_some() {
            let registers = self.get(k).num_regs().map_err(driver_err("reading a kernel's registers"))?;
            return input(format!(
                "gpu.block: [{bx}, {by}] is {} threads; kernel {} uses {registers} registers per thread, so {} launches at most {most} threads per block of it",
                bx * by,
                k.name(),
                gpu.name
            ));
        }
        Ok(GpuOptions { block: Some([most / 32 * 32, 1]), ..opts.clone() })
    }
}

/// `gpu:` section of a case: kernel variant and block shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuOptions {
    #[serde(default)]
    pub variant: Variant,
    /// Threads per block along x (contiguous) and y; 1D kernels use `block[0]`. Unset: the
    /// shape `sim tune` found best on the device, else [`DEFAULT_BLOCK`] (see [`GpuOptions::block`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 2]>,
    /// Compile with --use_fast_math (off: IEEE results, no FMA contraction).
    #[serde(default)]
    pub fast_math: bool,
    /// lskum: the flux residual as one kernel or as four (one per split flux).
    #[serde(default)]
    pub flux: Flux,
}

/// `gpu.flux` (lskum): how the flux residual is split into kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Flux {
    /// One kernel computes the four split-flux derivatives of a point in one pass.
    #[default]
    Fused,
    /// Four kernels (Gx+, Gx-, Gy+, Gy-), each adding its derivative to the residual: fewer
    /// registers per kernel, higher occupancy (Mamidi et al.).
    Split,
}

impl Flux {
    pub fn name(self) -> &'static str {
        match self {
            Flux::Fused => "fused",
            Flux::Split => "split",
        }
    }
}

/// Block shape of a case that sets none and has no tuned one.
pub const DEFAULT_BLOCK: [u32; 2] = [512, 1];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// One thread per node; neighbours re-read through the L2 cache.
    #[default]
    L2,
    /// Shared-memory tile with a halo.
    Shared,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::L2 => "l2",
            Variant::Shared => "shared",
        }
    }
}

impl GpuOptions {
    /// The block shape kernels launch with.
    pub fn block(&self) -> [u32; 2] {
        self.block.unwrap_or(DEFAULT_BLOCK)
    }

    /// Checks that need no device.
    pub fn validate(&self) -> Result<()> {
        let [bx, by] = self.block();
        if bx == 0 || by == 0 || bx as u64 * by as u64 > 1024 {
            return input(format!(
                "gpu.block: [{bx}, {by}] must have positive sides and at most 1024 threads"
            ));
        }
        Ok(())
    }
}

/// NVRTC options for `precision` on architecture `sm_XY`.
pub fn nvrtc_options(precision: Precision, arch: &str, fast_math: bool) -> Vec<String> {
    let real = match precision {
        Precision::F32 => "float",
        Precision::F64 => "double",
    };
    let mut o = vec![format!("--gpu-architecture={arch}"), format!("-DREAL={real}")];
    // Without fast math, keep IEEE semantics and no FMA contraction, so results match the
    // CPU kernels, which evaluate the same expressions in the same order.
    o.push(if fast_math { "--use_fast_math".into() } else { "--fmad=false".into() });
    o
}

/// Header compiled after [`COMMON`] in front of the shallow-water files (`shallow_water_*`).
pub const SHALLOW_WATER: &str = include_str!("../kernels/shallow_water.cuh");

/// Header compiled after [`SHALLOW_WATER`] in front of the finite-difference files
/// ([`FD_FILES`]): their boundary kernels.
pub const SHALLOW_WATER_FD: &str = include_str!("../kernels/shallow_water_fd.cuh");
/// The kernel files of the finite-difference shallow-water schemes.
pub const FD_FILES: &[&str] = &["shallow_water_fbl", "shallow_water_ctcs"];
/// Header compiled after [`SHALLOW_WATER`] in front of the finite-volume files ([`FV_FILES`]).
pub const SHALLOW_WATER_FV: &str = include_str!("../kernels/shallow_water_fv.cuh");
/// The kernel files of the finite-volume shallow-water schemes.
pub const FV_FILES: &[&str] = &["shallow_water_cdklm16", "shallow_water_kp07"];

/// The headers compiled in front of kernel file `name`.
pub fn headers(name: &str) -> String {
    if FD_FILES.contains(&name) {
        format!("{COMMON}\n{SHALLOW_WATER}\n{SHALLOW_WATER_FD}")
    } else if FV_FILES.contains(&name) {
        format!("{COMMON}\n{SHALLOW_WATER}\n{SHALLOW_WATER_FV}")
    } else if name.starts_with("shallow_water_") {
        format!("{COMMON}\n{SHALLOW_WATER}")
    } else {
        COMMON.to_string()
    }
}

/// The full source of kernel file `name`.
pub fn source(name: &str) -> Option<String> {
    KERNELS.iter().find(|(n, _)| *n == name).map(|(_, s)| format!("{}\n{s}", headers(name)))
}

/// Run `f`, turning a panic of cudarc's library loader (a missing library or symbol) into an
/// error; the panic message is not printed.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> std::result::Result<T, String>) -> std::result::Result<T, String> {
    thread_local!(static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    // One hook for the process that is silent only on a thread inside `guarded`: swapping the
    // global hook here would silence the panics of other threads meanwhile (a failing test's
    // message, say).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.get() {
                prev(info)
            }
        }));
    });
    QUIET.set(true);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.set(false);
    r.unwrap_or_else(|payload| {
        // cudarc's message names the missing symbol.
        let why = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a missing library or symbol");
        Err(format!("{what}: the CUDA library is unusable ({why})"))
    })
}

/// Whether a CUDA driver library (libcuda.so) can be loaded.
pub fn driver_library_present() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// NVRTC's version, if the library can be loaded.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return None;
    }
    guarded("nvrtc", || {
        let (mut a, mut b) = (0, 0);
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b) }.result().map_err(|e| format!("{e:?}"))?;
        Ok((a, b))
    })
    .ok()
}

/// Compile `src` with NVRTC to a cubin; errors carry NVRTC's log.
pub fn compile_cubin(src: &str, options: &[String]) -> std::result::Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    if !unsafe { sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) not found; install the CUDA toolkit or `pip install nvidia-cuda-nvrtc` and add its lib directory to LD_LIBRARY_PATH".into());
    }
    guarded("nvrtc", || {
        let c_src = std::ffi::CString::new(src).map_err(|e| e.to_string())?;
        let prog = result::create_program(&c_src, None).map_err(|e| format!("{e:?}"))?;
        let compiled = unsafe { result::compile_program(prog, options) };
        let out = match compiled {
            Err(e) => {
                let log = unsafe { result::get_program_log(prog) }.unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                Err(format!("{e:?}\n{}", String::from_utf8_lossy(&log)))
            }
            Ok(()) => {
                let mut n = 0usize;
                unsafe { sys::nvrtcGetCUBINSize(prog, &mut n) }.result().map_err(|e| format!("{e:?}"))?;
                let mut buf = vec![0u8; n];
                unsafe { sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut _) }.result().map_err(|e| format!("{e:?}"))?;
                Ok(buf)
            }
        };
        let _ = unsafe { result::destroy_program(prog) };
        out
    })
}

/// 64-bit FNV-1a: a stable hash for the cache key.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for p in parts {
        for &b in *p {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x100000001b3);
    }
    h
}

/// Where compiled kernels are cached: `$SIM_CACHE_DIR`, else `$XDG_CACHE_HOME/sim`, else
/// `~/.cache/sim`.
pub fn cache_dir() -> Option<PathBuf> {
    let env = |k| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("SIM_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|p| p.join("sim")))
        .or_else(|| env("HOME").map(|p| p.join(".cache/sim")))
}

/// Cache file of a compilation: keyed by source, options (architecture, precision, flags)
/// and the NVRTC version.
pub fn cache_path(src: &str, options: &[String]) -> Option<PathBuf> {
    let v = nvrtc_version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_default();
    let opts = options.join(" ");
    let key = fnv1a(&[src.as_bytes(), opts.as_bytes(), v.as_bytes()]);
    cache_dir().map(|d| d.join(format!("kernel-{key:016x}.cubin")))
}

/// An open CUDA device with one stream.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub max_threads_per_block: u32,
    pub max_block: [u32; 2],
    /// Most dynamic shared memory one block may opt in to (bytes).
    pub max_shared_optin: u32,
}

impl Gpu {
    /// Open device 0, or say precisely what is missing (exit code 2); `context` starts the
    /// message and `hint` ends it: what asked for the device and what to do instead.
    pub fn open(context: &str, hint: &str) -> Result<Arc<Gpu>> {
        Self::open_ordinal(0).map_err(|why| SimError::Input(format!("{context}: {why}; {hint}")))
    }

    /// Whether device 0 opens (what `auto` asks).
    pub fn available() -> bool {
        Self::open_ordinal(0).is_ok()
    }

    /// Open the device of the `local`-th process on this machine (of an MPI run): device
    /// `local` modulo the number of devices. Otherwise what is missing.
    pub fn open_local(local: usize) -> std::result::Result<Arc<Gpu>, String> {
        let count = guarded("driver", || CudaContext::device_count().map_err(|e| format!("{e:?}"))).unwrap_or(1);
        Self::open_ordinal(local % count.max(1) as usize)
    }

    /// Open device `ordinal`, or say precisely what is missing.
    fn open_ordinal(ordinal: usize) -> std::result::Result<Arc<Gpu>, String> {
        if !driver_library_present() {
            return Err("no CUDA driver library (libcuda.so.1) found".into());
        }
        if nvrtc_version().is_none() {
            return Err("NVRTC (libnvrtc.so) not found; it ships with the CUDA toolkit".into());
        }
        guarded("driver", || {
            let ctx = CudaContext::new(ordinal).map_err(|e| format!("no usable device {ordinal} ({e:?})"))?;
            let e = |x: cudarc::driver::DriverError| format!("{x:?}");
            let attr = |a| ctx.attribute(a).map(|v| v as u32).map_err(e);
            Ok(Gpu {
                name: ctx.name().map_err(e)?,
                compute_capability: ctx.compute_capability().map_err(e)?,
                max_threads_per_block: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                max_block: [
                    attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                    attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                ],
                max_shared_optin: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
                stream: ctx.default_stream(),
                ctx,
            })
        })
        .map(Arc::new)
    }

    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// Reject block shapes this device cannot launch.
    pub fn check_block(&self, block: [u32; 2]) -> Result<()> {
        let [bx, by] = block;
        if bx > self.max_block[0] || by > self.max_block[1] || bx as u64 * by as u64 > self.max_threads_per_block as u64 {
            return input(format!(
                "gpu.block: [{bx}, {by}] exceeds what {} allows ({} threads per block, at most [{}, {}])",
                self.name, self.max_threads_per_block, self.max_block[0], self.max_block[1]
            ));
        }
        Ok(())
    }

    /// Grid of `block`-shaped blocks covering `nx x ny` nodes. CUDA allows 65 535 blocks
    /// along y: more rows of blocks are folded into z, which the kernels' `block_row()` reads.
    pub fn grid_2d(&self, nx: usize, ny: usize, block: [u32; 2]) -> Result<(u32, u32, u32)> {
        let (gx, rows) = ((nx as u64).div_ceil(block[0] as u64), (ny as u64).div_ceil(block[1] as u64));
        let (gy, gz) = fold_rows(rows);
        if gz > 65_535 || gx > i32::MAX as u64 {
            return input(format!(
                "gpu.block: [{}, {}] needs a grid of {gx} x {rows} blocks for {nx} x {ny} nodes, more than CUDA launches",
                block[0], block[1]
            ));
        }
        Ok((gx as u32, gy as u32, gz as u32))
    }

    /// Let kernel `f` launch with `bytes` of dynamic shared memory: above the default 48 KiB
    /// a kernel must opt in, and beyond the device's limit the block shape is refused.
    pub fn allow_shared(&self, f: &CudaFunction, bytes: u32, block: [u32; 2]) -> Result<()> {
        const DEFAULT_LIMIT: u32 = 48 * 1024;
        if bytes > self.max_shared_optin {
            return input(format!(
                "gpu.block: [{}, {}] with variant shared needs {bytes} bytes of shared memory per block; {} allows {}",
                block[0], block[1], self.name, self.max_shared_optin
            ));
        }
        if bytes > DEFAULT_LIMIT {
            use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX;
            f.set_attribute(MAX, bytes as i32).map_err(driver_err("raising the shared-memory limit"))?;
        }
        Ok(())
    }

    /// Compile (or load from the cache) the kernel file of `K` for this device and load every
    /// kernel of it; a kernel missing from the compiled file is an error naming both.
    pub fn kernels<K: Kernel>(&self, precision: Precision, fast_math: bool) -> Result<Kernels<K>> {
        let module = self.module(K::FILE, precision, fast_math)?;
        let functions = K::ALL
            .iter()
            .map(|&k| {
                let f = module.load_function(k.name()).map_err(|e| {
                    SimError::Run(format!("kernels/{}.cu: loading kernel {} on {}: {e:?}", K::FILE, k.name(), self.name))
                })?;
                Ok((k, f))
            })
            .collect::<Result<_>>()?;
        Ok(Kernels { functions })
    }

    /// Compile (or load from the cache) kernel file `name` for this device.
    fn module(&self, name: &str, precision: Precision, fast_math: bool) -> Result<Arc<CudaModule>> {
        let src = source(name).ok_or_else(|| SimError::Run(format!("no kernel file {name}")))?;
        let options = nvrtc_options(precision, &self.arch(), fast_math);
        let cached = cache_path(&src, &options);
        let load = |cubin: Vec<u8>| self.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(cubin));
        // A cached cubin the driver does not take (damaged, truncated) is compiled again and
        // replaced.
        if let Some(module) = cached.as_ref().and_then(|p| std::fs::read(p).ok()).and_then(|b| load(b).ok()) {
            return Ok(module);
        }
        let bytes =
            compile_cubin(&src, &options).map_err(|e| SimError::Run(format!("compiling kernels/{name}.cu: {e}")))?;
        if let Some(p) = &cached {
            // A failed cache write only costs a recompilation next time. The temporary file is
            // per process: processes compiling the same file at once (parallel tests) would
            // otherwise write into one another's file before the rename.
            let tmp = p.with_extension(format!("cubin.{}.tmp", std::process::id()));
            let _ = std::fs::create_dir_all(p.parent().unwrap_or(p))
                .and_then(|_| std::fs::write(&tmp, &bytes))
                .and_then(|_| std::fs::rename(&tmp, p));
        }
        load(bytes).map_err(|e| SimError::Run(format!("loading kernels/{name}.cu on {}: {e:?}", self.name)))
    }
}

/// Map a driver error of a running solver to a run failure.
pub fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> SimError + '_ {
    move |e| SimError::Run(format!("CUDA {what}: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::fold_rows;

    #[test]
    fn folded_rows_cover_the_grid_within_cudas_limits() {
        for rows in [1, 2, 65_534, 65_535, 65_536, 131_070, 131_071, 1 << 20, 65_535 * 65_535] {
            let (gy, gz) = fold_rows(rows);
            assert!(gy <= 65_535 && gz <= 65_535, "{rows}: {gy} x {gz}");
            assert!(gy * gz >= rows, "{rows}: {gy} x {gz} leaves rows out");
            // Folding wastes less than one row of blocks per layer.
            assert!(gy * gz - rows < gz, "{rows}: {gy} x {gz}");
        }
        assert_eq!(fold_rows(65_535), (65_535, 1));
    }
}
