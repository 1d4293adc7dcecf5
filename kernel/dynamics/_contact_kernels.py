"""numba kernels of the compliant contacts (:mod:`.contacts`) in the compiled right-hand side (:mod:`.fast`).

The same geometry, Hunt–Crossley normal force, regularised Coulomb friction, impact-speed state
and step limit as :class:`.contacts.Contacts` (the numpy reference; the equations are in its
module docstring), point by point.

Broad phase. The contact points are grouped by body pair (S's body, O's body); each pair has a
bounding sphere per body in that body's frame (centre C relative to the com, radius r: every
point's shape of the pair lies inside it). A pair whose spheres are apart, gap
g = |C_S − C_O| − r_S − r_O > 0, has no point in touch (every point's δ ≤ −g), so its points are
skipped: the cost of an evaluation follows the pairs that are close, not the declared ones. Pairs
against a plane are never skipped (a plane has no bounding sphere). ``opt[0]`` = 0 turns the
broad phase off (every declared point's narrow phase is evaluated: the same forces, to compare).

The step limit is exact with the broad phase too: a skipped pair's points approach at most at
V = |v_S − v_O| + |ω_S| ρ_S + |ω_O| ρ_O (ρ the farthest reach of the bounding sphere from the
com; δ̇ = dδ/dt is a rate of the distance between the two shapes' points), so their limit
½|δ|/δ̇ is at least ½ g / V: such a pair is evaluated only when that bound is below the limit of
the close pairs.

Layout (arrays packed by :mod:`.fast`, compiled point order = sorted by pair): per point the
bodies ``s``, ``o``, offsets ``ds``, ``do`` (body axes, from the com, m), the plane normal ``no``,
the box half lengths ``half``, the rim axis ``axis``, ``kind`` (bits :data:`PLANE`, :data:`BOX`,
:data:`RIM`), ``par`` (columns ``P_*``) and ``state`` (impact speeds, m/s); per pair ``pair``
(columns ``Q_*``) and ``pc`` (columns ``C_*``).
"""

import math

import numba
import numpy as np

_JIT = dict(cache=True, nogil=True, fastmath=False)

#: kind bits of a point: O is a plane, O is a box, S is a rim circle
PLANE, BOX, RIM = 1, 2, 4
#: columns of ``par``: S's radius (m), O's radius (m), k, λ, ξ, exponent n, restitution form (1/0),
#: μ_s, μ_d, v_s (m/s), reduced mass and effective mass (kg) of the pair
P_RS, P_RO, P_K, P_LAM, P_XI, P_EXP, P_FROM_E, P_MUS, P_MUD, P_VS, P_MRED, P_MEFF = range(12)
N_PAR = 12
#: columns of ``pair``: S's body, O's body, first point, end point (exclusive), never skipped (1/0)
Q_S, Q_O, Q_FIRST, Q_END, Q_ALWAYS = range(5)
#: columns of ``pc``: C_S (3, m, S's body axes from its com), C_O (3), r_S, r_O (m), ρ_S, ρ_O (m)
C_CS, C_CO, C_RS, C_RO, C_REACH_S, C_REACH_O = 0, 3, 6, 7, 8, 9
N_PC = 10
#: ``stats``: evaluations, points evaluated (narrow phase), points in touch — summed over evaluations
N_STATS = 3
#: a pair is skipped when its gap exceeds this fraction of r_S + r_O (round-off of the test)
GAP_MARGIN = 1e-9
#: a skipped pair's bound ½ g / V is taken with this safety factor against round-off
LIMIT_SAFETY = 0.8
# the constants of :mod:`.contacts` (kept equal by tests/kernel/test_contacts_compiled.py)
MIN_IMPACT_SPEED = 1e-2
STEPS_PER_CONTACT = 10
TOUCH_STEP = 1e-3


@numba.njit(**_JIT)
def _world(A, rc, b, d, out, k):
    """out[k:k+3] = rc[b] + A[b] d (a body point, world frame)."""
    for i in range(3):
        out[k + i] = rc[b, i] + A[b, i, 0] * d[0] + A[b, i, 1] * d[1] + A[b, i, 2] * d[2]


