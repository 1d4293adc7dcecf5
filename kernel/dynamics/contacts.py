"""Declared contacts, compliant method: a force that acts only while two primitive shapes touch.

Geometry (world frame, from each part's primitive in its part frame, :class:`~cadmotion.kernel.spec.ContactSpec`).
Every contact is held as contact points, each a sphere S (radius R, centre c_S on part s)
against an "other" shape O on part o — a plane (point p, unit normal n_O pointing out of the
material), a sphere (radius R_O, centre c_O), a box, a cylinder or a bore — or a box edge against a
box edge. A sphere pair has one point; a box against a
plane has eight, its corners (spheres of radius 0: a plane meets a box first at a corner, an
edge or a face, and the corners' forces carry the edge and the face); a part's tessellation
(``points``, :func:`~cadmotion.importers.contact_shapes.tessellation_points`) is its vertices, each
a sphere of radius 0 against a plane, a sphere or a box:

    plane:   n = n_O,                 δ = R − (c_S − p)·n,     x = c_S − (R − δ/2) n
    sphere:  n = (c_S − c_O)/|c_S − c_O|,   δ = R + R_O − |c_S − c_O|,   x = c_O + (R_O − δ/2) n

A cylinder against a plane has two points, its rim circles (centre c_S, axis a on part s, radius R):
the rim's point nearest the plane is c_S − R û, û = u/|u|, u = n − (n·a) a, so

    rim:     n = n_O,                 δ = R |u| − (c_S − p)·n,   x = c_S − R û + (δ/2) n

(a rim lying flat on the plane, u = 0: its centre, δ = −(c_S − p)·n; the rim's nearest point moves
along the rim as the parts turn, and v_r at x is still exactly dδ/dt's: the envelope of the rim).

A sphere against a box (centre c_O, axes A_O, half edge lengths h, on part o) is a sphere against
the box's point nearest c_S, b = c_O + A_O clamp(A_Oᵀ(c_S − c_O), −h, h) — on a face, an edge or a
corner, so the normal turns round edges and corners:

    box:     n = (c_S − b)/|c_S − b|,   δ = R − |c_S − b|,   x = b − (δ/2) n

and, with c_S inside the box, n the outward normal of the face nearest c_S and δ = R + its depth.
A sphere against a cylinder (centre c_O, unit axis a, radius R_c, height h) is the same with the
material's point nearest c_S (:func:`_nearest`): a solid cylinder's side, cap or rim, or — a bore,
``inside = true``: the material outside R_c over |t| ≤ h/2, a pipe — its wall or the rim of an end
(t = a·(c_S − c_O), ρ the radial part: b = c_O + clamp(t, ±h/2) a + min(|ρ|, R_c) ρ̂, max for a bore).

Two boxes: each one's corners (spheres of radius 0) against the other box, and every edge of the first
against every edge of the second (:func:`_edge_edge`). Both are measured with the pair's separating axes
(ODE's dBoxBox, :func:`_least_overlap`): over the 15 axes L — each box's three face normals and the nine
cross products of their edge directions — the overlap of the boxes' projections,
o(L) = Σ_i h_O,i |L·o_i| + Σ_i h_S,i |L·s_i| − |L·(c_S − c_O)|, and the least, o* on the axis L* (a face
normal unless an edge axis's overlap is below the faces' by :data:`FACE_PREFERENCE`). Where L* is a face
normal, the faces of the two boxes whose normals are nearest ±L* face each other, and a corner p of S in or on O's
box (within :data:`EDGE_MARGIN` of its half lengths) is pressed on O's face toward S (O's face j whose normal o_j
is nearest L*, σ = sign(L*·o_j)):

    corner:  n = σ o_j,   δ = h_O,j − σ o_j·(p − c_O),   x = p + (δ/2) n

its depth below that face — whichever box's face L* is (the reference face of ODE's and Bullet's clipping, or the
incident one): a point against a plane of the other box, so dδ/dt = −v_r·n exactly. Boxes side by side with
coplanar sides overlap fully along those sides, so L* is the axis they press along and the corners lying
on the coplanar faces count, where the corner's own nearest face (a coplanar one, depth 0) does not. A
corner elsewhere (outside, or L* an edge axis) is a sphere of radius 0 against the box as above. Edges,
with p_a, p_b the closest points of the two edges' lines:

    edge:    n = ±u_a × u_b/|u_a × u_b| (out of O's box),   δ = −(p_a − p_b)·n,   x = p_a + (δ/2) n

counted while both closest points lie on their segments (not within :data:`EDGE_MARGIN` of an end: there a
corner lies on the other box's edge and carries it), overlapping no deeper than o*, and, L* a face normal, while
O's edge bounds O's face toward S and S's edge S's face toward O: the edges of the two facing faces crossing, a
vertex of the patch where the faces overlap (the clipping's vertices on both faces' edges) whichever way the
edges tilt; L* an edge axis, while n lies between O's edge's two face normals and −n between S's and,
overlapping, each closest point is inside the other box — two edges crossing. Parallel edges are left to the
corners (the edges of boxes with coplanar sides cross at the far side of the overlap, a whole width deep: the
depth test drops them).

A face pressed on a face is carried by the vertices of the patch, the overlap of the two faces, each counted
once: a corner of one box in or on the other, or two edges crossing. Where the faces are aligned on both sides
of the contact (equal cubes stacked or side by side, a box flush with another's corner) a vertex is a corner of
each box, at one n, δ and x; the second box's corner then yields to the first's (:func:`_yields`: the first
box's corner nearest it lies on its line along n, within :data:`EDGE_MARGIN` of the boxes' sizes, and in or on
its box) and has no contact of its own (n = 0, δ = 0). Offset sideways by more, that corner of the first box is
outside the second and the second's counts: each vertex carries k δ^n aligned or offset, and a level cube sinks
into an equal cube as into a larger box, m g/4 = k δ^n on each vertex. Left as they are: the patch's stiffness
is its number of vertices times k δ^n, and that number changes with the faces' turn about n — a cube turned on
an equal cube by more than about 1e-6 rad has 8 (the vertices of the overlap, an octagon: 4 edge crossings near
the corners and 4 of nearly parallel edges at the sides' middles), twice the stiffness of the aligned or offset
patch, and a 0.08 m cube turned on a 0.1 m cube's face goes from 4 to 8 once its corners pass the face's edges
(22.5°); a corner touching close to an edge may be counted both as a corner and as an edge point (the force there
is stiffer, never lost).

Energy (measured 2026-11-27: 0.1 m cubes of 1 kg, k = 1e7, n = 1.5, undamped and frictionless, a cube turned by the
Euler angles (0, 8°, 0), (30°, 20°, 0), (5°, 3°, 0), (0, 0, 45°), (10°, 0, 0), (0, 0, 20°) and level, dropped 5 mm
onto a fixed equal cube, centred or off centre, also level and overhanging by 0.06 m, 0.3 s, DOP853): E = T + V is
kept to ≤ 8e-10 of E0 in all eight at rtol 1e-10 on numpy (≤ 1.4e-9 compiled; ≤ 9.5e-9 at 1e-8, ≤ 3.7e-8 at 1e-6),
each run 1.3–6.2 thousand evaluations. The points change where V is continuous: a vertex appears or vanishes at δ =
0, or hands over to a neighbour at the same point (an edge's end reaching the other box: its corner; a crossing
passing a face's corner: the crossing of the next edge), where the depths differ only by the angle between the
edges' common normal and the face normal (second order); the least-overlap axis switches between axes that the drops
met 0.2–11 mrad apart (an edge axis turning onto a face normal; |ΔV| ≤ 4e-15 J at 8 switches, measured before the
change below; its test's switch again 1e-15 of V). Not continuous, and not met: which faces face each other changes
where a box turns 45° from its partner's face, and a switch between axes far apart. Before (the edges' cone test in
the face case, and the reference box's corners measured below the other box's support plane), the crossing of an
edge tilted one way was left out and appeared at depth o*, and a corner of the reference face entered the other box
at the depth of that box's lowest point: the drops ended 0.5 % … 22 % off their energy (the level cube overhanging
0.06 m: +2.5 %, turned 20°: +22 %), and the (0, 8°, 0) drop, compiled, took 2.1 M evaluations at rtol 1e-8 (now
4,331) and had not finished after 19 min at 1e-6 (now 4,022 evaluations, 2.7 s), numpy not in 400 s at 1e-10 (now
32–43 s).

n is the contact normal (m, unit, from O toward S), δ the penetration (m; the contact is
*active* while δ > 0), x the contact point (halfway through the overlap). The relative velocity
of the material points at x is v_r = v_S(x) − v_O(x); the penetration rate is δ̇ = −v_r·n (exactly
dδ/dt for every point kind — the nearest points and the edges' closest points slide along directions ⟂ n,
a box corner's n turns with the face it is pressed on — so the elastic force below is exactly conservative while
the points stay the same) and the slip velocity
v_t = v_r − (v_r·n) n (m/s).

Normal force (Hunt & Crossley 1975, the nonlinear damping form "F = k δ^n + λ δ^n δ̇"):

    F_n = max(0, k δ^n (1 + α δ̇))      with α = λ/k

``stiffness`` k (N/m^n), ``exponent`` n (1.5: Hertz for a sphere on a flat; ≥ 1 so the force is
continuous at first touch). The damping is either ``damping`` λ (N s/m^(n+1), constant) or comes
from ``restitution`` e: α = ξ(e)/δ̇⁻ with δ̇⁻ the impact speed (the penetration rate when the
contact started: recorded at the first accepted step in contact from the elastic energy
there, see :meth:`Contacts.impact_speeds`) and ξ the root of

    ξ − ln(1 + ξ) = −e ξ − ln(1 − e ξ)

the *exact* relation between α δ̇⁻ and e for this force law on a point mass (integrate
m v dv/dδ = −k δ^n (1 + α v) over the approach, v: δ̇⁻ → 0, and the restitution, 0 → −e δ̇⁻:
the elastic parts cancel, ∫ v/(1 + α v) dv = 0). Hunt & Crossley's linearised α = 3(1 − e)/(2 δ̇⁻)
is its first-order expansion at e → 1. The impact speed used is at least
:data:`MIN_IMPACT_SPEED`: a slower first touch (a part set down on a table) is damped as an impact
at that speed, so it settles instead of ringing with an unbounded α. Gravity or other loads during
the contact and the rotation of the parts change the rebound slightly (a ball dropped on a floor:
e_eff − e is of the order of g t_c/δ̇⁻, t_c the contact duration).

Friction (regularised Coulomb, the static peak at the stiction velocity v_s, after the step-function
law of MSC Adams): on S, F_t = −μ(|v_t|) F_n v_t/|v_t|, with

    |v_t| ≤ v_s:          μ = μ_s (−1 + 2 h((|v_t| + v_s)/(2 v_s)))      h(x) = 3x² − 2x³
    v_s ≤ |v_t| ≤ 2 v_s:  μ = μ_s + (μ_d − μ_s) h((|v_t| − v_s)/v_s)
    |v_t| ≥ 2 v_s:        μ = μ_d

(C¹ in v_t; ``stiction_velocity`` v_s m/s, default :data:`STICTION_VELOCITY`). A part "sticking"
creeps at less than v_s: the friction needed, |F_t| ≤ μ_s F_n, is reached at a slip speed below v_s.

The force F_n n + F_t acts on S at x, its opposite on O at x. Energy: V = k δ^(n+1)/(n + 1) while
δ > 0 (in the potential energy); the damping and friction power −(F_n − k δ^n) δ̇ + F_t·v_t ≤ 0 is
non-conservative work.

Not stepped over: :meth:`Contacts.step_limit` gives a largest step for the explicit integrators
(scipy's ``max_step``): while the shapes approach, half the time to reach the other shape at the
present closing speed but not less than :data:`TOUCH_STEP` of the contact's duration (so the steps
home in on the first touch and the one that crosses it is short; the same on the way out, at the
separating speed), and a tenth of the duration
while in contact (estimated from the linearised stiffness at the penetration of an impact at the
closing speed, the smaller moving mass of the pair); their error control does the rest. A
fixed-step ``RK4`` run takes the step it is given (``dt``): it must be below the contact's duration.

This class is the numpy implementation; the compiled right-hand side (:mod:`.fast`) evaluates the
same law point by point in :mod:`._contact_kernels` from the arrays of :meth:`Contacts.arrays`, with a
broad phase by body pair, then by feature (an edge, a corner, a sphere against the other body's box;
:attr:`Contacts.activation`).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import MechanismError
from .mass import cross

__all__ = ["Contacts", "restitution_factor", "compliant_step_limit", "STICTION_VELOCITY",
           "BUILT_PAIRS", "UNILATERAL_PAIRS",
           "MIN_IMPACT_SPEED", "CONTACT_OUTPUTS"]

#: the smallest restitution of the restitution form (below, 1 − e ξ underflows: give `damping`)
MIN_RESTITUTION = 0.05
#: default stiction velocity v_s (m/s) of the regularised Coulomb law
STICTION_VELOCITY = 1e-3
#: impact speeds below this (m/s) are damped as impacts at this speed (restitution form)
MIN_IMPACT_SPEED = 1e-2
#: the per-contact output series (suffixes of ``<contact>.``)
CONTACT_OUTPUTS = ("active", "normal_force", "friction_force", "slip_velocity", "penetration",
                   "point_x", "point_y", "point_z")
#: a contact's duration is resolved by at least this many steps (:meth:`Contacts.step_limit`)
STEPS_PER_CONTACT = 10
#: the step that crosses into (or out of) a contact is at most this fraction of its duration: the force's
#: onset k δ^n (n = 1.5: not twice differentiable at δ = 0) is where an explicit method's error
#: estimate is least reliable, and the error of that step falls as h^(n+2)
TOUCH_STEP = 1e-3
_PARAMS = ("stiffness", "damping", "exponent", "stiction_velocity")
#: the contact methods (:class:`Contacts` holds the compliant ones, :mod:`.unilateral` the others)
METHODS = ("compliant", "unilateral")
#: the primitive pairs built (sorted kinds)
BUILT_PAIRS = (["plane", "sphere"], ["sphere", "sphere"], ["box", "plane"], ["cylinder", "plane"], ["box", "sphere"],
               ["box", "box"], ["cylinder", "sphere"],
               ["plane", "points"], ["points", "sphere"], ["box", "points"], ["cylinder", "points"])
BUILT_PAIRS_TEXT = ("sphere–plane, sphere–sphere, box–plane, cylinder–plane, sphere–box, box–box, sphere–cylinder, "
                    "and a part's tessellation points (`mesh`) against a plane, a sphere, a box or a cylinder")
#: the pairs built for the compliant method only, and those built for the unilateral method
COMPLIANT_ONLY = (["box", "box"],)
UNILATERAL_PAIRS = tuple(p for p in BUILT_PAIRS if p not in COMPLIANT_ONLY)
#: kind bits of a contact point (equal to :mod:`._contact_kernels`'): O a plane, a box, S a rim circle, O a solid
#: cylinder, a bore (the material outside a cylinder), S and O box edges, S a box's corner against O a box (with
#: BOX: measured along the pair's least-overlap face axis, :func:`_corner_axis`), S the second box of a box–box
#: contact (with CORNER: its corner yields to the first box's corner at the same point of the patch, :func:`_yields`)
PLANE, BOX, RIM, CYL, BORE, EDGE, CORNER, SECOND = 1, 2, 4, 8, 16, 32, 64, 128
#: an edge–edge axis u_a × u_b is the pair's least-overlap axis only if its overlap times this is below the face
#: axes' (ODE's dBoxBox ``fudge_factor``): aligned boxes' edge axes are face normals too, and the face is kept
FACE_PREFERENCE = 1.05
#: the box whose face normal is a pair's least-overlap axis (:func:`_least_overlap`; 0: an edge axis)
O_FACE, S_FACE = 1, 2
#: edges with 1 − (u_a·u_b)² at or below this are parallel (their contact is carried by the corners)
EDGE_PARALLEL = 1e-12
#: an edge's closest point counts as inside the other box within this fraction of its half lengths, and a normal
#: as inside an edge's cone within this (in its components): at a cone's boundary (the common normal a face's
#: normal: two horizontal edges crossing) the closest point lies on a face's plane
EDGE_MARGIN = 1e-9
_NO_AXIS = np.zeros(3)
_WELD_JOINTS = ("fixed",)


def restitution_factor(e):
    """ξ = α δ̇⁻ of the Hunt–Crossley law that rebounds a point mass with restitution ``e``
    (0 < e ≤ 1): the root of ξ − ln(1 + ξ) = −e ξ − ln(1 − e ξ), 0 ≤ ξ < 1/e (see the module)."""
    if e >= 1.0:
        return 0.0
    if e < MIN_RESTITUTION:
        raise ValueError(f"the compliant law reaches e < {MIN_RESTITUTION} only with a damping beyond floating point")

    def g(x):
        return x - math.log1p(x) + e * x + math.log1p(-e * x)

    # g = (1 − e²) ξ²/2 + O(ξ³) > 0 near the trivial root ξ = 0, → −∞ as ξ → 1/e: one root between
    from scipy.optimize import brentq  # 0.15 s to import: only when a contact law is built

    lo, hi = 1e-3 * (1.0 - e), (1.0 - 1e-15) / e
    return brentq(g, lo, hi, xtol=1e-15, rtol=1e-14)


def _rotate(phi):
    """Rotation matrices exp([φ]) (c, 3, 3) of rotation vectors φ (c, 3) (Rodrigues)."""
    th = np.linalg.norm(phi, axis=1)
    small = th < 1e-12
    ts = np.where(small, 1.0, th)
    k = phi / ts[:, None]
    Kx = np.zeros((len(phi), 3, 3))
    Kx[:, 0, 1], Kx[:, 0, 2], Kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    Kx = Kx - Kx.transpose(0, 2, 1)
    s, c = np.where(small, 0.0, np.sin(th)), np.where(small, 1.0, np.cos(th))
    return np.eye(3)[None] + s[:, None, None] * Kx + (1.0 - c)[:, None, None] * (Kx @ Kx)


def _nearest(kind, local, axis, half):
    """O's material point nearest the points ``local`` (c, 3; O's axes, from O's centre): (that point (c, 3),
    inside (c,) bool, the outward normal of the nearest surface (c, 3) and the depth below it (c,) m, for the
    points inside). O per ``kind``: a box (half edge lengths half[:, :3]), a solid cylinder (CYL) or a bore
    (BORE: the material outside the cylinder, |t| ≤ h/2; axis a, radius R = half[:, 0], h/2 = half[:, 1]).
    With t = a·l and ρ the radial part of l (ρ̂ = half[:, 3:6] on the axis itself):

        box:       clamp(l, −h, h);                  inside: every |l_i| < h_i, out through the nearest face
        cylinder:  clamp(t, ±h/2) a + min(|ρ|, R) ρ̂;  inside: |t| < h/2, |ρ| < R, out through the side or a cap
        bore:      clamp(t, ±h/2) a + max(|ρ|, R) ρ̂;  inside: |t| < h/2, |ρ| > R, out through the wall or an end
    """
    c = len(local)
    near, normal, depth = np.zeros((c, 3)), np.zeros((c, 3)), np.zeros(c)
    inside = np.zeros(c, bool)
    box = (kind & BOX) > 0
    if np.any(box):
        h, lb = half[box, :3], local[box]
        dep = h - np.abs(lb)
        face = np.argmin(dep, axis=1)
        rows = np.arange(len(lb))
        inside[box] = np.all(dep > 0, axis=1)
        near[box] = np.where(inside[box][:, None], lb, np.clip(lb, -h, h))
        normal[box] = np.eye(3)[face] * np.where(lb[rows, face] >= 0, 1.0, -1.0)[:, None]
        depth[box] = dep[rows, face]
    cyl = ~box
    if np.any(cyl):
        a, lc, R, hh = axis[cyl], local[cyl], half[cyl, 0], half[cyl, 1]
        t = np.sum(lc * a, 1)
        rho_v = lc - t[:, None] * a
        rho = np.linalg.norm(rho_v, axis=1)
        rho_hat = np.where((rho > 0)[:, None], rho_v / np.where(rho > 0, rho, 1.0)[:, None], half[cyl, 3:6])
        bore = (kind[cyl] & BORE) > 0
        radial = np.where(bore, np.maximum(rho, R), np.minimum(rho, R))
        near[cyl] = np.clip(t, -hh, hh)[:, None] * a + radial[:, None] * rho_hat
        side = np.where(bore, rho - R, R - rho)  # depth below the curved surface
        cap = hh - np.abs(t)
        inside[cyl] = (cap > 0) & (side > 0)
        through_side = side <= cap
        cap_normal = np.where(t >= 0, 1.0, -1.0)[:, None] * a
        side_normal = np.where(bore, -1.0, 1.0)[:, None] * rho_hat
        normal[cyl] = np.where(through_side[:, None], side_normal, cap_normal)
        depth[cyl] = np.minimum(side, cap)
    return near, inside, normal, depth


def _edge_edge(As, Ao, ca, cb, axis_a, axis_b, la, lb, half, pair_axis):
    """(n, δ, x) of edge–edge points (arrays over the points): S's edge (midpoint c_a, axis u_a = A_S axis_a,
    half length l_a) against O's edge (c_b, u_b, l_b); ``half`` = [O's edge midpoint from O's box centre (O
    axes), S's from S's (S axes)]; ``pair_axis(k)`` the least-overlap axis of the boxes of the points k (indices
    into these arrays; :class:`_PairAxes`: face, n* toward S (world), o* (m), n* in O's axes). The lines' closest
    points p_a = c_a + s u_a, p_b = c_b + t u_b, the normal n = ±u_a × u_b/|u_a × u_b| out of O's box (n·(O's
    midpoint offset) > 0), δ = −(p_a − p_b)·n, x = p_a + δ n/2. The edges touch there only if |s| < l_a, |t| < l_b
    (not within :data:`EDGE_MARGIN` of an end: there a corner carries the point), overlapping (δ > 0) no deeper than
    the boxes' least overlap o* (within EDGE_MARGIN of their sizes), and

    - n* a face normal (:func:`_least_overlap`): O's edge bounds O's face toward S and S's edge S's face toward O
      (the faces of each box whose normal is nearest ±n*): the crossing is a vertex of the patch where those faces
      overlap, wherever the edges' common normal lies (ODE's and Bullet's clipping of the reference face against
      the incident face: its vertices on both faces' edges);
    - n* an edge axis: n lies in O's edge's cone of outward normals and −n in S's (between the normals of each
      edge's two faces) and, overlapping, p_a is inside O's box and p_b inside S's (box half lengths |midpoint
      offset| + l along the edge; both tests within EDGE_MARGIN) — two edges crossing.

    Otherwise — or parallel edges, carried by the corners — the point is apart: δ = −|c_a − c_b| (no nearer than
    the broad phase's gap), n = (c_a − c_b)/|c_a − c_b|, x = (c_a + c_b)/2."""
    ua = np.einsum("nij,nj->ni", As, axis_a)
    ub = np.einsum("nij,nj->ni", Ao, axis_b)
    w = ca - cb
    b = np.sum(ua * ub, 1)
    den = 1.0 - b * b
    crossing = den > EDGE_PARALLEL
    den = np.where(crossing, den, 1.0)
    dw, ew = np.sum(ua * w, 1), np.sum(ub * w, 1)
    s, t = (b * ew - dw) / den, (ew - b * dw) / den
    n = cross(ua, ub) / np.sqrt(den)[:, None]
    mid_o = np.einsum("nij,nj->ni", Ao, half[:, 0:3])
    n = np.where((np.sum(n * mid_o, 1) >= 0)[:, None], n, -n)
    pa = ca + s[:, None] * ua
    pb = cb + t[:, None] * ub
    delta = -np.sum((pa - pb) * n, 1)
    box_s = np.abs(half[:, 3:6]) + la[:, None] * np.abs(axis_a)
    box_o = np.abs(half[:, 0:3]) + lb[:, None] * np.abs(axis_b)
    # a crossing within EDGE_MARGIN of an edge's end is a corner on the other box's edge: its corner carries it
    valid = crossing & (np.abs(s) < la * (1.0 - EDGE_MARGIN)) & (np.abs(t) < lb * (1.0 - EDGE_MARGIN))
    k = np.flatnonzero(valid)
    if len(k):
        face, n_star, least, n_o = pair_axis(k)
        rows = np.arange(len(k))
        # the faces toward each other along n*: O's whose outward normal is nearest n*, S's nearest −n*
        n_s = np.einsum("nji,nj->ni", As[k], n_star)
        j_o, j_s = np.argmax(np.abs(n_o), 1), np.argmax(np.abs(n_s), 1)
        facing = ((half[k, j_o] * n_o[rows, j_o] > 0) & (half[k, 3 + j_s] * n_s[rows, j_s] < 0))
        margin = EDGE_MARGIN * np.abs(half[k])
        cone_o = np.all(np.einsum("nji,nj->ni", Ao[k], n[k]) * half[k, 0:3] >= -margin[:, 0:3], axis=1)
        cone_s = np.all(np.einsum("nji,nj->ni", As[k], n[k]) * half[k, 3:6] <= margin[:, 3:6], axis=1)
        pb_in_s = np.einsum("nji,nj->ni", As[k], pb[k] - ca[k]) + half[k, 3:6]
        pa_in_o = np.einsum("nji,nj->ni", Ao[k], pa[k] - cb[k]) + half[k, 0:3]
        held = (np.all(np.abs(pb_in_s) <= box_s[k] * (1.0 + EDGE_MARGIN), axis=1)
                & np.all(np.abs(pa_in_o) <= box_o[k] * (1.0 + EDGE_MARGIN), axis=1))
        edges = cone_o & cone_s & ((delta[k] <= 0) | held)
        # overlapping, no deeper than the boxes' least overlap o*: the edges of boxes with coplanar sides cross at
        # the far side of the overlap (depth a whole width)
        shallow = delta[k] <= least + EDGE_MARGIN * (np.sum(box_s[k], 1) + np.sum(box_o[k], 1))
        valid[k] = np.where(face > 0, facing, edges) & ((delta[k] <= 0) | shallow)
    dist = np.linalg.norm(w, axis=1)
    apart_n = w / np.where(dist > 0, dist, 1.0)[:, None]
    x = np.where(valid[:, None], pa + 0.5 * delta[:, None] * n, 0.5 * (ca + cb))
    return np.where(valid[:, None], n, apart_n), np.where(valid, delta, -dist), x


def _least_overlap(As, Ao, centre_s, centre_o, hs, ho):
    """(face (c,) bool, n (c, 3) unit, world, least overlap o* (c,) m) of two boxes by their separating axes (ODE's
    dBoxBox): S's box (centre ``centre_s``, world m; axes A_S; half lengths ``hs``, m) and O's (``centre_o``, A_O,
    ``ho``). With D = c_S − c_O, the overlap of the boxes' projections on a unit axis L is

        o(L) = Σ_i h_O,i |L·o_i| + Σ_i h_S,i |L·s_i| − |L·D|        (< 0: L separates the boxes)

    over the 15 axes: O's face normals o_k, S's s_k, then the nine o_j × s_k/|o_j × s_k| (left out when
    1 − (o_j·s_k)² ≤ :data:`EDGE_PARALLEL`). The least is taken among the faces first (ties: the first, O's before
    S's), then an edge axis replaces it only if its overlap times :data:`FACE_PREFERENCE` is below it; ``face``
    says whether it is a face normal, :data:`O_FACE` (O's) or :data:`S_FACE` (S's), or 0 (an edge axis), n = ±L
    toward S (n·D ≥ 0); the fourth, n in O's axes."""
    c = len(hs)
    R = np.einsum("nji,njk->nik", Ao, As)           # S's axes in O's frame (columns)
    d = np.einsum("nji,nj->ni", Ao, centre_s - centre_o)
    axes = np.zeros((c, 15, 3))                      # in O's frame: O's faces, S's faces, then o_j × s_k
    axes[:, 0:3] = np.eye(3)[None]
    axes[:, 3:6] = R.transpose(0, 2, 1)
    for j in range(3):
        for k in range(3):
            axes[:, 6 + 3 * j + k] = np.cross(np.eye(3)[j][None], R[:, :, k])
    length2 = np.sum(axes * axes, 2)
    usable = np.ones((c, 15), bool)
    usable[:, 6:] = length2[:, 6:] > EDGE_PARALLEL
    length = np.sqrt(np.where(usable, length2, 1.0))
    along = np.einsum("nai,nik->nak", axes, R)        # L·s_k
    overlap = (np.sum(ho[:, None, :] * np.abs(axes), 2) + np.sum(hs[:, None, :] * np.abs(along), 2)
               - np.abs(np.einsum("nai,ni->na", axes, d))) / length
    best = np.argmin(overlap[:, 0:6], axis=1)
    rows = np.arange(c)
    least = overlap[rows, best]
    for a in range(6, 15):
        wins = usable[:, a] & (overlap[:, a] * FACE_PREFERENCE < least)
        best, least = np.where(wins, a, best), np.where(wins, overlap[:, a], least)
    L = axes[rows, best] / length[rows, best][:, None]
    L = np.where((np.sum(L * d, 1) >= 0)[:, None], L, -L)
    return np.where(best < 3, O_FACE, np.where(best < 6, S_FACE, 0)), np.einsum("nij,nj->ni", Ao, L), least, L


def _corner_axis(As, Ao, corner, centre_o, half, second, pair_axis):
    """(use (c,) bool, n (c, 3) unit, world, δ (c,) m) of S's box corners at ``corner`` (world, m) against O's box
    (centre ``centre_o``, world m; axes A_O, A_S the corners' box's; ``half`` = [O's half lengths, the corner from S's
    box centre (S's axes)], m); ``second`` (c,) bool: S the contact's second box; ``pair_axis(k)`` the least-overlap
    axis of the boxes of the corners k (:class:`_PairAxes`). Where the corner p is in or on O's box (each
    |A_Oᵀ(p − c_O)|_i ≤ h_O,i (1 + :data:`EDGE_MARGIN`)) and the pair's axis n* is a face normal: p against O's face
    toward S (:func:`_face_toward`), n its outward normal and δ the corner's depth below it — n* itself where n* is
    O's face normal; where it is S's, the corner is a vertex of S's face pressed on O's face and is measured the same
    way (a point against a plane of the other body: dδ/dt = −v_r·n exactly). Coplanar sides overlap fully on that
    axis, so it is defined where the corner's own nearest face (depth 0) is not. A second box's corner at a corner of
    the first (:func:`_yields`) is the same point of the patch as that corner, which carries it: n = 0, δ = 0 (no
    contact of its own). ``use`` False elsewhere (an edge axis: the edge–edge points carry the contact)."""
    ho = half[:, 0:3]
    loc = np.einsum("nji,nj->ni", Ao, corner - centre_o)
    use = np.all(np.abs(loc) <= ho * (1.0 + EDGE_MARGIN), axis=1)
    n, delta = np.zeros((len(use), 3)), np.zeros(len(use))
    on = np.flatnonzero(use)
    if len(on):
        face, _, _, n_o = pair_axis(on)
        face = face > 0
        use[on] = face
        normal, delta[on] = _face_toward(ho[on], n_o, loc[on])
        n[on] = np.einsum("nij,nj->ni", Ao[on], normal)
        ask = face & second[on]
        k = on[ask]
        carried = k[_yields(As[k], Ao[k], loc[k], n_o[ask], half[k])]
        n[carried], delta[carried] = 0.0, 0.0
    return use, n, delta


def _face_toward(h, n_o, loc):
    """(outward normal (c, 3), O's axes; δ (c,) m) of O's face toward S — the face j whose normal is nearest the unit
    n_o (O's axes, toward S), σ = sign n_o,j — and the depth below it of points at ``loc`` (O's axes from O's box
    centre, m; half lengths h): δ = h_j − σ loc_j; with n_o O's face normal, Σ_i h_i |n_o,i| − n_o·loc."""
    rows = np.arange(len(h))
    j = np.argmax(np.abs(n_o), 1)
    sign = np.where(n_o[rows, j] >= 0, 1.0, -1.0)
    return np.eye(3)[j] * sign[:, None], h[rows, j] - sign * loc[rows, j]


def _yields(As, Ao, loc, n_o, half):
    """Whether the second box's corners (S; at ``loc``, m, in O's axes from O's box centre, in or on O's box,
    pressed along the pair's face axis n_o, unit, O's axes) coincide with a corner of the first box O: O's corner
    nearest each, p = sign(loc) h_O (O's axes), lies on the corner's line along n — its offset ⟂ n within
    :data:`EDGE_MARGIN` of the two boxes' half lengths (m, summed) — and in or on S's box (within EDGE_MARGIN of
    its half lengths). ``half`` = [O's half lengths, the corner from S's box centre (S's axes)], m; As, Ao the boxes'
    axes (world). The two corners are then one vertex of a coplanar face–face patch (boxes aligned across the
    contact): the first box's carries it. Offset sideways by more, p is outside S's box and not counted, and this
    corner is: either way the vertex is counted once, at the same n, δ and x."""
    ho, corner_s = half[:, 0:3], half[:, 3:6]
    e = np.where(loc >= 0, ho, -ho) - loc  # from the corner to O's corner nearest it (O's axes, m)
    across = e - np.sum(e * n_o, 1)[:, None] * n_o
    tol = EDGE_MARGIN * (np.sum(ho, 1) + np.sum(np.abs(corner_s), 1))
    p_s = np.einsum("nji,nj->ni", As, np.einsum("nij,nj->ni", Ao, e)) + corner_s  # p from S's box centre (S axes)
    return ((np.sum(across * across, 1) <= tol * tol)
            & np.all(np.abs(p_s) <= np.abs(corner_s) * (1.0 + EDGE_MARGIN), axis=1))


class _PairAxes:
    """The least-overlap axes (:func:`_least_overlap`) of the box pairs of one evaluation, each computed once, at
    its first use: the axis belongs to the pair of boxes, not to the corner or edge point that asks for it.

    Parameters
    ----------
    As, Ao : ndarray, shape (c, 3, 3)
        S's and O's body axes (world) of each point.
    rs, ro : ndarray, shape (c, 3)
        S's and O's com (world, m) of each point.
    box_pair : ndarray, shape (c,) int
        Each point's box pair (:attr:`Contacts.box_pair`); the points of a pair have its bodies' state.
    box_pairs : ndarray, shape (pairs, 12)
        :attr:`Contacts.box_pairs`.
    """

    def __init__(self, As, Ao, rs, ro, box_pair, box_pairs):
        self.As, self.Ao, self.rs, self.ro = As, Ao, rs, ro
        self.box_pair, self.box_pairs = box_pair, box_pairs
        npairs = len(box_pairs)
        self.known = np.zeros(npairs, bool)
        self.face, self.n, self.least, self.n_o = (np.zeros(npairs, int), np.zeros((npairs, 3)), np.zeros(npairs),
                                                   np.zeros((npairs, 3)))

    def __call__(self, k):
        """(face (len(k),) int (:func:`_least_overlap`), n (len(k), 3) unit toward S, world, o* (len(k),) m, n in O's
        axes) of the box
        pairs of the points k (indices into the arrays given), the pairs not yet known computed from the state
        of their first point in k."""
        b = self.box_pair[k]
        pairs, first = np.unique(b, return_index=True)
        new = ~self.known[pairs]
        if np.any(new):
            p, rep = pairs[new], k[first[new]]
            As, Ao, box = self.As[rep], self.Ao[rep], self.box_pairs[p]
            centre_s = self.rs[rep] + np.einsum("nij,nj->ni", As, box[:, 0:3])
            centre_o = self.ro[rep] + np.einsum("nij,nj->ni", Ao, box[:, 3:6])
            self.face[p], self.n[p], self.least[p], self.n_o[p] = _least_overlap(As, Ao, centre_s, centre_o,
                                                                                 box[:, 6:9], box[:, 9:12])
            self.known[p] = True
        return self.face[b], self.n[b], self.least[b], self.n_o[b]


def _row(s, o, ds, do, Rs, L, reach_s, kind, Ro=0.0, reach_o=0.0, no=_NO_AXIS, axis=_NO_AXIS, half=None, box=None):
    """One contact point's numbers (see :attr:`Contacts.kind`, :attr:`Contacts.box_pairs` and :func:`_points`)."""
    return dict(s=s, o=o, ds=ds, do=do, no=no, axis=axis, Rs=Rs, Ro=Ro, L=L, kind=kind, reach_s=reach_s,
                reach_o=reach_o, half=np.zeros(6) if half is None else half, box=np.zeros(12) if box is None else box)


def _box_pairs(rows, owners):
    """(box_pair (points,) int, box_pairs (pairs, 12)): the box pair of each point of ``rows`` (:func:`_row`, of the
    contacts ``owners``), −1 for none, and the pairs' rows ``box``: one pair per box–box contact and box taken as S."""
    index, table = {}, []
    box_pair = np.full(len(rows), -1, np.int64)
    for i, (row, owner) in enumerate(zip(rows, owners)):
        if row["kind"] & (CORNER | EDGE):
            key = (owner, row["s"])
            if key not in index:
                index[key] = len(table)
                table.append(row["box"])
            box_pair[i] = index[key]
    return box_pair, np.array(table, float).reshape(-1, 12)


def _perpendicular(a):
    """A unit vector ⟂ the unit vector a (from the world axis least along a)."""
    p = np.cross(a, np.eye(3)[np.argmin(np.abs(a))])
    return p / np.linalg.norm(p)


def _box_edges(half):
    """The 12 edges of a box (half edge lengths ``half``, centred at 0): (midpoint, axis index, half length)."""
    edges = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        for sj in (-1.0, 1.0):
            for sk in (-1.0, 1.0):
                mid = np.zeros(3)
                mid[j], mid[k] = sj * half[j], sk * half[k]
                edges.append((mid, i, half[i]))
    return edges


def _points(shapes, bodies, com, fail):
    """The contact points of one contact: a list of :func:`_row` dicts (S: a sphere, a box corner, a rim circle or
    a box edge; O: a plane, a sphere, a box, a solid cylinder, a bore or a box edge; part frame = body frame,
    offsets from the com). ``fail(message)`` raises the contact's error."""
    kinds = [kind for kind, _ in shapes]
    dims = [np.asarray(numbers, float) for _, numbers in shapes]
    for kind, d in zip(kinds, dims):
        if kind == "sphere" and not d[0] > 0:
            fail(f"a sphere's radius must be > 0, got {d[0]}")
        if kind == "cylinder" and not (d[0] > 0 and d[1] > 0):
            fail(f"a cylinder's radius and height must be > 0, got radius {d[0]}, height {d[1]}")
        if kind == "box" and not np.all(d[0:3] > 0):
            fail(f"a box's edge lengths must be > 0, got {list(d[0:3])}")
    if kinds == ["box", "box"]:
        return _box_box(dims, bodies, com)
    # S: the tessellation points or the sphere (the first of two), the box (its corners) or the cylinder (its
    # two rim circles); O: the other
    si = next(kinds.index(kind) for kind in ("points", "sphere", "box", "cylinder") if kind in kinds)
    oi = 1 - si
    bs, bo = bodies[si], bodies[oi]
    shp_s, shp_o = dims[si], dims[oi]
    bore = kinds[oi] == "cylinder" and len(shp_o) > 8 and shp_o[8] != 0
    if kinds[si] == "cylinder" and len(shp_s) > 8 and shp_s[8] != 0:
        fail("a cylinder with `inside = true` (a bore) is built against a sphere or mesh points only",
             hint="drop `inside` for a cylinder's rims on a plane")
    if kinds[si] == "points":
        # a tessellation's vertices (part frame): spheres of radius 0, as a box's corners
        xyz = shp_s.reshape(-1, 3)
        if len(xyz) == 0:
            fail("a `mesh` shape has no points")
        length = max(float(np.max(np.linalg.norm(xyz - xyz.mean(axis=0), axis=1))), 1e-6)
        spheres = [(x, 0.0, length, _NO_AXIS, 0) for x in xyz]
    elif kinds[si] == "sphere":
        spheres = [(shp_s[1:4], float(shp_s[0]), float(shp_s[0]), _NO_AXIS, 0)]
    elif kinds[si] == "cylinder":
        radius, height = float(shp_s[0]), float(shp_s[1])
        centre, axis = shp_s[2:5], shp_s[5:8] / np.linalg.norm(shp_s[5:8])
        length = math.hypot(radius, 0.5 * height)
        spheres = [(centre + side * 0.5 * height * axis, radius, length, axis, RIM) for side in (-1.0, 1.0)]
    else:
        half = 0.5 * shp_s[0:3]
        corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float) * half
        spheres = [(shp_s[3:6] + p, 0.0, float(np.linalg.norm(half)), _NO_AXIS, 0) for p in corners]
    rows = []
    for centre, radius, length, axis, rim in spheres:
        point = dict(s=bs, o=bo, ds=centre - com[bs], Rs=radius, L=length, reach_s=radius, axis=axis)
        if kinds[oi] == "plane":
            rows.append(_row(**point, kind=PLANE | rim, do=shp_o[0:3] - com[bo],
                             no=shp_o[3:6] / np.linalg.norm(shp_o[3:6])))
        elif kinds[oi] == "box":
            # a sphere against a box: the box's point nearest the sphere's centre (its faces, edges and
            # corners); half edge lengths along O's body axes
            half_o = 0.5 * shp_o[0:3]
            rows.append(_row(**point, kind=BOX, do=shp_o[3:6] - com[bo], reach_o=float(np.linalg.norm(half_o)),
                             half=np.r_[half_o, 0.0, 0.0, 0.0]))
        elif kinds[oi] == "cylinder":
            # a sphere against a solid cylinder or a bore: the material's point nearest the sphere's centre;
            # half = [R, h/2, 0, a unit vector ⟂ the axis (the radial direction taken on the axis itself)]
            R, hh, axis_o = float(shp_o[0]), 0.5 * float(shp_o[1]), shp_o[5:8] / np.linalg.norm(shp_o[5:8])
            if bore and radius >= R:
                fail(f"a sphere of radius {radius:g} m does not fit the bore of radius {R:g} m",
                     hint="the sphere rolls inside the cylinder (`inside = true`): its radius must be below the bore's")
            rows.append(_row(**point, kind=BORE if bore else CYL, do=shp_o[2:5] - com[bo], no=axis_o,
                             reach_o=0.0 if bore else math.hypot(R, hh),
                             half=np.r_[R, hh, 0.0, _perpendicular(axis_o)]))
        else:
            rows.append(_row(**point, kind=0, do=shp_o[1:4] - com[bo], Ro=float(shp_o[0]), reach_o=float(shp_o[0])))
    return rows


