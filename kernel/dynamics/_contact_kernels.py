"""numba kernels of the compliant contacts (:mod:`.contacts`) in the compiled right-hand side (:mod:`.fast`).

The same geometry, Hunt–Crossley normal force, regularised Coulomb friction, impact-speed state
and step limit as :class:`.contacts.Contacts` (the numpy reference; the equations are in its
module docstring), point by point.

Broad phase, in two stages, both exact: a skipped point has δ ≤ 0 at the state the test is made at, so
its force is exactly zero, and the forces, impact speeds and step limit are the ones of every declared
point (``opt[0]`` = 0 turns the broad phase off: every declared point's narrow phase is evaluated, to
compare).

1. By body pair. The contact points are grouped by body pair (S's body, O's body); each pair has a
   bounding sphere per body in that body's frame (centre C relative to the com, radius r: every
   point's shape of the pair lies inside it). A pair whose spheres are apart, gap
   g = |C_S − C_O| − r_S − r_O > 0, has no point in touch (every point's δ ≤ −g), so its points are
   skipped. Pairs against a plane or a bore are never skipped (their material has no bounding sphere).
2. By feature, in the pairs kept. A feature is a segment swept by a sphere on one body (centre d, unit axis
   u, half length l, radius r: a box's edge, a box's corner or a sphere (l = 0), a mesh vertex (l = r = 0)),
   tested against a box fixed in the other body (centre c, half lengths h along that body's axes: the other
   box itself, or the box bounding a sphere or a cylinder): with the feature's centre l and axis u′ in the
   box's axes, from its centre,

       g = max_j (|l_j| − l |u′_j| − r − h_j)        (m; three of the separating axes of segment and box)

   is a lower bound of the distance between the swept segment and the box. Each point has up to two
   features (:func:`feature_gap`): S's shape against O's box (a corner, a sphere, a vertex; an edge), and,
   edge against edge, O's edge against S's box. A point is skipped when either gap is positive: its δ ≤ −g
   (a corner or sphere against a box: δ = R − its distance from the box — a box corner that far out is not
   on the box, so the pair's separating axes (:func:`_pair_axis`) do not measure it). Edge against edge, the gap
   is that of the features less twice the pair's least overlap o* (> 0; and :func:`_edge_margin`): a crossing
   counts (:func:`_edge_counts`) with 0 < δ ≤ o*, its closest points δ apart, one on each edge, so each edge is
   within δ of the other box and g − 2 o* ≤ −δ. U ≥ o*, the boxes' least overlap along O's face normals
   (:func:`_face_overlap`, from the pair's relative pose), takes o*'s place where g − 2 U > 0 already (boxes apart,
   or resting face on face), else o* is computed (:func:`_pair_axis`, once an evaluation). A crossing's δ ≤ 0
   otherwise is minus the distance of two points, one on each edge, the skipped edge's ≥ g from the other box and
   the other's on that box. Planes, bores and rims have
   no features (their narrow phase is as cheap as a test). A box–box contact's 160 points have 40 features: 8 + 8
   corners, 12 + 12 edges; an edge's gap decides its 12 edge–edge points. Each feature is tested once per
   evaluation, with the pair's relative pose: ≈ 20 ns a feature against ≈ 55 ns a box–box point (the 8 boxes of
   benchmarks/contact_pairs.py, 2026-11-27). A sphere
   against a sphere (its cube) costs about its narrow phase: no gain there, and none lost (the chain drive).

The skip needs no motion margin: the test and the force are made at the same state. Its only margin is
round-off (:data:`FEATURE_MARGIN`, :data:`ROUND_OFF`). The motion between evaluations is the step
limit's business: it must also be the limit of every declared point, and a skipped point's is bounded from
below. A point's limit, approaching, is at least ½|δ|/δ̇ (:func:`point_limit`), and for a skipped point
|δ| ≥ g (its pair's gap or its feature's) while δ̇ = dδ/dt, a rate of the distance between the two shapes'
points, is at most V = |v_S − v_O| + |ω_S| ρ_S + |ω_O| ρ_O (m/s; ρ the farthest reach of the pair's bounding
sphere from the com). So after the kept points' limit h (s) is known, the skipped points within
g < 2 V h / :data:`LIMIT_SAFETY` (m) of touch — the distance the pair can close in a step the limit
allows, with a safety factor against round-off — are evaluated too (:func:`contact_limit`); the others'
limits are above h.

Layout (arrays packed by :mod:`.fast`, compiled point order = sorted by pair): per point the
bodies ``s``, ``o``, offsets ``ds``, ``do`` (body axes, from the com, m), the plane normal ``no``,
O's dimensions ``half`` (6 columns: a box's half lengths; a cylinder's or bore's [R, h/2, 0, radial unit
vector on the axis]; for edges, the two edges' midpoints from their box centres, O's then S's), S's rim or
edge axis ``axis``, ``kind`` (bits :data:`PLANE`, :data:`BOX`, :data:`RIM`, :data:`CYL`, :data:`BORE`,
:data:`EDGE`, :data:`CORNER`, :data:`SECOND`; ``no`` holds a cylinder's or O's edge's axis), ``par`` (columns
``P_*``), ``feat`` (its two
features: S's against O's box, O's against S's box; −1 none), ``bp`` (its box pair; −1 none) and ``state`` (impact
speeds, m/s); per pair ``pair`` (columns ``Q_*``) and ``pc`` (columns ``C_*``); per feature ``ft`` (columns ``F_*``,
points sorted by pair: a pair's features are contiguous); per box pair ``bx`` (columns ``BX_*``: a box–box contact's
two boxes, one pair per box taken as S). A box pair's least-overlap axis is computed once an evaluation, by the first
of its corners or edge crossings that needs it (:func:`_pair_axis`), and counted in ``stats``.

Editing this module: the generated dynamics modules hash its source (:func:`.library.module_file`), and numba's
cache folder is named by a digest of every kernel source that uses numba (:mod:`..numba_cache`), so the
kernels that call these functions (:mod:`._kernels`) are compiled again with it (a few minutes).
"""

import math

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources

_JIT = dict(cache=True, nogil=True, fastmath=False)
# the small per-point helpers are inlined into the sweep over the points (see :func:`_sweep`)
_INLINE = dict(_JIT, inline="always")

