//! Point clouds as the solver holds them: structure of arrays, neighbour lists in CSR form,
//! the four split stencils and their least-squares check.
//!
//! flag_1: [`WALL`], [`INTERIOR`], [`OUTER`]. left/right: previous and next point on the same
//! boundary curve ([`NONE`] when absent). Reading and writing cloud files (the legacy, old,
//! point-input and sim formats) is [`crate::mesh::cloud_file`]; the generators of
//! `sim mesh` are in [`crate::mesh`].

use crate::error::{Result, input};

use super::kernels::LsSums;

pub const WALL: u8 = 0;
pub const INTERIOR: u8 = 1;
pub const OUTER: u8 = 2;

/// Sentinel for "no left/right neighbour".
pub const NONE: u32 = u32::MAX;

/// Compressed neighbour lists: the neighbours of point i are `idx[start[i]..start[i+1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    pub start: Vec<u32>,
    pub idx: Vec<u32>,
}

impl Csr {
    #[inline]
    pub fn of(&self, i: usize) -> &[u32] {
        &self.idx[self.start[i] as usize..self.start[i + 1] as usize]
    }
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A point cloud with its derived geometry.
#[derive(Clone, Debug, Default)]
pub struct Cloud {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub flag: Vec<u8>,
    pub shape: Vec<u32>,
    /// 0-based, [`NONE`] when absent.
    pub left: Vec<u32>,
    pub right: Vec<u32>,
    pub nx: Vec<f64>,
    pub ny: Vec<f64>,
    pub min_dist: Vec<f64>,
    pub conn: Csr,
    pub xpos: Csr,
    pub xneg: Csr,
    pub ypos: Csr,
    pub yneg: Csr,
    /// `file[f]`: the index here of the file's point `f`; empty while the points are in file
    /// order (see [`super::renumber`]).
    pub file: Vec<u32>,
}

impl Cloud {
    pub fn len(&self) -> usize {
        self.x.len()
    }
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// The index of the file's point `f`.
    #[inline]
    pub fn file_index(&self, f: usize) -> usize {
        if self.file.is_empty() { f } else { self.file[f] as usize }
    }

    /// The indices of the points in the order of the file (the order of outputs, checkpoints
    /// and reductions).
    pub fn file_order(&self) -> impl Iterator<Item = usize> + '_ {
        let renumbered = !self.file.is_empty();
        (0..self.len()).map(move |f| if renumbered { self.file[f] as usize } else { f })
    }

    /// Split the neighbour lists into the x+, x-, y+, y- stencils (spec 3.1), keeping the
    /// order of `conn`.
    pub fn build_stencils(&mut self) {
        let n = self.len();
        let mut s: [Csr; 4] = Default::default();
        for c in s.iter_mut() {
            c.start = Vec::with_capacity(n + 1);
            c.start.push(0);
            c.idx = Vec::with_capacity(self.conn.idx.len() / 2 + n);
        }
        for i in 0..n {
            let (nx, ny) = (self.nx[i], self.ny[i]);
            for &k in self.conn.of(i) {
                let dx = self.x[k as usize] - self.x[i];
                let dy = self.y[k as usize] - self.y[i];
                let ds = dx * ny - dy * nx;
                let dn = dx * nx + dy * ny;
                if ds <= 0.0 {
                    s[0].idx.push(k);
                }
                if ds >= 0.0 {
                    s[1].idx.push(k);
                }
                match self.flag[i] {
                    INTERIOR => {
                        if dn <= 0.0 {
                            s[2].idx.push(k);
                        }
                        if dn >= 0.0 {
                            s[3].idx.push(k);
                        }
                    }
                    WALL => s[3].idx.push(k),
                    _ => s[2].idx.push(k),
                }
            }
            for c in s.iter_mut() {
                c.start.push(c.idx.len() as u32);
            }
        }
        let [a, b, c, d] = s;
        self.xpos = a;
        self.xneg = b;
        self.ypos = c;
        self.yneg = d;
    }

    /// Every stencil a point uses must be non-empty with a non-singular least-squares matrix
    /// (D > 1e-12 S_ss S_nn), and so must the full stencil in the global frame.
    pub fn check_stencils(&self, at: &dyn Fn(usize) -> String) -> Result<()> {
        for i in 0..self.len() {
            let (nx, ny) = (self.nx[i], self.ny[i]);
            let mut list: Vec<(&str, &Csr, bool)> = vec![("full", &self.conn, false)];
            list.push(("x+", &self.xpos, true));
            list.push(("x-", &self.xneg, true));
            if self.flag[i] != WALL {
                list.push(("y+", &self.ypos, true));
            }
            if self.flag[i] != OUTER {
                list.push(("y-", &self.yneg, true));
            }
            for (name, st, local) in list {
                let ks = st.of(i);
                if ks.is_empty() {
                    return input(format!("{}: the {name} split stencil is empty", at(i)));
                }
                let mut ls = LsSums::<0>::new();
                for &k in ks {
                    let dx = self.x[k as usize] - self.x[i];
                    let dy = self.y[k as usize] - self.y[i];
                    let (ds, dn) = if local { (dx * ny - dy * nx, dx * nx + dy * ny) } else { (dx, dy) };
                    ls.add(ds, dn, 1.0, &[]);
                }
                let d = ls.det();
                if !(d > 1e-12 * ls.sss * ls.snn) {
                    return input(format!(
                        "{}: the least-squares matrix of the {name} stencil ({} neighbours) is singular (det {d:e})",
                        at(i),
                        ks.len()
                    ));
                }
            }
        }
        Ok(())
    }
}

