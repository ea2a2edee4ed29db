//! NACA 00xx point-cloud generators (spec lskum.md 13): a structured O-grid cloud with the
//! point numbering, flags and 3x3-block connectivity of the 9600-point reference cloud, and a
//! quadtree cloud for large sizes. Both are validated like a cloud read from a file.

use crate::error::{Result, SimError};

use super::cloud::{Cloud, Csr, INTERIOR, NONE, OUTER, WALL};

/// Zero of the open-trailing-edge NACA 0012 thickness formula (closed-TE scaling constant).
pub const C_STAR: f64 = 1.00893041136514;

/// Trailing-edge closure of the NACA 4-digit thickness distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Closure {
    /// Evaluate the open formula on [0, c*] and scale back (the reference clouds).
    #[default]
    Scaled,
    /// Last coefficient -0.1036 (closed trailing edge).
    Modified,
}

/// `n` surface points at equal angles of the cosine spacing `x = (1 + cos th) / 2`, from the
/// trailing edge along the lower surface (th < pi) and back along the upper one.
pub fn surface_points(n: usize, thickness: f64, closure: Closure) -> Vec<(f64, f64)> {
    let pi = std::f64::consts::PI;
    (0..n)
        .map(|i| {
            let th = 2.0 * pi * i as f64 / n as f64;
            let x = 0.5 * (1.0 + th.cos());
            let y = half_thickness(x, thickness, closure);
            (x, if th < pi { -y } else { y })
        })
        .collect()
}

/// Half thickness of a NACA 00tt aerofoil with chord 1 at x in [0, 1].
pub fn half_thickness(x: f64, t: f64, closure: Closure) -> f64 {
    let f = |x: f64, a4: f64| {
        5.0 * t * (0.2969 * x.sqrt() - 0.1260 * x - 0.3516 * x * x + 0.2843 * x * x * x + a4 * x * x * x * x)
    };
    match closure {
        Closure::Scaled => {
            let c = if (t - 0.12).abs() < 1e-15 { C_STAR } else { open_te_zero(t) };
            f(c * x, -0.1015) / c
        }
        Closure::Modified => f(x, -0.1036),
    }
}

/// Zero of the open formula beyond x = 1 (Newton).
fn open_te_zero(t: f64) -> f64 {
    let f = |x: f64| 0.2969 * x.sqrt() - 0.1260 * x - 0.3516 * x * x + 0.2843 * x * x * x - 0.1015 * x * x * x * x;
    let df = |x: f64| 0.5 * 0.2969 / x.sqrt() - 0.1260 - 2.0 * 0.3516 * x + 3.0 * 0.2843 * x * x - 4.0 * 0.1015 * x * x * x;
    let mut x = 1.0;
    for _ in 0..50 {
        x -= f(x) / df(x);
    }
    let _ = t;
    x
}