#: kind bits of a point (:mod:`.contacts`'): O is a plane, O is a box, S is a rim circle, O is a solid cylinder,
#: O is a bore (the material outside a cylinder), S and O are box edges, S is a box's corner against O a box (with
#: BOX: the pair's least-overlap face axis, :func:`_pair_axis`), S is the second box of a box–box contact (with
#: CORNER: its corner yields to a coincident corner of the first, :func:`_yields`)
PLANE, BOX, RIM, CYL, BORE, EDGE, CORNER, SECOND = 1, 2, 4, 8, 16, 32, 64, 128
#: an edge axis is the least-overlap axis only if its overlap times this is below the faces'
#: (:data:`.contacts.FACE_PREFERENCE`)
FACE_PREFERENCE = 1.05
#: the box whose face normal is a pair's least-overlap axis (:data:`.contacts.O_FACE`; 0: an edge axis)
O_FACE, S_FACE = 1, 2
#: 1 − (u_a·u_b)² at or below this: parallel edges (:data:`.contacts.EDGE_PARALLEL`)
EDGE_PARALLEL = 1e-12
#: the margin of an edge's closest point inside the other box (:data:`.contacts.EDGE_MARGIN`)
EDGE_MARGIN = 1e-9
#: columns of ``par``: S's radius (m), O's radius (m), k, λ, ξ, exponent n, restitution form (1/0),
#: μ_s, μ_d, v_s (m/s), reduced mass and effective mass (kg) of the pair
P_RS, P_RO, P_K, P_LAM, P_XI, P_EXP, P_FROM_E, P_MUS, P_MUD, P_VS, P_MRED, P_MEFF = range(12)
N_PAR = 12
#: columns of ``pair``: S's body, O's body, first point, end point (exclusive), never skipped (1/0)
Q_S, Q_O, Q_FIRST, Q_END, Q_ALWAYS = range(5)
#: columns of ``pc``: C_S (3, m, S's body axes from its com), C_O (3), r_S, r_O (m), ρ_S, ρ_O (m)
C_CS, C_CO, C_RS, C_RO, C_REACH_S, C_REACH_O = 0, 3, 6, 7, 8, 9
N_PC = 10
#: columns of ``ft``: the feature's centre d (3, m, its body's axes from the com), axis u (3, unit, its body's
#: axes; 0 for a corner or a sphere), half length l and radius r (m), the box's centre c (3, m, the other body's
#: axes from its com) and half lengths h (3, m), the test's tolerance (m, :data:`FEATURE_MARGIN`)
F_D, F_U, F_L, F_R, F_C, F_H, F_TOL = 0, 3, 6, 7, 8, 11, 14
N_FT = 15
#: a feature is skipped only when its gap g exceeds this fraction of its and its box's sizes (l + r + Σ h_j, m):
#: 10 × :data:`EDGE_MARGIN`, the slack of the narrow phase's in-box tests (a corner or an edge's closest point
#: counts as inside a box to 1e-9 of its half lengths), so that no point the narrow phase counts is skipped
FEATURE_MARGIN = 1e-8
#: ... plus this fraction of the two bodies' distances from the origin (m): the test works in the pair's relative
#: pose, the narrow phase in world coordinates; their round-off differs by a few ulps of those distances
#: (≈ 1e-15 of them), 1e-12 is three decades above
ROUND_OFF = 1e-12
#: columns of ``bx`` (:attr:`.contacts.Contacts.box_pairs`): S's box centre (3, m, S's body axes from its com), O's
#: (3, m, O's body axes), S's half lengths (3, m), O's (3, m)
BX_CS, BX_CO, BX_HS, BX_HO = 0, 3, 6, 9
N_BX = 12
#: columns of an evaluation's box-pair axes (:func:`_pair_axis`; NaN until computed): face normal (O_FACE, S_FACE;
#: 0 an edge axis), n toward S
#: (3, world), least overlap o* (m), n in O's axes (3)
AX_FACE, AX_N, AX_LEAST, AX_NO = 0, 1, 4, 5
N_AX = 8
#: ``stats``: evaluations, points evaluated (narrow phase), points in touch, features tested, box pairs' least-overlap
#: axes computed — summed over evaluations
N_STATS = 5
#: a pair is skipped when its gap exceeds this fraction of r_S + r_O (round-off of the test)
GAP_MARGIN = 1e-9
#: a skipped pair's bound ½ g / V is taken with this safety factor against round-off
LIMIT_SAFETY = 0.8
# the constants of :mod:`.contacts` (kept equal by tests/kernel/test_contacts_compiled.py)
MIN_IMPACT_SPEED = 1e-2
STEPS_PER_CONTACT = 10
TOUCH_STEP = 1e-3


@numba.njit(**_INLINE)
def _world(A, rc, b, d0, d1, d2):
    """rc[b] + A[b] d (a body point, world frame, m) as three floats."""
    return (rc[b, 0] + A[b, 0, 0] * d0 + A[b, 0, 1] * d1 + A[b, 0, 2] * d2,
            rc[b, 1] + A[b, 1, 0] * d0 + A[b, 1, 1] * d1 + A[b, 1, 2] * d2,
            rc[b, 2] + A[b, 2, 0] * d0 + A[b, 2, 1] * d1 + A[b, 2, 2] * d2)


@numba.njit(**_INLINE)
def pair_gap(A, rc, pair, pc, p):
    """g = |C_S − C_O| − r_S − r_O (m) of pair p (> 0: apart), or −1 for a pair never skipped."""
    if pair[p, Q_ALWAYS]:
        return -1.0
    s0, s1, s2 = _world(A, rc, pair[p, Q_S], pc[p, C_CS], pc[p, C_CS + 1], pc[p, C_CS + 2])
    o0, o1, o2 = _world(A, rc, pair[p, Q_O], pc[p, C_CO], pc[p, C_CO + 1], pc[p, C_CO + 2])
    r = pc[p, C_RS] + pc[p, C_RO]
    gap = math.sqrt((s0 - o0) ** 2 + (s1 - o1) ** 2 + (s2 - o2) ** 2) - r
    return gap if gap > GAP_MARGIN * r else -1.0


@numba.njit(**_INLINE)
def _relative(A, rc, a, b, rel, k):
    """rel[k] = [R | t] (3, 4): body a's axes and com in body b's frame, R = A_bᵀ A_a, t = A_bᵀ (r_a − r_b) (m)."""
    for i in range(3):
        for j in range(3):
            rel[k, i, j] = A[b, 0, i] * A[a, 0, j] + A[b, 1, i] * A[a, 1, j] + A[b, 2, i] * A[a, 2, j]
        rel[k, i, 3] = (A[b, 0, i] * (rc[a, 0] - rc[b, 0]) + A[b, 1, i] * (rc[a, 1] - rc[b, 1])
                        + A[b, 2, i] * (rc[a, 2] - rc[b, 2]))


