//! Structured O-grid cloud around a NACA 00xx aerofoil (spec lskum.md 13) with the point
//! numbering, flags and 3x3-block connectivity of the 9600-point reference cloud, validated
//! like a cloud read from a file.

use crate::error::{Result, SimError};
use crate::solvers::lskum::cloud::{Cloud, Csr, INTERIOR, NONE, OUTER, WALL};

use super::finish::finish_mirrored;
use super::naca::{Closure, surface_points};

/// Settings of the O-grid generator.
#[derive(Clone, Copy, Debug)]
pub struct OGrid {
    /// Points per ring (surface points incl. the trailing edge).
    pub ni: usize,
    /// Rings (1 = surface, nj = far field).
    pub nj: usize,
    /// Far-field radius (circle centred at (0.5, 0)).
    pub radius: f64,
    /// Spacing between the surface and ring 2 at mid-chord; at least
    /// [`smallest_first_spacing`].
    pub first_spacing: f64,
    /// Thickness ratio (0.12 for NACA 0012).
    pub thickness: f64,
    pub closure: Closure,
}

impl Default for OGrid {
    fn default() -> Self {
        OGrid { ni: 160, nj: 60, radius: 10.0, first_spacing: 2e-3, thickness: 0.12, closure: Closure::Scaled }
    }
}

/// Largest ratio of the spacings of two neighbouring rings.
const MAX_GROWTH: f64 = 4.0;

/// The smallest first spacing from which nj rings reach the far field at `radius` with the
/// spacing growing at most [`MAX_GROWTH`] times from one ring to the next.
pub fn smallest_first_spacing(radius: f64, nj: usize) -> f64 {
    // (nj is at most some 2^28 here; more would overflow to infinity all the same)
    let rings = nj.saturating_sub(1).min(2048) as i32;
    radius * (MAX_GROWTH - 1.0) / (MAX_GROWTH.powi(rings) - 1.0)
}

/// O-grid dimensions for about `points` points with the 160 x 60 aspect (8 : 3).
pub fn ogrid_dims(points: usize) -> (usize, usize) {
    let ni = ((points as f64 * 8.0 / 3.0).sqrt().round() as usize).max(16);
    let nj = ((points as f64 / ni as f64).round() as usize).max(4);
    (ni, nj)
}

/// Structured O-grid cloud: ring j = 1..nj, ni points per ring, point (j-1) ni + i; the surface
/// clockwise from the trailing edge (lower surface first), the far-field circle clockwise from
/// (0.5 + R, 0); rings placed along the straight line from surface point i to far-field point
/// i with geometric stretching. Flags and connectivity as the 9600-point reference cloud
/// (trailing-edge point flagged interior with shape 1). The cloud is its own mirror image
/// about y = 0: column ni - i mirrors column i (see [`Numbering::mirror`]).
pub fn ogrid(g: &OGrid) -> Result<Cloud> {
    check_settings(g)?;
    let mut c = place_points(g);
    check_wake(g, &c)?;
    connect(&mut c, g.ni, g.nj);
    let at = Numbering { ni: g.ni };
    finish_mirrored(c, "O-grid", &|k| at.mirror(k))
}

fn check_settings(g: &OGrid) -> Result<()> {
    let bad = |m: String| SimError::Input(format!("sim mesh naca0012 (O-grid): {m}"));
    if g.ni < 16 || g.nj < 4 {
        return Err(bad(format!("{} x {} is too small (at least 16 x 4)", g.ni, g.nj)));
    }
    if g.ni.checked_mul(g.nj).is_none_or(|n| n >= u32::MAX as usize / 16) {
        return Err(bad(format!("{} x {} points is too many", g.ni, g.nj)));
    }
    if !(g.radius.is_finite() && g.radius > 2.0) {
        return Err(bad(format!("radius {} must be more than 2 chords", g.radius)));
    }
    if !(g.first_spacing > 0.0 && g.first_spacing < g.radius / g.nj as f64) {
        let mean = g.radius / g.nj as f64;
        return Err(bad(format!("--first-spacing {}: must be in (0, --radius / --nj) = (0, {mean:.4e})", g.first_spacing)));
    }
    let least = smallest_first_spacing(g.radius, g.nj);
    // (a relative margin for the rounding of a spacing copied from this message)
    if g.first_spacing < least * (1.0 - 1e-9) {
        let nj = (g.nj..).find(|&n| smallest_first_spacing(g.radius, n) <= g.first_spacing).unwrap_or(g.nj);
        return Err(bad(format!(
            "--first-spacing {} is too small for --nj {}: the ring spacing may grow at most {MAX_GROWTH} times \
             from one ring to the next, so the rings would not reach the far field; give --first-spacing at \
             least {:.3e} or --nj at least {nj}",
            g.first_spacing,
            g.nj,
            // (rounded up, so that the value shown works)
            least * (1.0 + 1e-3)
        )));
    }
    if let Some(why) = super::naca::thickness_refused(g.thickness) {
        return Err(bad(why));
    }
    Ok(())
}

