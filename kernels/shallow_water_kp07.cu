// KP07 stage kernels: src/solvers/shallow_water/kp07.rs expression for expression
// (reconstruction of η, hu, hv with the positivity limit, central-upwind flux, sources), in
// the frame of shallow_water_fv.cuh.

struct Kp07 {
    static const int TILES = 3;

    // kp07::flux of (η, normal transport, tangential transport) on both sides of a face of
    // depth hf; zero where |a⁺ - a⁻| < 1e-4.
    static __device__ __forceinline__ void flux(const real* qm, const real* qp, real hf, real g, real* out) {
        real hg = (real)0.5 * g;
        real hm = qm[0] + hf, hp = qp[0] + hf;
        real um = qm[1] / hm, up = qp[1] / hp;
        real fm[3] = {qm[1], qm[1] * um + hg * (hm * hm), qm[2] * um};
        real fp[3] = {qp[1], qp[1] * up + hg * (hp * hp), qp[2] * up};
        real cm = sqrt(g * hm), cp = sqrt(g * hp);
        real am = fmin(fmin(um - cm, up - cp), (real)0);
        real ap = fmax(fmax(um + cm, up + cp), (real)0);
        real d = ap - am;
        real apam = ap * am;
        bool dry = fabs(d) < (real)1e-4;
        for (int n = 0; n < 3; ++n) out[n] = dry ? (real)0 : ((ap * fm[n] - am * fp[n]) + apam * (qp[n] - qm[n])) / d;
    }

    // kp07::slope: ½ MM(Θ (q - qm), ½ (qp - qm), Θ (qp - q)).
    static __device__ __forceinline__ real slope(real qm, real q, real qp, real theta) {
        return (real)0.5 * fv_minmod((q - qm) * theta, (qp - qm) * (real)0.5, (qp - q) * theta);
    }

    // kp07::positive: η - S ≥ -h_minus, then η + S ≥ -h_plus.
    static __device__ __forceinline__ real positive(real eta, real s, real h_minus, real h_plus) {
        s = eta - s < -h_minus ? eta + h_minus : s;
        return eta + s < -h_plus ? -h_plus - eta : s;
    }

    // x half-slopes of cell (l, k) (Scratch::row).
    template <class Q>
    static __device__ __forceinline__ void recon_x(const Q& q, const FvGrid& gr, int l, int k, real* s) {
        real half = (real)0.5;
        real h_w = half * (gr.b(l, k) + gr.b(l + 1, k));
        real h_e = half * (gr.b(l, k + 1) + gr.b(l + 1, k + 1));
        real e = q.e(l, k);
        s[0] = positive(e, slope(q.e(l, k - 1), e, q.e(l, k + 1), gr.theta), h_w, h_e);
        s[1] = slope(q.hu(l, k - 1), q.hu(l, k), q.hu(l, k + 1), gr.theta);
        s[2] = slope(q.hv(l, k - 1), q.hv(l, k), q.hv(l, k + 1), gr.theta);
    }

    // y half-slopes of cell (r, k) (Scratch::reconstruct_y) and the bathymetry source
    // ½ g (H_N - H_S) (h_N + h_S).
    template <class Q>
    static __device__ __forceinline__ void recon_y(const Q& q, const FvGrid& gr, int r, int k, real* s,
                                                   real& source) {
        real half = (real)0.5;
        real hg = half * gr.g;
        real h_s = half * (gr.b(r, k) + gr.b(r, k + 1));
        real h_n = half * (gr.b(r + 1, k) + gr.b(r + 1, k + 1));
        real e = q.e(r, k);
        s[0] = positive(e, slope(q.e(r - 1, k), e, q.e(r + 1, k), gr.theta), h_s, h_n);
        real north = e + s[0], south = e - s[0];
        source = hg * (h_n - h_s) * (((north + h_n) + south) + h_s);
        s[1] = slope(q.hu(r - 1, k), q.hu(r, k), q.hu(r + 1, k), gr.theta);
        s[2] = slope(q.hv(r - 1, k), q.hv(r, k), q.hv(r + 1, k), gr.theta);
    }

    template <class Q>
    static __device__ __forceinline__ void face_x(const Q& q, const FvGrid& gr, int l, int k, real* out) {
        real sm[3], sp[3];
        recon_x(q, gr, l, k, sm);
        recon_x(q, gr, l, k + 1, sp);
        real hf = (real)0.5 * (gr.b(l, k + 1) + gr.b(l + 1, k + 1));
        real qm[3] = {q.e(l, k) + sm[0], q.hu(l, k) + sm[1], q.hv(l, k) + sm[2]};
        real qp[3] = {q.e(l, k + 1) - sp[0], q.hu(l, k + 1) - sp[1], q.hv(l, k + 1) - sp[2]};
        flux(qm, qp, hf, gr.g, out);
    }

    // Scratch::flux_y: normal (hv) first, swapped back after.
    template <class Q>
    static __device__ __forceinline__ void face_y(const Q& q, const FvGrid& gr, int r, int k, real* out) {
        real sm[3], sp[3], source;
        recon_y(q, gr, r, k, sm, source);
        recon_y(q, gr, r + 1, k, sp, source);
        real hf = (real)0.5 * (gr.b(r + 1, k) + gr.b(r + 1, k + 1));
        real qm[3] = {q.e(r, k) + sm[0], q.hv(r, k) + sm[2], q.hu(r, k) + sm[1]};
        real qp[3] = {q.e(r + 1, k) - sp[0], q.hv(r + 1, k) - sp[2], q.hu(r + 1, k) - sp[1]};
        real fl[3];
        flux(qm, qp, hf, gr.g, fl);
        out[0] = fl[0];
        out[1] = fl[2];
        out[2] = fl[1];
    }

    // L of cell (l, k) (the last loop of Scratch::row).
    template <class Q>
    static __device__ __forceinline__ void residual(const Q& q, const FvGrid& gr, int l, int k, const real* fw,
                                                    const real* fe, const real* gs, const real* gn, real* L) {
        real half = (real)0.5;
        real hg = half * gr.g, dx = gr.dx, dy = gr.dy, f = gr.f[l];
        real sx[3], sy[3], source_y;
        recon_x(q, gr, l, k, sx);
        recon_y(q, gr, l, k, sy, source_y);
        real e = q.e(l, k);
        real h_w = half * (gr.b(l, k) + gr.b(l + 1, k));
        real h_e = half * (gr.b(l, k + 1) + gr.b(l + 1, k + 1));
        real source_x = hg * (h_e - h_w) * ((((e + sx[0]) + h_e) + (e - sx[0])) + h_w);
        L[0] = -(fe[0] - fw[0]) / dx + -(gn[0] - gs[0]) / dy;
        L[1] = (-(fe[1] - fw[1]) / dx + source_x / dx) + (-(gn[1] - gs[1]) / dy + (gr.wx + f * q.hv(l, k)));
        L[2] = -(fe[2] - fw[2]) / dx + (-(gn[2] - gs[2]) / dy + ((gr.wy - f * q.hu(l, k)) + source_y / dy));
    }
};

extern "C" __global__ void kp07_stage_l2(FV_STAGE_ARGS) {
    fv_stage_l2<Kp07>(FV_STAGE_PASS);
}

extern "C" __global__ void kp07_stage_shared(FV_STAGE_ARGS) {
    fv_stage_shared<Kp07>(FV_STAGE_PASS);
}