@numba.njit(**_INLINE)
def _pose(A, rc, pair, p, rel):
    """Pair p's relative pose into ``rel`` (S's body in O's frame, rel[0], and O's in S's, rel[1]; :func:`_relative`);
    returns the round-off tolerance of a test made in it (m, :data:`ROUND_OFF`)."""
    a, b = pair[p, Q_S], pair[p, Q_O]
    _relative(A, rc, a, b, rel, 0)
    _relative(A, rc, b, a, rel, 1)
    return ROUND_OFF * (abs(rc[a, 0]) + abs(rc[a, 1]) + abs(rc[a, 2]) + abs(rc[b, 0]) + abs(rc[b, 1]) + abs(rc[b, 2]))


@numba.njit(**_INLINE)
def feature_gap(rel, k, ft, f, round_off):
    """g (m) of feature f (see the module) with its body's pose in the box's body's frame ``rel[k]``
    (:func:`_relative`): > 0, the feature is apart from the box by at least g; or −1 within the tolerance
    ``ft[f, F_TOL]`` + ``round_off`` (m) of touch."""
    gap = -np.inf
    for j in range(3):
        r0, r1, r2 = rel[k, j, 0], rel[k, j, 1], rel[k, j, 2]
        lj = r0 * ft[f, F_D] + r1 * ft[f, F_D + 1] + r2 * ft[f, F_D + 2] + rel[k, j, 3] - ft[f, F_C + j]
        uj = r0 * ft[f, F_U] + r1 * ft[f, F_U + 1] + r2 * ft[f, F_U + 2]
        gap = max(gap, abs(lj) - ft[f, F_L] * abs(uj) - ft[f, F_R] - ft[f, F_H + j])
    return gap if gap > ft[f, F_TOL] + round_off else -1.0


@numba.njit(**_INLINE)
def _box_nearest(A, o, e0, e1, e2, h0, h1, h2):
    """O a box (half lengths h along O's axes): (offset of its point nearest the point at e from its
    centre (world, 3 floats), inside, face axis, depth below that face, sign of that face)."""
    l0 = A[o, 0, 0] * e0 + A[o, 1, 0] * e1 + A[o, 2, 0] * e2
    l1 = A[o, 0, 1] * e0 + A[o, 1, 1] * e1 + A[o, 2, 1] * e2
    l2 = A[o, 0, 2] * e0 + A[o, 1, 2] * e1 + A[o, 2, 2] * e2
    p0, p1, p2 = h0 - abs(l0), h1 - abs(l1), h2 - abs(l2)
    inside = p0 > 0 and p1 > 0 and p2 > 0
    face, depth, lf = 0, p0, l0
    if p1 < depth:
        face, depth, lf = 1, p1, l1
    if p2 < depth:
        face, depth, lf = 2, p2, l2
    if not inside:
        l0, l1, l2 = min(max(l0, -h0), h0), min(max(l1, -h1), h1), min(max(l2, -h2), h2)
    return (A[o, 0, 0] * l0 + A[o, 0, 1] * l1 + A[o, 0, 2] * l2, A[o, 1, 0] * l0 + A[o, 1, 1] * l1 + A[o, 1, 2] * l2,
            A[o, 2, 0] * l0 + A[o, 2, 1] * l1 + A[o, 2, 2] * l2, inside, face, depth, 1.0 if lf >= 0 else -1.0)


@numba.njit(**_INLINE)
def _cyl_nearest(A, o, e0, e1, e2, a_l, hv, bore):
    """O a solid cylinder or a bore (axis a_l and half = [R, h/2, 0, ρ̂ on the axis] in O's axes,
    :func:`.contacts._nearest`): (offset of its material's point nearest the point at e from its centre
    (world, 3 floats), inside, outward normal of the nearest surface (world, 3 floats), depth below it)."""
    l0 = A[o, 0, 0] * e0 + A[o, 1, 0] * e1 + A[o, 2, 0] * e2
    l1 = A[o, 0, 1] * e0 + A[o, 1, 1] * e1 + A[o, 2, 1] * e2
    l2 = A[o, 0, 2] * e0 + A[o, 1, 2] * e1 + A[o, 2, 2] * e2
    a0, a1, a2 = a_l[0], a_l[1], a_l[2]
    R, hh = hv[0], hv[1]
    t = l0 * a0 + l1 * a1 + l2 * a2
    r0, r1, r2 = l0 - t * a0, l1 - t * a1, l2 - t * a2
    rho = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
    if rho > 0:
        u0, u1, u2 = r0 / rho, r1 / rho, r2 / rho
    else:
        u0, u1, u2 = hv[3], hv[4], hv[5]
    if bore:
        radial, side, sn = max(rho, R), rho - R, -1.0
    else:
        radial, side, sn = min(rho, R), R - rho, 1.0
    tc = min(max(t, -hh), hh)
    m0, m1, m2 = tc * a0 + radial * u0, tc * a1 + radial * u1, tc * a2 + radial * u2
    cap = hh - abs(t)
    inside = cap > 0 and side > 0
    if side <= cap:
        k0, k1, k2, depth = sn * u0, sn * u1, sn * u2, side
    else:
        ts = 1.0 if t >= 0 else -1.0
        k0, k1, k2, depth = ts * a0, ts * a1, ts * a2, cap
    return (A[o, 0, 0] * m0 + A[o, 0, 1] * m1 + A[o, 0, 2] * m2, A[o, 1, 0] * m0 + A[o, 1, 1] * m1 + A[o, 1, 2] * m2,
            A[o, 2, 0] * m0 + A[o, 2, 1] * m1 + A[o, 2, 2] * m2, inside,
            A[o, 0, 0] * k0 + A[o, 0, 1] * k1 + A[o, 0, 2] * k2, A[o, 1, 0] * k0 + A[o, 1, 1] * k1 + A[o, 1, 2] * k2,
            A[o, 2, 0] * k0 + A[o, 2, 1] * k1 + A[o, 2, 2] * k2, depth)