/// The points of the wake line (column 0 downstream of the trailing edge, on y = 0) need
/// points downstream of them off the line for their x- split stencil. The far-field points
/// beside the axis lie at x = 0.5 + R cos(2 pi / ni); with few points per ring and a thin
/// last ring the wake line's last interior point lies further downstream than every point
/// off the line.
fn check_wake(g: &OGrid, c: &Cloud) -> Result<()> {
    let x_wake = c.x[(g.nj - 2) * g.ni];
    let x_off = (0..c.len()).filter(|&k| c.y[k] != 0.0).map(|k| c.x[k]).fold(f64::NEG_INFINITY, f64::max);
    if x_off >= x_wake {
        return Ok(());
    }
    let angle = ((x_wake - 0.5) / g.radius).min(1.0).acos();
    let ni = (2.0 * std::f64::consts::PI / angle).ceil();
    Err(SimError::Input(format!(
        "sim mesh naca0012 (O-grid): --ni {} is too few points per ring for --nj {} with --first-spacing {}: \
         the wake line's last point before the far field (x = {x_wake:.4}) lies downstream of every point \
         off the line, so its downstream stencil would be singular; give --ni at least {ni}, or fewer rings \
         (--nj) or a smaller --first-spacing",
        g.ni, g.nj, g.first_spacing
    )))
}