def _box_box(dims, bodies, com):
    """The points of two boxes: each box's 8 corners against the other box (a corner in a face; the second box's
    marked :data:`SECOND`: at a corner of the first they yield to it, :func:`_yields`), and each edge of the first
    against each edge of the second (12 × 12: two edges crossing). Their ``box``: the box pair
    (:attr:`Contacts.box_pairs`) whose least-overlap axis measures them, S the corner's box or the first box; the
    points of one pair have one length scale L (the S box's half diagonal), so :meth:`Contacts.tangent_blocks`
    moves them together."""
    half = [0.5 * d[0:3] for d in dims]
    centre = [d[3:6] for d in dims]
    box = {(a, 1 - a): np.r_[centre[a] - com[bodies[a]], centre[1 - a] - com[bodies[1 - a]], half[a], half[1 - a]]
           for a in (0, 1)}
    rows = []
    for a, b in ((0, 1), (1, 0)):
        corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float) * half[a]
        for p in corners:
            # half = [O's half lengths, the corner from S's box centre (S axes)]
            rows.append(_row(s=bodies[a], o=bodies[b], ds=centre[a] + p - com[bodies[a]], Rs=0.0,
                             L=float(np.linalg.norm(half[a])), reach_s=0.0, kind=BOX | CORNER | (SECOND if a else 0),
                             do=centre[b] - com[bodies[b]], reach_o=float(np.linalg.norm(half[b])),
                             half=np.r_[half[b], p], box=box[a, b]))
    ba, bb = bodies
    for mid_a, i, la in _box_edges(half[0]):
        for mid_b, j, lb in _box_edges(half[1]):
            # half = [the edge midpoints from their boxes' centres: O's (O axes), then S's (S axes)]
            rows.append(_row(s=ba, o=bb, ds=centre[0] + mid_a - com[ba], do=centre[1] + mid_b - com[bb],
                             axis=np.eye(3)[i], no=np.eye(3)[j], Rs=float(la), Ro=float(lb), reach_s=float(la),
                             reach_o=float(lb), L=float(np.linalg.norm(half[0])), kind=EDGE, half=np.r_[mid_b, mid_a],
                             box=box[0, 1]))
    return rows