@numba.njit(**_JIT)
def pair_gap(A, rc, pair, pc, p):
    """g = |C_S − C_O| − r_S − r_O (m) of pair p (> 0: apart), or −1 for a pair never skipped."""
    if pair[p, Q_ALWAYS]:
        return -1.0
    c = np.empty(6)
    _world(A, rc, pair[p, Q_S], pc[p, C_CS:C_CS + 3], c, 0)
    _world(A, rc, pair[p, Q_O], pc[p, C_CO:C_CO + 3], c, 3)
    d = math.sqrt((c[0] - c[3]) ** 2 + (c[1] - c[4]) ** 2 + (c[2] - c[5]) ** 2)
    r = pc[p, C_RS] + pc[p, C_RO]
    gap = d - r
    return gap if gap > GAP_MARGIN * r else -1.0


@numba.njit(**_JIT)
def point_geometry(A, rc, vc, w, i, ct_s, ct_o, ds, do, no, half, axis, kind, par, g):
    """Point i's g = [n (3, unit, from O toward S), δ (m), x (3, m), δ̇ (m/s), v_t (3, m/s)], world."""
    s, o = ct_s[i], ct_o[i]
    Rs, Ro = par[i, P_RS], par[i, P_RO]
    fl = kind[i]
    c = np.empty(6)
    _world(A, rc, s, ds[i], c, 0)
    _world(A, rc, o, do[i], c, 3)
    inside = False
    face = 0
    depth_face = 0.0
    sign = 1.0
    if fl & BOX:
        # O a box: its point nearest S's centre (clamped in O's axes); inside: out through the nearest face
        e0, e1, e2 = c[0] - c[3], c[1] - c[4], c[2] - c[5]
        local = np.empty(3)
        near = np.empty(3)
        inside = True
        best = np.inf
        for j in range(3):
            local[j] = A[o, 0, j] * e0 + A[o, 1, j] * e1 + A[o, 2, j] * e2
            h = half[i, j]
            near[j] = min(max(local[j], -h), h)
            dep = h - abs(local[j])
            if not dep > 0:
                inside = False
            if h > 0 and dep < best:
                best = dep
                face = j
        if inside:
            for j in range(3):
                near[j] = local[j]
            depth_face = half[i, face] - abs(local[face])
            sign = 1.0 if local[face] >= 0 else -1.0
        for j in range(3):
            c[3 + j] += A[o, j, 0] * near[0] + A[o, j, 1] * near[1] + A[o, j, 2] * near[2]
    d0, d1, d2 = c[0] - c[3], c[1] - c[4], c[2] - c[5]
    dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if fl & PLANE:
        n0 = A[o, 0, 0] * no[i, 0] + A[o, 0, 1] * no[i, 1] + A[o, 0, 2] * no[i, 2]
        n1 = A[o, 1, 0] * no[i, 0] + A[o, 1, 1] * no[i, 1] + A[o, 1, 2] * no[i, 2]
        n2 = A[o, 2, 0] * no[i, 0] + A[o, 2, 1] * no[i, 1] + A[o, 2, 2] * no[i, 2]
    else:
        inv = dist if dist > 0 else 1.0
        n0, n1, n2 = d0 / inv, d1 / inv, d2 / inv
    if inside:
        n0, n1, n2 = A[o, 0, face] * sign, A[o, 1, face] * sign, A[o, 2, face] * sign
        dist = -depth_face
    o0, o1, o2 = Rs * n0, Rs * n1, Rs * n2
    if fl & RIM:
        a0 = A[s, 0, 0] * axis[i, 0] + A[s, 0, 1] * axis[i, 1] + A[s, 0, 2] * axis[i, 2]
        a1 = A[s, 1, 0] * axis[i, 0] + A[s, 1, 1] * axis[i, 1] + A[s, 1, 2] * axis[i, 2]
        a2 = A[s, 2, 0] * axis[i, 0] + A[s, 2, 1] * axis[i, 1] + A[s, 2, 2] * axis[i, 2]
        na = n0 * a0 + n1 * a1 + n2 * a2
        u0, u1, u2 = n0 - na * a0, n1 - na * a1, n2 - na * a2
        nu = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        if nu > 1e-12:
            o0, o1, o2 = Rs * u0 / nu, Rs * u1 / nu, Rs * u2 / nu
        else:  # a rim lying flat on the plane: its centre
            o0 = o1 = o2 = 0.0
    reach = o0 * n0 + o1 * n1 + o2 * n2
    if fl & PLANE:
        delta = reach - (d0 * n0 + d1 * n1 + d2 * n2)
    else:
        delta = Rs + Ro - dist
    x0 = c[0] - o0 + 0.5 * delta * n0
    x1 = c[1] - o1 + 0.5 * delta * n1
    x2 = c[2] - o2 + 0.5 * delta * n2
    # v_r = v_S(x) − v_O(x)
    ps0, ps1, ps2 = x0 - rc[s, 0], x1 - rc[s, 1], x2 - rc[s, 2]
    po0, po1, po2 = x0 - rc[o, 0], x1 - rc[o, 1], x2 - rc[o, 2]
    vr0 = vc[s, 0] + (w[s, 1] * ps2 - w[s, 2] * ps1) - vc[o, 0] - (w[o, 1] * po2 - w[o, 2] * po1)
    vr1 = vc[s, 1] + (w[s, 2] * ps0 - w[s, 0] * ps2) - vc[o, 1] - (w[o, 2] * po0 - w[o, 0] * po2)
    vr2 = vc[s, 2] + (w[s, 0] * ps1 - w[s, 1] * ps0) - vc[o, 2] - (w[o, 0] * po1 - w[o, 1] * po0)
    vn = vr0 * n0 + vr1 * n1 + vr2 * n2
    g[0], g[1], g[2], g[3] = n0, n1, n2, delta
    g[4], g[5], g[6], g[7] = x0, x1, x2, -vn
    g[8], g[9], g[10] = vr0 - vn * n0, vr1 - vn * n1, vr2 - vn * n2


