//! Initial conditions and bathymetries, as functions of position ([`At`]).

use std::f64::consts::PI;

use super::grid::{At, Physics};

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
