// q-LSKUM on the point cloud (src/solvers/lskum/): one thread per point, f64 whatever REAL is
// (the solver runs in f64 only), point data as structure of arrays (a four-component quantity
// is four arrays of n: component m of point i at [m * n + i]), neighbour lists and the four
// split stencils as CSR index lists. Mirrors src/solvers/lskum/kernels.rs and scheme.rs
// expression for expression (same evaluation order; --fmad=false), so that the CUDA back end
// rounds as the CPU does. The error function is the one of the Rust `libm` crate (below),
// written out here so that every back end runs the same algorithm; exp, log, pow and sqrt are
// the platform's: glibc's under the CPU emulation (the same as the CPU back end's, hence the
// same bits), CUDA's on a device, whose exp/log/pow are within 1-2 ulp of glibc's (CUDA
// C Programming Guide, "Mathematical Functions"), so a real GPU departs from the CPU at round-off.

#define LK_WALL 0
#define LK_INTERIOR 1
#define LK_OUTER 2

#define LK_GAMMA 1.4
#define LK_GM1 (LK_GAMMA - 1.0)
#define LK_INV_GM1 (1.0 / (LK_GAMMA - 1.0))
#define LK_H_FAC (LK_GAMMA / (LK_GAMMA - 1.0))
#define LK_EB_FAC ((LK_GAMMA + 1.0) / (2.0 * (LK_GAMMA - 1.0)))
// The reference Fortran's single-precision literal 10e-6.
#define LK_LIMITER_THRESHOLD ((double)10e-6f)
#define LK_PI 3.14159265358979323846

// Flux kinds (kernels.rs FluxKind), in declaration order.
#define LK_GX_POS 0
#define LK_GX_NEG 1
#define LK_GY_POS 2
#define LK_GY_NEG 3
#define LK_GX_I 4
#define LK_GX_II 5
#define LK_GX_III 6
#define LK_GX_IV 7

// Reconstruction (kernels.rs Reconstruct).
#define LK_VENKAT 0
#define LK_MINMAX 1
#define LK_NONE 2

// The cloud (cloud.rs Cloud, in the solver's order); `lskum/cuda.rs` `DevCloud` mirrors it.
struct LkCloud {
    const double *x, *y, *nx, *ny, *min_dist;
    const int* flag;
    const unsigned *conn_start, *conn;
    const unsigned *xpos_start, *xpos, *xneg_start, *xneg, *ypos_start, *ypos, *yneg_start, *yneg;
    long long n;
};

// The settings of scheme.rs Settings that the kernels use.
struct LkSet {
    double cfl, vl_const, power;
    double winf[4];
    int reconstruct;
};

// ---- bits and the error function of the Rust libm crate (FreeBSD s_erf.c, e_exp.c) ----------

#ifdef __CUDACC__
__device__ __forceinline__ unsigned long long lk_bits(double x) { return (unsigned long long)__double_as_longlong(x); }
__device__ __forceinline__ double lk_of_bits(unsigned long long b) { return __longlong_as_double((long long)b); }
#else
inline unsigned long long lk_bits(double x) {
    unsigned long long b;
    __builtin_memcpy(&b, &x, 8);
    return b;
}
inline double lk_of_bits(unsigned long long b) {
    double x;
    __builtin_memcpy(&x, &b, 8);
    return x;
}
#endif

// libm `exp` for the arguments lk_erf gives it (|x| < 40: no overflow, no subnormal result, so
// its scalbn is one exact product).
__device__ __forceinline__ double lk_exp(double x) {
    const double LN2HI = 6.93147180369123816490e-01, LN2LO = 1.90821492927058770002e-10,
                 INVLN2 = 1.44269504088896338700e+00, P1 = 1.66666666666666019037e-01,
                 P2 = -2.77777777770155933842e-03, P3 = 6.61375632143793436117e-05,
                 P4 = -1.65339022054652515390e-06, P5 = 4.13813679705723846039e-08;
    unsigned hx = (unsigned)(lk_bits(x) >> 32);
    int sign = (int)(hx >> 31), k;
    hx &= 0x7fffffffu;
    double hi, lo;
    if (hx > 0x3fd62e42u) {
        if (hx >= 0x3ff0a2b2u) k = (int)(INVLN2 * x + (sign ? -0.5 : 0.5));
        else k = 1 - sign - sign;
        hi = x - (double)k * LN2HI;
        lo = (double)k * LN2LO;
        x = hi - lo;
    } else if (hx > 0x3e300000u) {
        k = 0;
        hi = x;
        lo = 0.0;
    } else {
        return 1.0 + x;
    }
    double xx = x * x;
    double c = x - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
    double y = 1.0 + (x * c / (2.0 - c) - lo + hi);
    return k == 0 ? y : y * lk_of_bits((unsigned long long)(0x3ff + k) << 52);
}

