//! Branch-free `exp`, `ln` and `erf` of f64 for loops the compiler vectorises (lskum's
//! `cpu.math: fast`). They are the fdlibm algorithms (the core polynomials and rational
//! functions, with their coefficients) with every special case turned into a select, so that a
//! loop over them becomes AVX2/AVX-512 code; plain `*` and `+` (no FMA), so every build gives
//! the same bits.
//!
//! Error bounds against a correctly rounded result (the tests measure them on a million random
//! arguments each, tails included):
//! * [`exp`]: at most 1 ulp on [-708, 708]; 0 below -708, +inf above 708.
//! * [`ln`]: at most 1 ulp for positive normal numbers; NaN below 0, -inf at 0, +inf at +inf.
//! * [`erf`]: at most 1 ulp on [-6, 6] and ±1 beyond (where erf rounds to ±1).
//!
//! NaN in gives NaN out.
#![allow(clippy::excessive_precision)] // fdlibm's coefficients as it prints them

/// 1.5 * 2^52: adding it rounds to an integer held in the low bits of the sum.
const ROUND: f64 = 6755399441055744.0;
const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;

/// The largest |x| [`exp`] scales by a normal power of 2.
pub const EXP_LIMIT: f64 = 708.0;

/// e^x (fdlibm's rational form of e^r on |r| <= ln2 / 2).
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    const P: [f64; 5] = [
        1.66666666666666019037e-01,
        -2.77777777770155933842e-03,
        6.61375632143793436117e-05,
        -1.65339022054652515390e-06,
        4.13813679705723846039e-08,
    ];
    // x clamped into the range (NaN passes), then x = k ln2 + r, |r| <= ln2 / 2.
    let xc = x.clamp(-EXP_LIMIT, EXP_LIMIT);
    let t = xc * std::f64::consts::LOG2_E + ROUND;
    let k = t - ROUND;
    let hi = xc - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P[0] + rr * (P[1] + rr * (P[2] + rr * (P[3] + rr * P[4]))));
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    // 2^k from the integer in the low bits of t (|k| <= 1022).
    let k_bits = t.to_bits().wrapping_sub(ROUND.to_bits());
    let scale = f64::from_bits(k_bits.wrapping_add(1023) << 52);
    let e = y * scale;
    if x < -EXP_LIMIT {
        0.0
    } else if x > EXP_LIMIT {
        f64::INFINITY
    } else {
        e
    }
}

/// Natural logarithm (fdlibm/musl `log`: x = 2^k (1 + f), sqrt(2)/2 <= 1 + f < sqrt(2)).
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    const LG: [f64; 7] = [
        6.666666666666735130e-01,
        3.999999999940941908e-01,
        2.857142874366239149e-01,
        2.222219843214978396e-01,
        1.818357216161805012e-01,
        1.531383769920937332e-01,
        1.479819860511658591e-01,
    ];
    // Shift the exponent so that mantissas at or above sqrt(2)/2 fall in [sqrt(2)/2, sqrt(2)).
    let bits = x.to_bits().wrapping_add((0x3ff00000u64 - 0x3fe6a09e) << 32);
    let e = bits >> 52; // biased exponent of 2^k
    let hx = ((bits >> 32) & 0x000f_ffff) + 0x3fe6a09e;
    let f = f64::from_bits((hx << 32) | (bits & 0xffff_ffff)) - 1.0;
    // k = e - 1023 as f64, through the bits of 2^52 + e (no integer conversion instruction).
    let k = f64::from_bits(0x4330_0000_0000_0000 | e) - (4503599627370496.0 + 1023.0);
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    let y = s * (hfsq + r) + k * LN2_LO - hfsq + f + k * LN2_HI;
    if x > 0.0 && x < f64::INFINITY {
        y
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else {
        f64::NAN
    }
}

/// 0.84506291151 rounded to single precision (erf(1) to 24 bits).
const ERX: f64 = 8.45062911510467529297e-01;

/// Horner evaluation of `c[0] + v c[1] + v^2 c[2] + ...`.
#[inline(always)]
fn poly<const N: usize>(v: f64, c: &[f64; N]) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ci| acc * v + ci)
}

/// [`poly`] with the coefficients of `a` where `first`, else of `b` (a select per lane rather
/// than two evaluations).
#[inline(always)]
fn poly_of<const N: usize>(v: f64, first: bool, a: &[f64; N], b: &[f64; N]) -> f64 {
    (0..N).rev().fold(0.0, |acc, i| acc * v + if first { a[i] } else { b[i] })
}

