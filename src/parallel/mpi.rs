//! [`Comm`] over MPI (rsmpi on the system Open MPI): a 2D Cartesian communicator
//! (`MPI_Cart_create`) over `MPI_COMM_WORLD`, non-blocking point-to-point exchanges and
//! collective reductions.

use mpi::collective::SystemOperation;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{CartesianCommunicator, Communicator, Rank};
use mpi::traits::*;

use std::sync::Arc;

use super::{Comm, Incoming, Outgoing, Processes, Ranks, Reduce};

/// MPI is running: the universe (finalised when dropped) and `MPI_COMM_WORLD`.
pub struct Universe {
    universe: mpi::environment::Universe,
}

impl Universe {
    /// MPI initialised, when this process was started by an MPI launcher (`mpirun`); None
    /// otherwise, so that a plain `sim run` stays a serial run.
    pub fn start() -> Option<Universe> {
        launched().then(mpi::initialize).flatten().map(|universe| Universe { universe })
    }

    /// Run `f`; a panic (its message already printed) ends every rank with `MPI_Abort`:
    /// this rank alone unwinding would leave the others waiting for it in their next exchange.
    pub fn abort_on_panic<T>(&self, f: impl FnOnce() -> T) -> T {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| self.universe.world().abort(101))
    }
}

/// Whether this process was started by an MPI launcher.
pub fn launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

// SAFETY: used by the thread that drives the run only (MPI is initialised with
// Threading::Single; rayon workers never call MPI).
unsafe impl Send for Universe {}
unsafe impl Sync for Universe {}

impl Ranks for Universe {
    fn size(&self) -> usize {
        self.universe.world().size() as usize
    }
    fn rank(&self) -> usize {
        self.universe.world().rank() as usize
    }
    fn first_failure(&self, code: i32) -> Option<(usize, i32)> {
        first_failure(&self.universe.world(), code)
    }
}

impl Processes for Universe {
    /// Ranks keep their world numbers (no reordering); MPI_Cart_create numbers the last
    /// dimension fastest.
    fn grid(&self, dims: [usize; 2], periodic: [bool; 2]) -> Arc<dyn Comm> {
        let d = [dims[0] as i32, dims[1] as i32];
        let world = self.universe.world();
        let cart = world.create_cartesian_communicator(&d, &periodic, false).expect("every rank is on the grid");
        let c = cart.rank_to_coordinates(cart.rank());
        Arc::new(World { cart, dims, coords: [c[0] as usize, c[1] as usize] })
    }
}

/// The ranks of a run on their process grid.
pub struct World {
    cart: CartesianCommunicator,
    dims: [usize; 2],
    coords: [usize; 2],
}

// SAFETY: the communicator is a handle used by the thread that drives the run only (MPI is
// initialised with Threading::Single; rayon workers never call MPI).
unsafe impl Send for World {}
unsafe impl Sync for World {}

fn first_failure(c: &impl Communicator, code: i32) -> Option<(usize, i32)> {
    // Failing ranks offer their rank; the minimum picks the lowest, which then tells its code.
    let mine = if code != 0 { c.rank() } else { Rank::MAX };
    let mut lowest = Rank::MAX;
    c.all_reduce_into(&mine, &mut lowest, SystemOperation::min());
    if lowest == Rank::MAX {
        return None;
    }
    let mut theirs = code;
    c.process_at_rank(lowest).broadcast_into(&mut theirs);
    Some((lowest as usize, theirs))
}

impl Ranks for World {
    fn rank(&self) -> usize {
        self.cart.rank() as usize
    }
    fn size(&self) -> usize {
        self.cart.size() as usize
    }
    fn first_failure(&self, code: i32) -> Option<(usize, i32)> {
        first_failure(&self.cart, code)
    }
}

impl Comm for World {
    fn dims(&self) -> [usize; 2] {
        self.dims
    }
    fn coords(&self) -> [usize; 2] {
        self.coords
    }
    fn neighbour(&self, axis: usize, up: bool) -> Option<usize> {
        let (below, above) = self.cart.shift(axis as i32, 1);
        (if up { above } else { below }).map(|r| r as usize)
    }

    fn exchange(&self, sends: &[Outgoing], receives: &mut [Incoming], during: &mut dyn FnMut()) {
        mpi::request::multiple_scope(sends.len() + receives.len(), |scope, requests| {
            for (rank, tag, buf) in receives.iter_mut() {
                let p = self.cart.process_at_rank(*rank as Rank);
                requests.add(p.immediate_receive_into_with_tag(scope, &mut **buf, *tag));
            }
            for (rank, tag, data) in sends {
                let p = self.cart.process_at_rank(*rank as Rank);
                requests.add(p.immediate_send_with_tag(scope, *data, *tag));
            }
            during();
            let mut done = Vec::new();
            requests.wait_all(&mut done);
        });
    }

    fn all_reduce(&self, v: f64, op: Reduce) -> f64 {
        let mut out = 0.0;
        let op = match op {
            Reduce::Min => SystemOperation::min(),
            Reduce::Max => SystemOperation::max(),
            Reduce::Sum => SystemOperation::sum(),
        };
        self.cart.all_reduce_into(&v, &mut out, op);
        out
    }

    fn gather(&self, data: &[f64]) -> Vec<Vec<f64>> {
        let root = self.cart.process_at_rank(0);
        let n = data.len() as i32;
        if self.cart.rank() != 0 {
            root.gather_into(&n);
            root.gather_varcount_into(data);
            return Vec::new();
        }
        let mut counts = vec![0i32; self.size()];
        root.gather_into_root(&n, &mut counts[..]);
        let displs: Vec<i32> = counts.iter().scan(0, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
        let mut all = vec![0.0; counts.iter().sum::<i32>() as usize];
        let mut partition = mpi::datatype::PartitionMut::new(&mut all[..], counts.clone(), &displs[..]);
        root.gather_varcount_into_root(data, &mut partition);
        counts.iter().zip(&displs).map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec()).collect()
    }
}
