//! Rotating shallow-water equations on a rectangular grid: GPU Ocean's four schemes (FBL,
//! CTCS, CDKLM16, KP07), spec `shallow_water.md`.

pub mod cdklm16;
pub mod ctcs;
mod fd_boundary;
pub mod fbl;
pub mod grid;
pub mod init;
pub mod kp07;
pub mod scheme;
pub mod sponge;

#[cfg(test)]
mod reference;