@numba.njit(**_INLINE)
def _least_overlap(A, s, o, f0, f1, f2, hs0, hs1, hs2, ho0, ho1, ho2, wk):
    """Two boxes' least-overlap separating axis (:func:`.contacts._least_overlap`): S's box (axes A[s], half
    lengths hs) and O's (A[o], ho), f = c_S − c_O (world, m); ``wk`` (3, 4) work space. Returns (face: :data:`O_FACE`,
    :data:`S_FACE` or 0 for an edge axis, n toward S (world, 3 floats), least overlap o* (m), n in O's axes (3
    floats))."""
    for j in range(3):
        for k in range(3):
            wk[j, k] = A[o, 0, j] * A[s, 0, k] + A[o, 1, j] * A[s, 1, k] + A[o, 2, j] * A[s, 2, k]
        wk[j, 3] = A[o, 0, j] * f0 + A[o, 1, j] * f1 + A[o, 2, j] * f2
    best = -1
    least = np.inf
    b0 = b1 = b2 = 0.0
    for a in range(15):
        if a < 3:
            m0, m1, m2 = 1.0 if a == 0 else 0.0, 1.0 if a == 1 else 0.0, 1.0 if a == 2 else 0.0
        elif a < 6:
            m0, m1, m2 = wk[0, a - 3], wk[1, a - 3], wk[2, a - 3]
        else:  # o_j × s_k
            j, k = (a - 6) // 3, (a - 6) % 3
            e0, e1, e2 = 1.0 if j == 0 else 0.0, 1.0 if j == 1 else 0.0, 1.0 if j == 2 else 0.0
            r0, r1, r2 = wk[0, k], wk[1, k], wk[2, k]
            m0, m1, m2 = e1 * r2 - e2 * r1, e2 * r0 - e0 * r2, e0 * r1 - e1 * r0
        length2 = m0 * m0 + m1 * m1 + m2 * m2
        if a >= 6 and not length2 > EDGE_PARALLEL:
            continue
        ov = ho0 * abs(m0) + ho1 * abs(m1) + ho2 * abs(m2)
        ov += (hs0 * abs(m0 * wk[0, 0] + m1 * wk[1, 0] + m2 * wk[2, 0])
               + hs1 * abs(m0 * wk[0, 1] + m1 * wk[1, 1] + m2 * wk[2, 1])
               + hs2 * abs(m0 * wk[0, 2] + m1 * wk[1, 2] + m2 * wk[2, 2]))
        length = math.sqrt(length2)
        ov = (ov - abs(m0 * wk[0, 3] + m1 * wk[1, 3] + m2 * wk[2, 3])) / length
        if (ov < least) if a < 6 else (ov * FACE_PREFERENCE < least):
            best, least = a, ov
            b0, b1, b2 = m0 / length, m1 / length, m2 / length
    if not b0 * wk[0, 3] + b1 * wk[1, 3] + b2 * wk[2, 3] >= 0:
        b0, b1, b2 = -b0, -b1, -b2
    return (O_FACE if best < 3 else (S_FACE if best < 6 else 0), A[o, 0, 0] * b0 + A[o, 0, 1] * b1 + A[o, 0, 2] * b2,
            A[o, 1, 0] * b0 + A[o, 1, 1] * b1 + A[o, 1, 2] * b2, A[o, 2, 0] * b0 + A[o, 2, 1] * b1 + A[o, 2, 2] * b2,
            least, b0, b1, b2)


@numba.njit(**_JIT)  # a call, not inlined: once per box pair and evaluation
def _pair_axis(A, rc, s, o, bx, box, bax, wk):
    """Box pair ``box``'s least-overlap axis (:func:`_least_overlap`) into ``bax[box]`` (columns ``AX_*``): S's box on
    body s, O's on body o, centres and half lengths ``bx[box]`` (columns ``BX_*``); ``wk`` (3, 4) work space. The
    sweep calls it at the pair's first corner in or on the other box or overlapping edge crossing of an evaluation
    (``bax[box]`` NaN until then)."""
    c0, c1, c2 = _world(A, rc, s, bx[box, BX_CS], bx[box, BX_CS + 1], bx[box, BX_CS + 2])
    q0, q1, q2 = _world(A, rc, o, bx[box, BX_CO], bx[box, BX_CO + 1], bx[box, BX_CO + 2])
    face, n0, n1, n2, least, b0, b1, b2 = _least_overlap(A, s, o, c0 - q0, c1 - q1, c2 - q2, bx[box, BX_HS],
                                                         bx[box, BX_HS + 1], bx[box, BX_HS + 2], bx[box, BX_HO],
                                                         bx[box, BX_HO + 1], bx[box, BX_HO + 2], wk)
    bax[box, AX_FACE] = float(face)
    bax[box, AX_N], bax[box, AX_N + 1], bax[box, AX_N + 2] = n0, n1, n2
    bax[box, AX_LEAST] = least
    bax[box, AX_NO], bax[box, AX_NO + 1], bax[box, AX_NO + 2] = b0, b1, b2


@numba.njit(**_INLINE)
def _face_overlap(rel, bx, box):
    """U (m): the least overlap of box pair ``box``'s boxes (``bx[box]``, columns ``BX_*``) along O's three face
    normals, from S's body pose in O's body frame ``rel[0]`` (:func:`_relative`): U ≥ o*, the least overlap over
    the 15 axes (:func:`_least_overlap`, which takes an edge axis only below the faces')."""
    u = np.inf
    for j in range(3):
        d = rel[0, j, 3] - bx[box, BX_CO + j]
        ext = bx[box, BX_HO + j]
        for k in range(3):
            d += rel[0, j, k] * bx[box, BX_CS + k]
            ext += bx[box, BX_HS + k] * abs(rel[0, j, k])
        u = min(u, ext - abs(d))
    return u


@numba.njit(**_INLINE)
def _corner_in_box(A, o, c0, c1, c2, q0, q1, q2, hv):
    """S's box corner at c (world, m) against O's box (centre q, world; hv = [O's half lengths, ...]): (whether it is
    in or on the box, within :data:`EDGE_MARGIN` of its half lengths; its offset l from q in O's axes (3 floats, m))
    as :func:`.contacts._corner_axis`."""
    e0, e1, e2 = c0 - q0, c1 - q1, c2 - q2
    l0 = A[o, 0, 0] * e0 + A[o, 1, 0] * e1 + A[o, 2, 0] * e2
    l1 = A[o, 0, 1] * e0 + A[o, 1, 1] * e1 + A[o, 2, 1] * e2
    l2 = A[o, 0, 2] * e0 + A[o, 1, 2] * e1 + A[o, 2, 2] * e2
    on = (abs(l0) <= hv[0] * (1.0 + EDGE_MARGIN) and abs(l1) <= hv[1] * (1.0 + EDGE_MARGIN)
          and abs(l2) <= hv[2] * (1.0 + EDGE_MARGIN))
    return on, l0, l1, l2


@numba.njit(**_INLINE)
def _face_toward(h0, h1, h2, b0, b1, b2, l0, l1, l2):
    """O's face toward S — the face j whose normal is nearest b (unit, toward S, O's axes): (j, its sign σ, the depth
    h_j − σ l_j (m) below it of a corner at l, from O's box centre in O's axes; h O's half lengths, m), as
    :func:`.contacts._face_toward`."""
    j, h, b, l = 0, h0, b0, l0
    if abs(b1) > abs(b):
        j, h, b, l = 1, h1, b1, l1
    if abs(b2) > abs(b):
        j, h, b, l = 2, h2, b2, l2
    sign = 1.0 if b >= 0 else -1.0
    return j, sign, h - sign * l


