"""Tyre force elements (``type = "tyre"``): a wheel on the road, Pacejka's magic formula.

A tyre acts between one part (the wheel) and the road, the plane z = h0 of the assembly
frame (z up, the model's gravity along −z) with optional speed bumps along x, each a cosine
hump of height H and length L centred at x_c:

    h(x) = h0 + Σ_bumps H/2 (1 + cos(2π (x − x_c)/L))   for |x − x_c| < L/2     (m)

Geometry (point follower, world axes). C the wheel centre, a the unit spin axis, R the unloaded
radius, s = √(1 − a_z²) (the cosine of the camber angle). The road is sampled under the centre:
h = h(C_x), h' = dh/dx at C_x. The penetration of the wheel's lowest rim point is

    δ = h − C_z + R s,     δ̇ = h' v_Cx − v_Cz − R a_z ȧ_z / s,   ȧ = ω × a       (m, m/s)

The contact point is P = C + ρ e_r on the road under the centre, e_r = −(e_z − a_z a)/s the
downward radial direction in the wheel plane, ρ = (C_z − h)/s the loaded radius (the rolling
radius). While δ > 0 the normal force is the gradient of the elastic energy V = ½ k δ² plus a
damper, never pulling:

    f_n = max(0, k δ + c δ̇),     F_n = f_n (−h', 0, 1),     N = |F_n| = f_n √(1 + h'²)   (N)

(on a bump the force tilts with the road and slows the wheel). The slip forces act in the
horizontal plane along e_x = (a × e_z)/s (the heading) and e_y = e_z × e_x (the horizontal
projection of the spin axis). With v_P = v_C + ω × (P − C) the velocity of the wheel's material
point at P, V_x = v_C·e_x, V_sx = v_P·e_x, V_sy = v_P·e_y and the low-speed regularised speed
V_r = √(V_x² + v_ε²) (``low_speed`` v_ε, m/s):

    κ = −V_sx / V_r       (slip ratio: > 0 driving),    α = atan(V_sy / V_r)   (slip angle, rad)
    F_x = N · MF(κ; B_x, C_x, D_x, E_x),     F_y = −N · MF(α; B_y, C_y, D_y, E_y)
    MF(x; B, C, D, E) = D sin(C atan(B x − E (B x − atan(B x))))

the pure-slip magic formula (Pacejka & Bakker 1987/'89) with the peak proportional to the load:
D is the peak friction coefficient, B the stiffness factor (per unit slip ratio, per rad),
C the shape factor, E the curvature factor; no combined-slip weighting, no load dependence of
B, C, E, no shifts. A rolling wheel without slip (ω·a ρ = V_x) feels no F_x. Rolling
resistance f_r (``rolling_resistance``, dimensionless) is a moment about the spin axis,
M = −f_r N ρ u/√(u² + v_ε²) a with u = ρ ω·a (the rolling speed).

All forces act on the wheel at P (the road is fixed). Energy: V = ½ k δ² (δ > 0) is potential
energy; the non-conservative power is the forces' power F·v_P + M ω·a plus dV/dt = k δ δ̇, so
the run's energy balance holds to the integration error.

The per-tyre loop :func:`tyre_forces` is compiled by numba when it is present (else it runs as
Python); it is the one implementation used by the numpy right-hand side
(:meth:`.forces.ForceElements.evaluate`), the compiled one (:mod:`._kernels`) and index-3.
numba's disk cache follows edits of this file (:mod:`cadmotion.kernel.numba_cache` names its
folder after every kernel source that uses numba).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import MechanismError
from ._frames import jit

__all__ = ["Tyres", "tyre_forces", "TYRE_OUTPUTS", "TYRE_PARAMS", "N_PAR"]

#: per-frame outputs of each tyre (``<tyre>.<name>``): N, N, N, 1, rad, m
TYRE_OUTPUTS = ("normal_force", "longitudinal_force", "lateral_force", "slip_ratio", "slip_angle", "deflection")
#: the keys a tyre takes (params of its ForceSpec)
TYRE_PARAMS = ("axis", "radius", "stiffness", "damping", "longitudinal", "lateral", "rolling_resistance",
               "low_speed", "road_height", "bumps")
#: columns of the packed parameter array: R, k, c, Bx, Cx, Dx, Ex, By, Cy, Dy, Ey, f_r, v_eps, h0
N_PAR = 14
_DEFAULT_LOW_SPEED = 0.5  # m/s


@jit
def road_height(x, h0, bumps, nbump):
    """(h, dh/dx) of the road at x (m): the plane h0 plus the cosine bumps (x_c, H, L)."""
    h = h0
    hp = 0.0
    for i in range(nbump):
        xc, H, L = bumps[i, 0], bumps[i, 1], bumps[i, 2]
        u = x - xc
        if abs(u) < 0.5 * L:
            ph = 2.0 * math.pi * u / L
            h += 0.5 * H * (1.0 + math.cos(ph))
            hp -= H * math.pi / L * math.sin(ph)
    return h, hp


@jit
def magic_formula(x, B, C, D, E):
    """D sin(C atan(B x − E (B x − atan(B x)))): the pure-slip magic formula (force per unit load)."""
    bx = B * x
    return D * math.sin(C * math.atan(bx - E * (bx - math.atan(bx))))


@jit
def tyre_forces(A, rc, w, vc, F, N, ty_b, ty_dc, ty_ax, ty_par, ty_bump, ty_nb, out):
    """Adds the tyres' forces to F (N, at the coms) and moments N (N m, about the coms), world axes;
    fills out (n, 6) with N, F_x, F_y, κ, α, δ of each tyre; returns the non-conservative power (W).

    ty_b (n,) wheel bodies, ty_dc (n, 3) wheel centres from the com (body axes, m), ty_ax (n, 3)
    unit spin axes (body axes), ty_par (n, 14) as :data:`N_PAR`, ty_bump (n, m, 3) bumps
    (x_c, H, L; m), ty_nb (n,) how many bumps each road has."""
    power = 0.0
    for s in range(ty_b.shape[0]):
        b = ty_b[s]
        for j in range(6):
            out[s, j] = 0.0
        sc = np.zeros(3)
        a = np.zeros(3)
        for i in range(3):
            sc[i] = A[b, i, 0] * ty_dc[s, 0] + A[b, i, 1] * ty_dc[s, 1] + A[b, i, 2] * ty_dc[s, 2]
            a[i] = A[b, i, 0] * ty_ax[s, 0] + A[b, i, 1] * ty_ax[s, 1] + A[b, i, 2] * ty_ax[s, 2]
        ss = a[0] * a[0] + a[1] * a[1]
        if ss < 1e-12:  # the wheel lies flat: no rim point below the centre
            continue
        sa = math.sqrt(ss)
        R, k, c = ty_par[s, 0], ty_par[s, 1], ty_par[s, 2]
        cx = rc[b, 0] + sc[0]
        cz = rc[b, 2] + sc[2]
        h, hp = road_height(cx, ty_par[s, 13], ty_bump[s], ty_nb[s])
        delta = h - cz + R * sa
        if delta <= 0.0:
            continue
        vC = np.zeros(3)
        vC[0] = vc[b, 0] + w[b, 1] * sc[2] - w[b, 2] * sc[1]
        vC[1] = vc[b, 1] + w[b, 2] * sc[0] - w[b, 0] * sc[2]
        vC[2] = vc[b, 2] + w[b, 0] * sc[1] - w[b, 1] * sc[0]
        adot_z = w[b, 0] * a[1] - w[b, 1] * a[0]
        ddelta = hp * vC[0] - vC[2] - R * a[2] * adot_z / sa
        fn = k * delta + c * ddelta
        if fn < 0.0:
            fn = 0.0
        load = fn * math.sqrt(1.0 + hp * hp)
        rho = (cz - h) / sa
        # the contact point's arm from the wheel centre, ρ e_r, and from the com
        r0 = rho * a[2] * a[0] / sa
        r1 = rho * a[2] * a[1] / sa
        r2 = rho * (a[2] * a[2] - 1.0) / sa
        p0, p1, p2 = sc[0] + r0, sc[1] + r1, sc[2] + r2
        vP0 = vC[0] + w[b, 1] * r2 - w[b, 2] * r1
        vP1 = vC[1] + w[b, 2] * r0 - w[b, 0] * r2
        vP2 = vC[2] + w[b, 0] * r1 - w[b, 1] * r0
        ex0, ex1 = a[1] / sa, -a[0] / sa
        ey0, ey1 = a[0] / sa, a[1] / sa
        vx = vC[0] * ex0 + vC[1] * ex1
        vsx = vP0 * ex0 + vP1 * ex1
        vsy = vP0 * ey0 + vP1 * ey1
        veps = ty_par[s, 12]
        vr = math.sqrt(vx * vx + veps * veps)
        kappa = -vsx / vr
        alpha = math.atan(vsy / vr)
        fx = load * magic_formula(kappa, ty_par[s, 3], ty_par[s, 4], ty_par[s, 5], ty_par[s, 6])
        fy = -load * magic_formula(alpha, ty_par[s, 7], ty_par[s, 8], ty_par[s, 9], ty_par[s, 10])
        f0 = -fn * hp + fx * ex0 + fy * ey0
        f1 = fx * ex1 + fy * ey1
        f2 = fn
        spin = w[b, 0] * a[0] + w[b, 1] * a[1] + w[b, 2] * a[2]
        u = rho * spin
        m_rr = -ty_par[s, 11] * load * rho * u / math.sqrt(u * u + veps * veps)
        F[b, 0] += f0
        F[b, 1] += f1
        F[b, 2] += f2
        N[b, 0] += p1 * f2 - p2 * f1 + m_rr * a[0]
        N[b, 1] += p2 * f0 - p0 * f2 + m_rr * a[1]
        N[b, 2] += p0 * f1 - p1 * f0 + m_rr * a[2]
        power += f0 * vP0 + f1 * vP1 + f2 * vP2 + m_rr * spin + k * delta * ddelta
        out[s, 0] = load
        out[s, 1] = fx
        out[s, 2] = fy
        out[s, 3] = kappa
        out[s, 4] = alpha
        out[s, 5] = delta
    return power


@jit
def tyre_potential(A, rc, ty_b, ty_dc, ty_ax, ty_par, ty_bump, ty_nb):
    """Σ ½ k δ² over the tyres in contact (J)."""
    V = 0.0
    for s in range(ty_b.shape[0]):
        b = ty_b[s]
        a0 = A[b, 0, 0] * ty_ax[s, 0] + A[b, 0, 1] * ty_ax[s, 1] + A[b, 0, 2] * ty_ax[s, 2]
        a1 = A[b, 1, 0] * ty_ax[s, 0] + A[b, 1, 1] * ty_ax[s, 1] + A[b, 1, 2] * ty_ax[s, 2]
        ss = a0 * a0 + a1 * a1
        if ss < 1e-12:
            continue
        cx = rc[b, 0] + A[b, 0, 0] * ty_dc[s, 0] + A[b, 0, 1] * ty_dc[s, 1] + A[b, 0, 2] * ty_dc[s, 2]
        cz = rc[b, 2] + A[b, 2, 0] * ty_dc[s, 0] + A[b, 2, 1] * ty_dc[s, 1] + A[b, 2, 2] * ty_dc[s, 2]
        h, _ = road_height(cx, ty_par[s, 13], ty_bump[s], ty_nb[s])
        delta = h - cz + ty_par[s, 0] * math.sqrt(ss)
        if delta > 0.0:
            V += 0.5 * ty_par[s, 1] * delta * delta
    return V


class Tyres:
    """The tyre elements of a model, packed for :func:`tyre_forces`.

    Built by :class:`.forces.ForceElements` from the ``tyre`` ForceSpecs: ``items`` is a list of
    (name, body, centre offset from the com (body axes, m), spin axis (body axes, unit), parameter
    row (N_PAR,), bumps (m, 3)). Attributes ``b``, ``dc``, ``ax``, ``par``, ``bump``, ``nbump`` are
    the packed arrays; ``names`` the element names.
    """

    def __init__(self, items):
        self.names = [it[0] for it in items]
        n = len(items)
        self.n = n
        self.b = np.array([it[1] for it in items], dtype=np.int64)
        self.dc = np.array([it[2] for it in items], dtype=float).reshape(n, 3)
        self.ax = np.array([it[3] for it in items], dtype=float).reshape(n, 3)
        self.par = np.array([it[4] for it in items], dtype=float).reshape(n, N_PAR)
        mb = max([len(it[5]) for it in items] + [1])
        self.bump = np.zeros((n, mb, 3))
        self.nbump = np.zeros(n, dtype=np.int64)
        for s, it in enumerate(items):
            self.bump[s, :len(it[5])] = it[5]
            self.nbump[s] = len(it[5])
        self.out = np.zeros((n, len(TYRE_OUTPUTS)))

    def arrays(self):
        """(b, dc, ax, par, bump, nbump): the arguments of :func:`tyre_forces` after F, N."""
        return self.b, self.dc, self.ax, self.par, self.bump, self.nbump

    def evaluate(self, bs, F, N):
        """Adds the tyre forces to F, N (nb, 3); returns the non-conservative power (W)."""
        return float(tyre_forces(bs.A, bs.rc, bs.w, bs.vc, F, N, *self.arrays(), self.out))

    def potential(self, bs):
        """The tyres' elastic energy (J)."""
        return float(tyre_potential(bs.A, bs.rc, *self.arrays()))

    def report(self, bs):
        """{output: values (n,)} of :data:`TYRE_OUTPUTS` at the state ``bs``."""
        nb = bs.A.shape[0]
        tyre_forces(bs.A, bs.rc, bs.w, bs.vc, np.zeros((nb, 3)), np.zeros((nb, 3)), *self.arrays(), self.out)
        return {name: self.out[:, j].copy() for j, name in enumerate(TYRE_OUTPUTS)}

    def tangent_blocks(self, bs, eps=1e-7):
        """(ia, ib, K, D): the stiffness −∂f/∂x and damping −∂f/∂v of the tyres on their wheels, in the
        blocks of :meth:`.forces.ForceElements.tangent_blocks` (both indices the wheel, the block in
        [1, 1]), by central differences of :func:`tyre_forces` (steps ``eps`` times the radius for
        positions and rotations, ``eps`` times max(1, |v|) m/s for velocities). The law is C¹ except
        where the tyre touches down and where f_n reaches 0."""
        from .mass import rotation

        n = self.n
        K = np.zeros((n, 2, 2, 6, 6))
        D = np.zeros((n, 2, 2, 6, 6))
        nb = bs.A.shape[0]
        for s in range(n):
            b = self.b[s]
            args = (self.b[s:s + 1], self.dc[s:s + 1], self.ax[s:s + 1], self.par[s:s + 1], self.bump[s:s + 1],
                    self.nbump[s:s + 1], np.zeros((1, len(TYRE_OUTPUTS))))
            hx = eps * self.par[s, 0]
            hv = eps * max(1.0, float(np.linalg.norm(bs.vc[b])), float(np.linalg.norm(bs.w[b])) * self.par[s, 0])
            for j in range(12):
                cols = []
                for sign in (1.0, -1.0):
                    A, rc, vc, w = bs.A.copy(), bs.rc.copy(), bs.vc.copy(), bs.w.copy()
                    if j < 3:
                        rc[b, j] += sign * hx
                    elif j < 6:
                        half = 0.5 * sign * hx / self.par[s, 0]  # a turn about world axis j − 3
                        p = np.zeros((1, 4))
                        p[0, 0], p[0, 1 + j - 3] = math.cos(half), math.sin(half)
                        A[b] = rotation(p)[0] @ A[b]
                    elif j < 9:
                        vc[b, j - 6] += sign * hv
                    else:
                        w[b, j - 9] += sign * hv / self.par[s, 0]
                    Fs, Ns = np.zeros((nb, 3)), np.zeros((nb, 3))
                    tyre_forces(A, rc, w, vc, Fs, Ns, *args)
                    cols.append(np.concatenate([Fs[b], Ns[b]]))
                step = hx if j < 3 else hx / self.par[s, 0] if j < 6 else hv if j < 9 else hv / self.par[s, 0]
                col = -(cols[0] - cols[1]) / (2.0 * step)
                if j < 6:
                    K[s, 1, 1, :, j] = col
                else:
                    D[s, 1, 1, :, j - 6] = col
        return self.b, self.b, K, D


