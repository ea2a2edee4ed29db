//! Ghost rows of blocks that live on a GPU (one per rank), staged through the host: the MPI
//! here is not assumed to be CUDA-aware. The blocks are whole rows of the grid (a process grid
//! `[1, P]`), so the lines to send and receive are contiguous in device memory.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::{Block, Comm};
use crate::cuda::driver_err;
use crate::error::Result;
use crate::real::Real;

/// The ghost rows of the device arrays `device` (each a stored block of `block`) from the
/// neighbouring ranks: the owned rows that [`Block::traffic`] sends are downloaded into the
/// host arrays `host` (of the same layout), exchanged there, and the ghost rows uploaded.
pub fn exchange_rows<T: Real, const N: usize>(
    stream: &Arc<CudaStream>,
    block: &Block,
    comm: &dyn Comm,
    mut device: [&mut CudaSlice<T>; N],
    mut host: [&mut [T]; N],
) -> Result<()> {
    assert!(comm.dims()[0] == 1, "device blocks are whole rows");
    let nx = block.stored[0];
    let rows = |r: &Range<usize>| r.start * nx..r.end * nx;
    let (sent, received) = block.traffic(comm, 1);
    for (d, h) in device.iter().zip(host.iter_mut()) {
        for r in sent.iter().map(|(.., lines)| rows(lines)) {
            stream.memcpy_dtoh(&d.slice(r.clone()), &mut h[r]).map_err(driver_err("download"))?;
        }
    }
    block.exchange_all_during(comm, host.each_mut().map(|h| &mut **h), &mut |_| {});
    for (d, h) in device.iter_mut().zip(host.iter()) {
        for r in received.iter().map(|(.., lines)| rows(lines)) {
            stream.memcpy_htod(&h[r.clone()], &mut d.slice_mut(r)).map_err(driver_err("upload"))?;
        }
    }
    Ok(())
}