@numba.njit(**_INLINE)
def _yields(A, s, o, hv, b0, b1, b2, l0, l1, l2):
    """Whether the second box's corner at l (O's axes from O's box centre, m; in or on O's box, pressed along the
    pair's face axis b, unit, O's axes) coincides with O's corner nearest it (hv = [O's half lengths, the corner from
    S's box centre (S's axes)], m; A[s], A[o] the boxes' axes), as :func:`.contacts._yields`: then it has no contact
    of its own (the first box's corner carries the point)."""
    e0 = (hv[0] if l0 >= 0 else -hv[0]) - l0
    e1 = (hv[1] if l1 >= 0 else -hv[1]) - l1
    e2 = (hv[2] if l2 >= 0 else -hv[2]) - l2
    eb = e0 * b0 + e1 * b1 + e2 * b2
    a0, a1, a2 = e0 - eb * b0, e1 - eb * b1, e2 - eb * b2
    tol = EDGE_MARGIN * (hv[0] + hv[1] + hv[2] + abs(hv[3]) + abs(hv[4]) + abs(hv[5]))
    if not a0 * a0 + a1 * a1 + a2 * a2 <= tol * tol:
        return False
    w0 = A[o, 0, 0] * e0 + A[o, 0, 1] * e1 + A[o, 0, 2] * e2
    w1 = A[o, 1, 0] * e0 + A[o, 1, 1] * e1 + A[o, 1, 2] * e2
    w2 = A[o, 2, 0] * e0 + A[o, 2, 1] * e1 + A[o, 2, 2] * e2
    for j in range(3):
        p = A[s, 0, j] * w0 + A[s, 1, j] * w1 + A[s, 2, j] * w2 + hv[3 + j]
        if not abs(p) <= abs(hv[3 + j]) * (1.0 + EDGE_MARGIN):
            return False
    return True


@numba.njit(**_INLINE)
def _apart(c0, c1, c2, q0, q1, q2):
    """(n (3 floats), δ (m), x (3 floats)) of an edge–edge point not in touch: n = (c − q)/|c − q|, δ = −|c − q|,
    x = (c + q)/2 (world; :func:`.contacts._edge_edge`)."""
    w0, w1, w2 = c0 - q0, c1 - q1, c2 - q2
    dist = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    inv = dist if dist > 0 else 1.0
    return w0 / inv, w1 / inv, w2 / inv, -dist, 0.5 * (c0 + q0), 0.5 * (c1 + q1), 0.5 * (c2 + q2)


@numba.njit(**_INLINE)
def _edge_lines(A, s, o, c0, c1, c2, q0, q1, q2, ax, ao, la, lb, hv):
    """S's box edge (midpoint c, axis ax in S's axes, half length la) against O's (q, ao, lb); hv = [O's edge
    midpoint from its box centre (O's axes), S's (S's axes)]: the lines' common normal n (out of O's box), δ and the
    closest points p_a, p_b (world, 3 floats each), as :func:`.contacts._edge_edge`, and whether the edges cross
    there (not parallel, each closest point on its edge, not within :data:`EDGE_MARGIN` of an end)."""
    ua0 = A[s, 0, 0] * ax[0] + A[s, 0, 1] * ax[1] + A[s, 0, 2] * ax[2]
    ua1 = A[s, 1, 0] * ax[0] + A[s, 1, 1] * ax[1] + A[s, 1, 2] * ax[2]
    ua2 = A[s, 2, 0] * ax[0] + A[s, 2, 1] * ax[1] + A[s, 2, 2] * ax[2]
    ub0 = A[o, 0, 0] * ao[0] + A[o, 0, 1] * ao[1] + A[o, 0, 2] * ao[2]
    ub1 = A[o, 1, 0] * ao[0] + A[o, 1, 1] * ao[1] + A[o, 1, 2] * ao[2]
    ub2 = A[o, 2, 0] * ao[0] + A[o, 2, 1] * ao[1] + A[o, 2, 2] * ao[2]
    w0, w1, w2 = c0 - q0, c1 - q1, c2 - q2
    b = ua0 * ub0 + ua1 * ub1 + ua2 * ub2
    den = 1.0 - b * b
    if not den > EDGE_PARALLEL:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False
    dw = ua0 * w0 + ua1 * w1 + ua2 * w2
    ew = ub0 * w0 + ub1 * w1 + ub2 * w2
    sp, tp = (b * ew - dw) / den, (ew - b * dw) / den
    sq = math.sqrt(den)
    n0, n1, n2 = (ua1 * ub2 - ua2 * ub1) / sq, (ua2 * ub0 - ua0 * ub2) / sq, (ua0 * ub1 - ua1 * ub0) / sq
    mo0 = A[o, 0, 0] * hv[0] + A[o, 0, 1] * hv[1] + A[o, 0, 2] * hv[2]
    mo1 = A[o, 1, 0] * hv[0] + A[o, 1, 1] * hv[1] + A[o, 1, 2] * hv[2]
    mo2 = A[o, 2, 0] * hv[0] + A[o, 2, 1] * hv[1] + A[o, 2, 2] * hv[2]
    if not n0 * mo0 + n1 * mo1 + n2 * mo2 >= 0:
        n0, n1, n2 = -n0, -n1, -n2
    pa0, pa1, pa2 = c0 + sp * ua0, c1 + sp * ua1, c2 + sp * ua2
    pb0, pb1, pb2 = q0 + tp * ub0, q1 + tp * ub1, q2 + tp * ub2
    delta = -((pa0 - pb0) * n0 + (pa1 - pb1) * n1 + (pa2 - pb2) * n2)
    cross = abs(sp) < la * (1.0 - EDGE_MARGIN) and abs(tp) < lb * (1.0 - EDGE_MARGIN)
    return n0, n1, n2, delta, pa0, pa1, pa2, pb0, pb1, pb2, cross


@numba.njit(**_INLINE)
def _edge_margin(ax, ao, la, lb, hv):
    """EDGE_MARGIN times the two boxes' half lengths summed (m), from an edge–edge point's edges (as
    :func:`_edge_lines`): the slack of its depth test δ ≤ o*."""
    m = 0.0
    for j in range(3):
        m += abs(hv[3 + j]) + la * abs(ax[j]) + abs(hv[j]) + lb * abs(ao[j])
    return EDGE_MARGIN * m