def parse_tyre(f, number, where, model, nmov, A0, r0, com, gravity):
    """One ``tyre`` ForceSpec → an item of :class:`Tyres`, checking every parameter (errors name the element).

    ``number(f, key, default, nonneg=, n=)`` reads a checked number (see
    :class:`.forces.ForceElements`); A0, r0 the bodies' initial rotations and frame origins, com
    their centres of mass (body axes); bodies from ``nmov`` on are fixed."""
    def err(msg, hint=None):
        return MechanismError(f"tyre {f.name!r}: {msg}", where=where, hint=hint)

    if len(f.parts) != 1 or f.parts[0] not in model.body_names:
        raise err(f"needs parts = [wheel], one known part; got {list(f.parts)!r}",
                  hint=f"known parts: {', '.join(model.body_names)}")
    b = model.body_index(f.parts[0])
    if b >= nmov:
        raise err(f"its wheel {f.parts[0]!r} is a fixed part")
    g = np.asarray(gravity, float)
    if np.linalg.norm(g[:2]) > 1e-12 * max(np.linalg.norm(g), 1e-300) or g[2] > 0:
        raise err(f"the road is the plane z = const with z up, but gravity is {list(g)!r}",
                  hint="give gravity along −z (e.g. [0, 0, -9.81]) and build the model with z up")
    if len(f.points) > 1:
        raise err("takes one point, the wheel centre (`center`)")
    center = np.asarray(f.points[0], float) if f.points else r0[b]
    axis = number(f, "axis", None, n=3)
    na = float(np.linalg.norm(axis))
    if na == 0.0:
        raise err("`axis` (the spin axis) must not be zero")
    axis = axis / na
    if math.hypot(axis[0], axis[1]) < 1e-6:
        raise err("`axis` (the spin axis) is vertical: the wheel lies flat on the road",
                  hint="the spin axis is horizontal for an upright wheel, e.g. [0, 1, 0]")
    R = number(f, "radius", None)
    k = number(f, "stiffness", None)
    c = number(f, "damping", 0.0, nonneg=True)
    for key, value in (("radius", R), ("stiffness", k)):
        if not value > 0:
            raise err(f"`{key}` must be positive, got {value!r}",
                      hint="the unloaded radius (the file's length unit) and the vertical stiffness (N/m) are > 0")
    coeffs = []
    for key in ("longitudinal", "lateral"):
        Bc, Cc, Dc, Ec = number(f, key, None, n=4)
        bad = [(name, v) for name, v, ok in (("B", Bc, Bc > 0), ("C", Cc, 0 < Cc <= 2), ("D", Dc, Dc > 0),
                                              ("E", Ec, Ec <= 1)) if not ok]
        if bad:
            raise err(f"`{key}` magic-formula coefficient(s) out of range: "
                      + ", ".join(f"{name} = {float(v)!r}" for name, v in bad),
                      hint="[B, C, D, E]: stiffness factor B > 0, shape factor 0 < C ≤ 2, peak friction "
                           "coefficient D > 0 (the peak force is D times the load), curvature factor E ≤ 1")
        coeffs += [Bc, Cc, Dc, Ec]
    fr = number(f, "rolling_resistance", 0.0, nonneg=True)
    veps = number(f, "low_speed", _DEFAULT_LOW_SPEED)
    if not veps > 0:
        raise err(f"`low_speed` (the slip regularisation speed, m/s) must be positive, got {veps!r}")
    h0 = number(f, "road_height", 0.0)
    bumps = np.asarray(dict(f.params).get("bumps", ()), float).reshape(-1, 3)
    for x, H, L in bumps:
        if not (math.isfinite(x) and math.isfinite(H) and L > 0 and math.isfinite(L)):
            raise err(f"bump [x = {x!r}, height = {H!r}, length = {L!r}] needs finite numbers and a length > 0")
    dc = A0[b].T @ (center - r0[b]) - com[b]
    ax_body = A0[b].T @ axis
    par = [R, k, c, *coeffs, fr, veps, h0]
    return f.name, b, dc, ax_body, par, bumps
