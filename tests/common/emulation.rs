//! The CPU emulation of CUDA in `tests/cuda_on_cpu/`, built once per state of its sources (and
//! of `kernels/`) under cargo's target/tmp: kernel harnesses for `tests/kernels_on_cpu.rs`, and
//! a stand-in for the CUDA driver library (`libcuda.so`) that the CUDA tests run against
//! where no real GPU is usable.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

use sim::cuda::Gpu;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The built emulation: `libcuda.so` (the driver), `harness_float`, `harness_double`.
pub struct Emulation {
    pub dir: PathBuf,
}

impl Emulation {
    pub fn harness(&self, real: &str) -> PathBuf {
        self.dir.join(format!("harness_{real}"))
    }
}

/// The emulation, or None with a note where no C++ compiler is (CI must have one).
pub fn emulation() -> Option<&'static Emulation> {
    static BUILT: OnceLock<Option<Emulation>> = OnceLock::new();
    BUILT.get_or_init(build).as_ref()
}

fn sources() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["tests/cuda_on_cpu", "tests/cuda_on_cpu/kernels", "kernels"] {
        for e in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap().flatten() {
            if e.path().is_file() {
                v.push(e.path());
            }
        }
    }
    v.sort();
    v
}

fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    h
}

fn build() -> Option<Emulation> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    if let Err(e) = Command::new(&cxx).arg("--version").output() {
        assert!(std::env::var_os("CI").is_none(), "CI must provide a C++ compiler (see .ci/run): {cxx}: {e}");
        eprintln!("note: no C++ compiler ({cxx}: {e}); the CPU emulation of CUDA is not built, its tests skip");
        return None;
    }
    let hash = sources().iter().fold(fnv(cxx.as_bytes(), 0xcbf29ce484222325), |h, p| fnv(&std::fs::read(p).unwrap(), h));
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(format!("cuda_on_cpu_{hash:016x}"));
    // Test binaries run at the same time: one builds, the others wait for it.
    let lock = std::fs::File::create(tmp.join("cuda_on_cpu.lock")).unwrap();
    lock.lock().unwrap();
    if !dir.join("done").exists() {
        compile(&cxx, &dir);
        std::fs::write(dir.join("done"), "").unwrap();
    }
    Some(Emulation { dir })
}

fn compile(cxx: &str, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("gen")).unwrap();
    // The kernel files without `extern "C"`, so that both precisions fit in one library,
    // each in its own namespace (see tests/cuda_on_cpu/register.h).
    for e in std::fs::read_dir(Path::new(ROOT).join("kernels")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap().replace("extern \"C\" ", "");
        std::fs::write(dir.join("gen").join(e.file_name()), text).unwrap();
    }
    let emu = Path::new(ROOT).join("tests/cuda_on_cpu");
    let flags = ["-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-fvisibility=hidden", "-pthread"];
    let run = |args: &[&std::ffi::OsStr]| {
        let o = Command::new(cxx).args(flags).arg("-I").arg(dir).arg("-I").arg(&emu).args(args).output().unwrap();
        assert!(o.status.success(), "{cxx} {args:?} failed:\n{}", String::from_utf8_lossy(&o.stderr));
    };
    let mut objects = Vec::new();
    let mut units: Vec<PathBuf> = vec![emu.join("emulator.cpp")];
    units.extend(std::fs::read_dir(emu.join("kernels")).unwrap().flatten().map(|e| e.path()));
    for unit in &units {
        let object = dir.join(format!("{}.o", unit.file_stem().unwrap().to_str().unwrap()));
        run(&["-c".as_ref(), unit.as_os_str(), "-o".as_ref(), object.as_os_str()]);
        objects.push(object);
    }
    let objs: Vec<&std::ffi::OsStr> = objects.iter().map(|o| o.as_os_str()).collect();
    let (driver_src, driver) = (emu.join("driver.cpp"), dir.join("libcuda.so.1"));
    let mut args: Vec<&std::ffi::OsStr> = vec!["-shared".as_ref(), "-Wl,-soname,libcuda.so".as_ref()];
    args.extend([driver_src.as_os_str(), "-o".as_ref(), driver.as_os_str()]);
    args.extend(&objs);
    run(&args);
    std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so")).unwrap();
    let harness = emu.join("harness.cpp");
    for real in ["float", "double"] {
        let exe = dir.join(format!("harness_{real}"));
        let define = format!("-DREAL={real}");
        let mut args: Vec<&std::ffi::OsStr> = vec![define.as_ref(), harness.as_os_str()];
        args.extend(["-o".as_ref(), exe.as_os_str()]);
        args.extend(&objs);
        run(&args);
    }
}

