//! (being written)
use crate::real::Real;
use crate::solver::Place;
use super::grid::{Field, Physics};
use super::scheme::{Cells, Initial, Scheme};
pub struct Cdklm16<T> { f: Vec<Field<T>> }
impl<T: Real> Cdklm16<T> {
    pub fn new(_p: &Physics, _init: &Initial, _rk: crate::numerics::rk::Scheme) -> Self { todo!() }
}
impl<T: Real> Scheme<T> for Cdklm16<T> {
    fn step(&mut self, _dt: f64, _first: bool) { todo!() }
    fn dt_limit(&self) -> f64 { todo!() }
    fn cells(&self) -> Cells<T> { todo!() }
    fn arrays(&self) -> Vec<(&'static str, Place, &Field<T>)> { let _ = &self.f; todo!() }
    fn arrays_mut(&mut self) -> Vec<(&'static str, Place, &mut Field<T>)> { todo!() }
}
