//! Every CUDA kernel compiles with NVRTC in both precisions (no GPU needed). CI installs
//! NVRTC from PyPI (`nvidia-cuda-nvrtc`), so a broken kernel fails the build there.

use sim::cuda::{
    self, CavityKernel, Cdklm16Kernel, CtcsKernel, FblKernel, HeatKernel, KERNELS, Kernel, Kp07Kernel, LskumKernel,
    TridiagKernel,
};
use sim::real::Precision;

/// NVRTC present, or (outside CI) a printed note and `false`.
fn nvrtc_available() -> bool {
    if cuda::nvrtc_version().is_some() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI must provide NVRTC (see .ci/run)");
    eprintln!("note: NVRTC not found (pip install nvidia-cuda-nvrtc, then add its lib dir to LD_LIBRARY_PATH); kernel compile test skipped");
    false
}

#[test]
fn every_kernel_compiles_for_hopper_in_both_precisions() {
    if !nvrtc_available() {
        return;
    }
    for (name, _) in KERNELS {
        for precision in [Precision::F32, Precision::F64] {
            for fast_math in [false, true] {
                let opts = cuda::nvrtc_options(precision, "sm_90", fast_math);
                let cubin = cuda::compile_cubin(&cuda::source(name).unwrap(), &opts)
                    .unwrap_or_else(|e| panic!("kernels/{name}.cu ({opts:?}):\n{e}"));
                assert!(cubin.starts_with(b"\x7fELF"), "kernels/{name}.cu: not an ELF cubin");
            }
        }
    }
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    if !nvrtc_available() {
        return;
    }
    let src = format!("{}\nextern \"C\" __global__ void k(real* x) {{ x[0] = undefined_name; }}\n", cuda::COMMON);
    let err = cuda::compile_cubin(&src, &cuda::nvrtc_options(Precision::F64, "sm_90", false)).unwrap_err();
    assert!(err.contains("undefined_name"), "{err}");
    // The precision must be given.
    let err = cuda::compile_cubin(cuda::COMMON, &["--gpu-architecture=sm_90".to_string()]).unwrap_err();
    assert!(err.contains("-DREAL"), "{err}");
}

#[test]
fn cache_key_depends_on_source_and_options() {
    let o64 = cuda::nvrtc_options(Precision::F64, "sm_90", false);
    let o32 = cuda::nvrtc_options(Precision::F32, "sm_90", false);
    let a = cuda::cache_path("x", &o64);
    assert_eq!(a, cuda::cache_path("x", &o64));
    assert_ne!(a, cuda::cache_path("y", &o64));
    assert_ne!(a, cuda::cache_path("x", &o32));
}

/// The handles of `K` name exactly the `__global__` functions of its kernel file (with the
/// common header), each once.
fn handles_match_the_file<K: Kernel>() {
    let src = cuda::source(K::FILE).unwrap_or_else(|| panic!("{:?}: no kernel file {}", K::ALL, K::FILE));
    let globals = cuda::global_names(&src);
    let file = format!("kernels/{}.cu", K::FILE);
    for &k in K::ALL {
        let n = globals.iter().filter(|&&g| g == k.name()).count();
        assert_eq!(n, 1, "{k:?}: {file} (with common.cuh) defines `__global__ void {}(` {n} times", k.name());
    }
    for g in &globals {
        assert!(K::ALL.iter().any(|k| k.name() == *g), "{file}: kernel {g} has no handle in {}", std::any::type_name::<K>());
    }
}

#[test]
fn kernel_handles_match_the_kernel_files() {
    handles_match_the_file::<HeatKernel>();
    handles_match_the_file::<CavityKernel>();
    handles_match_the_file::<TridiagKernel>();
    handles_match_the_file::<FblKernel>();
    handles_match_the_file::<CtcsKernel>();
    handles_match_the_file::<Cdklm16Kernel>();
    handles_match_the_file::<Kp07Kernel>();
    handles_match_the_file::<LskumKernel>();
    // Every kernel file has its handles.
    let mut files: Vec<&str> = KERNELS.iter().map(|(name, _)| *name).collect();
    files.sort();
    let mut covered = vec![
        HeatKernel::FILE,
        CavityKernel::FILE,
        TridiagKernel::FILE,
        FblKernel::FILE,
        CtcsKernel::FILE,
        Cdklm16Kernel::FILE,
        Kp07Kernel::FILE,
        LskumKernel::FILE,
    ];
    covered.sort();
    assert_eq!(files, covered, "kernel files without a handle enum");
    // The parser sees what it should.
    assert_eq!(cuda::global_names(cuda::COMMON), ["copy1d"]);
    let bounded = "extern \"C\" __global__ void __launch_bounds__(T(32), 4) k(real* x) {}\n__global__ void j(int n) {}";
    assert_eq!(cuda::global_names(bounded), ["k", "j"]);
}