@numba.njit(**_JIT)  # a call, not inlined (numba does not inline this many arguments): for the crossings only
def _edge_counts(A, s, o, n0, n1, n2, delta, pa0, pa1, pa2, pb0, pb1, pb2, c0, c1, c2, q0, q1, q2, ax, ao, la, lb,
                 hv, bax, box):
    """Whether two edges crossing (:func:`_edge_lines`) touch, as :func:`.contacts._edge_edge`, by their box pair's
    least-overlap axis ``bax[box]`` (:func:`_pair_axis`): a face axis: O's edge on O's face toward S and S's on S's
    face toward O; an edge axis: n in the edges' cones and, overlapping, each closest point in the other box;
    overlapping, δ ≤ o* (within :func:`_edge_margin`)."""
    face, least = bax[box, AX_FACE], bax[box, AX_LEAST]
    k0, k1, k2 = bax[box, AX_NO], bax[box, AX_NO + 1], bax[box, AX_NO + 2]
    m0, m1, m2 = bax[box, AX_N], bax[box, AX_N + 1], bax[box, AX_N + 2]
    if delta > 0 and not delta <= least + _edge_margin(ax, ao, la, lb, hv):
        return False
    if face != 0:
        # O's face whose outward normal is nearest n*, S's nearest −n*
        j_o, a_o = 0, abs(k0)
        if abs(k1) > a_o:
            j_o, a_o = 1, abs(k1)
        if abs(k2) > a_o:
            j_o = 2
        k_j = k0 if j_o == 0 else (k1 if j_o == 1 else k2)
        j_s, a_s, n_j = 0, 0.0, 0.0
        for j in range(3):
            v = A[s, 0, j] * m0 + A[s, 1, j] * m1 + A[s, 2, j] * m2
            if abs(v) > a_s:
                j_s, a_s, n_j = j, abs(v), v
        return hv[j_o] * k_j > 0 and hv[3 + j_s] * n_j < 0
    for j in range(3):
        no_j = A[o, 0, j] * n0 + A[o, 1, j] * n1 + A[o, 2, j] * n2
        ns_j = A[s, 0, j] * n0 + A[s, 1, j] * n1 + A[s, 2, j] * n2
        if not (no_j * hv[j] >= -EDGE_MARGIN * abs(hv[j]) and ns_j * hv[3 + j] <= EDGE_MARGIN * abs(hv[3 + j])):
            return False
        if delta > 0:
            pbs = A[s, 0, j] * (pb0 - c0) + A[s, 1, j] * (pb1 - c1) + A[s, 2, j] * (pb2 - c2) + hv[3 + j]
            pao = A[o, 0, j] * (pa0 - q0) + A[o, 1, j] * (pa1 - q1) + A[o, 2, j] * (pa2 - q2) + hv[j]
            if not (abs(pbs) <= (abs(hv[3 + j]) + la * abs(ax[j])) * (1.0 + EDGE_MARGIN)
                    and abs(pao) <= (abs(hv[j]) + lb * abs(ao[j])) * (1.0 + EDGE_MARGIN)):
                return False
    return True


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
def friction_coefficient(par, i, speed):
    """μ(|v_t|) of the regularised Coulomb law (:mod:`.contacts`)."""
    vs, mus, mud = par[i, P_VS], par[i, P_MUS], par[i, P_MUD]
    if speed <= vs:
        z = min(max((speed + vs) / (2.0 * vs), 0.0), 1.0)
        return mus * (-1.0 + 2.0 * (z * z * (3.0 - 2.0 * z)))
    z = min(max((speed - vs) / vs, 0.0), 1.0)
    return mus + (mud - mus) * (z * z * (3.0 - 2.0 * z))


@numba.njit(**_INLINE)
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


#: what :func:`_sweep` does at each point: add its force, record its impact speed, bound the step
FORCES, ACCEPT, LIMIT = 0, 1, 2


