// CDKLM16 stage kernels: src/solvers/shallow_water/cdklm16.rs expression for expression
// (reconstruction, central-upwind flux, sources), in the frame of shallow_water_fv.cuh.

struct Cdklm16 {
    static const int TILES = 5;

    // cdklm16::flux: (h un, h un² + ½ g h², h un ut), the last upwinded by un⁻ + un⁺.
    static __device__ __forceinline__ void flux(real hm, real um, real vm, real hp, real up, real vp, real g,
                                                real* out) {
        real half = (real)0.5;
        real cm = sqrt(g * hm), cp = sqrt(g * hp);
        real am = fmin(fmin(um - cm, up - cp), (real)0);
        real ap = fmax(fmax(um + cm, up + cp), (real)0);
        real hum = hm * um, hup = hp * up;
        real f2m = hum * um + half * g * hm * hm;
        real f2p = hup * up + half * g * hp * hp;
        real d = ap - am;
        real apam = ap * am;
        out[0] = (ap * hum - am * hup + apam * (hp - hm)) / d;
        out[1] = (ap * f2m - am * f2p + apam * (hup - hum)) / d;
        out[2] = um + up > (real)0 ? hum * vm : hup * vp;
    }

    // x reconstruction of cell (l, k) (Scratch::row): slopes of u, v and (Kx + Δx f v) / (2g).
    template <class Q>
    static __device__ __forceinline__ void recon_x(const Q& q, const FvGrid& gr, int l, int k, real& ux, real& vx,
                                                   real& tx) {
        real half = (real)0.5, two = (real)2;
        real theta = gr.theta, g = gr.g;
        real tg = theta * g, hg = half * g, g2 = two * g;
        real f = gr.f[l];
        real dxf = gr.dx * f;
        real cv = dxf / g2;
        real um = q.u(l, k - 1), u0 = q.u(l, k), up = q.u(l, k + 1);
        real vm = q.v(l, k - 1), v0 = q.v(l, k), vp = q.v(l, k + 1);
        real em = q.e(l, k - 1), e0 = q.e(l, k), ep = q.e(l, k + 1);
        ux = fv_minmod(theta * (u0 - um), half * (up - um), theta * (up - u0));
        vx = fv_minmod(theta * (v0 - vm), half * (vp - vm), theta * (vp - v0));
        real b = tg * ((e0 - em) - cv * (v0 + vm));
        real c = hg * ((ep - em) - cv * (vp + two * v0 + vm));
        real d = tg * ((ep - e0) - cv * (v0 + vp));
        tx = (fv_minmod(b, c, d) + dxf * v0) / g2;
    }

    // y reconstruction of cell (r, k) (Scratch::reconstruct_y): t = (Ly - Δy f u) / (2g) and
    // the face velocities north and south.
    template <class Q>
    static __device__ __forceinline__ void recon_y(const Q& q, const FvGrid& gr, int r, int k, real& t, real& un,
                                                   real& us, real& vn, real& vs) {
        real half = (real)0.5, two = (real)2;
        real theta = gr.theta, g = gr.g, dy = gr.dy;
        real tg = theta * g, hg = half * g, g2 = two * g;
        real cu = dy / g2;
        real fm = gr.f[r - 1], f0 = gr.f[r], fp = gr.f[r + 1];
        real dyf = dy * f0;
        real um = q.u(r - 1, k), u0 = q.u(r, k), up = q.u(r + 1, k);
        real vm = q.v(r - 1, k), v0 = q.v(r, k), vp = q.v(r + 1, k);
        real em = q.e(r - 1, k), e0 = q.e(r, k), ep = q.e(r + 1, k);
        real uy = fv_minmod(theta * (u0 - um), half * (up - um), theta * (up - u0));
        real vy = fv_minmod(theta * (v0 - vm), half * (vp - vm), theta * (vp - v0));
        real fum = fm * um, fu0 = f0 * u0, fup = fp * up;
        real b = tg * ((e0 - em) + cu * (fu0 + fum));
        real cc = hg * ((ep - em) + cu * (fup + two * fu0 + fum));
        real d = tg * ((ep - e0) + cu * (fu0 + fup));
        real ly = fv_minmod(b, cc, d);
        t = (ly - dyf * u0) / g2;
        un = u0 + half * uy;
        us = u0 - half * uy;
        vn = v0 + half * vy;
        vs = v0 - half * vy;
    }