@numba.njit(**_JIT)
def impact_speed(par, i, delta, ddelta, state):
    """δ̇⁻ (m/s) of the restitution form: the recorded one, else the elastic-energy estimate
    (:meth:`.contacts.Contacts.impact_speeds`)."""
    if state > 0:
        v = state
    else:
        dp = max(delta, 0.0)
        e1 = par[i, P_EXP] + 1.0
        v = math.sqrt(max(ddelta, 0.0) ** 2 + 2.0 * par[i, P_K] * dp ** e1 / (e1 * par[i, P_MRED]))
    return max(v, MIN_IMPACT_SPEED)


@numba.njit(**_JIT)
def friction_coefficient(par, i, speed):
    """μ(|v_t|) of the regularised Coulomb law (:mod:`.contacts`)."""
    vs, mus, mud = par[i, P_VS], par[i, P_MUS], par[i, P_MUD]
    if speed <= vs:
        z = min(max((speed + vs) / (2.0 * vs), 0.0), 1.0)
        return mus * (-1.0 + 2.0 * (z * z * (3.0 - 2.0 * z)))
    z = min(max((speed - vs) / vs, 0.0), 1.0)
    return mus + (mud - mus) * (z * z * (3.0 - 2.0 * z))


@numba.njit(**_JIT)
def point_limit(par, i, delta, ddelta, state):
    """The largest step (s) of point i (:func:`.contacts.compliant_step_limit`)."""
    m, k, n = par[i, P_MEFF], par[i, P_K], par[i, P_EXP]
    speed = max(max(abs(ddelta), state), MIN_IMPACT_SPEED)
    dmax = ((n + 1.0) * m * speed ** 2 / (2.0 * k)) ** (1.0 / (n + 1.0))
    k_lin = n * k * dmax ** (n - 1.0)
    t_c = math.pi * math.sqrt(m / k_lin)
    limit = t_c / STEPS_PER_CONTACT if delta > 0 else np.inf
    if (delta <= 0 and ddelta > 0) or (delta > 0 and ddelta < 0):
        limit = min(limit, max(0.5 * abs(delta) / abs(ddelta), TOUCH_STEP * t_c))
    return limit


