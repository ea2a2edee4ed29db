//! Initial conditions and bathymetries, as functions of position ([`At`]).

use std::f64::consts::PI;
use std::sync::Arc;

use crate::error::{Result, input};

use super::grid::{At, Physics};
use super::input_file::Inputs;
use super::params::{Bathymetry, HumpShape, InitialCondition, ShallowWaterParams};
use super::scheme::Initial;

/// Where GPU Ocean's test bump sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BumpPosition {
    /// Domain centre: on interior cell (nx/2, ny/2).
    Central,
    /// Cell (4, 4).
    Corner,
    /// Cell (nx - 4, ny - 4).
    UpperCorner,
}

/// GPU Ocean's regression bump (`testUtils.py`, spec §9.1): `exp(-(x² + y²) / s)` with
/// `s = 500 min(dx, dy)` (m²), where a cell's position is its index times the spacing.
pub fn bump(p: &Physics, position: BumpPosition) -> impl Fn(At) -> f64 + Sync + use<> {
    let (nx, ny, dx, dy) = (p.nx as f64, p.ny as f64, p.dx, p.dy);
    let (xc, yc) = match position {
        BumpPosition::Central => (nx * dx / 2.0, ny * dy / 2.0),
        BumpPosition::Corner => (4.0 * dx, 4.0 * dy),
        BumpPosition::UpperCorner => ((nx - 4.0) * dx, (ny - 4.0) * dy),
    };
    let s = 500.0 * dx.min(dy);
    move |at: At| {
        let x = dx * at.i as f64 - xc;
        let y = dy * at.j as f64 - yc;
        if (x * x + y * y).sqrt() < s { (-(x * x + y * y) / s).exp() } else { 0.0 }
    }
}

/// GPU Ocean's synthetic test bathymetry (spec §9.1), sampled by index:
/// `6 + 2 cos(0.3 (i + i / (sin(0.5 j) + 2.5))) + 2 sin(2 pi (i + j) / (2 ny))`.
pub fn test_bathymetry(ny: usize) -> impl Fn(At) -> f64 + Sync {
    let ny = ny as f64;
    move |at: At| {
        let (i, j) = (at.i as f64, at.j as f64);
        6.0 + 2.0 * (0.3 * (i + i / ((0.5 * j).sin() + 2.5))).cos() + 2.0 * (2.0 * PI * (i + j) / (2.0 * ny)).sin()
    }
}

/// Gridded data from a file, sampled by bilinear interpolation: cell-centred values wrap
/// across the seam of a periodic axis (the last and the first column are neighbours there);
/// elsewhere, and for corner values, the edge values hold beyond the edges.
pub struct Gridded {
    values: Vec<f64>,
    /// Columns and rows.
    n: [usize; 2],
    spacing: [f64; 2],
    /// Position of entry (0, 0) in cells: ½ for cell centres, 0 for cell corners.
    offset: f64,
    /// Periodic along x, along y.
    periodic: [bool; 2],
}

impl Gridded {
    /// `values` (`n[1]` rows of `n[0]`) at the cell centres or corners of the grid of `p`.
    pub fn new(values: Vec<f64>, n: [usize; 2], p: &Physics) -> Self {
        let offset = if n == [p.nx, p.ny] { 0.5 } else { 0.0 };
        Gridded { values, n, spacing: [p.dx, p.dy], offset, periodic: [p.sides.periodic_x(), p.sides.periodic_y()] }
    }

    pub fn at(&self, x: f64, y: f64) -> f64 {
        // The two entries along one axis and the weight of the second, the position snapped to
        // the entry it lies on to round-off.
        let axis = |pos: f64, a: usize| -> (usize, usize, f64) {
            let n = self.n[a];
            let wrap = self.periodic[a] && self.offset > 0.0;
            let f = pos / self.spacing[a] - self.offset;
            let f = if wrap { f } else { f.clamp(0.0, (n - 1) as f64) };
            let f = if (f - f.round()).abs() < 1e-9 { f.round() } else { f };
            let lo = f.floor();
            match wrap {
                true => {
                    let i0 = (lo as i64).rem_euclid(n as i64) as usize;
                    (i0, (i0 + 1) % n, f - lo)
                }
                false => (lo as usize, (lo as usize + 1).min(n - 1), f - lo),
            }
        };
        let ((i0, i1, wx), (j0, j1, wy)) = (axis(x, 0), axis(y, 1));
        let v = |i: usize, j: usize| self.values[j * self.n[0] + i];
        if wx == 0.0 && wy == 0.0 {
            return v(i0, j0);
        }
        (1.0 - wy) * ((1.0 - wx) * v(i0, j0) + wx * v(i1, j0)) + wy * ((1.0 - wx) * v(i0, j1) + wx * v(i1, j1))
    }

