//! Ghost rows of blocks that live on a GPU (one per rank), staged through the host: the MPI
//! here is not assumed to be CUDA-aware. The blocks are whole rows of the grid (a process grid
//! `[1, P]`), so the lines to send and receive are contiguous in device memory.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::{Block, Comm};
use crate::cuda::driver_err;
use crate::error::Result;
use crate::real::Real;

/// The ghost rows of the device arrays `device` (each a stored block of `block`) from the
/// neighbouring ranks: the owned rows next to them are downloaded into the host arrays `host`
/// (of the same layout), exchanged there, and the ghost rows uploaded.
pub fn exchange_rows<T: Real, const N: usize>(
    stream: &Arc<CudaStream>,
    block: &Block,
    comm: &dyn Comm,
    mut device: [&mut CudaSlice<T>; N],
    mut host: [&mut [T]; N],
) -> Result<()> {
    assert!(block.ghosts[0] == 0 && block.ghosts[1] == 0, "device blocks are whole rows");
    let ([nx, ny], [.., south, north]) = (block.stored, block.ghosts);
    let row = |r: usize| r * nx..(r + 1) * nx;
    let rows = |lower: usize, upper: usize| [(south > 0).then_some(lower), (north > 0).then_some(upper)];
    for (d, h) in device.iter().zip(host.iter_mut()) {
        for r in rows(1, ny - 2).into_iter().flatten() {
            stream.memcpy_dtoh(&d.slice(row(r)), &mut h[row(r)]).map_err(driver_err("download"))?;
        }
    }
    block.exchange_all_during(comm, host.each_mut().map(|h| &mut **h), &mut |_| {});
    for (d, h) in device.iter_mut().zip(host.iter()) {
        for r in rows(0, ny - 1).into_iter().flatten() {
            stream.memcpy_htod(&h[row(r)], &mut d.slice_mut(row(r))).map_err(driver_err("upload"))?;
        }
    }
    Ok(())
}
