//! The case section `solver: {shallow_water: {...}}` and its checks.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Result, input};
use crate::numerics::rk;
use crate::validate::{count, positive};

use super::grid::{Physics, Side, Sides, SpongeKind};
use super::init::BumpPosition;

/// Largest number of cells along an axis.
const MAX_N: usize = 1 << 16;

/// `solver: {shallow_water: ...}`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShallowWaterParams {
    pub scheme: SchemeName,
    /// Interior cells along x and y.
    pub nx: usize,
    pub ny: usize,
    /// Cell size in metres (`dy` defaults to `dx`).
    pub dx: f64,
    #[serde(default)]
    pub dy: Option<f64>,
    #[serde(default = "default_g")]
    pub g: f64,
    /// `f = f0 + beta y`, `y` from the south edge of the domain.
    #[serde(default)]
    pub coriolis: Coriolis,
    /// Linear bottom drag `r` (m/s).
    #[serde(default)]
    pub friction: f64,
    /// Horizontal eddy viscosity `A` (m²/s), CTCS only.
    #[serde(default)]
    pub viscosity: f64,
    /// Constant kinematic wind stress `[X, Y]` (m²/s²).
    #[serde(default)]
    pub wind: [f64; 2],
    /// Fixed time step (s); CDKLM16 and KP07 may use `courant` instead.
    #[serde(default)]
    pub dt: Option<f64>,
    /// Adaptive time step `courant x` the scheme's stable step (CDKLM16, KP07).
    #[serde(default)]
    pub courant: Option<f64>,
    /// Minmod parameter of the reconstruction (CDKLM16, KP07), in [1, 2].
    #[serde(default = "default_theta")]
    pub theta: f64,
    /// Runge-Kutta scheme of the finite-volume schemes.
    #[serde(default = "default_rk")]
    pub time_integration: rk::Scheme,
    /// Reproduce GPU Ocean's published arrays (its CTCS advection sign, Coriolis offsets and
    /// first step, its CDKLM16/KP07 friction factor) instead of the physically clean variants.
    #[serde(default = "yes")]
    pub gpu_ocean_compat: bool,
    #[serde(default)]
    pub boundary: Boundary,
    pub bathymetry: Bathymetry,
    pub initial: InitialCondition,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemeName {
    /// Linear forward-backward, Arakawa C grid.
    Fbl,
    /// Nonlinear leapfrog (centred in time and space), Arakawa C grid.
    Ctcs,
    /// Well-balanced central-upwind finite volume (Chertock et al. 2018).
    Cdklm16,
    /// Kurganov-Petrova central-upwind finite volume.
    Kp07,
}