@numba.njit(**_JIT)
def _sweep(mode, A, rc, w, vc, F, N, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, feat, ft, bp, bx, state, win,
           fgap, bax):
    """The points whose gap lies in their pair's window, lo < g < hi (``win[p]``; g the larger of the point's
    features' gaps, :func:`feature_gap`, cached in ``fgap`` (NaN: not yet tested); −1 for a point near touch or
    without features; a window (−∞, ∞) evaluates every point untested): their geometry (:mod:`.contacts`: n
    from O toward S, δ, x, δ̇, v_t, world frame; a box–box point's with its box pair's axis, cached in ``bax``,
    :func:`_pair_axis`), then per ``mode`` the force on S and O into F, N (FORCES), the impact speed into ``state``
    (ACCEPT: 0 for the points left out) or the step limit (LIMIT). Returns (power W, limit s, points evaluated,
    points in touch, features tested, box pairs' axes computed). One loop with the geometry written in it: a
    per-point call passing the arrays costs their reference counting, several times the point's arithmetic."""
    power = 0.0
    limit = np.inf
    n_eval = 0
    n_touch = 0
    n_feat = 0
    n_axes = 0
    rel = np.empty((2, 3, 4))
    wk = np.empty((3, 4))
    face_ov = np.full((bx.shape[0], 2), np.nan)  # per box pair: U⁺ (:func:`_face_overlap`) and its slack, m
    for p in range(pair.shape[0]):
        lo, hi = win[p, 0], win[p, 1]
        if not hi > lo:
            if mode == ACCEPT:
                for i in range(pair[p, Q_FIRST], pair[p, Q_END]):
                    state[i] = 0.0
            continue
        fine = lo > -np.inf or hi < np.inf
        posed = False
        round_off = 0.0
        for i in range(pair[p, Q_FIRST], pair[p, Q_END]):
            if fine:
                g = -1.0
                for k in range(2):
                    f = feat[i, k]
                    if f < 0:
                        continue
                    if fgap[f] != fgap[f]:
                        if not posed:  # S's pose in O's frame and O's in S's, once per pair
                            round_off = _pose(A, rc, pair, p, rel)
                            posed = True
                        fgap[f] = feature_gap(rel, k, ft, f, round_off)
                        n_feat += 1
                    g = max(g, fgap[f])
                if g > 0 and kind[i] & EDGE:
                    # an edge crossing counts with δ ≤ o* ≤ U and each closest point within δ of the other box: its
                    # features' gaps are at most o*, and g − 2 o* ≤ −δ (the module); U first, o* if U is too large
                    box = bp[i]
                    if math.isnan(face_ov[box, 0]):  # once per box pair and sweep
                        if not posed:  # the features' gaps known from an earlier sweep of this evaluation
                            round_off = _pose(A, rc, pair, p, rel)
                            posed = True
                        face_ov[box, 0] = max(_face_overlap(rel, bx, box), 0.0)
                        face_ov[box, 1] = EDGE_MARGIN * (bx[box, BX_HS] + bx[box, BX_HS + 1] + bx[box, BX_HS + 2]
                                                         + bx[box, BX_HO] + bx[box, BX_HO + 1] + bx[box, BX_HO + 2])
                    bound, slack = face_ov[box, 0], face_ov[box, 1]
                    if not g > 2.0 * (bound + slack):
                        if math.isnan(bax[box, AX_FACE]):
                            _pair_axis(A, rc, ct_s[i], ct_o[i], bx, box, bax, wk)
                            n_axes += 1
                        bound = max(bax[box, AX_LEAST], 0.0)
                    g -= 2.0 * (bound + slack)
                    if not g > 0:
                        g = -1.0
                if not (lo < g < hi):
                    if mode == ACCEPT:
                        state[i] = 0.0
                    continue
            s, o = ct_s[i], ct_o[i]
            Rs, Ro = par[i, P_RS], par[i, P_RO]
            fl = kind[i]
            c0, c1, c2 = _world(A, rc, s, ds[i, 0], ds[i, 1], ds[i, 2])
            q0, q1, q2 = _world(A, rc, o, do[i, 0], do[i, 1], do[i, 2])
            qc0, qc1, qc2 = q0, q1, q2  # O's centre (q becomes O's point nearest S's centre)
            inside = False
            depth = 0.0
            in0 = in1 = in2 = 0.0
            if fl & BOX:  # O a box: its point nearest S's centre; S's centre inside: out through the nearest face
                b0, b1, b2, inside, face, depth, sign = _box_nearest(A, o, c0 - q0, c1 - q1, c2 - q2, half[i, 0],
                                                                     half[i, 1], half[i, 2])
                q0, q1, q2 = q0 + b0, q1 + b1, q2 + b2
                in0, in1, in2 = A[o, 0, face] * sign, A[o, 1, face] * sign, A[o, 2, face] * sign
            elif fl & (CYL | BORE):  # O a cylinder or a bore: the same with its side, caps, wall or ends
                b0, b1, b2, inside, in0, in1, in2, depth = _cyl_nearest(A, o, c0 - q0, c1 - q1, c2 - q2, no[i],
                                                                        half[i], fl & BORE)
                q0, q1, q2 = q0 + b0, q1 + b1, q2 + b2
            d0, d1, d2 = c0 - q0, c1 - q1, c2 - q2
            dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if fl & PLANE:
                n0 = A[o, 0, 0] * no[i, 0] + A[o, 0, 1] * no[i, 1] + A[o, 0, 2] * no[i, 2]
                n1 = A[o, 1, 0] * no[i, 0] + A[o, 1, 1] * no[i, 1] + A[o, 1, 2] * no[i, 2]
                n2 = A[o, 2, 0] * no[i, 0] + A[o, 2, 1] * no[i, 1] + A[o, 2, 2] * no[i, 2]
            else:
                inv = dist if dist > 0 else 1.0
                n0, n1, n2 = d0 / inv, d1 / inv, d2 / inv
            if inside:
                n0, n1, n2 = in0, in1, in2
                dist = -depth
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
            x0 = c0 - o0 + 0.5 * delta * n0
            x1 = c1 - o1 + 0.5 * delta * n1
            x2 = c2 - o2 + 0.5 * delta * n2
            # a box's corner in or on the other box, an overlapping edge crossing: their box pair's least-overlap
            # axis, computed at the first that needs it (the per-point helpers take no more arrays than before:
            # each array an inlined call takes costs its reference counting)
            if fl & CORNER:  # along the pair's least-overlap axis if a face normal (:func:`.contacts._corner_axis`)
                on, l0, l1, l2 = _corner_in_box(A, o, c0, c1, c2, qc0, qc1, qc2, half[i])
                if on:
                    box = bp[i]
                    if math.isnan(bax[box, AX_FACE]):
                        _pair_axis(A, rc, s, o, bx, box, bax, wk)
                        n_axes += 1
                    if bax[box, AX_FACE] != 0:
                        k0, k1, k2 = bax[box, AX_NO], bax[box, AX_NO + 1], bax[box, AX_NO + 2]
                        if (fl & SECOND) != 0 and _yields(A, s, o, half[i], k0, k1, k2, l0, l1, l2):
                            n0 = n1 = n2 = delta = 0.0  # the first box's coincident corner carries the point
                        else:  # against O's face toward S
                            j, sign, delta = _face_toward(half[i, 0], half[i, 1], half[i, 2], k0, k1, k2, l0, l1, l2)
                            n0, n1, n2 = sign * A[o, 0, j], sign * A[o, 1, j], sign * A[o, 2, j]
                        x0, x1, x2 = c0 + 0.5 * delta * n0, c1 + 0.5 * delta * n1, c2 + 0.5 * delta * n2
            if fl & EDGE:  # two edges crossing, measured by their box pair's axis (:func:`.contacts._edge_edge`)
                n0, n1, n2, delta, pa0, pa1, pa2, pb0, pb1, pb2, touch = _edge_lines(A, s, o, c0, c1, c2, q0, q1, q2,
                                                                                     axis[i], no[i], Rs, Ro, half[i])
                if touch:
                    box = bp[i]
                    if math.isnan(bax[box, AX_FACE]):
                        _pair_axis(A, rc, s, o, bx, box, bax, wk)
                        n_axes += 1
                    touch = _edge_counts(A, s, o, n0, n1, n2, delta, pa0, pa1, pa2, pb0, pb1, pb2, c0, c1, c2, q0, q1,
                                         q2, axis[i], no[i], Rs, Ro, half[i], bax, box)
                if touch:
                    x0, x1, x2 = pa0 + 0.5 * delta * n0, pa1 + 0.5 * delta * n1, pa2 + 0.5 * delta * n2
                else:
                    n0, n1, n2, delta, x0, x1, x2 = _apart(c0, c1, c2, q0, q1, q2)
            # v_r = v_S(x) − v_O(x)
            ps0, ps1, ps2 = x0 - rc[s, 0], x1 - rc[s, 1], x2 - rc[s, 2]
            po0, po1, po2 = x0 - rc[o, 0], x1 - rc[o, 1], x2 - rc[o, 2]
            vr0 = vc[s, 0] + (w[s, 1] * ps2 - w[s, 2] * ps1) - vc[o, 0] - (w[o, 1] * po2 - w[o, 2] * po1)
            vr1 = vc[s, 1] + (w[s, 2] * ps0 - w[s, 0] * ps2) - vc[o, 1] - (w[o, 2] * po0 - w[o, 0] * po2)
            vr2 = vc[s, 2] + (w[s, 0] * ps1 - w[s, 1] * ps0) - vc[o, 2] - (w[o, 0] * po1 - w[o, 1] * po0)
            vn = vr0 * n0 + vr1 * n1 + vr2 * n2
            n_eval += 1
            dd = -vn
            if mode == ACCEPT:
                state[i] = impact_speed(par, i, delta, dd, state[i]) if delta > 0 else 0.0
                continue
            if mode == LIMIT:
                limit = min(limit, point_limit(par, i, delta, dd, state[i]))
                continue
            if not delta > 0:
                continue
            n_touch += 1
            t0, t1, t2 = vr0 - vn * n0, vr1 - vn * n1, vr2 - vn * n2
            elastic = par[i, P_K] * delta ** par[i, P_EXP]
            if par[i, P_FROM_E] != 0:
                alpha = par[i, P_XI] / impact_speed(par, i, delta, dd, state[i])
            else:
                alpha = par[i, P_LAM] / par[i, P_K]
            Fn = max(0.0, elastic * (1.0 + alpha * dd))
            speed = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
            mu = friction_coefficient(par, i, speed)
            inv = speed if speed > 0 else 1.0
            f0 = Fn * n0 + (-(mu * Fn)) * (t0 / inv)
            f1 = Fn * n1 + (-(mu * Fn)) * (t1 / inv)
            f2 = Fn * n2 + (-(mu * Fn)) * (t2 / inv)
            power += -(Fn - elastic) * dd - mu * Fn * speed
            F[s, 0] += f0
            F[s, 1] += f1
            F[s, 2] += f2
            F[o, 0] -= f0
            F[o, 1] -= f1
            F[o, 2] -= f2
            N[s, 0] += ps1 * f2 - ps2 * f1
            N[s, 1] += ps2 * f0 - ps0 * f2
            N[s, 2] += ps0 * f1 - ps1 * f0
            N[o, 0] -= po1 * f2 - po2 * f1
            N[o, 1] -= po2 * f0 - po0 * f2
            N[o, 2] -= po0 * f1 - po1 * f0
    return power, limit, n_eval, n_touch, n_feat, n_axes