// libm `erfc` on [0.84375, 6) (erfc1 and erfc2 of erf.rs, with its constants' names).
__device__ __forceinline__ double lk_erfc2(unsigned ix, double x) {
    const double ERX = 8.45062911510467529297e-01;
    const double PA0 = -2.36211856075265944077e-03, PA1 = 4.14856118683748331666e-01,
                 PA2 = -3.72207876035701323847e-01, PA3 = 3.18346619901161753674e-01,
                 PA4 = -1.10894694282396677476e-01, PA5 = 3.54783043256182359371e-02,
                 PA6 = -2.16637559486879084300e-03;
    const double QA1 = 1.06420880400844228286e-01, QA2 = 5.40397917702171048937e-01,
                 QA3 = 7.18286544141962662868e-02, QA4 = 1.26171219808761642112e-01,
                 QA5 = 1.36370839120290507362e-02, QA6 = 1.19844998467991074170e-02;
    if (ix < 0x3ff40000u) {
        double s = fabs(x) - 1.0;
        double p = PA0 + s * (PA1 + s * (PA2 + s * (PA3 + s * (PA4 + s * (PA5 + s * PA6)))));
        double q = 1.0 + s * (QA1 + s * (QA2 + s * (QA3 + s * (QA4 + s * (QA5 + s * QA6)))));
        return 1.0 - ERX - p / q;
    }
    const double RA0 = -9.86494403484714822705e-03, RA1 = -6.93858572707181764372e-01,
                 RA2 = -1.05586262253232909814e+01, RA3 = -6.23753324503260060396e+01,
                 RA4 = -1.62396669462573470355e+02, RA5 = -1.84605092906711035994e+02,
                 RA6 = -8.12874355063065934246e+01, RA7 = -9.81432934416914548592e+00;
    const double SA1 = 1.96512716674392571292e+01, SA2 = 1.37657754143519042600e+02,
                 SA3 = 4.34565877475229228821e+02, SA4 = 6.45387271733267880336e+02,
                 SA5 = 4.29008140027567833386e+02, SA6 = 1.08635005541779435134e+02,
                 SA7 = 6.57024977031928170135e+00, SA8 = -6.04244152148580987438e-02;
    const double RB0 = -9.86494292470009928597e-03, RB1 = -7.99283237680523006574e-01,
                 RB2 = -1.77579549177547519889e+01, RB3 = -1.60636384855821916062e+02,
                 RB4 = -6.37566443368389627722e+02, RB5 = -1.02509513161107724954e+03,
                 RB6 = -4.83519191608651397019e+02;
    const double SB1 = 3.03380607434824582924e+01, SB2 = 3.25792512996573918826e+02,
                 SB3 = 1.53672958608443695994e+03, SB4 = 3.19985821950859553908e+03,
                 SB5 = 2.55305040643316442583e+03, SB6 = 4.74528541206955367215e+02,
                 SB7 = -2.24409524465858183362e+01;
    x = fabs(x);
    double s = 1.0 / (x * x), r, big_s;
    if (ix < 0x4006db6du) {
        r = RA0 + s * (RA1 + s * (RA2 + s * (RA3 + s * (RA4 + s * (RA5 + s * (RA6 + s * RA7))))));
        big_s = 1.0 + s * (SA1 + s * (SA2 + s * (SA3 + s * (SA4 + s * (SA5 + s * (SA6 + s * (SA7 + s * SA8)))))));
    } else {
        r = RB0 + s * (RB1 + s * (RB2 + s * (RB3 + s * (RB4 + s * (RB5 + s * RB6)))));
        big_s = 1.0 + s * (SB1 + s * (SB2 + s * (SB3 + s * (SB4 + s * (SB5 + s * (SB6 + s * SB7))))));
    }
    double z = lk_of_bits(lk_bits(x) & 0xffffffff00000000ull);
    return lk_exp(-z * z - 0.5625) * lk_exp((z - x) * (z + x) + r / big_s) / x;
}

// libm `erf` (kernels.rs `erf`).
__device__ __forceinline__ double lk_erf(double x) {
    const double EFX8 = 1.02703333676410069053e+00;
    const double PP0 = 1.28379167095512558561e-01, PP1 = -3.25042107247001499370e-01,
                 PP2 = -2.84817495755985104766e-02, PP3 = -5.77027029648944159157e-03,
                 PP4 = -2.37630166566501626084e-05;
    const double QQ1 = 3.97917223959155352819e-01, QQ2 = 6.50222499887672944485e-02,
                 QQ3 = 5.08130628187576562776e-03, QQ4 = 1.32494738004321644526e-04,
                 QQ5 = -3.96022827877536812320e-06;
    unsigned ix = (unsigned)(lk_bits(x) >> 32);
    int sign = (int)(ix >> 31);
    ix &= 0x7fffffffu;
    if (ix >= 0x7ff00000u) return 1.0 - 2.0 * (double)sign + 1.0 / x;
    if (ix < 0x3feb0000u) {
        if (ix < 0x3e300000u) return 0.125 * (8.0 * x + EFX8 * x);
        double z = x * x;
        double r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
        double s = 1.0 + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
        double y = r / s;
        return x + x * y;
    }
    double y = ix < 0x40180000u ? 1.0 - lk_erfc2(ix, x) : 1.0 - lk_of_bits(0x0010000000000000ull);
    return sign ? -y : y;
}

