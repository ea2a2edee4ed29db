//! What this machine offers: CPU threads and, without ever panicking, the CUDA driver.

/// Result of probing for a CUDA driver and device.
pub struct CudaProbe {
    pub driver_found: bool,
    pub driver_version: Option<i32>,
    pub devices: std::result::Result<Vec<String>, String>,
}

/// Probe the CUDA driver. cudarc panics when the library is missing or broken, so check
/// for the library first and contain any panic of the loader.
pub fn probe_cuda() -> CudaProbe {
    let driver_found = crate::cuda::driver_library_present();
    if !driver_found {
        return CudaProbe { driver_found, driver_version: None, devices: Err("no CUDA driver library (libcuda.so.1)".into()) };
    }
    let devices = crate::cuda::guarded("CUDA driver", || -> std::result::Result<Vec<String>, String> {
        let n = cudarc::driver::CudaContext::device_count().map_err(|e| format!("{e:?}"))?;
        (0..n)
            .map(|i| {
                let ctx = cudarc::driver::CudaContext::new(i as usize).map_err(|e| format!("{e:?}"))?;
                let name = ctx.name().map_err(|e| format!("{e:?}"))?;
                let (ma, mi) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
                let sms = ctx
                    .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .map_err(|e| format!("{e:?}"))?;
                let mem = ctx.total_mem().map_err(|e| format!("{e:?}"))? as f64 / (1u64 << 30) as f64;
                Ok(format!("{name} (compute capability {ma}.{mi}, {sms} SMs, {mem:.1} GiB)"))
            })
            .collect()
    });
    // Driver version, e.g. 13000 for CUDA 13.0.
    let mut v = 0;
    if devices.is_ok() && unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result().is_ok() {
        return CudaProbe { driver_found, driver_version: Some(v), devices };
    }
    CudaProbe { driver_found, driver_version: None, devices }
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
    s += &match (p.driver_found, p.driver_version) {
        (true, Some(v)) => format!("CUDA driver: found, CUDA {}.{}\n", v / 1000, v % 1000 / 10),
        (true, None) => "CUDA driver: found\n".into(),
        (false, _) => "CUDA driver: not found\n".into(),
    };
    s += &match crate::cuda::nvrtc_version() {
        Some((a, b)) => format!("NVRTC: {a}.{b}\n"),
        None => "NVRTC: not found\n".into(),
    };
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