@numba.njit(**_JIT)
def _close(A, rc, pair, pc, opt):
    """win (pairs, 2): the window of each pair for :func:`_sweep` — (−∞, 0), the points near touch, for the
    pairs whose bounding spheres meet, (0, 0), none, for the others; (−∞, ∞), every point, for every pair when
    ``opt[0]`` is 0."""
    win = np.empty((pair.shape[0], 2))
    for p in range(pair.shape[0]):
        win[p, 0], win[p, 1] = -np.inf, np.inf
        if opt[0] != 0:
            win[p, 1] = 0.0
            if pair_gap(A, rc, pair, pc, p) > 0:
                win[p, 0] = 0.0
    return win


@numba.njit(**_JIT)
def _unknown_axes(bx):
    """An evaluation's box-pair axes (box pairs, N_AX), none computed yet (NaN, :func:`_pair_axis`)."""
    return np.full((bx.shape[0], N_AX), np.nan)


@numba.njit(**_JIT)
def contact_forces(A, rc, w, vc, F, N, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, feat, ft, bp, bx, state,
                   opt, stats):
    """Accumulate the contact forces into F (nb, 3) N and moments about the com N (nb, 3) N m;
    returns the non-conservative power (W, ≤ 0)."""
    win = _close(A, rc, pair, pc, opt)
    fgap = np.full(ft.shape[0], np.nan)
    power, _, n_eval, n_touch, n_feat, n_axes = _sweep(FORCES, A, rc, w, vc, F, N, ct_s, ct_o, ds, do, no, half, axis,
                                                       kind, par, pair, feat, ft, bp, bx, state, win, fgap,
                                                       _unknown_axes(bx))
    stats[0] += 1.0
    stats[1] += n_eval
    stats[2] += n_touch
    stats[3] += n_feat
    stats[4] += n_axes
    return power


@numba.njit(**_JIT)
def contact_accept(A, rc, w, vc, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, feat, ft, bp, bx, state,
                   opt):
    """Record each point's impact speed at an accepted state (:meth:`.contacts.Contacts.accept`): 0 for
    the points the broad phase skips (apart)."""
    win = _close(A, rc, pair, pc, opt)
    _sweep(ACCEPT, A, rc, w, vc, A[0], A[0], ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, feat, ft, bp, bx,
           state, win, np.full(ft.shape[0], np.nan), _unknown_axes(bx))


@numba.njit(**_JIT)
def contact_limit(A, rc, w, vc, ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, pc, feat, ft, bp, bx, state,
                  opt):
    """The largest step (s) that strides over no contact (:meth:`.contacts.Contacts.step_limit`): the limit h
    of the points the broad phase keeps, then that of every skipped point whose bound ½ g / V (see the module)
    is below h — a skipped pair's points with their features' gaps below 2 V h / LIMIT_SAFETY, a kept pair's
    points skipped by a feature with such a gap."""
    win = _close(A, rc, pair, pc, opt)
    fgap = np.full(ft.shape[0], np.nan)
    bax = _unknown_axes(bx)
    limit = _sweep(LIMIT, A, rc, w, vc, A[0], A[0], ct_s, ct_o, ds, do, no, half, axis, kind, par, pair, feat, ft, bp,
                   bx, state, win, fgap, bax)[1]
    if opt[0] == 0:
        return limit
    again = np.zeros((pair.shape[0], 2))
    for p in range(pair.shape[0]):
        s, o = pair[p, Q_S], pair[p, Q_O]
        v = math.sqrt((vc[s, 0] - vc[o, 0]) ** 2 + (vc[s, 1] - vc[o, 1]) ** 2 + (vc[s, 2] - vc[o, 2]) ** 2)
        v += math.sqrt(w[s, 0] ** 2 + w[s, 1] ** 2 + w[s, 2] ** 2) * pc[p, C_REACH_S]
        v += math.sqrt(w[o, 0] ** 2 + w[o, 1] ** 2 + w[o, 2] ** 2) * pc[p, C_REACH_O]
        if not v > 0:
            continue  # no relative motion: δ̇ = 0, no skipped point approaches
        reach = limit * v / (LIMIT_SAFETY * 0.5) if limit < np.inf else np.inf  # g below this: ½ g / V below h
        if win[p, 0] == 0.0:  # a skipped pair: its points near, if its own bound is below h
            if LIMIT_SAFETY * 0.5 * pair_gap(A, rc, pair, pc, p) / v < limit:
                again[p, 0], again[p, 1] = -np.inf, reach
        else:  # a kept pair: the points its features skipped
            again[p, 1] = reach
    return min(limit, _sweep(LIMIT, A, rc, w, vc, A[0], A[0], ct_s, ct_o, ds, do, no, half, axis, kind, par, pair,
                             feat, ft, bp, bx, state, again, fgap, bax)[1])