/// The error function: fdlibm's three pieces (|x| < 0.84375, < 1.25, < 6) evaluated together,
/// the piece of each argument selected before the one division.
#[inline(always)]
pub fn erf(x: f64) -> f64 {
    erf_in::<3>(x)
}

/// Which of [`erf`]'s pieces an argument needs: 1 for |x| < 0.84375, 2 for |x| < 1.25, else
/// 3 (NaN included).
#[inline(always)]
pub fn erf_piece(x: f64) -> u8 {
    let a = x.abs();
    if a < SMALL {
        1
    } else if a < MID {
        2
    } else {
        3
    }
}

/// Upper bound of the first piece of [`erf`], and of the second.
const SMALL: f64 = 0.84375;
const MID: f64 = 1.25;

/// [`erf`] for arguments that need at most its first `PIECES` pieces ([`erf_piece`]): the
/// same bits there, with the arithmetic of the pieces above left out (a vector loop evaluates
/// every piece in every lane).
#[inline(always)]
pub fn erf_in<const PIECES: u8>(x: f64) -> f64 {
    // |x| < 0.84375: erf = x + x P(x^2) / Q(x^2)
    const PP: [f64; 5] = [
        1.28379167095512558561e-01,
        -3.25042107247001499370e-01,
        -2.84817495755985104766e-02,
        -5.77027029648944159157e-03,
        -2.37630166566501626084e-05,
    ];
    const QQ: [f64; 6] = [
        1.0,
        3.97917223959155352819e-01,
        6.50222499887672944485e-02,
        5.08130628187576562776e-03,
        1.32494738004321644526e-04,
        -3.96022827877536812320e-06,
    ];
    // |x| < 1.25: erf = ERX + P(s) / Q(s), s = |x| - 1
    const PA: [f64; 7] = [
        -2.36211856075265944077e-03,
        4.14856118683748331666e-01,
        -3.72207876035701323847e-01,
        3.18346619901161753674e-01,
        -1.10894694282396677476e-01,
        3.54783043256182359371e-02,
        -2.16637559486879084300e-03,
    ];
    const QA: [f64; 7] = [
        1.0,
        1.06420880400844228286e-01,
        5.40397917702171048937e-01,
        7.18286544141962662868e-02,
        1.26171219808761642112e-01,
        1.36370839120290507362e-02,
        1.19844998467991074170e-02,
    ];
    // |x| < 6: erfc = exp(-x^2 - 0.5625 + R(v) / S(v)) / |x|, v = 1/x^2; (RA, SA) below
    // 1/0.35, (RB, SB) above (padded with zeros to the same degree).
    const RA: [f64; 8] = [
        -9.86494403484714822705e-03,
        -6.93858572707181764372e-01,
        -1.05586262253232909814e+01,
        -6.23753324503260060396e+01,
        -1.62396669462573470355e+02,
        -1.84605092906711035994e+02,
        -8.12874355063065934246e+01,
        -9.81432934416914548592e+00,
    ];
    const SA: [f64; 9] = [
        1.0,
        1.96512716674392571292e+01,
        1.37657754143519042600e+02,
        4.34565877475229228821e+02,
        6.45387271733267880336e+02,
        4.29008140027567833386e+02,
        1.08635005541779435134e+02,
        6.57024977031928170135e+00,
        -6.04244152148580987438e-02,
    ];
    const RB: [f64; 8] = [
        -9.86494292470009928597e-03,
        -7.99283237680523006574e-01,
        -1.77579549177547519889e+01,
        -1.60636384855821916062e+02,
        -6.37566443368389627722e+02,
        -1.02509513161107724954e+03,
        -4.83519191608651397019e+02,
        0.0,
    ];
    const SB: [f64; 9] = [
        1.0,
        3.03380607434824582924e+01,
        3.25792512996573918826e+02,
        1.53672958608443695994e+03,
        3.19985821950859553908e+03,
        2.55305040643316442583e+03,
        4.74528541206955367215e+02,
        -2.24409524465858183362e+01,
        0.0,
    ];
    let a = x.abs();
    let (small, mid, near) = (a < SMALL, a < MID, a < 1.0 / 0.35);
    let z = x * x;
    let s = a - 1.0;
    if PIECES == 1 {
        return x + x * (poly(z, &PP) / poly(z, &QQ));
    }
    if PIECES == 2 {
        let (num, den) = if small { (poly(z, &PP), poly(z, &QQ)) } else { (poly(s, &PA), poly(s, &QA)) };
        let y = num / den;
        return if small { x + x * y } else { (ERX + y).copysign(x) };
    }
    let v = 1.0 / z;
    let (num, den) = if small {
        (poly(z, &PP), poly(z, &QQ))
    } else if mid {
        (poly(s, &PA), poly(s, &QA))
    } else {
        (poly_of(v, near, &RA, &RB), poly_of(v, near, &SA, &SB))
    };
    let y = num / den;
    let tail = if a >= 6.0 { 1.0 } else { 1.0 - exp(-z - 0.5625 + y) / a };
    if small { x + x * y } else { (if mid { ERX + y } else { tail }).copysign(x) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place of `want` (0 when both are the same infinity or NaN).
    fn ulps(got: f64, want: f64) -> f64 {
        if got == want || (got.is_nan() && want.is_nan()) {
            return 0.0;
        }
        let ulp = f64::from_bits(want.abs().to_bits() + 1) - want.abs();
        ((got - want) / ulp).abs()
    }

    /// Deterministic pseudo-random numbers in [0, 1).
    fn uniform(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Largest error in ulps of `f` against `reference` over `n` arguments `arg(u)`, u uniform.
    fn worst(n: usize, arg: impl Fn(f64) -> f64, f: impl Fn(f64) -> f64, reference: impl Fn(f64) -> f64) -> (f64, f64) {
        let mut seed = 12345u64;
        let mut w = (0.0, 0.0);
        for _ in 0..n {
            let x = arg(uniform(&mut seed));
            let e = ulps(f(x), reference(x));
            if e > w.0 {
                w = (e, x);
            }
        }
        w
    }

    #[test]
    fn exp_within_one_ulp() {
        for (lo, hi) in [(-1.0, 1.0), (-40.0, 0.0), (-708.0, 708.0), (-1e-6, 1e-6)] {
            let (e, x) = worst(1_000_000, |u| lo + (hi - lo) * u, exp, f64::exp);
            assert!(e <= 1.0, "exp on [{lo}, {hi}]: {e} ulp at {x:e}");
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-708.5), 0.0);
        assert_eq!(exp(-f64::INFINITY), 0.0);
        assert_eq!(exp(709.0), f64::INFINITY);
        assert!(exp(f64::NAN).is_nan());
    }

    #[test]
    fn ln_within_one_ulp() {
        // log-uniform over the normal numbers, and near 1 (where ln is small)
        let (e, x) = worst(1_000_000, |u| (-708.0 + 1416.0 * u).exp(), ln, f64::ln);
        assert!(e <= 1.0, "ln: {e} ulp at {x:e}");
        let (e, x) = worst(1_000_000, |u| 0.5 + u, ln, f64::ln);
        assert!(e <= 1.0, "ln near 1: {e} ulp at {x:e}");
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan());
    }

    #[test]
    fn erf_within_one_ulp() {
        for (lo, hi) in [(-1.5, 1.5), (-6.5, 6.5), (-30.0, 30.0), (-1e-3, 1e-3)] {
            let (e, x) = worst(1_000_000, |u| lo + (hi - lo) * u, erf, libm::erf);
            assert!(e <= 1.0, "erf on [{lo}, {hi}]: {e} ulp at {x:e}");
        }
        for x in [0.0, -0.0, 0.84375, 1.25, 1.0 / 0.35, 6.0, f64::INFINITY, -f64::INFINITY] {
            assert_eq!(erf(x).to_bits(), libm::erf(x).to_bits(), "erf({x})");
        }
        assert!(erf(f64::NAN).is_nan());
    }

    #[test]
    fn erf_in_fewer_pieces_keeps_the_bits() {
        let mut seed = 7u64;
        for _ in 0..1_000_000 {
            let x = -1.3 + 2.6 * uniform(&mut seed);
            let piece = erf_piece(x);
            if piece <= 2 {
                assert_eq!(erf_in::<2>(x).to_bits(), erf(x).to_bits(), "erf_in::<2>({x})");
            }
            if piece == 1 {
                assert_eq!(erf_in::<1>(x).to_bits(), erf(x).to_bits(), "erf_in::<1>({x})");
            }
        }
        assert_eq!((erf_piece(0.84375), erf_piece(-1.25), erf_piece(f64::NAN)), (2, 3, 3));
        assert_eq!(erf_piece(-0.0), 1);
    }
}