/// Settings of the O-grid generator.
#[derive(Clone, Copy, Debug)]
pub struct OGrid {
    /// Points per ring (surface points incl. the trailing edge).
    pub ni: usize,
    /// Rings (1 = surface, nj = far field).
    pub nj: usize,
    /// Far-field radius (circle centred at (0.5, 0)).
    pub radius: f64,
    /// Spacing between the surface and ring 2 at mid-chord.
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

/// Growth ratio r with h (r^(n-1) - 1) / (r - 1) = l (bisection).
fn growth(h: f64, l: f64, n: usize) -> f64 {
    let total = |r: f64| if (r - 1.0).abs() < 1e-12 { h * n as f64 } else { h * (r.powi(n as i32) - 1.0) / (r - 1.0) };
    let (mut lo, mut hi) = (1.0 + 1e-12, 4.0);
    if total(lo) >= l {
        return 1.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < l { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

/// Structured O-grid cloud: ring j = 1..nj, ni points per ring, point (j-1) ni + i; the surface
/// clockwise from the trailing edge (lower surface first), the far-field circle clockwise from
/// (0.5 + R, 0); rings placed along the straight line from surface point i to far-field point
/// i with geometric stretching. Flags and connectivity as the 9600-point reference cloud
/// (trailing-edge point flagged interior with shape 1).
pub fn ogrid(g: &OGrid) -> Result<Cloud> {
    let bad = |m: String| SimError::Input(format!("sim mesh naca0012 (O-grid): {m}"));
    if g.ni < 16 || g.nj < 4 {
        return Err(bad(format!("{} x {} is too small (at least 16 x 4)", g.ni, g.nj)));
    }
    if (g.ni as u64) * (g.nj as u64) >= u32::MAX as u64 / 16 {
        return Err(bad(format!("{} x {} points is too many", g.ni, g.nj)));
    }
    if !(g.radius.is_finite() && g.radius > 2.0) {
        return Err(bad(format!("radius {} must be more than 2 chords", g.radius)));
    }
    if !(g.first_spacing > 0.0 && g.first_spacing < g.radius / g.nj as f64) {
        return Err(bad(format!("first spacing {} must be in (0, radius / nj)", g.first_spacing)));
    }
    if !(g.thickness > 0.0 && g.thickness < 0.4) {
        return Err(bad(format!("thickness {} must be in (0, 0.4)", g.thickness)));
    }
    let (ni, nj) = (g.ni, g.nj);
    let n = ni * nj;
    let r = growth(g.first_spacing, g.radius, nj - 1);
    // fraction of the line length at ring j (0 at the surface, 1 at the far field)
    let frac: Vec<f64> = (0..nj)
        .map(|j| if r == 1.0 { j as f64 / (nj - 1) as f64 } else { (r.powi(j as i32) - 1.0) / (r.powi(nj as i32 - 1) - 1.0) })
        .collect();
    let mut c = Cloud { x: vec![0.0; n], y: vec![0.0; n], ..Default::default() };
    let pi = std::f64::consts::PI;
    let surf = surface_points(ni, g.thickness, g.closure);
    for i in 0..ni {
        let th = 2.0 * pi * i as f64 / ni as f64;
        let (xs, ys) = surf[i];
        let (xf, yf) = (0.5 + g.radius * th.cos(), -g.radius * th.sin());
        // outward surface normal (two-sided, as the solver computes it; (1, 0) at the TE)
        let (nx, ny) = if i == 0 {
            (1.0, 0.0)
        } else {
            let (l, r) = (surf[i - 1], surf[(i + 1) % ni]);
            let (a, b) = (0.5 * (r.1 - l.1), 0.5 * (r.0 - l.0));
            let m = (a * a + b * b).sqrt();
            (-a / m, b / m)
        };
        // Hermite curve from the surface point (leaving along the normal) to the far-field point
        let len = ((xf - xs).powi(2) + (yf - ys).powi(2)).sqrt();
        // leave along a blend of the surface normal and the straight line: straight at the
        // trailing edge (rings downstream of the TE point), half-half at the leading edge
        let w = 0.5 * (1.0 - th.cos());
        let (dx, dy) = (w * nx + (xf - xs) / len, w * ny + (yf - ys) / len);
        let dm = (dx * dx + dy * dy).sqrt();
        let (t0x, t0y) = (len * dx / dm, len * dy / dm);
        let (t1x, t1y) = (xf - xs, yf - ys);
        for j in 0..nj {
            let f = frac[j];
            let (f2, f3) = (f * f, f * f * f);
            let (h00, h10, h01, h11) = (2.0 * f3 - 3.0 * f2 + 1.0, f3 - 2.0 * f2 + f, -2.0 * f3 + 3.0 * f2, f3 - f2);
            let k = j * ni + i;
            if j == 0 {
                c.x[k] = xs;
                c.y[k] = ys;
            } else if j == nj - 1 {
                c.x[k] = xf;
                c.y[k] = yf;
            } else {
                c.x[k] = h00 * xs + h10 * t0x + h01 * xf + h11 * t1x;
                c.y[k] = h00 * ys + h10 * t0y + h01 * yf + h11 * t1y;
            }
        }
    }
    let id = |i: i64, j: usize| (j * ni) as u32 + i.rem_euclid(ni as i64) as u32;
    c.flag = vec![INTERIOR; n];
    c.shape = vec![0; n];
    c.left = vec![NONE; n];
    c.right = vec![NONE; n];
    c.conn = Csr { start: Vec::with_capacity(n + 1), idx: Vec::with_capacity(8 * n) };
    c.conn.start.push(0);
    for j in 0..nj {
        for i in 0..ni as i64 {
            let k = id(i, j) as usize;
            let ring = |jj: usize| [id(i - 1, jj), id(i, jj), id(i + 1, jj)];
            let side = [id(i - 1, j), id(i + 1, j)];
            let last = i == ni as i64 - 1;
            if j == 0 {
                c.flag[k] = if i == 0 { INTERIOR } else { WALL };
                c.shape[k] = 1;
                c.left[k] = side[0];
                c.right[k] = side[1];
                c.conn.idx.extend(side);
                c.conn.idx.extend(ring(1));
                // at the trailing edge: the second neighbours on the surface and ring 2
                // instead of ring 3 (the pattern of the reference cloud)
                if i == 0 || i == 1 {
                    c.conn.idx.extend([id(i - 2, 0), id(i + 2, 0), id(i - 2, 1), id(i + 2, 1)]);
                } else if last {
                    c.conn.idx.extend([id(i - 2, 0), id(i - 2, 1)]);
                } else {
                    c.conn.idx.extend(ring(2));
                }
            } else if j == nj - 1 {
                c.flag[k] = OUTER;
                c.left[k] = side[0];
                c.right[k] = side[1];
                c.conn.idx.extend(ring(j - 1));
                c.conn.idx.extend(side);
                // at the far-field seam: second neighbours on the last two rings
                if i == 0 || last {
                    c.conn.idx.extend([id(i - 2, j - 1), id(i + 2, j - 1), id(i - 2, j), id(i + 2, j)]);
                } else {
                    c.conn.idx.extend(ring(j - 2));
                }
            } else {
                c.conn.idx.extend(ring(j - 1));
                c.conn.idx.extend(side);
                c.conn.idx.extend(ring(j + 1));
            }
            c.conn.start.push(c.conn.idx.len() as u32);
        }
    }
    finish(c, "O-grid")
}

/// Relative determinant D / (S_ss S_nn) below which the generators add neighbours.
const REPAIR_DET: f64 = 1e-3;

/// Smallest relative determinant over the split stencils point i uses (0 when one is empty).
fn worst_stencil(c: &Cloud, i: usize, nbrs: &[u32]) -> f64 {
    let (nx, ny) = (c.nx[i], c.ny[i]);
    // sums of (x+, x-, y+, y-): sss, snn, ssn, count
    let mut s = [[0.0f64; 4]; 4];
    for &k in nbrs {
        let dx = c.x[k as usize] - c.x[i];
        let dy = c.y[k as usize] - c.y[i];
        let ds = dx * ny - dy * nx;
        let dn = dx * nx + dy * ny;
        let mut add = |m: usize| {
            s[m][0] += ds * ds;
            s[m][1] += dn * dn;
            s[m][2] += ds * dn;
            s[m][3] += 1.0;
        };
        if ds <= 0.0 {
            add(0);
        }
        if ds >= 0.0 {
            add(1);
        }
        match c.flag[i] {
            INTERIOR => {
                if dn <= 0.0 {
                    add(2);
                }
                if dn >= 0.0 {
                    add(3);
                }
            }
            WALL => add(3),
            _ => add(2),
        }
    }
    let used: &[usize] = match c.flag[i] {
        INTERIOR => &[0, 1, 2, 3],
        WALL => &[0, 1, 3],
        _ => &[0, 1, 2],
    };
    used.iter()
        .map(|&m| {
            let [a, b, d, cnt] = s[m];
            if cnt == 0.0 || a * b == 0.0 { 0.0 } else { (a * b - d * d) / (a * b) }
        })
        .fold(f64::INFINITY, f64::min)
}

/// Add the nearest second- and third-ring neighbours to points whose split stencils are
/// empty or badly conditioned, until every stencil is acceptable (spec 13.3 step 7).
fn repair(c: &mut Cloud, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) {
    let n = c.len();
    let lists: Vec<Vec<u32>> = (0..n).map(|i| c.conn.of(i).to_vec()).collect();
    let mut out = lists.clone();
    for i in 0..n {
        if worst_stencil(c, i, &out[i]) >= REPAIR_DET {
            continue;
        }
        let mut cand: Vec<u32> = Vec::new();
        let mut frontier = lists[i].clone();
        for _ in 0..2 {
            let mut next = Vec::new();
            for &k in &frontier {
                for &m in &lists[k as usize] {
                    if m as usize != i && !out[i].contains(&m) && !cand.contains(&m) && allowed(c, i, m as usize) {
                        cand.push(m);
                        next.push(m);
                    }
                }
            }
            frontier = next;
        }
        let d2 = |k: u32| (c.x[k as usize] - c.x[i]).powi(2) + (c.y[k as usize] - c.y[i]).powi(2);
        cand.sort_by(|&a, &b| d2(a).total_cmp(&d2(b)));
        for k in cand {
            if worst_stencil(c, i, &out[i]) >= REPAIR_DET {
                break;
            }
            out[i].push(k);
        }
    }
    let mut conn = Csr { start: Vec::with_capacity(n + 1), idx: Vec::new() };
    conn.start.push(0);
    for l in out {
        conn.idx.extend(l);
        conn.start.push(conn.idx.len() as u32);
    }
    c.conn = conn;
}

/// Normals, min_dist, stencils and validation of a generated cloud.
pub fn finish(c: Cloud, what: &str) -> Result<Cloud> {
    finish_with(c, what, &|_, _, _| true)
}

/// [`finish`] where the stencil repair only adds links `allowed(cloud, i, k)`.
pub fn finish_with(mut c: Cloud, what: &str, allowed: &dyn Fn(&Cloud, usize, usize) -> bool) -> Result<Cloud> {
    let n = c.len();
    c.nx = vec![0.0; n];
    c.ny = vec![1.0; n];
    for i in 0..n {
        if c.flag[i] != INTERIOR {
            let (l, r) = (c.left[i] as usize, c.right[i] as usize);
            let a = 0.5 * (c.y[r] - c.y[l]);
            let b = 0.5 * (c.x[r] - c.x[l]);
            let m = (a * a + b * b).sqrt();
            c.nx[i] = -a / m;
            c.ny[i] = b / m;
        }
    }
    repair(&mut c, allowed);
    c.min_dist = (0..n)
        .map(|i| {
            c.conn
                .of(i)
                .iter()
                .map(|&k| ((c.x[k as usize] - c.x[i]).powi(2) + (c.y[k as usize] - c.y[i]).powi(2)).sqrt())
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    if let Some(i) = (0..n).find(|&i| !(c.min_dist[i] > 0.0)) {
        return Err(SimError::Input(format!("generated {what} cloud: point {} coincides with a neighbour", i + 1)));
    }
    c.build_stencils();
    c.check_stencils(&|i| format!("generated {what} cloud: point {} ({}, {})", i + 1, c.x[i], c.y[i]))?;
    Ok(c)
}

/// O-grid dimensions for about `points` points with the 160 x 60 aspect (8 : 3).
pub fn ogrid_dims(points: usize) -> (usize, usize) {
    let ni = ((points as f64 * 8.0 / 3.0).sqrt().round() as usize).max(16);
    let nj = ((points as f64 / ni as f64).round() as usize).max(4);
    (ni, nj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_the_surface_and_structure_of_the_9600_cloud() {
        let g = ogrid(&OGrid::default()).unwrap();
        let r = super::super::cloud::load(
            concat!(env!("CARGO_MANIFEST_DIR"), "/meshes/naca0012_9600_legacy.txt").as_ref(),
            super::super::cloud::CloudFormat::Legacy,
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

    #[test]
    fn other_sizes_validate() {
        for (ni, nj) in [(64, 24), (400, 150)] {
            let g = ogrid(&OGrid { ni, nj, first_spacing: 1e-3, ..Default::default() }).unwrap();
            assert_eq!(g.len(), ni * nj);
        }
    }
}

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
    pub first_spacing: f64,
    pub thickness: f64,
    /// `scaled` or `modified` trailing-edge closure.
    pub closure: String,
    /// `sim` or `legacy`.
    pub format: String,
    pub out: std::path::PathBuf,
}

/// `sim mesh naca0012`: generate, validate and write a cloud; returns a one-line report.
pub fn generate(o: &MeshOptions) -> Result<String> {
    let closure = match o.closure.as_str() {
        "scaled" => Closure::Scaled,
        "modified" => Closure::Modified,
        c => return Err(SimError::Input(format!("--closure {c}: choose scaled or modified"))),
    };
    let cloud = match o.kind.as_str() {
        "ogrid" => {
            let (ni, nj) = match (o.ni, o.nj, o.points) {
                (Some(a), Some(b), _) => (a, b),
                (None, None, Some(p)) => ogrid_dims(p),
                (None, None, None) => (160, 60),
                _ => return Err(SimError::Input("give both --ni and --nj, or --points".into())),
            };
            ogrid(&OGrid { ni, nj, radius: o.radius, first_spacing: o.first_spacing, thickness: o.thickness, closure })?
        }
        "quadtree" => super::quadtree::quadtree_points(o.points.unwrap_or(20_000), o.thickness, closure, o.radius)?,
        k => return Err(SimError::Input(format!("--type {k}: choose ogrid or quadtree"))),
    };
    match o.format.as_str() {
        "sim" => cloud.write_sim(&o.out)?,
        "legacy" => cloud.write_legacy(&o.out)?,
        f => return Err(SimError::Input(format!("--format {f}: choose sim or legacy"))),
    }
    let (w, out) = (
        cloud.flag.iter().filter(|&&f| f == WALL).count(),
        cloud.flag.iter().filter(|&&f| f == OUTER).count(),
    );
    Ok(format!(
        "wrote {} ({} format): {} points ({w} wall, {out} outer), {} links; all split stencils validated\n",
        o.out.display(),
        o.format,
        cloud.len(),
        cloud.conn.idx.len()
    ))
}