impl SchemeName {
    pub fn name(self) -> &'static str {
        match self {
            SchemeName::Fbl => "fbl",
            SchemeName::Ctcs => "ctcs",
            SchemeName::Cdklm16 => "cdklm16",
            SchemeName::Kp07 => "kp07",
        }
    }
    pub fn finite_volume(self) -> bool {
        matches!(self, SchemeName::Cdklm16 | SchemeName::Kp07)
    }
    /// Minimum floats read and written per cell and full step of `stages` Runge-Kutta stages
    /// (spec §11): the fused kernels' reads and writes; the finite-volume schemes' per stage are
    /// 5 reads, 3 writes and 3 reads of the step's old state (22 with Heun, as §11 counts).
    pub fn floats_per_cell(self, stages: usize) -> f64 {
        match self {
            SchemeName::Fbl => 7.0,
            SchemeName::Ctcs => 10.0,
            SchemeName::Cdklm16 | SchemeName::Kp07 => 11.0 * stages as f64,
        }
    }
    /// Floating-point operations per cell and Runge-Kutta stage of the finite-volume schemes,
    /// counted by hand from their code (adds, multiplies, divisions, square roots, minima and
    /// maxima; the sums are in the `throughput` tests of `cdklm16.rs` and `kp07.rs`). FBL and
    /// CTCS are bound by their traffic instead.
    pub fn flops_per_cell_stage(self) -> Option<f64> {
        match self {
            SchemeName::Cdklm16 => Some(273.0),
            SchemeName::Kp07 => Some(274.0),
            SchemeName::Fbl | SchemeName::Ctcs => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coriolis {
    #[serde(default)]
    pub f0: f64,
    #[serde(default)]
    pub beta: f64,
}

/// `boundary: {north, east, south, west}`, each `wall` (default), `periodic` or
/// `{sponge: {cells, kind}}`.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    #[serde(default)]
    pub north: SideSpec,
    #[serde(default)]
    pub east: SideSpec,
    #[serde(default)]
    pub south: SideSpec,
    #[serde(default)]
    pub west: SideSpec,
}

#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideSpec {
    #[default]
    Wall,
    Periodic,
    Sponge(Sponge),
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sponge {
    /// Width in cells, counted inward from the side.
    pub cells: usize,
    #[serde(default = "default_sponge_kind")]
    pub kind: SpongeKindSpec,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpongeKindSpec {
    /// Flow relaxation scheme.
    Relaxation,
    /// Linear interpolation.
    Linear,
}

/// Equilibrium depth H (m, positive down).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Bathymetry {
    /// Constant depth.
    Flat(f64),
    /// GPU Ocean's synthetic regression bathymetry, sampled by grid index (2-10 m).
    GpuOceanTest,
    /// `mean + amplitude (cos(2 pi y / wavelength) + sin(2 pi x / wavelength))`.
    Waves { mean: f64, amplitude: f64, wavelength: f64 },
    /// An `ny x nx` (cell centres) or `(ny+1) x (nx+1)` (cell corners) dataset of an HDF5 or
    /// NetCDF-4 file.
    File { path: PathBuf, #[serde(default = "default_depth_dataset")] dataset: String },
}

/// Initial surface elevation and transports (zero unless given).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum InitialCondition {
    /// Flat surface at rest (lake at rest over the bathymetry).
    Rest,
    /// GPU Ocean's regression bump `amplitude exp(-r² / s)`, `s = 500 min(dx, dy)` m², at a
    /// cell's index times the spacing.
    Bump {
        #[serde(default = "default_position")]
        position: BumpPosition,
        #[serde(default = "one")]
        amplitude: f64,
    },
    /// A round hump around `center` (default the domain centre): `tanh`:
    /// `amplitude (1 + tanh((radius - r) / width))`; `gaussian`: `amplitude exp(-(r / radius)²)`;
    /// `cosine`: `amplitude (1 + cos(pi r / radius))` inside the radius, 0 outside.
    Hump {
        amplitude: f64,
        radius: f64,
        #[serde(default)]
        width: Option<f64>,
        #[serde(default)]
        center: Option<[f64; 2]>,
        #[serde(default = "default_hump_shape")]
        shape: HumpShape,
    },
    /// A Kelvin wave trapped at the south wall, travelling east (f > 0):
    /// `eta = amplitude exp(-y / a) (1 + tanh((a - |x - x_c|) / (a / 3)))`, `a = sqrt(g H) / f`,
    /// with the geostrophic transport `hu = sqrt(g H) eta`.
    KelvinWave {
        #[serde(default = "one")]
        amplitude: f64,
    },
    /// A north-south jet `v = speed exp(-((x - x_c) / width)²)` in discrete geostrophic balance
    /// (spec §5.5): `eta(k+1) - eta(k) = dx f (v(k) + v(k+1)) / (2 g)`.
    GeostrophicJet { speed: f64, width: f64 },
    /// Arrays from an HDF5 or NetCDF-4 file, `ny x nx` at the cell centres.
    File {
        path: PathBuf,
        #[serde(default = "default_eta")]
        eta: String,
        #[serde(default)]
        hu: Option<String>,
        #[serde(default)]
        hv: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumpShape {
    Tanh,
    Gaussian,
    Cosine,
}

fn default_g() -> f64 {
    9.81
}
fn default_theta() -> f64 {
    1.3
}
fn default_rk() -> rk::Scheme {
    rk::Scheme::SspRk2
}
fn yes() -> bool {
    true
}
fn one() -> f64 {
    1.0
}
fn default_sponge_kind() -> SpongeKindSpec {
    SpongeKindSpec::Relaxation
}
fn default_depth_dataset() -> String {
    "H".into()
}
fn default_eta() -> String {
    "eta".into()
}
fn default_position() -> BumpPosition {
    BumpPosition::Central
}
fn default_hump_shape() -> HumpShape {
    HumpShape::Tanh
}

const KEY: &str = "solver.shallow_water";

impl ShallowWaterParams {
    pub fn dy(&self) -> f64 {
        self.dy.unwrap_or(self.dx)
    }

    /// The boundary sides of the schemes.
    pub fn sides(&self) -> Sides {
        let side = |s: SideSpec| match s {
            SideSpec::Wall => Side::Wall,
            SideSpec::Periodic => Side::Periodic,
            SideSpec::Sponge(Sponge { cells, kind }) => Side::Sponge {
                cells,
                kind: match kind {
                    SpongeKindSpec::Relaxation => SpongeKind::Relaxation,
                    SpongeKindSpec::Linear => SpongeKind::Linear,
                },
            },
        };
        let b = self.boundary;
        Sides { north: side(b.north), east: side(b.east), south: side(b.south), west: side(b.west) }
    }

    pub fn physics(&self) -> Physics {
        Physics {
            nx: self.nx,
            ny: self.ny,
            dx: self.dx,
            dy: self.dy(),
            g: self.g,
            f0: self.coriolis.f0,
            beta: self.coriolis.beta,
            friction: self.friction,
            viscosity: self.viscosity,
            wind: self.wind,
            theta: self.theta,
            gpu_ocean_compat: self.gpu_ocean_compat,
            sides: self.sides(),
            part: None,
        }
    }

    /// Checks of the parameters alone (the initial state's depth and time-step limit are
    /// checked once it is built).
    pub fn check(&self) -> Result<()> {
        let scheme = self.scheme.name();
        count(&format!("{KEY}.nx"), self.nx, "cells", 2, MAX_N)?;
        count(&format!("{KEY}.ny"), self.ny, "cells", 2, MAX_N)?;
        positive(&format!("{KEY}.dx"), self.dx)?;
        positive(&format!("{KEY}.dy"), self.dy())?;
        positive(&format!("{KEY}.g"), self.g)?;
        finite(&format!("{KEY}.coriolis.f0"), self.coriolis.f0)?;
        finite(&format!("{KEY}.coriolis.beta"), self.coriolis.beta)?;
        non_negative(&format!("{KEY}.friction"), self.friction)?;
        non_negative(&format!("{KEY}.viscosity"), self.viscosity)?;
        finite(&format!("{KEY}.wind"), self.wind[0])?;
        finite(&format!("{KEY}.wind"), self.wind[1])?;
        if self.viscosity != 0.0 && self.scheme != SchemeName::Ctcs {
            return input(format!("{KEY}.viscosity: only the ctcs scheme has eddy viscosity (scheme is {scheme})"));
        }
        if !(1.0..=2.0).contains(&self.theta) {
            return input(format!("{KEY}.theta: {} must lie in [1, 2] (minmod parameter)", self.theta));
        }
        if !self.scheme.finite_volume() && self.theta != default_theta() {
            return input(format!(
                "{KEY}.theta: scheme {scheme} reconstructs nothing; the minmod parameter is for cdklm16 and kp07"
            ));
        }
        match (self.dt, self.courant) {
            (Some(_), Some(_)) => return input(format!("{KEY}: give either dt or courant, not both")),
            (None, None) => return input(format!("{KEY}: give a time step, dt (or courant for cdklm16 and kp07)")),
            (Some(dt), None) => positive(&format!("{KEY}.dt"), dt)?,
            (None, Some(c)) => {
                if !self.scheme.finite_volume() {
                    return input(format!(
                        "{KEY}.courant: adaptive time steps are for cdklm16 and kp07; scheme {scheme} needs a fixed dt"
                    ));
                }
                if !(c > 0.0 && c <= 1.0) {
                    return input(format!("{KEY}.courant: {c} must lie in (0, 1] (a fraction of the stable step)"));
                }
            }
        }
        if !self.scheme.finite_volume() && self.time_integration != default_rk() {
            return input(format!(
                "{KEY}.time_integration: scheme {scheme} has its own time stepping; Runge-Kutta is for cdklm16 and kp07"
            ));
        }
        self.check_boundary()?;
        self.check_bathymetry()?;
        self.check_initial()
    }

    fn check_boundary(&self) -> Result<()> {
        let b = self.boundary;
        let periodic = |s: SideSpec| s == SideSpec::Periodic;
        if periodic(b.north) != periodic(b.south) {
            return input(format!("{KEY}.boundary: periodic must be set on both north and south, or on neither"));
        }
        if periodic(b.east) != periodic(b.west) {
            return input(format!("{KEY}.boundary: periodic must be set on both east and west, or on neither"));
        }
        let sides = [("north", b.north, self.ny), ("south", b.south, self.ny), ("east", b.east, self.nx), ("west", b.west, self.nx)];
        for (name, side, n) in sides {
            if let SideSpec::Sponge(s) = side {
                if s.cells < 1 {
                    return input(format!("{KEY}.boundary.{name}.sponge.cells: must be at least 1"));
                }
                if 2 * s.cells >= n {
                    return input(format!(
                        "{KEY}.boundary.{name}.sponge.cells: {} cells is half the domain or wider ({n} cells \
                         across); it must be narrower",
                        s.cells
                    ));
                }
                if s.kind == SpongeKindSpec::Linear && self.scheme == SchemeName::Fbl {
                    return input(format!("{KEY}.boundary.{name}.sponge.kind: fbl supports only the relaxation sponge"));
                }
            }
        }
        Ok(())
    }

    fn check_bathymetry(&self) -> Result<()> {
        let key = format!("{KEY}.bathymetry");
        match &self.bathymetry {
            Bathymetry::Flat(h) => positive(&format!("{key}.flat"), *h),
            Bathymetry::File { path, .. } if path.as_os_str().is_empty() => {
                input(format!("{key}.file.path: give the HDF5 or NetCDF-4 file's path"))
            }
            Bathymetry::GpuOceanTest | Bathymetry::File { .. } => Ok(()),
            Bathymetry::Waves { mean, amplitude, wavelength } => {
                positive(&format!("{key}.waves.mean"), *mean)?;
                finite(&format!("{key}.waves.amplitude"), *amplitude)?;
                positive(&format!("{key}.waves.wavelength"), *wavelength)?;
                if 2.0 * amplitude.abs() >= *mean {
                    return input(format!(
                        "{key}.waves: mean {mean} with amplitude {amplitude} reaches a depth <= 0 (needs mean > 2 |amplitude|)"
                    ));
                }
                Ok(())
            }
        }
    }

    fn check_initial(&self) -> Result<()> {
        let key = format!("{KEY}.initial");
        match &self.initial {
            InitialCondition::File { path, .. } if path.as_os_str().is_empty() => {
                input(format!("{key}.file.path: give the HDF5 or NetCDF-4 file's path"))
            }
            InitialCondition::Rest | InitialCondition::File { .. } => Ok(()),
            InitialCondition::Bump { amplitude, .. } => finite(&format!("{key}.bump.amplitude"), *amplitude),
            InitialCondition::Hump { amplitude, radius, width, center, shape } => {
                finite(&format!("{key}.hump.amplitude"), *amplitude)?;
                positive(&format!("{key}.hump.radius"), *radius)?;
                match (shape, width) {
                    (HumpShape::Tanh, None) => input(format!("{key}.hump.width: a tanh hump needs a width (m)")),
                    (HumpShape::Tanh, Some(w)) => positive(&format!("{key}.hump.width"), *w),
                    (_, Some(_)) => input(format!("{key}.hump.width: only a tanh hump has a width")),
                    (_, None) => Ok(()),
                }?;
                if let Some([x, y]) = center {
                    finite(&format!("{key}.hump.center"), *x)?;
                    finite(&format!("{key}.hump.center"), *y)?;
                }
                Ok(())
            }
            InitialCondition::KelvinWave { amplitude } => {
                finite(&format!("{key}.kelvin_wave.amplitude"), *amplitude)?;
                if self.coriolis.f0 <= 0.0 || self.coriolis.beta != 0.0 {
                    return input(format!(
                        "{key}.kelvin_wave: needs an f-plane with f0 > 0 (solver.shallow_water.coriolis.f0)"
                    ));
                }
                if !matches!(self.bathymetry, Bathymetry::Flat(_)) {
                    return input(format!("{key}.kelvin_wave: needs a flat bathymetry"));
                }
                // The wave leans on its coast; a periodic or sponge side would not hold it.
                if self.boundary.south != SideSpec::Wall {
                    return input(format!(
                        "{key}.kelvin_wave: the wave is trapped at the south coast, which needs \
                         {KEY}.boundary.south: wall"
                    ));
                }
                Ok(())
            }
            InitialCondition::GeostrophicJet { speed, width } => {
                finite(&format!("{key}.geostrophic_jet.speed"), *speed)?;
                positive(&format!("{key}.geostrophic_jet.width"), *width)?;
                if self.coriolis.beta != 0.0 {
                    return input(format!("{key}.geostrophic_jet: needs an f-plane (coriolis.beta = 0)"));
                }
                // Without rotation nothing balances the jet: the surface would be flat.
                if self.coriolis.f0 == 0.0 {
                    return input(format!(
                        "{key}.geostrophic_jet: needs rotation to balance the jet ({KEY}.coriolis.f0 \
                         other than 0)"
                    ));
                }
                Ok(())
            }
        }
    }

    /// Lines for `sim check` from the parameters alone.
    pub fn describe(&self) -> Vec<String> {
        let rk = if self.scheme.finite_volume() { format!(", {}", self.time_integration.name()) } else { String::new() };
        let step = match (self.dt, self.courant) {
            (Some(dt), _) => format!("dt = {dt} s (fixed)"),
            (_, Some(c)) => format!("adaptive dt = {c} x the stable step, every step"),
            _ => String::new(),
        };
        vec![
            format!("scheme: {}{rk}, gpu_ocean_compat: {}", self.scheme.name(), self.gpu_ocean_compat),
            format!(
                "grid: {} x {} cells, dx = {} m, dy = {} m ({} x {} km)",
                self.nx,
                self.ny,
                self.dx,
                self.dy(),
                self.nx as f64 * self.dx / 1e3,
                self.ny as f64 * self.dy() / 1e3
            ),
            step,
        ]
    }
}

fn finite(key: &str, v: f64) -> Result<()> {
    if v.is_finite() { Ok(()) } else { input(format!("{key}: {v} must be a finite number")) }
}

fn non_negative(key: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 { Ok(()) } else { input(format!("{key}: {v} must be zero or positive")) }
}