// ---- per-point numerics (kernels.rs) -------------------------------------------------------

// Component m of point i of a four-component array.
#define LK4(a, m, i) (a)[(long long)(m) * n + (i)]

__device__ __forceinline__ void lk_q_of_prim(const double w[4], double q[4]) {
    double rho = w[0], u = w[1], v = w[2], p = w[3];
    double beta = 0.5 * rho / p;
    double two_beta = 2.0 * beta;
    q[0] = log(rho) + log(beta) * LK_INV_GM1 - beta * (u * u + v * v);
    q[1] = two_beta * u;
    q[2] = two_beta * v;
    q[3] = -two_beta;
}

__device__ __forceinline__ void lk_prim_of_q(const double q[4], double w[4]) {
    double beta = -0.5 * q[3];
    double tau = 0.5 / beta;
    double u = q[1] * tau;
    double v = q[2] * tau;
    double rho = exp(q[0] + beta * (u * u + v * v) - log(beta) * LK_INV_GM1);
    w[0] = rho;
    w[1] = u;
    w[2] = v;
    w[3] = rho * tau;
}

struct LkKinetic {
    double rho, ut, un, t, at_p, at_m, an_p, an_m, bt, bn, h, eb;
};

__device__ __forceinline__ LkKinetic lk_kinetic_part(const double w[4], double nx, double ny, bool along_t,
                                                     bool along_n) {
    double rho = w[0], u = w[1], v = w[2], pr = w[3];
    double ut = u * ny - v * nx;
    double un = u * nx + v * ny;
    double beta = 0.5 * rho / pr;
    double sqrt_beta = sqrt(beta);
    double st = ut * sqrt_beta;
    double sn = un * sqrt_beta;
    double sqrt_pi_beta = sqrt(LK_PI * beta);
    double erf_t = 0.0, bt = 0.0, erf_n = 0.0, bn = 0.0;
    if (along_t) {
        erf_t = lk_erf(st);
        bt = exp(-st * st) / (2.0 * sqrt_pi_beta);
    }
    if (along_n) {
        erf_n = lk_erf(sn);
        bn = exp(-sn * sn) / (2.0 * sqrt_pi_beta);
    }
    double t = pr / rho;
    double u2 = ut * ut + un * un;
    LkKinetic k;
    k.rho = rho;
    k.ut = ut;
    k.un = un;
    k.t = t;
    k.at_p = 0.5 * (1.0 + erf_t);
    k.at_m = 0.5 * (1.0 - erf_t);
    k.an_p = 0.5 * (1.0 + erf_n);
    k.an_m = 0.5 * (1.0 - erf_n);
    k.bt = bt;
    k.bn = bn;
    k.h = LK_H_FAC * t + 0.5 * u2;
    k.eb = LK_EB_FAC * t + 0.5 * u2;
    return k;
}

// Whether flux `kind` needs the terms along t and along n (FluxKind::directions).
__device__ __forceinline__ bool lk_along_t(int kind) { return kind != LK_GY_POS && kind != LK_GY_NEG; }
__device__ __forceinline__ bool lk_along_n(int kind) { return kind != LK_GX_POS && kind != LK_GX_NEG; }

// flux_of: gx_split, gy_split and quadrant.
__device__ __forceinline__ void lk_flux_of(int kind, const LkKinetic& k, double g[4]) {
    if (kind == LK_GX_POS || kind == LK_GX_NEG) {
        double s = kind == LK_GX_POS ? 1.0 : -1.0;
        double a = s > 0.0 ? k.at_p : k.at_m;
        double f = k.ut * a + s * k.bt;
        g[0] = k.rho * f;
        g[1] = k.rho * ((k.t + k.ut * k.ut) * a + s * k.ut * k.bt);
        g[2] = k.rho * (k.un * f);
        g[3] = k.rho * (k.ut * k.h * a + s * k.eb * k.bt);
    } else if (kind == LK_GY_POS || kind == LK_GY_NEG) {
        double s = kind == LK_GY_POS ? 1.0 : -1.0;
        double a = s > 0.0 ? k.an_p : k.an_m;
        double f = k.un * a + s * k.bn;
        g[0] = k.rho * f;
        g[1] = k.rho * (k.ut * f);
        g[2] = k.rho * ((k.t + k.un * k.un) * a + s * k.un * k.bn);
        g[3] = k.rho * (k.un * k.h * a + s * k.eb * k.bn);
    } else {
        // GxI = Q(-,-), GxII = Q(+,-), GxIII = Q(+,+), GxIV = Q(-,+)
        double s1 = kind == LK_GX_II || kind == LK_GX_III ? 1.0 : -1.0;
        double s2 = kind == LK_GX_III || kind == LK_GX_IV ? 1.0 : -1.0;
        double at = s1 > 0.0 ? k.at_p : k.at_m;
        double an = s2 > 0.0 ? k.an_p : k.an_m;
        double f = k.ut * at + s1 * k.bt;
        g[0] = k.rho * an * f;
        g[1] = k.rho * an * ((k.t + k.ut * k.ut) * at + s1 * k.ut * k.bt);
        g[2] = k.rho * f * (k.un * an + s2 * k.bn);
        g[3] = k.rho * an * (k.ut * k.h * at + s1 * k.eb * k.bt) + s2 * 0.5 * k.rho * k.un * k.bn * f;
    }
}

