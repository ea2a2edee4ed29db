//! Point-cloud tooling outside the solvers: the `sim mesh naca0012` generators and the
//! point-cloud file formats.
//!
//! * [`naca`]: NACA 00xx surface points, shared by both generators.
//! * [`ogrid`]: structured O-grid cloud, mirror-symmetric about y = 0 (160 x 60 reproduces the
//!   9600-point reference cloud but for its neighbour lists at the two seams).
//! * [`quadtree`]: quadtree cloud for large sizes.
//! * [`finish`]: normals, stencil repair and validation of a generated cloud.
//! * [`cloud_file`]: readers of the legacy, old, point-input and sim formats, writers of the
//!   legacy and sim formats.
//!
//! The clouds are [`crate::solvers::lskum::Cloud`]s, validated like the ones the q-LSKUM
//! solver reads.

pub mod cloud_file;
pub mod finish;
pub mod naca;
pub mod ogrid;
pub mod quadtree;

use std::path::PathBuf;

use crate::error::{Result, SimError, shorten};
use crate::solvers::lskum::Cloud;
use crate::solvers::lskum::cloud::{OUTER, WALL};

use naca::Closure;
use ogrid::{OGrid, ogrid_dims};
use quadtree::quadtree_points;

/// Options of `sim mesh naca0012`.
#[derive(Clone, Debug)]
pub struct MeshOptions {
    /// `ogrid` or `quadtree`.
    pub kind: String,
    /// About this many points (sets ni x nj for the O-grid).
    pub points: Option<usize>,
    pub ni: Option<usize>,
    pub nj: Option<usize>,
    pub radius: f64,
    /// None: [`DEFAULT_FIRST_SPACING`], or where nj rings cannot reach the far field from
    /// it, the smallest spacing they can.
    pub first_spacing: Option<f64>,
    pub thickness: f64,
    /// `scaled` or `modified` trailing-edge closure.
    pub closure: String,
    /// `sim` or `legacy`.
    pub format: String,
    pub out: PathBuf,
}

/// The most points a generated cloud may have: about what [`cloud_file::MAX_CLOUD_BYTES`]
/// holds, so that `sim run` reads every cloud `sim mesh` writes.
pub const MAX_POINTS: usize = 25_000_000;

/// The farthest far field, in chords: far more than an aerofoil case needs (15 to 100 are
/// usual), and finite.
pub const MAX_RADIUS: f64 = 1e6;

/// The O-grid's first spacing unless `--first-spacing` is given.
pub const DEFAULT_FIRST_SPACING: f64 = 2e-3;

/// `sim mesh naca0012`: generate, validate and write a cloud; returns a one-line report.
pub fn generate(o: &MeshOptions) -> Result<String> {
    let closure = parse_closure(&o.closure)?;
    if o.points == Some(0) {
        return Err(SimError::Input("--points 0: give the number of points wanted (at least 1)".into()));
    }
    let asked = match (o.points, o.ni, o.nj) {
        (_, Some(ni), Some(nj)) => Some(("--ni x --nj", ni.saturating_mul(nj))),
        (Some(p), ..) => Some(("--points", p)),
        _ => None,
    };
    if let Some((flag, n)) = asked.filter(|&(_, n)| n > MAX_POINTS) {
        return Err(SimError::Input(format!(
            "{flag}: {n} points is more than the {MAX_POINTS} that a cloud file sim reads can hold"
        )));
    }
    if !(o.radius > 2.0 && o.radius <= MAX_RADIUS) {
        return Err(SimError::Input(format!("--radius {}: the far field must be in (2, {MAX_RADIUS:e}] chords", o.radius)));
    }
    check_out(&o.out)?;
    let cloud = match o.kind.as_str() {
        "ogrid" => {
            let (ni, nj) = ogrid_size(o)?;
            // The default, raised where the rings could not reach the far field from it, and
            // lowered to half their mean spacing where they could not all fit.
            let mean = o.radius / nj as f64;
            let first_spacing = o.first_spacing.unwrap_or_else(|| {
                match DEFAULT_FIRST_SPACING.max(ogrid::smallest_first_spacing(o.radius, nj)) {
                    d if d >= mean => 0.5 * mean,
                    d => d,
                }
            });
            let g = OGrid { ni, nj, radius: o.radius, first_spacing, thickness: o.thickness, closure };
            ogrid::ogrid(&g).map_err(|e| match (e, o.first_spacing) {
                (SimError::Input(m), None) => SimError::Input(format!(
                    "{m} (--first-spacing was not given: {first_spacing} is its default for these --radius and --nj)"
                )),
                (e, _) => e,
            })?
        }
        "quadtree" if o.ni.is_some() || o.nj.is_some() => {
            return Err(SimError::Input("--ni and --nj size an O-grid; a quadtree cloud takes --points".into()));
        }
        "quadtree" if o.first_spacing.is_some() => {
            return Err(SimError::Input("--first-spacing spaces the rings of an O-grid; a quadtree cloud has none".into()));
        }
        "quadtree" => quadtree_points(o.points.unwrap_or(20_000), o.thickness, closure, o.radius)?,
        k => return Err(SimError::Input(format!("--type {}: choose ogrid or quadtree", shorten(k)))),
    };
    write(&cloud, &o.format, &o.out)?;
    Ok(report(&cloud, o))
}

