//! The CUDA kernels of `kernels/`, run on the CPU under an emulation of CUDA's execution
//! model (`tests/cuda_on_cpu/`: blocks in turn, the threads of a shared-memory block as
//! fibers meeting at each barrier, no FMA contraction), against the CPU back end, bit for bit.
//! This checks the kernels' indexing, partial blocks, halos, wall pass and arithmetic order
//! on machines without a GPU; `tests/gpu.rs` runs the same comparison on a device.
//! Needs a C++17 compiler (`c++`, or `$CXX`); CI installs one.

mod common;
use common::noise;

use std::path::PathBuf;
use std::process::Command;

use sim::real::Real;
use sim::solvers::cavity::kernels::{Coeffs, Fields};
use sim::solvers::heat::kernels::{ftcs1d, ftcs2d};

/// The harness built for `real` (float | double), or None (with a note) where no compiler is.
fn harness(real: &str) -> Option<PathBuf> {
    common::emulation::emulation().map(|e| e.harness(real))
}

fn bytes<T: Real>(v: &[T]) -> Vec<u8> {
    // SAFETY: f32/f64 are plain old data; the slice covers exactly len * size bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }.to_vec()
}

fn from_bytes<T: Real>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut v = vec![T::zero(); n];
    // SAFETY: as above; `v` holds n elements and `b` at least n * size bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>()) };
    v
}

/// Run `kernel` in the harness: scalars and fields in, fields after `steps` steps out.
#[allow(clippy::too_many_arguments)]
fn emulate<T: Real>(kernel: &str, variant: &str, block: [u32; 2], nx: usize, ny: usize, steps: usize, scalars: &[T], fields: &[&[T]]) -> Option<Vec<T>> {
    let real = if std::mem::size_of::<T>() == 4 { "float" } else { "double" };
    let exe = harness(real)?;
    let dir = exe.parent().unwrap().to_path_buf();
    let tag = format!("{kernel}_{variant}_{}x{}_{nx}x{ny}_{real}", block[0], block[1]);
    let (input, output) = (dir.join(format!("{tag}.in")), dir.join(format!("{tag}.out")));
    let mut b = bytes(scalars);
    for f in fields {
        b.extend(bytes(f));
    }
    std::fs::write(&input, b).unwrap();
    let args = [kernel, variant, &block[0].to_string(), &block[1].to_string(), &nx.to_string(), &ny.to_string(), &steps.to_string()];
    let status = Command::new(&exe).args(args).arg(&input).arg(&output).status().unwrap();
    assert!(status.success(), "harness {args:?}: {status}");
    Some(from_bytes(&std::fs::read(&output).unwrap()))
}

fn assert_bitwise<T: Real>(what: &str, got: &[T], want: &[T], nx: usize) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for k in 0..got.len() {
        assert!(
            // Widening f32 to f64 is exact, so equal f64 bits mean equal bits.
            got[k].f64().to_bits() == want[k].f64().to_bits(),
            "{what}: node ({}, {}) emulated {:?} vs CPU {:?}",
            k % nx,
            (k / nx) % (want.len() / nx).max(1),
            got[k],
            want[k]
        );
    }
}

/// Variants and block shapes: the default 512 x 1 (one partial block per row), narrow
/// blocks, and shared-memory tiles with partial blocks at both edges.
const LAUNCHES: &[(&str, [u32; 2])] = &[("l2", [512, 1]), ("l2", [8, 4]), ("shared", [16, 4]), ("shared", [8, 8])];

fn cavity_case<T: Real>(nx: usize, ny: usize) {
    let steps = 6;
    let c = Coeffs::<T>::new(1.3e-3, 0.031, 0.029, 0.01, 10.0, 1.0);
    let scalars = [c.dtdx, c.dtdy, c.nudx2, c.nudy2, c.c2dx, c.c2dy, c.u0];
    for &(variant, block) in LAUNCHES {
        // Noise everywhere, walls included: the first wall pass must rewrite every wall node.
        let mut f = Fields::<T>::initial(nx, ny, c.u0);
        f.u.copy_from_slice(&noise(nx * ny, 1));
        f.v.copy_from_slice(&noise(nx * ny, 2));
        f.p.copy_from_slice(&noise(nx * ny, 3));
        let Some(out) = emulate("cavity", variant, block, nx, ny, steps, &scalars, &[&f.u, &f.v, &f.p]) else { return };
        for _ in 0..steps {
            f.step(&c);
        }
        let n = nx * ny;
        for (name, k, want) in [("u", 0, &f.u[..]), ("v", 1, &f.v[..]), ("p", 2, &f.p[..])] {
            assert_bitwise(&format!("cavity {variant} {block:?} {nx}x{ny} {name}"), &out[k * n..(k + 1) * n], want, nx);
        }
    }
}

#[test]
fn cavity_kernels_match_the_cpu_bitwise() {
    cavity_case::<f64>(37, 23);
    cavity_case::<f32>(37, 23);
    // Wider than a 512-thread block, and only three rows.
    cavity_case::<f64>(600, 3);
}

fn heat_case<T: Real>(nx: usize, ny: usize) {
    let steps = 7;
    let r = T::of(if ny == 1 { 0.45 } else { 0.2 });
    let mut a: Vec<T> = noise(nx * ny, 4);
    // Zero boundary, as the solver keeps it (the kernels write zeros there).
    for j in 0..ny {
        for i in 0..nx {
            if i == 0 || i == nx - 1 || (ny > 1 && (j == 0 || j == ny - 1)) {
                a[j * nx + i] = T::zero();
            }
        }
    }
    let launches: &[(&str, [u32; 2])] = if ny == 1 { &[("l2", [64, 1])] } else { LAUNCHES };
    for &(variant, block) in launches {
        let kernel = if ny == 1 { "heat1d" } else { "heat2d" };
        let Some(out) = emulate(kernel, variant, block, nx, ny, steps, &[r], &[&a]) else { return };
        let (mut t, mut next) = (a.clone(), vec![T::zero(); nx * ny]);
        for _ in 0..steps {
            if ny == 1 { ftcs1d(&t, &mut next, r) } else { ftcs2d(&t, &mut next, nx, r) }
            std::mem::swap(&mut t, &mut next);
        }
        assert_bitwise(&format!("{kernel} {variant} {block:?} {nx}x{ny}"), &out, &t, nx);
    }
}

#[test]
fn heat_kernels_match_the_cpu_bitwise() {
    heat_case::<f64>(37, 23);
    heat_case::<f32>(37, 23);
    heat_case::<f64>(1001, 1);
    heat_case::<f32>(1001, 1);
}