class Contacts:
    """The compliant contacts of a model (see the module docstring).

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`
    mass : :class:`~cadmotion.kernel.dynamics.mass.MassProperties`

    The state of the contacts (``state``, shape (n,)) is each one's recorded impact speed δ̇⁻
    (m/s, 0 while apart); it lives after the angle references of the force elements' ``refs``.
    """

    #: the method whose contacts this class holds (:class:`.unilateral.UnilateralContacts` the other)
    method = "compliant"
    #: the compiled right-hand side evaluates only the points of the body pairs whose bounding spheres meet
    #: and whose features (edges, corners, spheres) meet the other body's box (its broad phase,
    #: :mod:`._contact_kernels`); False: every declared point (the same forces; the cost it saves)
    activation = True

    def __init__(self, model, mass):
        spec = model.spec
        self.model, self.mass = model, mass
        com = mass.body_com_all
        joints = spec.joints
        fixed = {p.name for p in spec.parts if p.fixed}
        names, seen = [], set()
        rows, owners, from_e = [], [], []
        k, lam, xi, n_exp, mu_s, mu_d, v_s, e_list = [], [], [], [], [], [], [], []
        for c in spec.contacts:
            if c.method in METHODS and c.method != self.method:
                continue
            where = c.source or spec.source or None

            def fail(message, hint=None):
                raise MechanismError(f"contact {c.name!r}: {message}", where=where, hint=hint)

            if c.name in seen:
                fail("the name is used twice", hint="give every [[contacts]] table its own `name`")
            seen.add(c.name)
            if c.method not in METHODS:
                fail(f"unknown method {c.method!r}", hint=f"use method = {' or '.join(map(repr, METHODS))}")
            if len(c.parts) != 2 or len(c.shapes) != 2:
                fail("needs two parts and one shape per part")
            for p in c.parts:
                if p not in model.body_names:
                    fail(f"unknown part {p!r}", hint=f"known parts: {', '.join(model.body_names)}")
            if c.parts[0] == c.parts[1]:
                fail(f"part {c.parts[0]!r} against itself")
            if c.parts[0] in fixed and c.parts[1] in fixed:
                fail(f"parts {c.parts[0]!r} and {c.parts[1]!r} are both fixed: they can never push on each other",
                     hint="remove the contact or free one of the parts")
            for j in joints:
                if j.type in _WELD_JOINTS and set(j.parts) == set(c.parts):
                    fail(f"parts {c.parts[0]!r} and {c.parts[1]!r} are welded by joint {j.name!r}",
                         hint="remove the contact or the weld")
            params = dict(c.params)
            allowed = _PARAMS if self.method == "compliant" else ()
            unknown = sorted(set(params) - set(allowed))
            if unknown:
                fail(f"has no parameter(s) {', '.join(map(repr, unknown))} with method {self.method!r}",
                     hint=f"compliant takes {', '.join(_PARAMS)}; unilateral takes restitution and friction only")
            for key, value in params.items():
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                    fail(f"`{key}` must be a finite number ≥ 0, got {value!r}")
            e = c.restitution
            if e is not None and not (0.0 <= e <= 1.0):
                fail(f"`restitution` must be in [0, 1], got {e!r}")
            exponent = float(params.get("exponent", 1.5))
            if self.method == "compliant":
                if "stiffness" not in params or params["stiffness"] <= 0:
                    fail("the compliant method needs `stiffness` > 0 (N/m^exponent)")
                if exponent < 1.0:
                    fail(f"`exponent` must be ≥ 1 (1.5: Hertz), got {exponent}",
                         hint="below 1 the contact stiffness is infinite at first touch")
                if (e is None) == ("damping" not in params):
                    fail("give exactly one of `restitution` (e, the damping follows each impact's speed) and "
                         "`damping` (Hunt–Crossley λ, N s/m^(n+1))")
                if e is not None and e < MIN_RESTITUTION:
                    fail(f"the compliant method's restitution form takes e ≥ {MIN_RESTITUTION}, got {e}",
                         hint="for a nearly plastic contact give `damping` (Hunt–Crossley λ) instead of `restitution`")
            mus, mud = (float(v) for v in c.friction)
            if mus < 0 or mud < 0 or mud > mus:
                fail(f"friction must be 0 ≤ μ_dynamic ≤ μ_static, got static {mus}, dynamic {mud}")
            vs = float(params.get("stiction_velocity", STICTION_VELOCITY))
            if vs <= 0:
                fail("`stiction_velocity` must be > 0 (m/s)")
            kinds = [kind for kind, _ in c.shapes]
            pair_kinds = sorted(kinds)
            if pair_kinds == ["plane", "plane"]:
                fail("shapes 'plane' and 'plane' are not a pair cadmotion can build: two half-spaces overlap "
                     "unless their normals are opposite, and then they touch everywhere",
                     hint="give one part a box (its corners carry a face on a plane) or a cylinder (its rims)")
            if pair_kinds not in BUILT_PAIRS:
                fail(f"shapes {kinds[0]!r} and {kinds[1]!r} are not a built pair",
                     hint=f"built pairs: {BUILT_PAIRS_TEXT}")
            if self.method != "compliant" and pair_kinds in COMPLIANT_ONLY:
                fail(f"shapes {kinds[0]!r} and {kinds[1]!r} are built for the compliant method only (their edge "
                     "contacts appear and vanish with the pose, which the unilateral active set cannot follow)",
                     hint='write method = "compliant" with a `stiffness` and `restitution` or `damping`')
            bodies = [model.body_index(p) for p in c.parts]
            points = _points(c.shapes, bodies, com, fail)
            owner = len(names)
            names.append(c.name)
            for point in points:
                rows.append(point)
                owners.append(owner)
                e_list.append(0.0 if e is None else float(e))
                k.append(float(params.get("stiffness", 0.0)))
                lam.append(float(params.get("damping", 0.0)))
                xi.append(restitution_factor(e) if e is not None and self.method == "compliant" else 0.0)
                from_e.append(e is not None)
                n_exp.append(exponent)
                mu_s.append(mus)
                mu_d.append(mud)
                v_s.append(vs)
        #: the declared contacts' names; the arrays below are over contact *points* (a sphere pair
        #: has one, a box on a plane its 8 corners), ``owner`` the contact of each point
        self.names = names
        arr = np.asarray
        self.owner = arr(owners, int)
        self.n = len(owners)
        col = lambda key, dtype=float: arr([r[key] for r in rows], dtype)  # noqa: E731
        #: per point: S's and O's body, S's centre and O's centre (body axes, from the com, m), O's plane
        #: normal or cylinder axis (O's body axes), S's rim or edge axis (S's body axes), S's and O's radius or
        #: edge half length (m), O's dimensions (:func:`_points`), the kind bits (:mod:`._contact_kernels`),
        #: a length scale (m) and the reach of each side's shape from its centre (m, the broad phase)
        self.s, self.o = col("s", int), col("o", int)
        #: per point +1, or −1 where its S is the O of its contact's first point (a box–box contact's second box's
        #: corners): :meth:`report` sums the forces on one part, the first point's S
        first = np.unique(self.owner, return_index=True)[1]
        self.side = np.where(self.s == self.s[first][self.owner], 1.0, -1.0)
        self.ds, self.do = col("ds").reshape(-1, 3), col("do").reshape(-1, 3)
        self.no, self.axis = col("no").reshape(-1, 3), col("axis").reshape(-1, 3)
        self.Rs, self.Ro, self.L = col("Rs"), col("Ro"), col("L")
        self.half_o = col("half").reshape(-1, 6)
        self.kind = col("kind", int)
        self.reach_s, self.reach_o = col("reach_s"), col("reach_o")
        #: per point its box pair (−1 none): a box–box contact's points are measured with its boxes' least-overlap
        #: axis (:func:`_least_overlap`), one per box taken as S — the first box's corners and the edges, the
        #: second box's corners; per pair (pairs, 12) [S's box centre (S's body axes, from its com, m), O's (O's
        #: body axes, m), S's half lengths (m), O's half lengths (m)]
        self.box_pair, self.box_pairs = _box_pairs(rows, owners)
        self.plane = (self.kind & PLANE) > 0
        self.rim = (self.kind & RIM) > 0
        #: O a plane or a bore (material without a bounding sphere: the broad phase never skips it)
        self.unbounded = (self.kind & (PLANE | BORE)) > 0
        #: each point's coefficient of restitution (0 where none is given)
        self.e = arr(e_list, float)
        self.k, self.lam, self.xi, self.exp = arr(k, float), arr(lam, float), arr(xi, float), arr(n_exp, float)
        self.from_restitution = arr(from_e, bool)
        self.mu_s, self.mu_d, self.v_s = arr(mu_s, float), arr(mu_d, float), arr(v_s, float)
        #: whether the contacts keep a state (impact speeds): the restitution form does
        self.stateful = bool(np.any(self.from_restitution))
        nmov = mass.nmov
        m = np.full(model.nb, np.inf)
        m[:nmov] = mass.body_mass
        self.m_eff = np.minimum(m[self.s], m[self.o])
        self.m_red = 1.0 / (1.0 / m[self.s] + 1.0 / m[self.o])

    def arrays(self):
        """(arrays, order): the contacts packed for the compiled right-hand side, in the layout of
        :mod:`._contact_kernels` (s, o, ds, do, no, half, axis, kind, par, pair, pc, feat, ft, bp, bx, state,
        opt, stats), and ``order`` (points,): the index in this class's arrays of each compiled point (sorted by
        body pair). Each pair's bounding spheres: centred at the mean of its points' centres, radii
        reaching every point's shape (a box against a sphere: its half diagonal); each point's features
        (:meth:`features`)."""
        from . import _contact_kernels as C

        order = np.lexsort((self.o, self.s)) if self.n else np.zeros(0, int)
        s, o = self.s[order], self.o[order]
        par = np.zeros((self.n, C.N_PAR))
        columns = {C.P_RS: self.Rs, C.P_RO: self.Ro, C.P_K: self.k, C.P_LAM: self.lam, C.P_XI: self.xi,
                   C.P_EXP: self.exp, C.P_FROM_E: self.from_restitution, C.P_MUS: self.mu_s, C.P_MUD: self.mu_d,
                   C.P_VS: self.v_s, C.P_MRED: self.m_red, C.P_MEFF: self.m_eff}
        for col, values in columns.items():
            par[:, col] = np.asarray(values, float)[order]
        starts = np.flatnonzero(np.r_[True, (s[1:] != s[:-1]) | (o[1:] != o[:-1])]) if self.n else np.zeros(0, int)
        ends = np.r_[starts[1:], self.n].astype(int)
        pair = np.zeros((len(starts), 5), np.int64)
        pc = np.zeros((len(starts), C.N_PC))
        for p, (a, b) in enumerate(zip(starts, ends)):
            idx = order[a:b]
            pair[p] = (s[a], o[a], a, b, int(np.any(self.unbounded[idx])))
            for col, d, reach in ((C.C_CS, self.ds[idx], self.reach_s[idx]), (C.C_CO, self.do[idx], self.reach_o[idx])):
                centre = d.mean(axis=0)
                radius = float(np.max(np.linalg.norm(d - centre, axis=1) + reach))
                pc[p, col:col + 3] = centre
                pc[p, C.C_RS if col == C.C_CS else C.C_RO] = radius
                pc[p, C.C_REACH_S if col == C.C_CS else C.C_REACH_O] = np.linalg.norm(centre) + radius
        feat, ft = self.features(order)
        arrays = (s, o, self.ds[order], self.do[order], self.no[order], self.half_o[order], self.axis[order],
                  self.kind[order].astype(np.int64), par, pair, pc, feat, ft, self.box_pair[order], self.box_pairs,
                  np.zeros(self.n), np.array([int(bool(self.activation))], np.int64), np.zeros(C.N_STATS))
        return arrays, order

    def features(self, order):
        """(feat (points, 2) int, ft (features, :data:`._contact_kernels.N_FT`)): the features of the points in
        the order ``order`` (the broad phase's second stage, :mod:`._contact_kernels`): per point the feature
        of S's shape tested against a box of O (column 0) and, edge against edge, O's edge against S's box
        (column 1), −1 for none; the features numbered as they first appear, each shared by the points of its
        body pair that have it (a box edge's 12 edge–edge points). A feature is [d, u, l, r, c, h, tol]: a
        segment swept by a sphere on its body (centre d, m, body axes from the com; unit axis u; half length l
        and radius r, m) and a box fixed in the other body (centre c, m, that body's axes from its com; half
        lengths h, m, along those axes) that holds the other shape: the other box itself, a sphere's cube, a
        cylinder's box (|a_j| h/2 + R (1 − a_j²)^½). Planes, bores and rims have none."""
        from . import _contact_kernels as C

        feat = np.full((len(order), 2), -1, np.int64)
        rows, index = [], {}
        for i, j in enumerate(order):
            kind, Rs, Ro, ds, do = int(self.kind[j]), self.Rs[j], self.Ro[j], self.ds[j], self.do[j]
            half, zero = self.half_o[j], np.zeros(3)
            if kind & EDGE:
                own = [(ds, self.axis[j], Rs, 0.0, do - half[0:3], np.abs(half[0:3]) + Ro * np.abs(self.no[j])),
                       (do, self.no[j], Ro, 0.0, ds - half[3:6], np.abs(half[3:6]) + Rs * np.abs(self.axis[j]))]
            elif kind & BOX:
                own = [(ds, zero, 0.0, Rs, do, half[0:3])]
            elif kind & CYL:
                a = self.no[j]
                own = [(ds, zero, 0.0, Rs, do, np.abs(a) * half[1] + half[0] * np.sqrt(np.maximum(1.0 - a * a, 0.0)))]
            elif kind & (PLANE | BORE | RIM):
                own = []
            else:  # a sphere (or a vertex) against a sphere: its cube
                own = [(ds, zero, 0.0, Rs, do, np.full(3, Ro))]
            for side, (d, u, length, radius, c, h) in enumerate(own):
                row = np.r_[d, u, length, radius, c, h, C.FEATURE_MARGIN * (length + radius + np.sum(h))]
                key = (int(self.s[j]), int(self.o[j]), side, row.tobytes())
                if key not in index:
                    index[key] = len(rows)
                    rows.append(row)
                feat[i, side] = index[key]
        return feat, np.array(rows, float).reshape(-1, C.N_FT)

    # ------------------------------------------------------------------ geometry
    def geometry(self, bs):
        """(n (c, 3) unit normal from O toward S, δ (c,) m, x (c, 3) contact point, δ̇ (c,) m/s,
        v_t (c, 3) slip velocity m/s), world frame, at the body state ``bs``."""
        return self._geometry(*self._pair_state(bs))

    def _pair_state(self, bs, idx=None):
        """Each contact's two bodies (or the points ``idx``'s): (A, r_c, v_c, ω) of S, then of O (world; arrays
        (c, ...))."""
        s, o = (self.s, self.o) if idx is None else (self.s[idx], self.o[idx])
        return (bs.A[s], bs.rc[s], bs.vc[s], bs.w[s]), (bs.A[o], bs.rc[o], bs.vc[o], bs.w[o])

    def _geometry(self, S, O, idx=None):
        """:meth:`geometry` from the pair states S, O of the points ``idx`` (default: all); the points of a box pair
        (:attr:`box_pair`) share its bodies' state, its least-overlap axis computed once (:class:`_PairAxes`)."""
        (As, rs, vs, ws), (Ao, ro, vo, wo) = S, O
        sel = slice(None) if idx is None else idx
        ds, do, no, Rs, Ro = self.ds[sel], self.do[sel], self.no[sel], self.Rs[sel], self.Ro[sel]
        kind, half, axis = self.kind[sel], self.half_o[sel], self.axis[sel]
        plane, rim, edge = (kind & PLANE) > 0, (kind & RIM) > 0, (kind & EDGE) > 0
        cs = rs + np.einsum("nij,nj->ni", As, ds)
        co = ro + np.einsum("nij,nj->ni", Ao, do)
        centre_o = co.copy()
        solid = np.flatnonzero(kind & (BOX | CYL | BORE))
        inside = np.zeros(len(cs), bool)
        n_in, depth = np.zeros((len(cs), 3)), np.zeros(len(cs))
        if len(solid):
            # O a box, a cylinder or a bore: measure from its material's point nearest S's centre; a centre
            # inside the material is pushed out through the nearest surface (its depth below that surface)
            k = solid
            local = np.einsum("nji,nj->ni", Ao[k], cs[k] - co[k])
            near, inside[k], normal, depth[k] = _nearest(kind[k], local, no[k], half[k])
            co[k] = co[k] + np.einsum("nij,nj->ni", Ao[k], near)
            n_in[k] = np.einsum("nij,nj->ni", Ao[k], normal)
        d = cs - co
        dist = np.linalg.norm(d, axis=1)
        n_plane = np.einsum("nij,nj->ni", Ao, no)
        n_sph = d / np.where(dist > 0, dist, 1.0)[:, None]
        n = np.where(plane[:, None], n_plane, n_sph)
        n = np.where(inside[:, None], n_in, n)
        dist = np.where(inside, -depth, dist)
        # the offset from S's centre to its point nearest O: R n for a sphere, R û for a rim circle
        # (û the unit projection of n on the rim's plane; a rim lying flat on the plane: its centre)
        off = Rs[:, None] * n
        if np.any(rim):
            a = np.einsum("nij,nj->ni", As, axis)
            u = n - np.sum(n * a, 1)[:, None] * a
            nu = np.linalg.norm(u, axis=1)
            rim_off = Rs[:, None] * u / np.where(nu > 1e-12, nu, np.inf)[:, None]
            off = np.where(rim[:, None], rim_off, off)
        reach = np.sum(off * n, 1)
        delta = np.where(plane, reach - np.sum(d * n_plane, 1), Rs + Ro - dist)
        x = cs - off + 0.5 * delta[:, None] * n
        axes = _PairAxes(As, Ao, rs, ro, self.box_pair[sel], self.box_pairs)
        corner = np.flatnonzero(kind & CORNER)
        if len(corner):
            # a box's corner in or on the other box: along the pair's least-overlap face axis (:func:`_corner_axis`)
            k = corner
            use, n_sat, d_sat = _corner_axis(As[k], Ao[k], cs[k], centre_o[k], half[k], (kind[k] & SECOND) > 0,
                                             lambda j, k=k: axes(k[j]))
            k = k[use]
            n[k], delta[k] = n_sat[use], d_sat[use]
            x[k] = cs[k] + 0.5 * delta[k][:, None] * n[k]
        if np.any(edge):
            k = np.flatnonzero(edge)
            n[k], delta[k], x[k] = _edge_edge(As[k], Ao[k], cs[k], co[k], axis[k], no[k], Rs[k], Ro[k], half[k],
                                              lambda j, k=k: axes(k[j]))
        vr = vs + cross(ws, x - rs) - vo - cross(wo, x - ro)
        vn = np.sum(vr * n, 1)
        return n, delta, x, -vn, vr - vn[:, None] * n

    def _friction_coefficient(self, speed):
        vs = self.v_s
        h = lambda z: z * z * (3.0 - 2.0 * z)  # noqa: E731
        low = self.mu_s * (-1.0 + 2.0 * h(np.clip((speed + vs) / (2.0 * vs), 0.0, 1.0)))
        mid = self.mu_s + (self.mu_d - self.mu_s) * h(np.clip((speed - vs) / vs, 0.0, 1.0))
        return np.where(speed <= vs, low, mid)

    def impact_speeds(self, delta, ddelta, state):
        """δ̇⁻ (m/s) used in the restitution form: the recorded one, else the speed at first touch
        that the present (δ, δ̇) implies by the elastic energy, δ̇⁻² = δ̇² + 2 k δ^(n+1)/((n+1) m_r)
        (m_r the pair's reduced mass; the damping's loss over the first step's small δ neglected)."""
        dp = np.maximum(delta, 0.0)
        touch = np.sqrt(np.maximum(ddelta, 0.0) ** 2 + 2.0 * self.k * dp ** (self.exp + 1.0)
                        / ((self.exp + 1.0) * self.m_red))
        v = np.where(state > 0, state, touch)
        return np.maximum(v, MIN_IMPACT_SPEED)

    def forces(self, bs, state, pair=None):
        """Per contact: (n, δ, x, F_n (N), F_t (c, 3) N on S, v_t (c, 3) m/s, dissipated power (W, ≤ 0));
        ``pair`` (from :meth:`_pair_state`) instead of ``bs``."""
        n, delta, x, dd, vt = self._geometry(*(pair if pair is not None else self._pair_state(bs)))
        active = delta > 0
        dp = np.where(active, delta, 0.0)
        elastic = self.k * dp ** self.exp
        alpha = np.where(self.from_restitution, self.xi / self.impact_speeds(delta, dd, state), self.lam / self.k)
        Fn = np.where(active, np.maximum(0.0, elastic * (1.0 + alpha * dd)), 0.0)
        speed = np.linalg.norm(vt, axis=1)
        mu = self._friction_coefficient(speed)
        t_hat = vt / np.where(speed > 0, speed, 1.0)[:, None]
        Ft = -(mu * Fn)[:, None] * t_hat
        power = -(Fn - np.where(active, elastic, 0.0)) * dd - mu * Fn * speed
        return n, delta, x, Fn, Ft, vt, power

    # ------------------------------------------------------------------ force element interface
    def evaluate(self, bs, state, F, N):
        """Accumulate the contact forces into F (nb, 3) N and moments about the com N (nb, 3) N m;
        returns the non-conservative power (W)."""
        if not self.n:
            return 0.0
        n, delta, x, Fn, Ft, vt, power = self.forces(bs, state)
        f = Fn[:, None] * n + Ft
        np.add.at(F, self.s, f)
        np.add.at(F, self.o, -f)
        np.add.at(N, self.s, cross(x - bs.rc[self.s], f))
        np.add.at(N, self.o, -cross(x - bs.rc[self.o], f))
        return float(np.sum(power))

    def _wrenches(self, pair, state):
        """f (c, 2, 6): [force (N), moment about the com (N m)] on S (row 0) and on O (row 1)."""
        n, delta, x, Fn, Ft, vt, _ = self.forces(None, state, pair)
        f = Fn[:, None] * n + Ft
        out = np.empty((self.n, 2, 6))
        out[:, 0, :3], out[:, 0, 3:] = f, cross(x - pair[0][1], f)
        out[:, 1, :3], out[:, 1, 3:] = -f, -cross(x - pair[1][1], f)
        return out

    def tangent_blocks(self, bs, state, eps=1e-7):
        """(S, O, K (c, 2, 2, 6, 6), D (c, 2, 2, 6, 6)): the contacts' stiffness K = −∂f/∂x and damping
        D = −∂f/∂v in the blocks of :meth:`.forces.ForceElements.tangent_blocks` (x_b = [δr_c (m),
        δθ (rad), A → exp([δθ]) A], v_b = [v_c, ω]), by central differences of the contact law in
        each of the pair's 24 coordinates (step ``eps`` times the contact's length scale R for
        positions, times a speed scale for velocities). The law is C¹ away from δ = 0 and from
        the friction's transitions; at those the differences straddle the kink."""
        K = np.zeros((self.n, 2, 2, 6, 6))
        D = np.zeros((self.n, 2, 2, 6, 6))
        if not self.n:
            return self.s, self.o, K, D
        base = self._pair_state(bs)
        h_x = eps * self.L
        h_v = eps * np.maximum(1.0, np.abs(self.geometry(bs)[3]))
        for b in range(2):
            for j in range(6):
                for kind in (0, 1):
                    h = h_x if kind == 0 else h_v
                    plus, minus = [], []
                    for sign in (1.0, -1.0):
                        st = [list(base[0]), list(base[1])]
                        A, r, v, w = st[b]
                        step = sign * h
                        if kind == 0 and j < 3:
                            r = r.copy()
                            r[:, j] += step
                        elif kind == 0:
                            axis = np.zeros((self.n, 3))
                            axis[:, j - 3] = step
                            A = _rotate(axis) @ A
                        elif j < 3:
                            v = v.copy()
                            v[:, j] += step
                        else:
                            w = w.copy()
                            w[:, j - 3] += step
                        st[b] = (A, r, v, w)
                        (plus if sign > 0 else minus).append(self._wrenches((tuple(st[0]), tuple(st[1])), state))
                    df = (plus[0] - minus[0]) / (2.0 * h)[:, None, None]
                    target = K if kind == 0 else D
                    target[:, :, b, :, j] = -df
        return self.s, self.o, K, D

    def potential(self, bs):
        """Elastic energy Σ k δ^(n+1)/(n+1) of the active contacts (J)."""
        if not self.n:
            return 0.0
        _, delta, _, _, _ = self.geometry(bs)
        dp = np.where(delta > 0, delta, 0.0)
        return float(np.sum(self.k * dp ** (self.exp + 1.0) / (self.exp + 1.0)))

    def initial_state(self, bs):
        """Zero impact speeds; a MechanismError naming the pair and the depth if shapes start
        interpenetrating."""
        n, delta, *_ = self.geometry(bs)
        for i in np.flatnonzero(delta > 1e-12):
            a, b = self.model.body_names[self.s[i]], self.model.body_names[self.o[i]]
            raise MechanismError(
                f"contact {self.names[self.owner[i]]!r}: parts {a!r} and {b!r} start interpenetrating "
                f"by {delta[i]:.6g} m",
                where=self.model.spec.source or None,
                hint="move the parts apart (or into touch, penetration 0) at the initial pose, or run with "
                     "--resolve-penetration (resolve_penetration=True) to move them apart first")
        return np.zeros(self.n)

    def accept(self, bs, state):
        """Record each contact's impact speed at an accepted state (``bs`` with velocities)."""
        if not self.n:
            return
        _, delta, _, dd, _ = self.geometry(bs)
        state[:] = np.where(delta > 0, self.impact_speeds(delta, dd, state), 0.0)

    def report(self, bs, state):
        """Output values per declared contact: dict suffix -> (contacts,) array (see
        :data:`CONTACT_OUTPUTS`): active (1/0), normal force N and friction force N (magnitudes of
        the sums over the contact's points of the forces on one part, :attr:`side`), slip speed m/s
        and penetration m (of its deepest point; 0 while apart), and that point (``point_x`` … m,
        assembly frame; while apart, midway between the shapes' closest points)."""
        n, delta, x, Fn, Ft, vt, _ = self.forces(bs, state)
        nc = len(self.names)
        fn_sum, ft_sum = np.zeros((nc, 3)), np.zeros((nc, 3))
        np.add.at(fn_sum, self.owner, (self.side * Fn)[:, None] * n)
        np.add.at(ft_sum, self.owner, self.side[:, None] * Ft)
        depth = np.full(nc, -np.inf)
        np.maximum.at(depth, self.owner, delta)
        deepest = deepest_points(self.owner, delta, nc)
        slip = np.linalg.norm(vt, axis=1)[deepest]
        return {"active": (depth > 0).astype(float), "normal_force": np.linalg.norm(fn_sum, axis=1),
                "friction_force": np.linalg.norm(ft_sum, axis=1), "slip_velocity": slip,
                "penetration": np.maximum(depth, 0.0), **_point_columns(x[deepest])}

    def step_limit(self, bs, state):
        """The largest step (s) that cannot stride over a contact (see the module docstring)."""
        if not self.n:
            return np.inf
        _, delta, _, dd, _ = self.geometry(bs)
        return compliant_step_limit(delta, dd, np.maximum(np.abs(dd), state), self.m_eff, self.k, self.exp)


