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
    for (d, h) in device.iter().zip(host.iter_mut()) {
        download_rows(stream, block, comm, d, h, false)?;
    }
    block.exchange_all_during(comm, host.each_mut().map(|h| &mut **h), &mut |_| {});
    for (d, h) in device.iter_mut().zip(host.iter()) {
        upload_ghost_rows(stream, block, comm, d, h)?;
    }
    Ok(())
}

/// The rows of `block` the exchange along y sends, copied from `device` into `host` (both
/// stored arrays of `block`); with `ghosts_too` the ghost rows it receives as well, for a host
/// exchange that keeps some entries of them.
pub fn download_rows<T: Real>(
    stream: &Arc<CudaStream>,
    block: &Block,
    comm: &dyn Comm,
    device: &CudaSlice<T>,
    host: &mut [T],
    ghosts_too: bool,
) -> Result<()> {
    let (sent, received) = row_ranges(block, comm);
    let rows = sent.iter().chain(received.iter().filter(|_| ghosts_too));
    for r in rows {
        stream.memcpy_dtoh(&device.slice(r.clone()), &mut host[r.clone()]).map_err(driver_err("download"))?;
    }
    Ok(())
}

/// The ghost rows of `block` the exchange along y receives, copied from `host` into `device`.
pub fn upload_ghost_rows<T: Real>(
    stream: &Arc<CudaStream>,
    block: &Block,
    comm: &dyn Comm,
    device: &mut CudaSlice<T>,
    host: &[T],
) -> Result<()> {
    for r in row_ranges(block, comm).1 {
        stream.memcpy_htod(&host[r.clone()], &mut device.slice_mut(r)).map_err(driver_err("upload"))?;
    }
    Ok(())
}

/// The entries of the rows that the exchange along y sends and receives (stored indices).
fn row_ranges(block: &Block, comm: &dyn Comm) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    assert!(comm.dims()[0] == 1, "device blocks are whole rows");
    let nx = block.stored[0];
    let (sent, received) = block.traffic(comm, 1);
    let rows = |lines: Vec<super::Lines>| lines.into_iter().map(|(.., r)| r.start * nx..r.end * nx).collect();
    (rows(sent), rows(received))
}