__device__ __forceinline__ double lk_ls_weight(double dx, double dy, double power) {
    return power == 0.0 ? 1.0 : pow(sqrt(dx * dx + dy * dy), power);
}

// Running least-squares sums (LsSums<4>) in scratch S: a thread's registers (LkRegs) or its
// slots of shared memory (LkSmem, slot c of thread t at t + blockDim.x * c: consecutive
// threads hit consecutive banks).
#define LK_SUMS 11
struct LkRegs {
    double s[LK_SUMS];
    __device__ __forceinline__ double& at(int c) { return s[c]; }
};
struct LkSmem {
    double* p;
    int stride;
    __device__ __forceinline__ double& at(int c) { return p[(long long)c * stride]; }
};
// Slots: 0 sss, 1 snn, 2 ssn, 3..6 sdf, 7..10 ndf.
template <class S>
__device__ __forceinline__ void lk_ls_clear(S& ls) {
#pragma unroll
    for (int c = 0; c < LK_SUMS; c++) ls.at(c) = 0.0;
}
template <class S>
__device__ __forceinline__ void lk_ls_add(S& ls, double ds, double dn, double w, const double df[4]) {
    ls.at(0) += w * ds * ds;
    ls.at(1) += w * dn * dn;
    ls.at(2) += w * ds * dn;
#pragma unroll
    for (int r = 0; r < 4; r++) {
        ls.at(3 + r) += w * ds * df[r];
        ls.at(7 + r) += w * dn * df[r];
    }
}
template <class S>
__device__ __forceinline__ void lk_ls_d_ds(S& ls, double out[4]) {
    double one_by_det = 1.0 / (ls.at(0) * ls.at(1) - ls.at(2) * ls.at(2));
#pragma unroll
    for (int r = 0; r < 4; r++) out[r] = (ls.at(1) * ls.at(3 + r) - ls.at(2) * ls.at(7 + r)) * one_by_det;
}
template <class S>
__device__ __forceinline__ void lk_ls_d_dn(S& ls, double out[4]) {
    double one_by_det = 1.0 / (ls.at(0) * ls.at(1) - ls.at(2) * ls.at(2));
#pragma unroll
    for (int r = 0; r < 4; r++) out[r] = (ls.at(0) * ls.at(7 + r) - ls.at(2) * ls.at(3 + r)) * one_by_det;
}

__device__ __forceinline__ double lk_venkat(double q, double d, double qmax, double qmin, double eps2) {
    double q_tilde = q - 0.5 * d;
    double del_neg = q_tilde - q;
    if (fabs(del_neg) <= LK_LIMITER_THRESHOLD) return 1.0;
    double del_pos = del_neg > 0.0 ? qmax - q : qmin - q;
    double num = (del_pos * del_pos + eps2) * del_neg + 2.0 * del_neg * del_neg * del_pos;
    double den = (del_pos * del_pos + 2.0 * del_neg * del_neg + del_neg * del_pos + eps2) * del_neg;
    double phi = num / den;
    return phi < 1.0 ? phi : 1.0;
}

__device__ __forceinline__ double lk_venkat_eps2(double k, double min_dist) {
    double e = k * min_dist;
    double e3 = e * e * e;
    return e3 * e3;
}

// The primitive state at one end of an edge: point p's q reconstructed towards (dx, dy),
// limited with the bounds of point `bounds` (FluxInput::reconstruct, then prim_of_q).
__device__ __forceinline__ void lk_end_state(const LkCloud& c, const LkSet& set, const double* q, const double* qx,
                                             const double* qy, const double* qmax, const double* qmin, long long p,
                                             long long bounds, double dx, double dy, double w[4]) {
    long long n = c.n;
    double qt[4];
    if (set.reconstruct == LK_VENKAT) {
        double eps2 = lk_venkat_eps2(set.vl_const, c.min_dist[p]);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            double qr = LK4(q, r, p);
            double d = dx * LK4(qx, r, p) + dy * LK4(qy, r, p);
            double phi = lk_venkat(qr, d, LK4(qmax, r, p), LK4(qmin, r, p), eps2);
            qt[r] = qr - 0.5 * phi * d;
        }
    } else if (set.reconstruct == LK_MINMAX) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            double v = LK4(q, r, p) - 0.5 * (dx * LK4(qx, r, p) + dy * LK4(qy, r, p));
            double hi = LK4(qmax, r, bounds), lo = LK4(qmin, r, bounds);
            qt[r] = v > hi ? hi : (v < lo ? lo : v);
        }
    } else {
#pragma unroll
        for (int r = 0; r < 4; r++) qt[r] = LK4(q, r, p);
    }
    lk_prim_of_q(qt, w);
}