    /// Where the values are corners along a periodic axis, the first entry that differs from
    /// its image across the seam (the last column or row against the first): (row, column,
    /// value, image's value).
    pub fn seam_mismatch(&self) -> Option<(usize, usize, f64, f64)> {
        if self.offset > 0.0 {
            return None;
        }
        let [nx, ny] = self.n;
        let v = |i: usize, j: usize| self.values[j * nx + i];
        let x = (0..ny).filter(|_| self.periodic[0]).map(|j| (j, nx - 1, v(nx - 1, j), v(0, j)));
        let y = (0..nx).filter(|_| self.periodic[1]).map(|i| (ny - 1, i, v(i, ny - 1), v(i, 0)));
        x.chain(y).find(|(_, _, a, b)| a != b)
    }
}

type Sample = Arc<dyn Fn(At) -> f64 + Send + Sync>;

/// The initial state of a case as functions of position; [`Sources::initial`] lends them to a
/// scheme.
pub struct Sources {
    eta: Sample,
    hu: Sample,
    hv: Sample,
    depth: Sample,
}

impl Sources {
    pub fn initial(&self) -> Initial<'_> {
        Initial { eta: &*self.eta, hu: &*self.hu, hv: &*self.hv, depth: &*self.depth }
    }

    /// Read the case's file arrays (if any) from `inputs` and set up its initial condition;
    /// errors name the key and the file.
    pub fn new(params: &ShallowWaterParams, inputs: &mut Inputs) -> Result<Self> {
        let p = params.physics();
        let key = "solver.shallow_water";
        let depth: Sample = match &params.bathymetry {
            Bathymetry::Flat(h) => {
                let h = *h;
                Arc::new(move |_| h)
            }
            Bathymetry::GpuOceanTest => Arc::new(test_bathymetry(p.ny)),
            Bathymetry::Waves { mean, amplitude, wavelength } => {
                let (m, a, k) = (*mean, *amplitude, 2.0 * PI / wavelength);
                Arc::new(move |at: At| m + a * ((k * at.y).cos() + (k * at.x).sin()))
            }
            Bathymetry::File { path, dataset } => {
                let shapes = [[p.nx, p.ny], [p.nx + 1, p.ny + 1]];
                let (v, n) = inputs.get(&format!("{key}.bathymetry.file"), "bathymetry", path, dataset, &shapes)?;
                if let Some(k) = v.iter().position(|&h| h <= 0.0) {
                    return input(format!(
                        "{key}.bathymetry.file: {} has depth {} <= 0 at row {}, column {} (dry cells are not \
                         supported)",
                        inputs.source("bathymetry", path, dataset),
                        v[k],
                        k / n[0],
                        k % n[0]
                    ));
                }
                let g = Gridded::new(v, n, &p);
                if let Some((row, col, a, b)) = g.seam_mismatch() {
                    return input(format!(
                        "{key}.bathymetry.file: {} gives the depth at the cell corners, and at row {row}, column {col} \
                         it is {a} where the corner it stands for across the periodic seam has {b}; the corners of a \
                         periodic axis repeat at its ends (or give the cell centres)",
                        inputs.source("bathymetry", path, dataset)
                    ));
                }
                Arc::new(move |at: At| g.at(at.x, at.y))
            }
        };
        let zero: fn() -> Sample = || Arc::new(|_| 0.0);
        let (lx, ly) = (p.nx as f64 * p.dx, p.ny as f64 * p.dy);
        let (eta, hu, hv): (Sample, Sample, Sample) = match &params.initial {
            InitialCondition::Rest => (zero(), zero(), zero()),
            InitialCondition::Bump { position, amplitude } => {
                let (b, a) = (bump(&p, *position), *amplitude);
                (Arc::new(move |at| a * b(at)), zero(), zero())
            }
            InitialCondition::Hump { amplitude, radius, width, center, shape } => {
                let [xc, yc] = center.unwrap_or([lx / 2.0, ly / 2.0]);
                let (a, r0, w, shape) = (*amplitude, *radius, width.unwrap_or(1.0), *shape);
                let eta = move |at: At| {
                    let r = (at.x - xc).hypot(at.y - yc);
                    match shape {
                        HumpShape::Tanh => a * (1.0 + ((r0 - r) / w).tanh()),
                        HumpShape::Gaussian => a * (-(r / r0) * (r / r0)).exp(),
                        HumpShape::Cosine if r < r0 => a * (1.0 + (PI * r / r0).cos()),
                        HumpShape::Cosine => 0.0,
                    }
                };
                (Arc::new(eta), zero(), zero())
            }
            InitialCondition::KelvinWave { amplitude } => {
                let Bathymetry::Flat(h) = params.bathymetry else { unreachable!("checked by validate") };
                let c = (p.g * h).sqrt();
                let (a, amp, xc) = (c / p.f0, *amplitude, lx / 2.0);
                let eta = move |at: At| amp * (-at.y / a).exp() * (1.0 + ((a - (at.x - xc).abs()) / (a / 3.0)).tanh());
                (Arc::new(eta), Arc::new(move |at| c * eta(at)), zero())
            }
            InitialCondition::GeostrophicJet { speed, width } => {
                let jet = Arc::new(Jet::new(&p, *speed, *width));
                let (j1, j2, h) = (jet.clone(), jet, depth.clone());
                (Arc::new(move |at| j1.eta(at)), zero(), Arc::new(move |at: At| (h(at) + j2.eta(at)) * j2.v(at.x)))
            }
            InitialCondition::File { path, eta, hu, hv } => {
                let mut read = |what: &str, name: &str| -> Result<Sample> {
                    let (v, n) = inputs.get(&format!("{key}.initial.file"), what, path, name, &[[p.nx, p.ny]])?;
                    let g = Gridded::new(v, n, &p);
                    Ok(Arc::new(move |at: At| g.at(at.x, at.y)))
                };
                let eta = read("eta", eta)?;
                let mut opt = |what, name: &Option<String>| name.as_deref().map_or(Ok(zero()), |n| read(what, n));
                (eta, opt("hu", hu)?, opt("hv", hv)?)
            }
        };
        Ok(Sources { eta, hu, hv, depth })
    }
}