/// Where the CUDA tests of this process run.
pub enum Cuda {
    /// A real driver and device.
    Real(Arc<Gpu>),
    /// The emulated driver, loaded into this process; `sim` children get it on
    /// LD_LIBRARY_PATH.
    Emulated(Arc<Gpu>, &'static Emulation),
}

impl Cuda {
    pub fn gpu(&self) -> &Arc<Gpu> {
        match self {
            Cuda::Real(g) | Cuda::Emulated(g, _) => g,
        }
    }
    pub fn emulated(&self) -> bool {
        matches!(self, Cuda::Emulated(..))
    }
}

/// The state of CUDA for this test process, decided once: whether a real driver library
/// exists (checked before anything is loaded), and the device the tests use, if any.
pub struct Setup {
    pub real_driver: bool,
    pub cuda: Option<Cuda>,
    pub note: String,
}

pub fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let real_driver = sim::cuda::driver_library_present();
        let (cuda, note) = if real_driver {
            match Gpu::open_local(0) {
                Ok(g) => (Some(Cuda::Real(g)), "a real GPU".to_string()),
                Err(e) => (None, format!("no usable GPU ({e})")),
            }
        } else {
            match emulation() {
                None => (None, "no C++ compiler for the emulated driver".to_string()),
                Some(emu) => {
                    preload(&emu.dir.join("libcuda.so.1"));
                    match Gpu::open_local(0) {
                        Ok(g) => (Some(Cuda::Emulated(g, emu)), "the emulated CUDA driver (CPU)".to_string()),
                        Err(e) => (None, format!("the emulated driver is loaded but unusable ({e})")),
                    }
                }
            }
        };
        if cuda.is_none() {
            assert!(std::env::var_os("CI").is_none(), "CI must run the CUDA tests on the emulated driver: {note}");
        }
        // scripts/gpu_check.sh: on a GPU machine a test must not pass by skipping.
        if std::env::var_os("SIM_TESTS_NEED_GPU").is_some() {
            assert!(matches!(cuda, Some(Cuda::Real(_))), "SIM_TESTS_NEED_GPU is set but the CUDA tests would run on {note}");
        }
        Setup { real_driver, cuda, note }
    })
}

/// The CUDA device of the tests, with a note on stderr saying which it is, or None (with
/// the reason) where there is none.
pub fn cuda() -> Option<&'static Cuda> {
    let s = setup();
    match &s.cuda {
        Some(c) => eprintln!("note: CUDA tests run on {} ({})", s.note, c.gpu().name),
        None => eprintln!("note: CUDA tests skipped: {}", s.note),
    }
    s.cuda.as_ref()
}

/// Load `lib` (whose SONAME is libcuda.so) so that cudarc's dlopen("libcuda.so") finds it.
fn preload(lib: &Path) {
    unsafe extern "C" {
        fn dlopen(file: *const std::ffi::c_char, mode: std::ffi::c_int) -> *mut std::ffi::c_void;
    }
    const RTLD_NOW_GLOBAL: std::ffi::c_int = 0x002 | 0x100;
    let path = std::ffi::CString::new(lib.to_str().unwrap()).unwrap();
    // SAFETY: dlopen of a library built above; it is never closed.
    let handle = unsafe { dlopen(path.as_ptr(), RTLD_NOW_GLOBAL) };
    assert!(!handle.is_null(), "cannot load {}", lib.display());
}

/// The last checkpoint of run directory `d` in `dir`.
pub fn last_checkpoint(dir: &Path, d: &str) -> (sim::io::checkpoint::Meta, Vec<sim::solver::StateArray>) {
    sim::io::checkpoint::read(&sim::io::checkpoint::list(&dir.join(d)).pop().unwrap().1).unwrap()
}

/// `case.yaml` of `dir` run four ways, into `cpu` (CPU all the way), `gpu` (CUDA all the way),
/// `to_gpu` (CPU for `leg` steps, then restarted on CUDA) and `to_cpu` (the other way round).
pub fn run_across_back_ends(dir: &Path, leg: &str) {
    let run = |args: &[&str]| crate::common::ok(sim_cuda(dir, args));
    run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", "cpu"]);
    run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", "gpu", "--backend", "cuda"]);
    run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", "to_gpu", "--steps", leg]);
    run(&["run", "--restart", "to_gpu", "--backend", "cuda", "--quiet"]);
    run(&["run", "case.yaml", "--quiet", "--overwrite", "--out", "to_cpu", "--steps", leg, "--backend", "cuda"]);
    run(&["run", "--restart", "to_cpu", "--backend", "cpu", "--quiet"]);
}

/// Run `sim` with `args` in `dir` on this process's CUDA: with the emulated driver first on
/// LD_LIBRARY_PATH where the tests use it.
pub fn sim_cuda(dir: &Path, args: &[&str]) -> Output {
    sim_cuda_command(dir, args).output().unwrap()
}

/// The command of [`sim_cuda`], to add to.
pub fn sim_cuda_command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sim"));
    c.current_dir(dir).args(args);
    if let Some(Cuda::Emulated(_, emu)) = &setup().cuda {
        let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        c.env("LD_LIBRARY_PATH", format!("{}:{old}", emu.dir.display()));
    }
    c
}