__device__ __forceinline__ void lk_load4(const double* a, long long n, long long i, double v[4]) {
#pragma unroll
    for (int m = 0; m < 4; m++) v[m] = LK4(a, m, i);
}

__device__ __forceinline__ void lk_store4(double* a, long long n, long long i, const double v[4]) {
#pragma unroll
    for (int m = 0; m < 4; m++) LK4(a, m, i) = v[m];
}

// ---- the passes of an iteration (scheme.rs) --------------------------------------------------

// Local time step of every point (local_dt).
extern "C" __global__ void lskum_timestep(LkCloud c, LkSet set, const double* __restrict__ prim,
                                          double* __restrict__ dt) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, n = c.n;
    if (i >= n) return;
    double m = 1.0;
    for (unsigned e = c.conn_start[i]; e < c.conn_start[i + 1]; e++) {
        long long k = c.conn[e];
        double dx = c.x[k] - c.x[i];
        double dy = c.y[k] - c.y[i];
        double dist = sqrt(dx * dx + dy * dy);
        double rho = LK4(prim, 0, k), u = LK4(prim, 1, k), v = LK4(prim, 2, k), p = LK4(prim, 3, k);
        double mod_u = sqrt(u * u + v * v);
        double d = set.cfl * dist / (mod_u + 3.0 * sqrt(p / rho));
        if (d < m) m = d;
    }
    dt[i] = m;
}

extern "C" __global__ void lskum_q_variables(const double* __restrict__ prim, double* __restrict__ q, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double w[4], qi[4];
    lk_load4(prim, n, i, w);
    lk_q_of_prim(w, qi);
    lk_store4(q, n, i, qi);
}

// First-order least-squares q-derivatives and the min/max of q over the full stencil
// (first_order).
extern "C" __global__ void lskum_q_derivatives(LkCloud c, LkSet set, const double* __restrict__ q,
                                               double* __restrict__ qx, double* __restrict__ qy,
                                               double* __restrict__ qmax, double* __restrict__ qmin) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, n = c.n;
    if (i >= n) return;
    double qi[4], hi[4], lo[4];
    lk_load4(q, n, i, qi);
#pragma unroll
    for (int r = 0; r < 4; r++) hi[r] = lo[r] = qi[r];
    LkRegs ls;
    lk_ls_clear(ls);
    for (unsigned e = c.conn_start[i]; e < c.conn_start[i + 1]; e++) {
        long long k = c.conn[e];
        double dx = c.x[k] - c.x[i];
        double dy = c.y[k] - c.y[i];
        double w = lk_ls_weight(dx, dy, set.power);
        double df[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            double qk = LK4(q, r, k);
            df[r] = qk - qi[r];
            if (qk > hi[r]) hi[r] = qk;
            if (qk < lo[r]) lo[r] = qk;
        }
        lk_ls_add(ls, dx, dy, w, df);
    }
    double a[4], b[4];
    lk_ls_d_ds(ls, a);
    lk_ls_d_dn(ls, b);
    lk_store4(qx, n, i, a);
    lk_store4(qy, n, i, b);
    lk_store4(qmax, n, i, hi);
    lk_store4(qmin, n, i, lo);
}

// One Jacobi inner sweep (inner_sweep): new derivatives into qx2, qy2.
extern "C" __global__ void lskum_inner(LkCloud c, LkSet set, const double* __restrict__ q,
                                       const double* __restrict__ qx, const double* __restrict__ qy,
                                       double* __restrict__ qx2, double* __restrict__ qy2) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, n = c.n;
    if (i >= n) return;
    LkRegs ls;
    lk_ls_clear(ls);
    for (unsigned e = c.conn_start[i]; e < c.conn_start[i + 1]; e++) {
        long long k = c.conn[e];
        double dx = c.x[k] - c.x[i];
        double dy = c.y[k] - c.y[i];
        double w = lk_ls_weight(dx, dy, set.power);
        double df[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            double qi_hat = LK4(q, r, i) - 0.5 * (dx * LK4(qx, r, i) + dy * LK4(qy, r, i));
            double qk_hat = LK4(q, r, k) - 0.5 * (dx * LK4(qx, r, k) + dy * LK4(qy, r, k));
            df[r] = qk_hat - qi_hat;
        }
        lk_ls_add(ls, dx, dy, w, df);
    }
    double a[4], b[4];
    lk_ls_d_ds(ls, a);
    lk_ls_d_dn(ls, b);
    lk_store4(qx2, n, i, a);
    lk_store4(qy2, n, i, b);
}

#define LK_FLUX_ARGS                                                                                     \
    LkCloud c, LkSet set, const double *__restrict__ q, const double *__restrict__ qx,                   \
        const double *__restrict__ qy, const double *__restrict__ qmax, const double *__restrict__ qmin, \
        double *__restrict__ res

// ---- fused flux residual: the four split stencils of a point in one pass over its neighbours --
// (FluxInput::residual): each edge's end states are reconstructed once and serve every stencil
// the neighbour belongs to; ls[m] holds the sums of stencil m (x+, x-, y+, y-).