/// Growth ratio r with h (r^n - 1) / (r - 1) = l (bisection; `check_settings` makes sure
/// that r <= MAX_GROWTH does it).
fn growth(h: f64, l: f64, n: usize) -> f64 {
    let total = |r: f64| if (r - 1.0).abs() < 1e-12 { h * n as f64 } else { h * (r.powi(n as i32) - 1.0) / (r - 1.0) };
    let (mut lo, mut hi) = (1.0 + 1e-12, MAX_GROWTH);
    if total(lo) >= l {
        return 1.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < l { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

/// Fraction of the curve length at ring j = 0..nj (0 at the surface, 1 at the far field):
/// geometric stretching from `first_spacing`.
fn ring_fractions(g: &OGrid) -> Vec<f64> {
    let nj = g.nj;
    let r = growth(g.first_spacing, g.radius, nj - 1);
    (0..nj)
        .map(|j| if r == 1.0 { j as f64 / (nj - 1) as f64 } else { (r.powi(j as i32) - 1.0) / (r.powi(nj as i32 - 1) - 1.0) })
        .collect()
}

/// Coordinates of all points (flags and links still empty). The columns of the upper side are
/// the mirror images of the lower side's, and the columns on the axis (trailing edge, leading
/// edge) lie on y = 0, so that rounding leaves no asymmetry.
fn place_points(g: &OGrid) -> Cloud {
    let (ni, nj) = (g.ni, g.nj);
    let n = ni * nj;
    let frac = ring_fractions(g);
    let mut c = Cloud { x: vec![0.0; n], y: vec![0.0; n], ..Default::default() };
    let surf = surface_points(ni, g.thickness, g.closure);
    let at = Numbering { ni };
    for i in 0..ni {
        let m = at.mirror(i);
        if m < i {
            for j in 0..nj {
                (c.x[j * ni + i], c.y[j * ni + i]) = (c.x[j * ni + m], -c.y[j * ni + m]);
            }
            continue;
        }
        let column = Column::new(&surf, i, g.radius);
        for (j, &f) in frac.iter().enumerate() {
            let k = j * ni + i;
            (c.x[k], c.y[k]) = if j == 0 {
                column.start
            } else if j == nj - 1 {
                column.end
            } else {
                column.at(f)
            };
            if m == i {
                c.y[k] = 0.0;
            }
        }
    }
    c
}

/// The curve that carries the points of column i: a cubic Hermite curve from surface point i
/// (leaving along a blend of its normal and the straight line) to far-field point i.
struct Column {
    start: (f64, f64),
    end: (f64, f64),
    /// Tangents at the start and the end.
    t0: (f64, f64),
    t1: (f64, f64),
}

impl Column {
    fn new(surf: &[(f64, f64)], i: usize, radius: f64) -> Self {
        let pi = std::f64::consts::PI;
        let th = 2.0 * pi * i as f64 / surf.len() as f64;
        let (xs, ys) = surf[i];
        let (xf, yf) = (0.5 + radius * th.cos(), -radius * th.sin());
        let (nx, ny) = surface_normal(surf, i);
        let len = ((xf - xs).powi(2) + (yf - ys).powi(2)).sqrt();
        // leave along a blend of the surface normal and the straight line: straight at the
        // trailing edge (rings downstream of the TE point), half-half at the leading edge
        let w = 0.5 * (1.0 - th.cos());
        let (dx, dy) = (w * nx + (xf - xs) / len, w * ny + (yf - ys) / len);
        let dm = (dx * dx + dy * dy).sqrt();
        Column { start: (xs, ys), end: (xf, yf), t0: (len * dx / dm, len * dy / dm), t1: (xf - xs, yf - ys) }
    }

    /// The point at curve parameter f in [0, 1].
    fn at(&self, f: f64) -> (f64, f64) {
        let ((xs, ys), (xf, yf), (t0x, t0y), (t1x, t1y)) = (self.start, self.end, self.t0, self.t1);
        let (f2, f3) = (f * f, f * f * f);
        let (h00, h10, h01, h11) = (2.0 * f3 - 3.0 * f2 + 1.0, f3 - 2.0 * f2 + f, -2.0 * f3 + 3.0 * f2, f3 - f2);
        (h00 * xs + h10 * t0x + h01 * xf + h11 * t1x, h00 * ys + h10 * t0y + h01 * yf + h11 * t1y)
    }
}

/// Outward normal of surface point i (two-sided, as the solver computes it; (1, 0) at the
/// trailing edge).
fn surface_normal(surf: &[(f64, f64)], i: usize) -> (f64, f64) {
    if i == 0 {
        return (1.0, 0.0);
    }
    let (l, r) = (surf[i - 1], surf[(i + 1) % surf.len()]);
    let (a, b) = (0.5 * (r.1 - l.1), 0.5 * (r.0 - l.0));
    let m = (a * a + b * b).sqrt();
    (-a / m, b / m)
}

/// Point numbers of the O-grid: column i (taken around the ring), ring j.
#[derive(Clone, Copy)]
struct Numbering {
    ni: usize,
}

impl Numbering {
    fn id(self, i: i64, j: usize) -> u32 {
        (j * self.ni) as u32 + i.rem_euclid(self.ni as i64) as u32
    }
    /// Points i-1, i, i+1 of ring j.
    fn ring(self, i: i64, j: usize) -> [u32; 3] {
        [self.id(i - 1, j), self.id(i, j), self.id(i + 1, j)]
    }
    /// Points i-1 and i+1 of ring j.
    fn sides(self, i: i64, j: usize) -> [u32; 2] {
        [self.id(i - 1, j), self.id(i + 1, j)]
    }
    /// The mirror image about y = 0 of point k: the same ring, column ni - i.
    fn mirror(self, k: usize) -> usize {
        let (j, i) = (k / self.ni, k % self.ni);
        j * self.ni + (self.ni - i) % self.ni
    }
}

/// Flags, shapes, left/right and neighbour lists of the reference cloud.
fn connect(c: &mut Cloud, ni: usize, nj: usize) {
    let n = ni * nj;
    let at = Numbering { ni };
    c.flag = vec![INTERIOR; n];
    c.shape = vec![0; n];
    c.left = vec![NONE; n];
    c.right = vec![NONE; n];
    c.conn = Csr { start: Vec::with_capacity(n + 1), idx: Vec::with_capacity(8 * n) };
    c.conn.start.push(0);
    for j in 0..nj {
        for i in 0..ni as i64 {
            if j == 0 {
                connect_surface_point(c, at, i);
            } else if j == nj - 1 {
                connect_far_field_point(c, at, i, j);
            } else {
                c.conn.idx.extend(at.ring(i, j - 1));
                c.conn.idx.extend(at.sides(i, j));
                c.conn.idx.extend(at.ring(i, j + 1));
            }
            c.conn.start.push(c.conn.idx.len() as u32);
        }
    }
}

/// Point i of the surface ring: wall (the trailing edge interior), shape 1; neighbours its two
/// surface neighbours, ring 2 and ring 3.
fn connect_surface_point(c: &mut Cloud, at: Numbering, i: i64) {
    let k = at.id(i, 0) as usize;
    let side = at.sides(i, 0);
    c.flag[k] = if i == 0 { INTERIOR } else { WALL };
    c.shape[k] = 1;
    c.left[k] = side[0];
    c.right[k] = side[1];
    c.conn.idx.extend(side);
    c.conn.idx.extend(at.ring(i, 1));
    // at the trailing edge: the second neighbours on the surface and ring 2 instead of
    // ring 3 (the pattern of the reference cloud)
    if i == 0 || i == 1 {
        c.conn.idx.extend([at.id(i - 2, 0), at.id(i + 2, 0), at.id(i - 2, 1), at.id(i + 2, 1)]);
    } else if i == at.ni as i64 - 1 {
        c.conn.idx.extend([at.id(i - 2, 0), at.id(i - 2, 1)]);
    } else {
        c.conn.idx.extend(at.ring(i, 2));
    }
}

/// Point i of the far-field ring j: outer; neighbours the two rings inside and its two
/// far-field neighbours.
fn connect_far_field_point(c: &mut Cloud, at: Numbering, i: i64, j: usize) {
    let k = at.id(i, j) as usize;
    let side = at.sides(i, j);
    c.flag[k] = OUTER;
    c.left[k] = side[0];
    c.right[k] = side[1];
    c.conn.idx.extend(at.ring(i, j - 1));
    c.conn.idx.extend(side);
    // at the far-field seam: second neighbours on the last two rings
    if i == 0 || i == at.ni as i64 - 1 {
        c.conn.idx.extend([at.id(i - 2, j - 1), at.id(i + 2, j - 1), at.id(i - 2, j), at.id(i + 2, j)]);
    } else {
        c.conn.idx.extend(at.ring(i, j - 2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::cloud_file::{self, CloudFormat};

    #[test]
    fn reproduces_the_surface_and_structure_of_the_9600_cloud() {
        let g = ogrid(&OGrid::default()).unwrap();
        let r = cloud_file::load(
            concat!(env!("CARGO_MANIFEST_DIR"), "/meshes/naca0012_9600_legacy.txt").as_ref(),
            CloudFormat::Legacy,
        )
        .unwrap();
        assert_eq!(g.len(), r.len());
        assert_eq!(g.flag, r.flag);
        assert_eq!(g.shape, r.shape);
        // surface and far field: the reference file holds them to 6 significant digits
        for k in (0..160).chain(9440..9600) {
            // (1.5 units of the 6th digit: the original generator rounded in single precision)
            let tol = |v: f64| 1e-8 + 1.5e-5 * 10f64.powf(v.abs().max(1e-12).log10().floor());
            assert!((g.x[k] - r.x[k]).abs() < tol(r.x[k]) && (g.y[k] - r.y[k]).abs() < tol(r.y[k]), "point {}", k + 1);
        }
        // left/right everywhere and the regular 3x3 connectivity away from the seam
        assert_eq!(g.left, r.left);
        assert_eq!(g.right, r.right);
        let mut same = 0;
        for k in 0..9600 {
            let (a, b) = (g.conn.of(k), r.conn.of(k));
            let (mut a, mut b) = (a.to_vec(), b.to_vec());
            a.sort();
            b.sort();
            if a == b {
                same += 1;
            }
        }
        // the same neighbour sets except at the seams and where the stencil repair added points
        assert!(same >= 9500, "{same}");
        eprintln!("{same} of 9600 points have the reference neighbour set");
    }

    /// The mirror image of every point about y = 0 is a point of the cloud with the mirrored
    /// normal and boundary links, and the images of its neighbours in the same order (as a
    /// set on the axis, where the points lie on y = 0).
    fn assert_mirrored(c: &Cloud, ni: usize) {
        let mirror = |k: usize| k / ni * ni + (ni - k % ni) % ni;
        let image = |k: u32| if k == NONE { NONE } else { mirror(k as usize) as u32 };
        for k in 0..c.len() {
            let m = mirror(k);
            let p = format!("point {} and its image {}", k + 1, m + 1);
            assert_eq!((c.x[m], c.y[m]), (c.x[k], -c.y[k]), "{p}");
            assert_eq!((c.flag[m], c.shape[m], c.min_dist[m]), (c.flag[k], c.shape[k], c.min_dist[k]), "{p}");
            assert_eq!((c.left[m], c.right[m]), (image(c.right[k]), image(c.left[k])), "{p}");
            let ny = if c.flag[k] == INTERIOR { c.ny[k] } else { -c.ny[k] };
            assert_eq!((c.nx[m], c.ny[m]), (c.nx[k], ny), "{p}");
            let images: Vec<u32> = c.conn.of(k).iter().map(|&n| image(n)).collect();
            if m == k {
                assert_eq!(c.y[k], 0.0, "{p}");
                let (mut a, mut b) = (images, c.conn.of(k).to_vec());
                a.sort();
                b.sort();
                assert_eq!(a, b, "{p}");
            } else {
                assert_eq!(c.conn.of(m), &images[..], "{p}");
            }
        }
    }

    #[test]
    fn clouds_are_mirror_symmetric() {
        // even ni (trailing and leading edge on the axis), odd ni (trailing edge only)
        for (ni, nj, first_spacing) in [(160, 60, 2e-3), (64, 24, 1e-2), (41, 12, 1e-2)] {
            let c = ogrid(&OGrid { ni, nj, first_spacing, ..Default::default() }).unwrap();
            assert_mirrored(&c, ni);
        }
    }

    #[test]
    fn in_range_settings_give_valid_clouds() {
        // the trailing-edge point's downstream stencil needs points off the axis
        for (ni, nj, h) in
            [(160, 60, 1e-4), (80, 60, 1e-4), (40, 60, 1e-3), (16, 10, 2e-3), (16, 4, 0.5), (17, 8, 1e-2), (160, 60, 1e-6)]
        {
            let g = OGrid { ni, nj, first_spacing: h, ..Default::default() };
            if let Err(e) = ogrid(&g) {
                panic!("{ni} x {nj}, first spacing {h}: {e}");
            }
        }
    }

    #[test]
    fn a_first_spacing_the_rings_cannot_reach_is_refused() {
        let g = OGrid { ni: 160, nj: 8, first_spacing: 1e-3, ..Default::default() };
        let e = ogrid(&g).unwrap_err().to_string();
        assert!(e.contains("--first-spacing 0.001 is too small for --nj 8") && e.contains("--nj at least 9"), "{e}");
        // the spacing the message offers works
        let least: f64 = e.split("--first-spacing at least ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        ogrid(&OGrid { first_spacing: least, ..g }).unwrap();
        ogrid(&OGrid { nj: 9, ..g }).unwrap();
    }

    #[test]
    fn too_few_points_per_ring_for_the_wake_line_are_refused() {
        let g = OGrid { ni: 16, nj: 60, first_spacing: 1e-2, ..Default::default() };
        let e = ogrid(&g).unwrap_err().to_string();
        assert!(e.contains("--ni 16 is too few points per ring") && e.contains("--ni at least 17"), "{e}");
        ogrid(&OGrid { ni: 17, ..g }).unwrap();
    }

    #[test]
    fn a_point_count_beyond_the_integers_is_refused() {
        // 2^32 x 2^32 is 0 in 64-bit arithmetic
        let g = OGrid { ni: 1 << 32, nj: 1 << 32, radius: 1e10, first_spacing: 1.0, ..Default::default() };
        let e = check_settings(&g).unwrap_err().to_string();
        assert!(e.contains("too many"), "{e}");
    }

    #[test]
    fn other_sizes_validate() {
        for (ni, nj) in [(64, 24), (400, 150)] {
            let g = ogrid(&OGrid { ni, nj, first_spacing: 1e-3, ..Default::default() }).unwrap();
            assert_eq!(g.len(), ni * nj);
        }
    }
}