    template <class Q>
    static __device__ __forceinline__ void face_x(const Q& q, const FvGrid& gr, int l, int k, real* out) {
        real half = (real)0.5;
        real uxm, vxm, txm, uxp, vxp, txp;
        recon_x(q, gr, l, k, uxm, vxm, txm);
        recon_x(q, gr, l, k + 1, uxp, vxp, txp);
        real hf = half * (gr.b(l, k + 1) + gr.b(l + 1, k + 1));
        real hm = (q.e(l, k) + hf) + txm;
        real hp = (q.e(l, k + 1) + hf) - txp;
        real um = q.u(l, k) + half * uxm, up = q.u(l, k + 1) - half * uxp;
        real vm = q.v(l, k) + half * vxm, vp = q.v(l, k + 1) - half * vxp;
        flux(hm, um, vm, hp, up, vp, gr.g, out);
    }

    // Scratch::flux_y: the normal velocity is v; the flux comes back as (h v, h v u, h v² + ½ g h²).
    template <class Q>
    static __device__ __forceinline__ void face_y(const Q& q, const FvGrid& gr, int r, int k, real* out) {
        real half = (real)0.5;
        real tm, unm, usm, vnm, vsm, tp, unp, usp, vnp, vsp;
        recon_y(q, gr, r, k, tm, unm, usm, vnm, vsm);
        recon_y(q, gr, r + 1, k, tp, unp, usp, vnp, vsp);
        real hf = half * (gr.b(r + 1, k) + gr.b(r + 1, k + 1));
        real hm = (q.e(r, k) + hf) + tm;
        real hp = (q.e(r + 1, k) + hf) - tp;
        real fl[3];
        flux(hm, vnm, unm, hp, vsp, usp, gr.g, fl);
        out[0] = fl[0];
        out[1] = fl[2];
        out[2] = fl[1];
    }

    // L of cell (l, k) (the last loop of Scratch::row).
    template <class Q>
    static __device__ __forceinline__ void residual(const Q& q, const FvGrid& gr, int l, int k, const real* fw,
                                                    const real* fe, const real* gs, const real* gn, real* L) {
        real half = (real)0.5;
        real g = gr.g, dx = gr.dx, dy = gr.dy, f = gr.f[l];
        real h_w = half * (gr.b(l, k) + gr.b(l + 1, k));
        real h_e = half * (gr.b(l, k + 1) + gr.b(l + 1, k + 1));
        real h_s = half * (gr.b(l, k) + gr.b(l, k + 1));
        real h_n = half * (gr.b(l + 1, k) + gr.b(l + 1, k + 1));
        real gh = g * (q.e(l, k) + gr.bm[sw_at(k, l, gr.w)]);
        L[0] = -(fe[0] - fw[0]) / dx - (gn[0] - gs[0]) / dy;
        L[1] = -(fe[1] - fw[1]) / dx - (gn[1] - gs[1]) / dy + f * q.hv(l, k) + gh * (h_e - h_w) / dx + gr.wx;
        L[2] = -(fe[2] - fw[2]) / dx - (gn[2] - gs[2]) / dy - f * q.hu(l, k) + gh * (h_n - h_s) / dy + gr.wy;
    }
};

extern "C" __global__ void cdklm16_stage_l2(FV_STAGE_ARGS) {
    fv_stage_l2<Cdklm16>(FV_STAGE_PASS);
}

extern "C" __global__ void cdklm16_stage_shared(FV_STAGE_ARGS) {
    fv_stage_shared<Cdklm16>(FV_STAGE_PASS);
}
