//! Meshfree q-LSKUM solver of the 2D Euler equations on point clouds (Mamidi et al. 2022):
//! kinetic split fluxes, least-squares q-derivatives with inner iterations, Venkatakrishnan
//! limiter, local time stepping with SSP(4,3) Runge-Kutta or forward Euler.
//!
//! One solver step is one pseudo-time iteration; `time()` is the iteration count (the local
//! time steps differ from point to point, so there is no global physical time).

pub mod cloud;
pub mod kernels;
pub mod scheme;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Result, input};

pub use cloud::{Cloud, CloudFormat};
pub use scheme::ForcePoints;
use kernels::{Reconstruct, V4};
use scheme::{Settings, State};

/// Time integration of the pseudo-time iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeScheme {
    /// Four-stage third-order strong-stability-preserving Runge-Kutta.
    #[default]
    Ssprk43,
    /// Forward Euler.
    First,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limiter {
    #[default]
    Venkat,
    Minmax,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accuracy {
    /// Limited reconstruction of q at both ends of every edge.
    #[default]
    Second,
    /// No reconstruction.
    First,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForceSet {
    /// Wall points only.
    #[default]
    Wall,
    /// Every point with flag_2 > 0 (the reference F-ser convention).
    Shape,
}

/// `solver: {lskum: ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LskumParams {
    /// Point-cloud file (relative paths are taken from the working directory).
    pub cloud: PathBuf,
    #[serde(default)]
    pub format: CloudFormat,
    /// Free-stream Mach number.
    pub mach: f64,
    /// Angle of attack, degrees.
    #[serde(default)]
    pub aoa: f64,
    #[serde(default = "default_cfl")]
    pub cfl: f64,
    /// Inner iterations of the second-order q-derivatives (0 = first-order derivatives).
    #[serde(default = "default_inner")]
    pub inner_iterations: u32,
    /// Venkatakrishnan limiter constant K.
    #[serde(default = "default_vl")]
    pub vl_const: f64,
    /// Least-squares weight exponent (w = d^power).
    #[serde(default)]
    pub power: f64,
    #[serde(default)]
    pub tscheme: TimeScheme,
    #[serde(default)]
    pub limiter: Limiter,
    #[serde(default)]
    pub accuracy: Accuracy,
    /// Stop once the residue (log10 of the residual relative to iteration 2) is at or below
    /// `-residue_drop`.
    #[serde(default)]
    pub residue_drop: Option<f64>,
    /// Points of the force integration.
    #[serde(default)]
    pub forces: ForceSet,
}

fn default_cfl() -> f64 {
    0.5
}
fn default_inner() -> u32 {
    3
}
fn default_vl() -> f64 {
    50.0
}

impl LskumParams {
    /// Parameters of the case with every default and the given cloud.
    pub fn with_cloud(cloud: impl Into<PathBuf>, format: CloudFormat, mach: f64, aoa: f64) -> Self {
        LskumParams {
            cloud: cloud.into(),
            format,
            mach,
            aoa,
            cfl: default_cfl(),
            inner_iterations: default_inner(),
            vl_const: default_vl(),
            power: 0.0,
            tscheme: TimeScheme::Ssprk43,
            limiter: Limiter::Venkat,
            accuracy: Accuracy::Second,
            residue_drop: None,
            forces: ForceSet::Wall,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let key = "solver.lskum";
        if !(self.mach.is_finite() && self.mach > 0.0 && self.mach < 10.0) {
            return input(format!("{key}.mach: {} must be in (0, 10)", self.mach));
        }
        if !(self.aoa.is_finite() && self.aoa.abs() <= 90.0) {
            return input(format!("{key}.aoa: {} must be within [-90, 90] degrees", self.aoa));
        }
        if !(self.cfl.is_finite() && self.cfl > 0.0 && self.cfl <= 2.0) {
            return input(format!("{key}.cfl: {} must be in (0, 2]", self.cfl));
        }
        if self.inner_iterations > 100 {
            return input(format!("{key}.inner_iterations: {} is more than 100", self.inner_iterations));
        }
        if !(self.vl_const.is_finite() && self.vl_const > 0.0) {
            return input(format!("{key}.vl_const: {} must be a positive number", self.vl_const));
        }
        if !(self.power.is_finite() && self.power.abs() <= 10.0) {
            return input(format!("{key}.power: {} must be within [-10, 10]", self.power));
        }
        if let Some(d) = self.residue_drop {
            if !(d.is_finite() && d > 0.0) {
                return input(format!("{key}.residue_drop: {d} must be a positive number of decades"));
            }
        }
        if self.cloud.as_os_str().is_empty() {
            return input(format!("{key}.cloud: give the point-cloud file"));
        }
        Ok(())
    }

    fn settings(&self) -> Settings {
        Settings {
            cfl: self.cfl,
            inner_iterations: self.inner_iterations,
            vl_const: self.vl_const,
            power: self.power,
            reconstruct: match (self.accuracy, self.limiter) {
                (Accuracy::First, _) => Reconstruct::None,
                (Accuracy::Second, Limiter::Venkat) => Reconstruct::Venkat,
                (Accuracy::Second, Limiter::Minmax) => Reconstruct::MinMax,
            },
            stages: match self.tscheme {
                TimeScheme::Ssprk43 => 4,
                TimeScheme::First => 1,
            },
            winf: kernels::free_stream(self.mach, self.aoa),
        }
    }
}

/// The q-LSKUM solver on one cloud.
pub struct Lskum {
    pub params: LskumParams,
    pub cloud: Cloud,
    set: Settings,
    st: State,
    step: u64,
    /// Residual norm of iteration 2 (reference of the residue).
    res_ref: f64,
    /// Residual norm of the last iteration.
    res_last: f64,
    /// log10(res_last / res_ref), 0 for the first two iterations.
    residue: f64,
    /// Seconds spent in the iterations (for RDP).
    pub wall_seconds: f64,
}

impl Lskum {
    /// Load the cloud of `p` and start from the free stream.
    pub fn new(p: &LskumParams) -> Result<Self> {
        let cloud = cloud::load(&p.cloud, p.format)?;
        Ok(Self::with_cloud(p, cloud))
    }

    pub fn with_cloud(p: &LskumParams, cloud: Cloud) -> Self {
        let set = p.settings();
        let st = State::new(cloud.len(), set.winf);
        Lskum {
            params: p.clone(),
            cloud,
            set,
            st,
            step: 0,
            res_ref: 0.0,
            res_last: 0.0,
            residue: 0.0,
            wall_seconds: 0.0,
        }
    }

    /// One pseudo-time iteration.
    pub fn iterate(&mut self) {
        let t0 = std::time::Instant::now();
        let res = scheme::iterate(&self.cloud, &mut self.st, &self.set);
        self.step += 1;
        self.res_last = res;
        if self.step <= 2 {
            self.residue = 0.0;
            if self.step == 2 {
                self.res_ref = res;
            }
        } else {
            self.residue = (res / self.res_ref).log10();
        }
        self.wall_seconds += t0.elapsed().as_secs_f64();
    }

    pub fn iterations(&self) -> u64 {
        self.step
    }
    /// log10 of the residual relative to iteration 2 (0 for iterations 1 and 2).
    pub fn residue(&self) -> f64 {
        self.residue
    }
    pub fn residual_norm(&self) -> f64 {
        self.res_last
    }
    /// Primitive state (rho, u, v, p) per point.
    pub fn prim(&self) -> &[V4] {
        &self.st.prim
    }
    pub fn free_stream(&self) -> V4 {
        self.set.winf
    }

    /// (C_l, C_d, C_m) over the given points.
    pub fn coefficients_of(&self, which: ForcePoints) -> (f64, f64, f64) {
        scheme::coefficients(&self.cloud, &self.st.prim, self.params.mach, self.params.aoa, which)
    }

    /// (C_l, C_d, C_m) with the configured point set.
    pub fn coefficients(&self) -> (f64, f64, f64) {
        self.coefficients_of(match self.params.forces {
            ForceSet::Wall => ForcePoints::Wall,
            ForceSet::Shape => ForcePoints::Shape,
        })
    }

    /// Standard pressure coefficient at point i.
    pub fn cp(&self, i: usize) -> f64 {
        kernels::cp(self.st.prim[i][3], 1.0 / kernels::GAMMA, 1.0, self.params.mach)
    }

    /// Wall points (flag_1 = 0) in cloud order.
    pub fn wall_points(&self) -> Vec<usize> {
        (0..self.cloud.len()).filter(|&i| self.cloud.flag[i] == cloud::WALL).collect()
    }
}
