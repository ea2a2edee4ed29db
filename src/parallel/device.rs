//! Ghost rows of blocks that live on a GPU (one per rank), staged through the host: the MPI
//! here is not assumed to be CUDA-aware. The blocks are whole rows of the grid (a process grid
//! `[1, P]`), so the lines to send and receive are contiguous in device memory.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::{Block, Comm};
use crate::cuda::driver_err;
use crate::error::Result;
use crate::real::Real;

/// The ghost rows of the device arrays `device` (each a stored block of `block`, whose ghost
/// layers are as wide on both sides of an axis) from the neighbouring ranks: the owned rows
/// next to them are downloaded into the host arrays `host` (of the same layout), exchanged
/// there, and the ghost rows uploaded.
pub fn exchange_rows<T: Real, const N: usize>(
    stream: &Arc<CudaStream>,
    block: &Block,
    comm: &dyn Comm,
    mut device: [&mut CudaSlice<T>; N],
    mut host: [&mut [T]; N],
) -> Result<()> {
    assert!(comm.dims()[0] == 1, "device blocks are whole rows");
    let ([nx, ny], [.., south, north]) = (block.stored, block.ghosts);
    let rows = |r: std::ops::Range<usize>| r.start * nx..r.end * nx;
    // (owned rows sent, ghost rows received) towards each neighbour along y.
    let lines = [(false, south, south..2 * south, 0..south), (true, north, ny - 2 * north..ny - north, ny - north..ny)];
    let lines: Vec<_> = lines.into_iter().filter(|(up, g, ..)| *g > 0 && comm.neighbour(1, *up).is_some()).collect();
    for (d, h) in device.iter().zip(host.iter_mut()) {
        for (.., sent, _) in &lines {
            let r = rows(sent.clone());
            stream.memcpy_dtoh(&d.slice(r.clone()), &mut h[r]).map_err(driver_err("download"))?;
        }
    }
    block.exchange_all_during(comm, host.each_mut().map(|h| &mut **h), &mut |_| {});
    for (d, h) in device.iter_mut().zip(host.iter()) {
        for (.., got) in &lines {
            let r = rows(got.clone());
            stream.memcpy_htod(&h[r.clone()], &mut d.slice_mut(r)).map_err(driver_err("upload"))?;
        }
    }
    Ok(())
}
