//! (being written)
use crate::real::Real;
use crate::solver::Place;
use super::grid::{Field, Physics};
use super::scheme::{Cells, Initial, Scheme};
pub struct Ctcs<T> { f: Vec<Field<T>> }
impl<T: Real> Ctcs<T> {
    pub fn new(_p: &Physics, _init: &Initial) -> Self { todo!() }
}
impl<T: Real> Scheme<T> for Ctcs<T> {
    fn step(&mut self, _dt: f64, _first: bool) { todo!() }
    fn dt_limit(&self) -> f64 { todo!() }
    fn cells(&self) -> Cells<T> { todo!() }
    fn arrays(&self) -> Vec<(&'static str, Place, &Field<T>)> { let _ = &self.f; todo!() }
    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> { todo!() }
}
