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
}

impl Cloud {
    pub fn len(&self) -> usize {
        self.x.len()
    }
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
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