template <class S>
__device__ __forceinline__ void lk_flux_fused(LK_FLUX_ARGS, long long i, S ls[4]) {
    long long n = c.n;
    double nx = c.nx[i], ny = c.ny[i];
    int flag = c.flag[i];
    int kinds[4] = {LK_GX_POS, LK_GX_NEG, LK_GY_POS, LK_GY_NEG};
    if (flag == LK_WALL) {
        kinds[0] = LK_GX_II;
        kinds[1] = LK_GX_I;
    } else if (flag != LK_INTERIOR) {
        kinds[0] = LK_GX_III;
        kinds[1] = LK_GX_IV;
    }
#pragma unroll
    for (int m = 0; m < 4; m++) lk_ls_clear(ls[m]);
    for (unsigned e = c.conn_start[i]; e < c.conn_start[i + 1]; e++) {
        long long k = c.conn[e];
        double dx = c.x[k] - c.x[i];
        double dy = c.y[k] - c.y[i];
        double ds = dx * ny - dy * nx;
        double dn = dx * nx + dy * ny;
        bool member[4] = {ds <= 0.0, ds >= 0.0, flag == LK_INTERIOR ? dn <= 0.0 : flag != LK_WALL,
                          flag == LK_INTERIOR ? dn >= 0.0 : flag == LK_WALL};
        double w = lk_ls_weight(dx, dy, set.power);
        double wi[4], wk[4];
        lk_end_state(c, set, q, qx, qy, qmax, qmin, i, i, dx, dy, wi);
        lk_end_state(c, set, q, qx, qy, qmax, qmin, k, i, dx, dy, wk);
        bool t = false, nn = false;
#pragma unroll
        for (int m = 0; m < 4; m++)
            if (member[m]) {
                t = t || lk_along_t(kinds[m]);
                nn = nn || lk_along_n(kinds[m]);
            }
        LkKinetic ki = lk_kinetic_part(wi, nx, ny, t, nn), kk = lk_kinetic_part(wk, nx, ny, t, nn);
#pragma unroll
        for (int m = 0; m < 4; m++)
            if (member[m]) {
                double gi[4], gk[4], df[4];
                lk_flux_of(kinds[m], ki, gi);
                lk_flux_of(kinds[m], kk, gk);
#pragma unroll
                for (int r = 0; r < 4; r++) df[r] = gk[r] - gi[r];
                lk_ls_add(ls[m], ds, dn, w, df);
            }
    }
    double a[4], b[4], cc[4], d[4], r[4];
    lk_ls_d_ds(ls[0], a);
    lk_ls_d_ds(ls[1], b);
    if (flag == LK_INTERIOR) {
        lk_ls_d_dn(ls[2], cc);
        lk_ls_d_dn(ls[3], d);
#pragma unroll
        for (int m = 0; m < 4; m++) r[m] = a[m] + b[m] + cc[m] + d[m];
    } else if (flag == LK_WALL) {
        lk_ls_d_dn(ls[3], d);
#pragma unroll
        for (int m = 0; m < 4; m++) r[m] = 2.0 * (a[m] + b[m] + d[m]);
    } else {
        lk_ls_d_dn(ls[2], cc);
#pragma unroll
        for (int m = 0; m < 4; m++) r[m] = a[m] + b[m] + cc[m];
    }
    lk_store4(res, n, i, r);
}

extern "C" __global__ void lskum_flux_fused(LK_FLUX_ARGS) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.n) return;
    LkRegs ls[4];
    lk_flux_fused(c, set, q, qx, qy, qmax, qmin, res, i, ls);
}

// Shared-memory scratch: 4 x 11 doubles per thread (dynamic shared memory, 352 bytes x block).
extern "C" __global__ void lskum_flux_fused_shared(LK_FLUX_ARGS) {
    extern __shared__ unsigned char smem[];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.n) return;
    double* base = (double*)smem + threadIdx.x;
    int b = blockDim.x;
    LkSmem ls[4] = {{base, b}, {base + LK_SUMS * b, b}, {base + 2 * LK_SUMS * b, b}, {base + 3 * LK_SUMS * b, b}};
    lk_flux_fused(c, set, q, qx, qy, qmax, qmin, res, i, ls);
}

// ---- split flux residual: one kernel per split stencil, each adding its derivative to the
// residual in the CPU's order (x+ writes it; x-, y+, y- add; a wall point's y- doubles the sum),
// so that R = ((x+ + x-) + y+) + y- as in FluxInput::residual --------------------------------

