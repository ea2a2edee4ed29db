//! NACA 00xx aerofoil surface (spec lskum.md 13), shared by the O-grid and quadtree generators.

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

/// Why `thickness` (of the chord) is no NACA 00xx section the generators take, if it is not.
pub fn thickness_refused(thickness: f64) -> Option<String> {
    (!(thickness > 0.0 && thickness < 0.4)).then(|| format!("--thickness {thickness}: must be in (0, 0.4)"))
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
