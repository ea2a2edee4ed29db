//! Floating-point precision: the `Real` trait that CPU kernels are generic over, and the
//! precision-tagged arrays used for output and checkpoints.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    #[default]
    F64,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    /// `x` in this precision is a normal number (not zero, subnormal, infinite or NaN).
    pub fn is_normal(self, x: f64) -> bool {
        match self {
            Precision::F32 => (x as f32).is_normal(),
            Precision::F64 => x.is_normal(),
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "f32" => Some(Precision::F32),
            "f64" => Some(Precision::F64),
            _ => None,
        }
    }
}

/// A flat array in the precision the solver runs in.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn precision(&self) -> Precision {
        match self {
            Values::F32(_) => Precision::F32,
            Values::F64(_) => Precision::F64,
        }
    }
    /// Widened copy, for post-processing and comparisons.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Values::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Values::F64(v) => v.clone(),
        }
    }
}

/// The floating-point type of a solver's fields.
pub trait Real:
    num_traits::Float
    + hdf5::H5Type
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + Default
    + Send
    + Sync
    + std::fmt::Debug
    + std::iter::Sum
    + 'static
{
    const PRECISION: Precision;
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    fn wrap(v: Vec<Self>) -> Values;
    fn unwrap(v: Values) -> Option<Vec<Self>>;
}

impl Real for f32 {
    const PRECISION: Precision = Precision::F32;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
    fn wrap(v: Vec<Self>) -> Values {
        Values::F32(v)
    }
    fn unwrap(v: Values) -> Option<Vec<Self>> {
        match v {
            Values::F32(v) => Some(v),
            Values::F64(_) => None,
        }
    }
}

impl Real for f64 {
    const PRECISION: Precision = Precision::F64;
    fn of(x: f64) -> Self {
        x
    }
    fn f64(self) -> f64 {
        self
    }
    fn wrap(v: Vec<Self>) -> Values {
        Values::F64(v)
    }
    fn unwrap(v: Values) -> Option<Vec<Self>> {
        match v {
            Values::F64(v) => Some(v),
            Values::F32(_) => None,
        }
    }
}