def deepest_points(owner, delta, n_contacts):
    """Index of each contact's deepest point (largest δ) among its points (``owner`` their contact)."""
    deepest = np.zeros(n_contacts, int)
    if not len(owner):
        return deepest
    order = np.lexsort((-delta, owner))  # by contact, deepest point first
    first = np.r_[True, owner[order][1:] != owner[order][:-1]]
    deepest[owner[order][first]] = order[first]
    return deepest


def _point_columns(x):
    """The ``point_x``, ``point_y``, ``point_z`` outputs (m) of the points x (contacts, 3)."""
    return {"point_x": x[:, 0].copy(), "point_y": x[:, 1].copy(), "point_z": x[:, 2].copy()}


def compliant_step_limit(delta, dd, speed, m, k, n):
    """The largest step (s) that cannot stride over a switch of compliant contacts or stops.

    delta, dd : penetrations δ (m or rad; > 0 in contact) and their rates; speed : the impact speed
    per contact (|δ̇| at impact, floored at :data:`MIN_IMPACT_SPEED`); m, k, n : effective mass,
    stiffness and exponent of each. A contact at that speed lasts t_c = π sqrt(m / k_lin), k_lin the
    law's stiffness at its deepest point; in contact a step is t_c / STEPS_PER_CONTACT, and while
    approaching apart or separating in contact it homes in on the switch δ = 0 (half the time to it,
    not below TOUCH_STEP · t_c).
    """
    speed = np.maximum(speed, MIN_IMPACT_SPEED)
    dmax = ((n + 1.0) * m * speed ** 2 / (2.0 * k)) ** (1.0 / (n + 1.0))
    k_lin = n * k * dmax ** (n - 1.0)
    t_c = math.pi * np.sqrt(m / k_lin)
    switching = ((delta <= 0) & (dd > 0)) | ((delta > 0) & (dd < 0))
    to_switch = np.maximum(0.5 * np.abs(delta) / np.where(switching, np.abs(dd), 1.0), TOUCH_STEP * t_c)
    limit = np.where(delta > 0, t_c / STEPS_PER_CONTACT, np.inf)
    limit = np.where(switching, np.minimum(limit, to_switch), limit)
    return float(np.min(limit))
