//! What this machine offers: CPU threads and, without ever panicking, the CUDA driver.

use crate::case::Backend;
use crate::error::{Result, input};

/// Result of probing for a CUDA driver and device.
pub struct CudaProbe {
    pub driver_found: bool,
    pub nvrtc_found: bool,
    pub devices: std::result::Result<Vec<String>, String>,
}

/// Probe the CUDA driver. cudarc panics when the library is missing or broken, so check
/// for the library first and contain any panic of the loader.
pub fn probe_cuda() -> CudaProbe {
    let driver_found = unsafe { cudarc::driver::sys::is_culib_present() };
    let nvrtc_found = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !driver_found {
        return CudaProbe { driver_found, nvrtc_found, devices: Err("no CUDA driver library (libcuda.so.1)".into()) };
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(|| -> std::result::Result<Vec<String>, String> {
        let n = cudarc::driver::CudaContext::device_count().map_err(|e| format!("{e:?}"))?;
        (0..n)
            .map(|i| {
                let ctx = cudarc::driver::CudaContext::new(i as usize).map_err(|e| format!("{e:?}"))?;
                let name = ctx.name().map_err(|e| format!("{e:?}"))?;
                let (ma, mi) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
                Ok(format!("{name} (compute capability {ma}.{mi})"))
            })
            .collect()
    });
    std::panic::set_hook(prev);
    let devices = r.unwrap_or_else(|_| Err("CUDA driver library is unusable (missing symbols)".into()));
    CudaProbe { driver_found, nvrtc_found, devices }
}

/// Decide the back end a run uses; returns its name and a note for the user.
pub fn resolve_backend(requested: Backend) -> Result<(&'static str, Option<String>)> {
    match requested {
        Backend::Cpu => Ok(("cpu", None)),
        Backend::Auto => Ok(("cpu", Some("backend auto: using the CPU (no CUDA kernels for this solver in this build)".into()))),
        Backend::Cuda => {
            let p = probe_cuda();
            match p.devices {
                Err(why) => input(format!("backend cuda: no usable GPU: {why}; use backend: cpu or auto")),
                Ok(d) if d.is_empty() => input("backend cuda: the CUDA driver reports no device; use backend: cpu or auto"),
                Ok(_) => input("backend cuda: this build has no CUDA kernels for this solver yet; use backend: cpu or auto"),
            }
        }
    }
}

/// Text of `sim info`.
pub fn report() -> String {
    let hw = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut s = format!(
        "sim {}\nCPU: {hw} hardware threads (rayon uses {} by default)\n",
        env!("CARGO_PKG_VERSION"),
        rayon::current_num_threads()
    );
    let p = probe_cuda();
    s += &format!("CUDA driver: {}\n", if p.driver_found { "found" } else { "not found" });
    s += &format!("NVRTC: {}\n", if p.nvrtc_found { "found" } else { "not found" });
    match p.devices {
        Ok(d) if d.is_empty() => s += "CUDA devices: none\n",
        Ok(d) => {
            for (i, name) in d.iter().enumerate() {
                s += &format!("CUDA device {i}: {name}\n");
            }
        }
        Err(why) => s += &format!("CUDA devices: none ({why})\n"),
    }
    s
}