// ---- the cloud in a checkpoint ----

use crate::real::Values;
use crate::solver::StateArray;

/// Checkpoint arrays that hold the cloud (all f64; indices 0-based, -1 for none), so that a
/// checkpoint alone continues a run: the point coordinates, normals and minimum distances,
/// the flags and boundary links, and the neighbour lists (CSR). The split stencils are
/// derived from these as on loading a file.
pub const ARRAYS: [&str; 11] = [
    "cloud_x",
    "cloud_y",
    "cloud_nx",
    "cloud_ny",
    "cloud_min_dist",
    "cloud_flag",
    "cloud_shape",
    "cloud_left",
    "cloud_right",
    "cloud_conn_start",
    "cloud_conn",
];

impl Cloud {
    /// The cloud as checkpoint arrays (see [`ARRAYS`]).
    pub fn to_arrays(&self) -> Vec<StateArray> {
        let f = |v: &[f64]| v.to_vec();
        let idx = |v: &[u32]| v.iter().map(|&k| if k == NONE { -1.0 } else { k as f64 }).collect();
        let values: [Vec<f64>; 11] = [
            f(&self.x),
            f(&self.y),
            f(&self.nx),
            f(&self.ny),
            f(&self.min_dist),
            self.flag.iter().map(|&k| k as f64).collect(),
            idx(&self.shape),
            idx(&self.left),
            idx(&self.right),
            idx(&self.conn.start),
            idx(&self.conn.idx),
        ];
        ARRAYS.iter().zip(values).map(|(name, v)| StateArray::other(name, Values::F64(v))).collect()
    }

    /// Whether `arrays` hold a cloud (checkpoints written before clouds were stored do not).
    pub fn in_arrays(arrays: &[StateArray]) -> bool {
        arrays.iter().any(|a| a.name == ARRAYS[0])
    }

    /// The cloud stored by [`Cloud::to_arrays`], checked as thoroughly as a cloud file: an
    /// error names the dataset or the point.
    pub fn from_arrays(arrays: &[StateArray]) -> Result<Cloud> {
        let get = |name: &str| -> Result<Vec<f64>> {
            let a = arrays.iter().find(|a| a.name == name);
            match a.map(|a| &a.values) {
                Some(Values::F64(v)) if a.unwrap().shape.len() == 1 => Ok(v.clone()),
                Some(_) => input(format!("dataset /fields/{name} is not a one-dimensional f64 array")),
                None => input(format!("missing dataset /fields/{name}")),
            }
        };
        let x = get(ARRAYS[0])?;
        let n = x.len();
        if n == 0 || n >= NONE as usize {
            return input(format!("dataset /fields/{}: {n} points", ARRAYS[0]));
        }
        // Integer arrays: whole numbers in [lo, hi), or -1 (none) where allowed.
        let ints = |name: &str, len: usize, hi: usize, none: bool| -> Result<Vec<u32>> {
            let v = get(name)?;
            if v.len() != len {
                return input(format!("dataset /fields/{name} has {} values, expected {len}", v.len()));
            }
            v.iter()
                .enumerate()
                .map(|(k, &d)| {
                    if none && d == -1.0 {
                        Ok(NONE)
                    } else if d.fract() == 0.0 && d >= 0.0 && d < hi as f64 {
                        Ok(d as u32)
                    } else {
                        input(format!("dataset /fields/{name}: value {d} at {k} is not an index below {hi}"))
                    }
                })
                .collect()
        };
        let reals = |name: &str| -> Result<Vec<f64>> {
            let v = get(name)?;
            if v.len() != n || !v.iter().all(|d| d.is_finite()) {
                return input(format!("dataset /fields/{name} must hold {n} finite values"));
            }
            Ok(v)
        };
        let start = ints(ARRAYS[9], n + 1, u32::MAX as usize, false)?;
        let links = get(ARRAYS[10])?.len();
        if start[0] != 0 || start.windows(2).any(|w| w[0] > w[1]) || start[n] as usize != links {
            return input(format!("dataset /fields/{} is not a valid list of offsets", ARRAYS[9]));
        }
        let mut c = Cloud {
            x: reals(ARRAYS[0])?,
            y: reals(ARRAYS[1])?,
            nx: reals(ARRAYS[2])?,
            ny: reals(ARRAYS[3])?,
            min_dist: reals(ARRAYS[4])?,
            flag: ints(ARRAYS[5], n, 3, false)?.into_iter().map(|k| k as u8).collect(),
            shape: ints(ARRAYS[6], n, u32::MAX as usize, true)?,
            left: ints(ARRAYS[7], n, n, true)?,
            right: ints(ARRAYS[8], n, n, true)?,
            conn: Csr { start, idx: ints(ARRAYS[10], links, n, false)? },
            ..Default::default()
        };
        let at = |i: usize| format!("point cloud stored in the checkpoint: point {}", i + 1);
        crate::mesh::cloud_file::check_stored(&c, &at)?;
        c.build_stencils();
        c.check_stencils(&at)?;
        Ok(c)
    }
}