/// Refuse an `--out` that the cloud would not simply take the place of: a directory, a link,
/// a device or pipe, a read-only file, a path whose folder does not exist, or a path whose
/// temporary file (`.tmp`, written first and renamed) already exists.
fn check_out(out: &std::path::Path) -> Result<()> {
    let refuse = |why: &str| Err(SimError::Input(format!("--out {}: {why}", out.display())));
    if out.is_dir() || out.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return refuse("is a directory (or ends in /); give the cloud file's path");
    }
    if let Ok(m) = std::fs::symlink_metadata(out) {
        if !m.is_file() {
            return refuse("is not a regular file (a link, device or pipe); give a new file's path");
        }
        if m.permissions().readonly() {
            return refuse("is read-only; sim does not replace it");
        }
    }
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if folder.exists() && !folder.is_dir() {
        return refuse(&format!("{} is a file, not a folder", folder.display()));
    }
    if !folder.is_dir() {
        return refuse(&format!("the folder {} does not exist", folder.display()));
    }
    let tmp = crate::io::tmp_path(out);
    if std::fs::symlink_metadata(&tmp).is_ok() {
        return refuse(&format!("{} exists; sim writes the cloud there first, so move it away", tmp.display()));
    }
    Ok(())
}

fn parse_closure(name: &str) -> Result<Closure> {
    match name {
        "scaled" => Ok(Closure::Scaled),
        "modified" => Ok(Closure::Modified),
        c => Err(SimError::Input(format!("--closure {}: choose scaled or modified", shorten(c)))),
    }
}

/// ni x nj of the O-grid: both given, from --points, or the reference 160 x 60.
fn ogrid_size(o: &MeshOptions) -> Result<(usize, usize)> {
    match (o.ni, o.nj, o.points) {
        (Some(_), Some(_), Some(_)) => Err(SimError::Input("give --ni and --nj, or --points, not both".into())),
        (Some(a), Some(b), None) => Ok((a, b)),
        (None, None, Some(p)) => Ok(ogrid_dims(p)),
        (None, None, None) => Ok((160, 60)),
        _ => Err(SimError::Input("give both --ni and --nj, or --points".into())),
    }
}

/// Write `cloud` to `out` in `format` (`sim` or `legacy`).
fn write(cloud: &Cloud, format: &str, out: &std::path::Path) -> Result<()> {
    match format {
        "sim" => cloud.write_sim(out),
        "legacy" => cloud.write_legacy(out),
        f => Err(SimError::Input(format!("--format {}: choose sim or legacy", shorten(f)))),
    }
}

/// The one-line report of `sim mesh`.
fn report(cloud: &Cloud, o: &MeshOptions) -> String {
    let count = |flag: u8| cloud.flag.iter().filter(|&&f| f == flag).count();
    let (w, out) = (count(WALL), count(OUTER));
    let text = format!(
        "wrote {} ({} format): {} points ({w} wall, {out} outer), {} links; all split stencils validated\n",
        o.out.display(),
        o.format,
        cloud.len(),
        cloud.conn.idx.len()
    );
    // The quadtree's refinement meets a count only roughly, and not below what its surface
    // points and 2:1 balance need.
    match o.points {
        Some(p) if o.kind == "quadtree" && (cloud.len() as f64 / p as f64 - 1.0).abs() > 0.25 => {
            text + &format!("note: --points {p}: the nearest count the quadtree's refinement reached is {}\n", cloud.len())
        }
        _ => text,
    }
}