// Least-squares derivative of flux `kind` over stencil (start, idx) of point i, along t or n
// (FluxInput::stencil_derivative).
template <class S>
__device__ __forceinline__ void lk_stencil(const LkCloud& c, const LkSet& set, const double* q, const double* qx,
                                           const double* qy, const double* qmax, const double* qmin,
                                           const unsigned* start, const unsigned* idx, int kind, bool along_t,
                                           long long i, S& ls, double out[4]) {
    double nx = c.nx[i], ny = c.ny[i];
    bool t = lk_along_t(kind), nn = lk_along_n(kind);
    lk_ls_clear(ls);
    for (unsigned e = start[i]; e < start[i + 1]; e++) {
        long long k = idx[e];
        double dx = c.x[k] - c.x[i];
        double dy = c.y[k] - c.y[i];
        double ds = dx * ny - dy * nx;
        double dn = dx * nx + dy * ny;
        double w = lk_ls_weight(dx, dy, set.power);
        double wi[4], wk[4], gi[4], gk[4], df[4];
        lk_end_state(c, set, q, qx, qy, qmax, qmin, i, i, dx, dy, wi);
        lk_end_state(c, set, q, qx, qy, qmax, qmin, k, i, dx, dy, wk);
        lk_flux_of(kind, lk_kinetic_part(wi, nx, ny, t, nn), gi);
        lk_flux_of(kind, lk_kinetic_part(wk, nx, ny, t, nn), gk);
#pragma unroll
        for (int r = 0; r < 4; r++) df[r] = gk[r] - gi[r];
        lk_ls_add(ls, ds, dn, w, df);
    }
    if (along_t) lk_ls_d_ds(ls, out);
    else lk_ls_d_dn(ls, out);
}

// Stencil `which` (0 x+, 1 x-, 2 y+, 3 y-) of point i into the residual.
template <class S>
__device__ __forceinline__ void lk_flux_split(LK_FLUX_ARGS, int which, long long i, S& ls) {
    long long n = c.n;
    int flag = c.flag[i];
    // y+ is empty at wall points, y- at outer points.
    if ((which == 2 && flag == LK_WALL) || (which == 3 && flag == LK_OUTER)) return;
    const unsigned* start[4] = {c.xpos_start, c.xneg_start, c.ypos_start, c.yneg_start};
    const unsigned* idx[4] = {c.xpos, c.xneg, c.ypos, c.yneg};
    int kind = which == 2 ? LK_GY_POS : which == 3 ? LK_GY_NEG : LK_GX_POS + which;
    if (which < 2 && flag == LK_WALL) kind = which == 0 ? LK_GX_II : LK_GX_I;
    if (which < 2 && flag == LK_OUTER) kind = which == 0 ? LK_GX_III : LK_GX_IV;
    double g[4];
    lk_stencil(c, set, q, qx, qy, qmax, qmin, start[which], idx[which], kind, which < 2, i, ls, g);
#pragma unroll
    for (int m = 0; m < 4; m++) {
        double& r = LK4(res, m, i);
        if (which == 0) r = g[m];
        else if (which == 3 && flag == LK_WALL) r = 2.0 * (r + g[m]);
        else r = r + g[m];
    }
}

// The register and shared-scratch launches of stencil `which` (kernels written out one by one:
// the handle check of tests/kernels.rs reads their names from this text).
__device__ __forceinline__ void lk_split_regs(LK_FLUX_ARGS, int which) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.n) return;
    LkRegs ls;
    lk_flux_split(c, set, q, qx, qy, qmax, qmin, res, which, i, ls);
}
__device__ __forceinline__ void lk_split_smem(LK_FLUX_ARGS, int which, double* scratch) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.n) return;
    LkSmem ls = {scratch + threadIdx.x, (int)blockDim.x};
    lk_flux_split(c, set, q, qx, qy, qmax, qmin, res, which, i, ls);
}

extern "C" __global__ void lskum_flux_gxpos(LK_FLUX_ARGS) {
    lk_split_regs(c, set, q, qx, qy, qmax, qmin, res, 0);
}
extern "C" __global__ void lskum_flux_gxpos_shared(LK_FLUX_ARGS) {
    extern __shared__ unsigned char smem[];
    lk_split_smem(c, set, q, qx, qy, qmax, qmin, res, 0, (double*)smem);
}
extern "C" __global__ void lskum_flux_gxneg(LK_FLUX_ARGS) {
    lk_split_regs(c, set, q, qx, qy, qmax, qmin, res, 1);
}
extern "C" __global__ void lskum_flux_gxneg_shared(LK_FLUX_ARGS) {
    extern __shared__ unsigned char smem[];
    lk_split_smem(c, set, q, qx, qy, qmax, qmin, res, 1, (double*)smem);
}
extern "C" __global__ void lskum_flux_gypos(LK_FLUX_ARGS) {
    lk_split_regs(c, set, q, qx, qy, qmax, qmin, res, 2);
}
extern "C" __global__ void lskum_flux_gypos_shared(LK_FLUX_ARGS) {
    extern __shared__ unsigned char smem[];
    lk_split_smem(c, set, q, qx, qy, qmax, qmin, res, 2, (double*)smem);
}
extern "C" __global__ void lskum_flux_gyneg(LK_FLUX_ARGS) {
    lk_split_regs(c, set, q, qx, qy, qmax, qmin, res, 3);
}
extern "C" __global__ void lskum_flux_gyneg_shared(LK_FLUX_ARGS) {
    extern __shared__ unsigned char smem[];
    lk_split_smem(c, set, q, qx, qy, qmax, qmin, res, 3, (double*)smem);
}