@numba.njit(**_JIT)
def contact_forces(A, rc, w, vc, F, N, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, state, opt, stats):
    """Accumulate the contact forces into F (nb, 3) N and moments about the com N (nb, 3) N m;
    returns the non-conservative power (W, ≤ 0)."""
    g = np.empty(11)
    broad = opt[0] != 0
    power = 0.0
    n_eval = 0
    n_touch = 0
    for p in range(pair.shape[0]):
        if broad and pair_gap(A, rc, pair, pc, p) > 0:
            continue
        for i in range(pair[p, Q_FIRST], pair[p, Q_END]):
            point_geometry(A, rc, vc, w, i, ct_s, ct_o, ds, do, no, half, axis, kind, par, g)
            n_eval += 1
            delta, dd = g[3], g[7]
            if not delta > 0:
                continue
            n_touch += 1
            elastic = par[i, P_K] * delta ** par[i, P_EXP]
            if par[i, P_FROM_E] != 0:
                alpha = par[i, P_XI] / impact_speed(par, i, delta, dd, state[i])
            else:
                alpha = par[i, P_LAM] / par[i, P_K]
            Fn = max(0.0, elastic * (1.0 + alpha * dd))
            speed = math.sqrt(g[8] * g[8] + g[9] * g[9] + g[10] * g[10])
            mu = friction_coefficient(par, i, speed)
            inv = speed if speed > 0 else 1.0
            f0 = Fn * g[0] + (-(mu * Fn)) * (g[8] / inv)
            f1 = Fn * g[1] + (-(mu * Fn)) * (g[9] / inv)
            f2 = Fn * g[2] + (-(mu * Fn)) * (g[10] / inv)
            power += -(Fn - elastic) * dd - mu * Fn * speed
            s, o = ct_s[i], ct_o[i]
            F[s, 0] += f0
            F[s, 1] += f1
            F[s, 2] += f2
            F[o, 0] -= f0
            F[o, 1] -= f1
            F[o, 2] -= f2
            r0, r1, r2 = g[4] - rc[s, 0], g[5] - rc[s, 1], g[6] - rc[s, 2]
            N[s, 0] += r1 * f2 - r2 * f1
            N[s, 1] += r2 * f0 - r0 * f2
            N[s, 2] += r0 * f1 - r1 * f0
            r0, r1, r2 = g[4] - rc[o, 0], g[5] - rc[o, 1], g[6] - rc[o, 2]
            N[o, 0] -= r1 * f2 - r2 * f1
            N[o, 1] -= r2 * f0 - r0 * f2
            N[o, 2] -= r0 * f1 - r1 * f0
    stats[0] += 1.0
    stats[1] += n_eval
    stats[2] += n_touch
    return power


@numba.njit(**_JIT)
def contact_accept(A, rc, w, vc, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, state, opt):
    """Record each point's impact speed at an accepted state (:meth:`.contacts.Contacts.accept`)."""
    g = np.empty(11)
    broad = opt[0] != 0
    for p in range(pair.shape[0]):
        first, end = pair[p, Q_FIRST], pair[p, Q_END]
        if broad and pair_gap(A, rc, pair, pc, p) > 0:
            for i in range(first, end):
                state[i] = 0.0
            continue
        for i in range(first, end):
            point_geometry(A, rc, vc, w, i, ct_s, ct_o, ds, do, no, half, axis, kind, par, g)
            state[i] = impact_speed(par, i, g[3], g[7], state[i]) if g[3] > 0 else 0.0


@numba.njit(**_JIT)
def _pair_limit(A, rc, w, vc, p, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, state, g, limit):
    for i in range(pair[p, Q_FIRST], pair[p, Q_END]):
        point_geometry(A, rc, vc, w, i, ct_s, ct_o, ds, do, no, half, axis, kind, par, g)
        limit = min(limit, point_limit(par, i, g[3], g[7], state[i]))
    return limit


@numba.njit(**_JIT)
def contact_limit(A, rc, w, vc, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, state, opt):
    """The largest step (s) that strides over no contact (:meth:`.contacts.Contacts.step_limit`):
    the close pairs' points, then every skipped pair whose bound ½ g / V is below that."""
    g = np.empty(11)
    broad = opt[0] != 0
    limit = np.inf
    for p in range(pair.shape[0]):
        if not (broad and pair_gap(A, rc, pair, pc, p) > 0):
            limit = _pair_limit(A, rc, w, vc, p, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, state, g, limit)
    if not broad:
        return limit
    for p in range(pair.shape[0]):
        gap = pair_gap(A, rc, pair, pc, p)
        if not gap > 0:
            continue
        s, o = pair[p, Q_S], pair[p, Q_O]
        v = math.sqrt((vc[s, 0] - vc[o, 0]) ** 2 + (vc[s, 1] - vc[o, 1]) ** 2 + (vc[s, 2] - vc[o, 2]) ** 2)
        v += math.sqrt(w[s, 0] ** 2 + w[s, 1] ** 2 + w[s, 2] ** 2) * pc[p, C_REACH_S]
        v += math.sqrt(w[o, 0] ** 2 + w[o, 1] ** 2 + w[o, 2] ** 2) * pc[p, C_REACH_O]
        if v > 0 and LIMIT_SAFETY * 0.5 * gap / v < limit:
            limit = _pair_limit(A, rc, w, vc, p, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, state, g, limit)
    return limit