/// A north-south jet in discrete geostrophic balance on an f-plane (spec §5.5).
struct Jet {
    speed: f64,
    width: f64,
    center: f64,
    dx: f64,
    /// η of the cell columns -HALO .. nx + HALO.
    eta: Vec<f64>,
}

impl Jet {
    /// Columns below the first interior one that get η (the widest halo of the schemes).
    const HALO: usize = 2;

    fn new(p: &Physics, speed: f64, width: f64) -> Self {
        let center = p.nx as f64 * p.dx / 2.0;
        let mut jet = Jet { speed, width, center, dx: p.dx, eta: Vec::new() };
        let columns = p.nx + 2 * Self::HALO;
        let v: Vec<f64> = (0..columns).map(|c| jet.v((c as f64 - Self::HALO as f64 + 0.5) * p.dx)).collect();
        let mut eta = vec![0.0; columns];
        for c in 1..columns {
            eta[c] = eta[c - 1] + p.dx * p.f0 * (v[c - 1] + v[c]) / (2.0 * p.g);
        }
        // A constant shift keeps the balance; centre the surface on zero.
        let mean = eta.iter().sum::<f64>() / columns as f64;
        jet.eta = eta.iter().map(|e| e - mean).collect();
        jet
    }

    fn v(&self, x: f64) -> f64 {
        let s = (x - self.center) / self.width;
        self.speed * (-s * s).exp()
    }

    /// η of the cell column that `at` lies in (its x-position).
    fn eta(&self, at: At) -> f64 {
        let c = (at.x / self.dx - 0.5).round() + Self::HALO as f64;
        self.eta[(c.max(0.0) as usize).min(self.eta.len() - 1)]
    }
}