// ---- state update of a Runge-Kutta stage (update_point, Stage::apply) -------------------------

// Point-frame conserved variables: the split state of an outer point (outer_state), else
// `conserved`.
__device__ __forceinline__ void lk_conserved_or_outer(const double w[4], const double winf[4], bool outer, double nx,
                                                      double ny, double out[4]) {
    double rho = w[0], u = w[1], v = w[2], p = w[3];
    double ut = u * ny - v * nx;
    double un = u * nx + v * ny;
    if (!outer) {
        out[0] = rho;
        out[1] = rho * ut;
        out[2] = rho * un;
        out[3] = p * LK_INV_GM1 + 0.5 * rho * (u * u + v * v);
        return;
    }
    double rho_inf = winf[0], u_inf = winf[1], v_inf = winf[2], p_inf = winf[3];
    double ut_inf = u_inf * ny - v_inf * nx;
    double un_inf = u_inf * nx + v_inf * ny;
    double e_inf = p_inf / (rho_inf * LK_GM1) + 0.5 * (ut_inf * ut_inf + un_inf * un_inf);
    double beta_inf = 0.5 * rho_inf / p_inf;
    double s_inf = un_inf * sqrt(beta_inf);
    double a_neg_inf = 0.5 * (1.0 - lk_erf(s_inf));
    double b_inf = exp(-s_inf * s_inf) / (2.0 * sqrt(LK_PI * beta_inf));
    double e = p / (rho * LK_GM1) + 0.5 * (ut * ut + un * un);
    double beta = 0.5 * rho / p;
    double s = un * sqrt(beta);
    double a_pos = 0.5 * (1.0 + lk_erf(s));
    double b = exp(-s * s) / (2.0 * sqrt(LK_PI * beta));
    out[0] = rho_inf * a_neg_inf + rho * a_pos;
    out[1] = rho_inf * ut_inf * a_neg_inf + rho * ut * a_pos;
    out[2] = rho_inf * (un_inf * a_neg_inf - b_inf) + rho * (un * a_pos + b);
    out[3] = rho_inf * (e_inf * a_neg_inf - 0.5 * un_inf * b_inf) + rho * (e * a_pos + 0.5 * un * b);
}

// u <- stage(u_old, u, dt, R) in the point frame, the wall's normal momentum zeroed; dsq: the
// squared density change (0 at outer points). blend 0: Euler step alone; else a u_old + b v.
extern "C" __global__ void lskum_update(LkCloud c, LkSet set, double* __restrict__ prim,
                                        const double* __restrict__ prim_old, const double* __restrict__ res,
                                        const double* __restrict__ dt, double* __restrict__ dsq, double sc, int blend,
                                        double sa, double sb) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, n = c.n;
    if (i >= n) return;
    int flag = c.flag[i];
    double nx = c.nx[i], ny = c.ny[i];
    double w[4], w_old[4], u[4], u_old[4], un[4];
    lk_load4(prim, n, i, w);
    lk_load4(prim_old, n, i, w_old);
    lk_conserved_or_outer(w, set.winf, flag == LK_OUTER, nx, ny, u);
    lk_conserved_or_outer(w_old, set.winf, flag == LK_OUTER, nx, ny, u_old);
    double dti = dt[i];
#pragma unroll
    for (int m = 0; m < 4; m++) {
        double v = u[m] - sc * dti * LK4(res, m, i);
        un[m] = blend ? sa * u_old[m] + sb * v : v;
    }
    if (flag == LK_WALL) un[2] = 0.0;
    dsq[i] = flag == LK_OUTER ? 0.0 : (un[0] - u[0]) * (un[0] - u[0]);
    // prim_of_conserved
    double rho = un[0];
    double rho_u = un[1] * ny + un[2] * nx;
    double rho_v = un[2] * ny - un[1] * nx;
    LK4(prim, 0, i) = rho;
    LK4(prim, 1, i) = rho_u / rho;
    LK4(prim, 2, i) = rho_v / rho;
    LK4(prim, 3, i) = LK_GM1 * (un[3] - 0.5 * (rho_u * rho_u + rho_v * rho_v) / rho);
}

// The residual norm's partial sums: partials[k] = the squared density changes of the points at
// file positions k*chunk .. (k+1)*chunk, added in file order by one thread (file[f]: the point
// at file position f). The host adds the partials in order: the sums of scheme.rs
// residual_partials, so the norm has the CPU's bits, and only n/chunk values leave the device.
extern "C" __global__ void lskum_residual_partials(const unsigned* __restrict__ file, const double* __restrict__ dsq,
                                                   long long n, long long chunk, double* __restrict__ partials) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long f0 = k * chunk;
    if (f0 >= n) return;
    long long f1 = f0 + chunk < n ? f0 + chunk : n;
    double s = 0.0;
    for (long long f = f0; f < f1; f++) s = s + dsq[file[f]];
    partials[k] = s;
}
