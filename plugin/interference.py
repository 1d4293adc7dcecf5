"""Interference along a motion: which parts collide, when they first touch, how deep, how close.

``find_interference(motion, spec)`` checks every pair of parts that have geometry
(``PartSpec.shape``, an OCP ``TopoDS_Shape`` in the part frame, metres) along a
:class:`~cadmotion.kernel.motion.Motion` and returns an :class:`InterferenceReport`.

Definitions
-----------
Distance ``d(t)`` is the exact distance between the boundaries of two parts at time t
(``BRepExtrema_DistShapeShape``); it is 0 when they touch or overlap, and a part lying
entirely inside another also counts as ``d = 0``. Between output frames the poses are those
of :meth:`Motion.pose` (cubic Hermite positions, slerp orientations): times found between
frames are times on that interpolated motion.

A pair is checked against a *threshold* ``c``: ``clearance`` for ordinary pairs, and for
pairs connected by a joint (checked only with ``exclude_jointed=False``) the joint's own
``clearance`` parameter, else ``joint_clearance``. The pair *violates* it while its signed
distance ``s = d if d > 0 else -depth`` is below ``c + tol``: with ``c = 0`` touching counts
(contact is a collision in a kinematic motion), a positive ``c`` asks for a gap of at least
``c``, a negative ``c`` allows up to ``-c`` of penetration (pins modelled with interference).
``first_time`` is the first time of violation; between frames it is found by bisection on
the interpolated motion to ``time_tol``, then corrected by a secant through two exact
distances for the ``tol`` by which the bisection's test is early.

Penetration depth (an estimate, chosen because it needs no Boolean operation and is exact
in the common cases): the largest distance by which a point of the surface of one part lies
inside the other part, measured to that part's surface,
``max( max_{p in dB inside A} dist(p, dA), max_{p in dA inside B} dist(p, dB) )``. Candidate
points are the mesh nodes and a grid on every mesh triangle (spacing 1/16 of the part's box
diagonal); the deepest candidates (by their mesh distance and a ray-parity inside test) are
moved onto the exact surface, classified by OCCT's solid classifier and measured with exact
B-rep distances. It equals the depth of a corner or face pushed into a face (a box into a
plate, a shaft end into a block, a 3 mm shank in a 2.9 mm hole: 0.05 mm), and is low by at
most the grid spacing elsewhere. It saturates for deep overlaps (two equal cubes centred on
each other: half their size). It is measured at up to ``depth_samples`` frames after the
first contact (and inside the first contact when that ends before the next frame).

Pipeline
--------
1. Prepare once per distinct shape (instances share it): the exact part-frame box
   (``BRepBndLib.AddOptimal``); the writers' triangulation (``BRepMesh``, stored in the
   shape) with a chord error per triangle (its face's for curved faces; for planar faces
   that of the curved boundary edge the triangle lies on, else 0; times
   ``DEFLECTION_SAFETY``); a BVH over the triangles; OCCT's solid classifier and a
   ``BRepExtrema_DistShapeShape`` with the shape loaded (its sub-shape boxes are kept).
2. Pairs: every pair of parts with geometry, minus ``ignore`` and (by default) jointed pairs.
   Parts whose displacement ``X(t) X(t0)^-1`` is the same at every frame move as one body;
   their pairs are *static*, checked once at the first frame and listed in
   :attr:`InterferenceReport.static` (fastened parts touch by design) unless
   ``check_static``.
3. Broad phase, numpy, vectorised over (pair, frame interval): world boxes swept over each
   interval, i.e. the boxes at both ends joined and grown by a bound of the interpolation's
   distance from the chord (``"aabb"``), and with ``"obb"`` also the part boxes carried as
   oriented boxes, grown by the interval's largest point displacement (separating axes).
   An interval is kept when the boxes come within ``margin = max(threshold, near) + tol``.
4. Narrow phase, per kept pair in time order. The meshes (numba: exact triangle-triangle
   distances over the two BVHs, B moved into A's frame) give bounds ``lb <= d <= ub`` from
   the triangles' chord errors; a planar face also bounds the distance by its plane, so
   parallel planar faces are separated by their exact gap. Contact is certified exactly: a
   mesh node of one part (a point of its exact surface) that OCCT classifies IN or ON the
   other, or the exact distance, computed on the faces the mesh bounds leave in question
   only. Between two samples a conservative-advancement bound (the largest speed of any
   point of either part over the interval, from the Hermite control velocities and the
   slerp rate) proves that no contact was skipped, or halves the interval, up to
   ``GUARD_LEVELS`` times; intervals it cannot prove are counted in
   ``stats["unproven_intervals"]`` (parts sliding past each other closer than their motion
   per step; more output steps help).
5. Depth at contact, and for pairs within ``near`` but not violating the exact minimum
   distance: at the frames the mesh bounds cannot rule out, then refined between frames
   (bounded scalar minimisation of the mesh distance, exact distance at the result).

Example
-------
>>> from cadmotion.importers import load                                  # doctest: +SKIP
>>> from cadmotion.kernel import compile_model, kinematics                # doctest: +SKIP
>>> spec = load("samples/validation/collide.cadmotion.toml")              # doctest: +SKIP
>>> motion = kinematics(compile_model(spec), t_end=1.0, steps=100)        # doctest: +SKIP
>>> find_interference(motion, spec).collisions[0].first_time              # doctest: +SKIP
0.4488791...
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import MechanismError
from ..kernel.rotations import quat_to_matrix
from .writers.step_frames import as_compound

__all__ = [
    "find_interference",
    "InterferenceReport",
    "PairInterference",
    "BROAD_PHASES",
]

#: broad-phase methods: name -> description
BROAD_PHASES = {
    "aabb": "world axis-aligned boxes swept over each frame interval",
    "obb": "swept axis-aligned boxes, then oriented part boxes (separating-axis test)",
}

try:  # numba is a dependency of cadmotion; FreeCAD's own Python may lack it
    import numba as _numba

    _njit = _numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy")
except Exception:  # pragma: no cover - pure-Python fallback, slow but correct
    def _njit(f):
        return f


# ============================================================================ mesh kernels
# Triangles are float64 arrays (nf, 3, 3) in a part frame. A BVH is a tuple of arrays
# (lo, hi, left, right, start, count) over the triangles sorted so every leaf is contiguous.

_LEAF = 4


@_njit
def _bvh_build(tris):
    nf = tris.shape[0]
    cent = np.empty((nf, 3))
    for i in range(nf):
        for k in range(3):
            cent[i, k] = (tris[i, 0, k] + tris[i, 1, k] + tris[i, 2, k]) / 3.0
    order = np.arange(nf)
    maxn = 2 * nf + 1
    lo = np.empty((maxn, 3))
    hi = np.empty((maxn, 3))
    left = np.full(maxn, -1, np.int64)
    right = np.full(maxn, -1, np.int64)
    start = np.zeros(maxn, np.int64)
    count = np.zeros(maxn, np.int64)
    st_node = np.empty(maxn, np.int64)
    st_s = np.empty(maxn, np.int64)
    st_e = np.empty(maxn, np.int64)
    sp = 0
    st_node[0] = 0
    st_s[0] = 0
    st_e[0] = nf
    sp = 1
    n = 1
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        s = st_s[sp]
        e = st_e[sp]
        for k in range(3):
            lo[node, k] = np.inf
            hi[node, k] = -np.inf
        clo = np.full(3, np.inf)
        chi = np.full(3, -np.inf)
        for ii in range(s, e):
            i = order[ii]
            for v in range(3):
                for k in range(3):
                    x = tris[i, v, k]
                    if x < lo[node, k]:
                        lo[node, k] = x
                    if x > hi[node, k]:
                        hi[node, k] = x
            for k in range(3):
                c = cent[i, k]
                if c < clo[k]:
                    clo[k] = c
                if c > chi[k]:
                    chi[k] = c
        if e - s <= _LEAF:
            start[node] = s
            count[node] = e - s
            continue
        axis = 0
        ext = chi[0] - clo[0]
        for k in range(1, 3):
            if chi[k] - clo[k] > ext:
                ext = chi[k] - clo[k]
                axis = k
        seg = order[s:e].copy()
        keys = np.empty(e - s)
        for ii in range(e - s):
            keys[ii] = cent[seg[ii], axis]
        idx = np.argsort(keys, kind="mergesort")
        for ii in range(e - s):
            order[s + ii] = seg[idx[ii]]
        m = (s + e) // 2
        left[node] = n
        right[node] = n + 1
        st_node[sp] = n
        st_s[sp] = s
        st_e[sp] = m
        sp += 1
        st_node[sp] = n + 1
        st_s[sp] = m
        st_e[sp] = e
        sp += 1
        n += 2
    return lo[:n].copy(), hi[:n].copy(), left[:n].copy(), right[:n].copy(), start[:n].copy(), \
        count[:n].copy(), order


@_njit
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@_njit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_njit
def _mul(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@_njit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_njit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_njit
def _seg_seg_d2(p1, q1, p2, q2):
    """Squared distance between segments p1q1 and p2q2 (Ericson, Real-Time Collision Detection 5.1.9)."""
    d1 = _sub(q1, p1)
    d2 = _sub(q2, p2)
    r = _sub(p1, p2)
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    eps = 1e-300
    if a <= eps and e <= eps:
        return _dot(r, r)
    if a <= eps:
        s = 0.0
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = _dot(d1, r)
        if e <= eps:
            t = 0.0
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = _dot(d1, d2)
            denom = a * e - b * b
            if denom > 1e-14 * a * e:
                s = min(max((b * f - c * e) / denom, 0.0), 1.0)
            else:
                s = 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    w = _sub(_add(p1, _mul(d1, s)), _add(p2, _mul(d2, t)))
    return _dot(w, w)


@_njit
def _pt_tri_d2(p, a, b, c):
    """Squared distance from point p to triangle abc (Ericson 5.1.5)."""
    ab = _sub(b, a)
    ac = _sub(c, a)
    ap = _sub(p, a)
    d1 = _dot(ab, ap)
    d2 = _dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return _dot(ap, ap)
    bp = _sub(p, b)
    d3 = _dot(ab, bp)
    d4 = _dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return _dot(bp, bp)
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
        w = _sub(ap, _mul(ab, d1 / (d1 - d3)))
        return _dot(w, w)
    cp = _sub(p, c)
    d5 = _dot(ab, cp)
    d6 = _dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return _dot(cp, cp)
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
        w = _sub(ap, _mul(ac, d2 / (d2 - d6)))
        return _dot(w, w)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
        w = _sub(bp, _mul(_sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6))))
        return _dot(w, w)
    den = va + vb + vc
    if not den > 0.0 or vc < 0.0 or vb < 0.0 or va < 0.0:  # degenerate triangle: its edges
        return min(_seg_seg_d2(p, p, a, b), _seg_seg_d2(p, p, b, c), _seg_seg_d2(p, p, c, a))
    q = _sub(_add(a, _add(_mul(ab, vb / den), _mul(ac, vc / den))), p)
    return _dot(q, q)


@_njit
def _seg_hits_tri(p, q, a, b, c):
    """True when segment pq crosses triangle abc transversally (Moeller-Trumbore)."""
    e1 = _sub(b, a)
    e2 = _sub(c, a)
    d = _sub(q, p)
    h = _cross(d, e2)
    det = _dot(e1, h)
    scale = math.sqrt(_dot(e1, e1) * _dot(e2, e2) * _dot(d, d))
    if abs(det) <= 1e-13 * scale:
        return False  # parallel or coplanar: the distance tests see those contacts
    f = 1.0 / det
    s = _sub(p, a)
    u = f * _dot(s, h)
    if u < 0.0 or u > 1.0:
        return False
    qv = _cross(s, e1)
    v = f * _dot(d, qv)
    if v < 0.0 or u + v > 1.0:
        return False
    t = f * _dot(e2, qv)
    return 0.0 <= t <= 1.0


@_njit
def _tri_tri_d(a0, a1, a2, b0, b1, b2):
    """Distance between two triangles given as 3-tuples of vertices (0 when they touch or cross)."""
    if (_seg_hits_tri(a0, a1, b0, b1, b2) or _seg_hits_tri(a1, a2, b0, b1, b2)
            or _seg_hits_tri(a2, a0, b0, b1, b2) or _seg_hits_tri(b0, b1, a0, a1, a2)
            or _seg_hits_tri(b1, b2, a0, a1, a2) or _seg_hits_tri(b2, b0, a0, a1, a2)):
        return 0.0
    d2 = _pt_tri_d2(a0, b0, b1, b2)
    d2 = min(d2, _pt_tri_d2(a1, b0, b1, b2))
    d2 = min(d2, _pt_tri_d2(a2, b0, b1, b2))
    d2 = min(d2, _pt_tri_d2(b0, a0, a1, a2))
    d2 = min(d2, _pt_tri_d2(b1, a0, a1, a2))
    d2 = min(d2, _pt_tri_d2(b2, a0, a1, a2))
    d2 = min(d2, _seg_seg_d2(a0, a1, b0, b1))
    d2 = min(d2, _seg_seg_d2(a0, a1, b1, b2))
    d2 = min(d2, _seg_seg_d2(a0, a1, b2, b0))
    d2 = min(d2, _seg_seg_d2(a1, a2, b0, b1))
    d2 = min(d2, _seg_seg_d2(a1, a2, b1, b2))
    d2 = min(d2, _seg_seg_d2(a1, a2, b2, b0))
    d2 = min(d2, _seg_seg_d2(a2, a0, b0, b1))
    d2 = min(d2, _seg_seg_d2(a2, a0, b1, b2))
    d2 = min(d2, _seg_seg_d2(a2, a0, b2, b0))
    return math.sqrt(d2)


@_njit
def _tri_tri_closest(a0, a1, a2, b0, b1, b2):
    """Closest points (on A, on B) of two triangles that do not cross (brute force over features)."""
    best = np.inf
    pa = a0
    pb = b0
    A = (a0, a1, a2)
    B = (b0, b1, b2)
    for i in range(3):  # vertices of A against triangle B, and of B against A
        q = _closest_pt_tri(A[i], b0, b1, b2)
        w = _sub(A[i], q)
        d2 = _dot(w, w)
        if d2 < best:
            best = d2
            pa = A[i]
            pb = q
        q = _closest_pt_tri(B[i], a0, a1, a2)
        w = _sub(B[i], q)
        d2 = _dot(w, w)
        if d2 < best:
            best = d2
            pa = q
            pb = B[i]
    for i in range(3):
        for j in range(3):
            c1, c2 = _closest_seg_seg(A[i], A[(i + 1) % 3], B[j], B[(j + 1) % 3])
            w = _sub(c1, c2)
            d2 = _dot(w, w)
            if d2 < best:
                best = d2
                pa = c1
                pb = c2
    return pa, pb


@_njit
def _closest_seg_seg(p1, q1, p2, q2):
    d1 = _sub(q1, p1)
    d2 = _sub(q2, p2)
    r = _sub(p1, p2)
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    s = 0.0
    t = 0.0
    if a <= 1e-300 and e <= 1e-300:
        return p1, p2
    if a <= 1e-300:
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = _dot(d1, r)
        if e <= 1e-300:
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = _dot(d1, d2)
            denom = a * e - b * b
            if denom > 1e-14 * a * e:
                s = min(max((b * f - c * e) / denom, 0.0), 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    return _add(p1, _mul(d1, s)), _add(p2, _mul(d2, t))


@_njit
def _closest_pt_tri(p, a, b, c):
    ab = _sub(b, a)
    ac = _sub(c, a)
    ap = _sub(p, a)
    d1 = _dot(ab, ap)
    d2 = _dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a
    bp = _sub(p, b)
    d3 = _dot(ab, bp)
    d4 = _dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
        return _add(a, _mul(ab, d1 / (d1 - d3)))
    cp = _sub(p, c)
    d5 = _dot(ab, cp)
    d6 = _dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
        return _add(a, _mul(ac, d2 / (d2 - d6)))
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
        return _add(b, _mul(_sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6))))
    den = va + vb + vc
    if not den > 0.0 or vc < 0.0 or vb < 0.0 or va < 0.0:
        return a
    return _add(a, _add(_mul(ab, vb / den), _mul(ac, vc / den)))


@_njit
def _vtx(tris, j, v):
    return (tris[j, v, 0], tris[j, v, 1], tris[j, v, 2])


@_njit
def _vtx_moved(tris, j, v, R, p):
    x = tris[j, v, 0]
    y = tris[j, v, 1]
    z = tris[j, v, 2]
    return (R[0, 0] * x + R[0, 1] * y + R[0, 2] * z + p[0],
            R[1, 0] * x + R[1, 1] * y + R[1, 2] * z + p[1],
            R[2, 0] * x + R[2, 1] * y + R[2, 2] * z + p[2])


@_njit
def _box_gap(lo_a, hi_a, cb, hb, R, p):
    """Distance between box [lo_a, hi_a] and box (centre cb, half hb) moved by (R, p); a lower bound."""
    s = 0.0
    for i in range(3):
        c = R[i, 0] * cb[0] + R[i, 1] * cb[1] + R[i, 2] * cb[2] + p[i]
        h = abs(R[i, 0]) * hb[0] + abs(R[i, 1]) * hb[1] + abs(R[i, 2]) * hb[2]
        ca = 0.5 * (lo_a[i] + hi_a[i])
        ha = 0.5 * (hi_a[i] - lo_a[i])
        g = abs(ca - c) - ha - h
        if g > 0.0:
            s += g * g
    return math.sqrt(s)


@_njit
def _plane_side_bound(n, o, v0, v1, v2, dev):
    """Lower bound on |n.y - o| over points y within ``dev`` of triangle v0 v1 v2 (0 if it may cross)."""
    s0 = _dot(n, v0) - o
    s1 = _dot(n, v1) - o
    s2 = _dot(n, v2) - o
    lo = min(s0, min(s1, s2))
    hi = max(s0, max(s1, s2))
    if lo > dev:
        return lo - dev
    if hi < -dev:
        return -hi - dev
    return 0.0


@_njit
def _node_delta(left, right, start, count, tdel):
    """Largest chord error of the triangles under each BVH node (children follow parents)."""
    n = left.shape[0]
    out = np.zeros(n)
    for node in range(n - 1, -1, -1):
        if left[node] < 0:
            m = 0.0
            for j in range(start[node], start[node] + count[node]):
                m = max(m, tdel[j])
            out[node] = m
        else:
            out[node] = max(out[left[node]], out[right[node]])
    return out


@_njit
def _pair_low(a0, a1, a2, b0, b1, b2, d, da, db, pa, pb, na, oa, nb, ob):
    """Lower bound on the distance of the exact surface patches of two triangles.

    ``d`` is the triangles' distance, ``da``/``db`` their chord errors, ``pa``/``pb`` whether
    their faces are planar with planes (``na``, ``oa``) / (``nb``, ``ob``) in A's frame.
    """
    low = d - da - db
    both = pa and pb
    if pa:
        dev = db
        if both:
            c = _cross(na, nb)
            dev = db * math.sqrt(_dot(c, c))
        low = max(low, _plane_side_bound(na, oa, b0, b1, b2, dev))
    if pb:
        dev = da
        if both:
            c = _cross(na, nb)
            dev = da * math.sqrt(_dot(c, c))
        low = max(low, _plane_side_bound(nb, ob, a0, a1, a2, dev))
    return low


@_njit
def _b_planes(fn_b, fo_b, R, p):
    nfb = fn_b.shape[0]
    nb_a = np.empty((nfb, 3))
    ob_a = np.empty(nfb)
    for f in range(nfb):
        for k in range(3):
            nb_a[f, k] = R[k, 0] * fn_b[f, 0] + R[k, 1] * fn_b[f, 1] + R[k, 2] * fn_b[f, 2]
        ob_a[f] = fo_b[f] + nb_a[f, 0] * p[0] + nb_a[f, 1] * p[1] + nb_a[f, 2] * p[2]
    return nb_a, ob_a


@_njit
def _mesh_bounds(lo_a, hi_a, left_a, right_a, start_a, count_a, ndel_a, tris_a, tdel_a, fid_a, fpl_a, fn_a, fo_a,
                 lo_b, hi_b, left_b, right_b, start_b, count_b, ndel_b, tris_b, tdel_b, fid_b, fpl_b, fn_b, fo_b,
                 R, p, cap, stop, collect):
    """Bounds on the distance between the exact surfaces of parts A and B (B moved by R, p into A's frame).

    Returns ``(lb, ub, dm, ia, ib, pairs)``: ``lb <= d <= ub`` where d is the distance
    between the exact surfaces, ``dm`` the distance between the meshes, reached by
    triangles ``ia`` of A and ``ib`` of B (sorted order). Only values below ``cap`` are
    searched for: ``lb = cap`` and ``ub = dm = inf`` when nothing is closer. The search
    stops once ``ub <= stop`` (``lb`` is then meaningless). With ``collect > 0`` the face
    pairs (fa, fb) of triangle pairs whose lower bound is at most ``collect`` are returned
    (rows of ``pairs``; they contain the faces where the exact distance is reached when
    ``collect >= ub``).

    Each triangle pair gives ``d_tri - delta_a - delta_b <= d <= d_tri + delta_a + delta_b``
    (``delta``: the triangle's chord error: its face's for a curved face; for a planar face
    that of the curved boundary edges the triangle lies on, else 0). A planar face also
    bounds the distance by the distance of the other triangle (grown by its chord error, or
    only by the in-plane part of it when that face is planar too) from its plane; so two
    parallel planar faces are separated by their exact gap even when their edges are curved.
    """
    nb = lo_b.shape[0]
    cb = np.empty((nb, 3))
    hb = np.empty((nb, 3))
    for i in range(nb):
        for k in range(3):
            cb[i, k] = 0.5 * (lo_b[i, k] + hi_b[i, k])
            hb[i, k] = 0.5 * (hi_b[i, k] - lo_b[i, k])
    nb_a, ob_a = _b_planes(fn_b, fo_b, R, p)
    lb = cap
    ub = np.inf
    dm = np.inf
    ia = -1
    ib = -1
    npairs = 0
    pairs = np.empty((16, 2), np.int64)
    limit = max(lb, collect)
    cap_stack = 256
    sa = np.empty(cap_stack, np.int64)
    sb = np.empty(cap_stack, np.int64)
    sd = np.empty(cap_stack)
    d0 = _box_gap(lo_a[0], hi_a[0], cb[0], hb[0], R, p)
    if d0 - ndel_a[0] - ndel_b[0] >= limit:
        return lb, ub, dm, ia, ib, pairs[:0]
    sa[0] = 0
    sb[0] = 0
    sd[0] = d0
    sp = 1
    while sp > 0:
        sp -= 1
        a = sa[sp]
        b = sb[sp]
        if sd[sp] - ndel_a[a] - ndel_b[b] >= max(lb, collect) and (sd[sp] >= dm or sd[sp] >= cap):
            continue
        leaf_a = left_a[a] < 0
        leaf_b = left_b[b] < 0
        if leaf_a and leaf_b:
            for jb in range(start_b[b], start_b[b] + count_b[b]):
                b0 = _vtx_moved(tris_b, jb, 0, R, p)
                b1 = _vtx_moved(tris_b, jb, 1, R, p)
                b2 = _vtx_moved(tris_b, jb, 2, R, p)
                fb = fid_b[jb]
                db = tdel_b[jb]
                pb = fpl_b[fb] != 0
                nbv = (nb_a[fb, 0], nb_a[fb, 1], nb_a[fb, 2])
                for ja in range(start_a[a], start_a[a] + count_a[a]):
                    a0 = _vtx(tris_a, ja, 0)
                    a1 = _vtx(tris_a, ja, 1)
                    a2 = _vtx(tris_a, ja, 2)
                    d = _tri_tri_d(a0, a1, a2, b0, b1, b2)
                    fa = fid_a[ja]
                    da = tdel_a[ja]
                    if d < dm:
                        dm = d
                        ia = ja
                        ib = jb
                    if d + da + db < ub:
                        ub = d + da + db
                    low = d - da - db
                    if low < max(lb, collect):
                        pa = fpl_a[fa] != 0
                        if pa or pb:
                            na = (fn_a[fa, 0], fn_a[fa, 1], fn_a[fa, 2])
                            low = _pair_low(a0, a1, a2, b0, b1, b2, d, da, db, pa, pb,
                                            na, fo_a[fa], nbv, ob_a[fb])
                        if low < lb:
                            lb = max(low, 0.0)
                        if collect > 0 and low <= collect:
                            new = True
                            for q in range(npairs):
                                if pairs[q, 0] == fa and pairs[q, 1] == fb:
                                    new = False
                                    break
                            if new:
                                if npairs == pairs.shape[0]:
                                    p2 = np.empty((2 * npairs, 2), np.int64)
                                    p2[:npairs] = pairs[:npairs]
                                    pairs = p2
                                pairs[npairs, 0] = fa
                                pairs[npairs, 1] = fb
                                npairs += 1
                    if ub <= stop:
                        return min(lb, ub), ub, dm, ia, ib, pairs[:npairs]
            continue
        # descend into the larger internal node
        split_a = not leaf_a
        if not leaf_a and not leaf_b:
            va = 1.0
            vb = 1.0
            for k in range(3):
                va *= hi_a[a, k] - lo_a[a, k] + 1e-300
                vb *= 2.0 * hb[b, k] + 1e-300
            split_a = va >= vb
        if split_a:
            c1 = left_a[a]
            c2 = right_a[a]
            d1 = _box_gap(lo_a[c1], hi_a[c1], cb[b], hb[b], R, p)
            d2 = _box_gap(lo_a[c2], hi_a[c2], cb[b], hb[b], R, p)
            e1 = ndel_a[c1] + ndel_b[b]
            e2 = ndel_a[c2] + ndel_b[b]
            n1a, n1b, n2a, n2b = c1, b, c2, b
        else:
            c1 = left_b[b]
            c2 = right_b[b]
            d1 = _box_gap(lo_a[a], hi_a[a], cb[c1], hb[c1], R, p)
            d2 = _box_gap(lo_a[a], hi_a[a], cb[c2], hb[c2], R, p)
            e1 = ndel_a[a] + ndel_b[c1]
            e2 = ndel_a[a] + ndel_b[c2]
            n1a, n1b, n2a, n2b = a, c1, a, c2
        if sp + 2 > cap_stack:
            cap_stack *= 2
            sa2 = np.empty(cap_stack, np.int64)
            sb2 = np.empty(cap_stack, np.int64)
            sd2 = np.empty(cap_stack)
            sa2[:sp] = sa[:sp]
            sb2[:sp] = sb[:sp]
            sd2[:sp] = sd[:sp]
            sa, sb, sd = sa2, sb2, sd2
        # push the farther child first so the nearer one is searched first
        if d1 > d2:
            n1a, n1b, n2a, n2b = n2a, n2b, n1a, n1b
            d1, d2 = d2, d1
            e1, e2 = e2, e1
        limit = max(lb, collect)
        if d2 - e2 < limit or (d2 < dm and d2 < cap):
            sa[sp] = n2a
            sb[sp] = n2b
            sd[sp] = d2
            sp += 1
        if d1 - e1 < limit or (d1 < dm and d1 < cap):
            sa[sp] = n1a
            sb[sp] = n1b
            sd[sp] = d1
            sp += 1
    return min(lb, ub), ub, dm, ia, ib, pairs[:npairs]


@_njit
def _points_distance(lo, hi, left, right, start, count, tris, pts, cap):
    """Unsigned distance of each point to the mesh (``cap`` where it is farther than ``cap``)."""
    n = pts.shape[0]
    out = np.empty(n)
    stack = np.empty(256, np.int64)
    for i in range(n):
        q = (pts[i, 0], pts[i, 1], pts[i, 2])
        best2 = cap * cap
        sp = 1
        stack[0] = 0
        while sp > 0:
            sp -= 1
            node = stack[sp]
            g = 0.0
            for k in range(3):
                if q[k] < lo[node, k]:
                    g += (lo[node, k] - q[k]) ** 2
                elif q[k] > hi[node, k]:
                    g += (q[k] - hi[node, k]) ** 2
            if g >= best2:
                continue
            if left[node] < 0:
                for j in range(start[node], start[node] + count[node]):
                    d2 = _pt_tri_d2(q, _vtx(tris, j, 0), _vtx(tris, j, 1), _vtx(tris, j, 2))
                    if d2 < best2:
                        best2 = d2
            else:
                if sp + 2 > stack.shape[0]:
                    s2 = np.empty(2 * stack.shape[0], np.int64)
                    s2[:sp] = stack[:sp]
                    stack = s2
                stack[sp] = left[node]
                stack[sp + 1] = right[node]
                sp += 2
        out[i] = math.sqrt(best2)
    return out


_RAYS = np.array([[0.48018, 0.62402, 0.61640], [-0.70711, 0.31623, 0.63246], [0.26726, -0.80178, 0.53452]])
_RAYS = _RAYS / np.linalg.norm(_RAYS, axis=1, keepdims=True)


@_njit
def _ray_hits(lo, hi, left, right, start, count, tris, q, d, stack):
    """Number of triangles the ray q + s d (s > 0) crosses."""
    hits = 0
    inv = (1.0 / d[0] if d[0] != 0.0 else np.inf, 1.0 / d[1] if d[1] != 0.0 else np.inf,
           1.0 / d[2] if d[2] != 0.0 else np.inf)
    sp = 1
    stack[0] = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        t0 = 0.0
        t1 = np.inf
        for k in range(3):
            a = (lo[node, k] - q[k]) * inv[k]
            b = (hi[node, k] - q[k]) * inv[k]
            if a > b:
                a, b = b, a
            t0 = max(t0, a)
            t1 = min(t1, b)
        if t0 > t1:
            continue
        if left[node] < 0:
            for j in range(start[node], start[node] + count[node]):
                a0 = _vtx(tris, j, 0)
                e1 = _sub(_vtx(tris, j, 1), a0)
                e2 = _sub(_vtx(tris, j, 2), a0)
                h = _cross(d, e2)
                det = _dot(e1, h)
                if det == 0.0:
                    continue
                f = 1.0 / det
                s = _sub(q, a0)
                u = f * _dot(s, h)
                if u < 0.0 or u > 1.0:
                    continue
                qv = _cross(s, e1)
                v = f * _dot(d, qv)
                if v < 0.0 or u + v > 1.0:
                    continue
                if f * _dot(e2, qv) > 0.0:
                    hits += 1
        else:
            stack[sp] = left[node]
            stack[sp + 1] = right[node]
            sp += 2
    return hits


@_njit
def _inside(lo, hi, left, right, start, count, tris, pts, rays):
    """Inside a closed mesh, by the parity of ray crossings (majority of three directions)."""
    n = pts.shape[0]
    out = np.zeros(n, np.bool_)
    stack = np.empty(2 * lo.shape[0] + 2, np.int64)
    for i in range(n):
        q = (pts[i, 0], pts[i, 1], pts[i, 2])
        votes = 0
        for r in range(rays.shape[0]):
            d = (rays[r, 0], rays[r, 1], rays[r, 2])
            votes += _ray_hits(lo, hi, left, right, start, count, tris, q, d, stack) % 2
        out[i] = 2 * votes > rays.shape[0]
    return out


# ============================================================================ geometry

#: factor on the chord error BRepMesh reports for a face, to bound the mesh-to-surface distance
DEFLECTION_SAFETY = 1.5
#: surface nodes classified per part when looking for a contact witness
WITNESS_NODES = 16
#: deepest candidate nodes whose depth is measured exactly
DEPTH_NODES = 3
#: levels of interval halving used to prove that no contact was skipped between two samples
GUARD_LEVELS = 4


class _NoGeometry(Exception):
    pass


def _trsf(R, p):
    from OCP.gp import gp_Trsf

    T = gp_Trsf()
    T.SetValues(R[0, 0], R[0, 1], R[0, 2], p[0],
                R[1, 0], R[1, 1], R[1, 2], p[1],
                R[2, 0], R[2, 1], R[2, 2], p[2])
    return T


class _Geometry:
    """One distinct shape, prepared once, in its part frame (metres).

    Attributes: ``lo``/``hi`` exact box; ``centre``, ``half``, ``rho`` (half diagonal),
    ``r0`` (largest distance of the box from the frame origin); ``bvh`` and ``tris``
    (sorted), per-triangle chord error ``tdel`` and face ``fid``, per-node largest chord
    error ``ndel``; per face (``faces``) planarity ``fpl`` and plane ``fn``/``fo``;
    ``nodes`` (mesh nodes, points of the exact surface); ``dmax`` the largest chord error.
    """

    def __init__(self, shape):
        from OCP.Bnd import Bnd_Box
        from OCP.BRepBndLib import BRepBndLib
        from OCP.TopAbs import TopAbs_SOLID
        from OCP.TopExp import TopExp_Explorer

        if shape is None or shape.IsNull():
            raise _NoGeometry
        self.shape = shape
        box = Bnd_Box()
        BRepBndLib.AddOptimal_s(shape, box, False, False)
        if box.IsVoid():
            raise _NoGeometry
        x0, y0, z0, x1, y1, z1 = box.Get()
        self.lo = np.array([x0, y0, z0])
        self.hi = np.array([x1, y1, z1])
        self.centre = 0.5 * (self.lo + self.hi)
        self.half = 0.5 * (self.hi - self.lo)
        self.rho = float(np.linalg.norm(self.half))
        corners = np.array([[a, b, c] for a in (x0, x1) for b in (y0, y1) for c in (z0, z1)])
        self.r0 = float(np.max(np.linalg.norm(corners, axis=1)))
        self._mesh(float(np.linalg.norm(self.hi - self.lo)))
        if len(self.tris) == 0:
            raise _NoGeometry
        self.has_solid = TopExp_Explorer(shape, TopAbs_SOLID).More()
        self.cmp = as_compound(shape)
        self._classifier = None
        self._dss = None

    def _mesh(self, diag):
        from OCP.BRep import BRep_Tool
        from OCP.BRepAdaptor import BRepAdaptor_Curve, BRepAdaptor_Surface
        from OCP.BRepMesh import BRepMesh_IncrementalMesh
        from OCP.GeomAbs import GeomAbs_Line, GeomAbs_Plane
        from OCP.TopAbs import TopAbs_EDGE
        from OCP.TopExp import TopExp_Explorer
        from OCP.TopoDS import TopoDS

        from .writers.tessellate import ANGULAR_DEFLECTION, LINEAR_DEFLECTION, triangulated_faces

        # the writers' parameters, so the triangulation stored in the shape is shared
        requested = max(LINEAR_DEFLECTION * diag, 1e-9)
        BRepMesh_IncrementalMesh(self.shape, requested, False, ANGULAR_DEFLECTION, True)
        tris, fids, tdels, nodes, faces = [], [], [], [], []
        fpl, fn, fo = [], [], []
        for tf in triangulated_faces(self.shape):
            face, tri, loc, P, ij = tf.face, tf.triangulation, tf.location, tf.nodes, tf.triangles
            nv, nf = len(P), len(ij)
            surface = BRepAdaptor_Surface(face)
            planar = surface.GetType() == GeomAbs_Plane
            # chord errors: of the face (curved faces), of its boundary polygons (per segment)
            seg_keys, seg_del = [], []
            edge_del = 0.0
            unknown = False  # a curved edge without its polygon: fall back to the requested value
            edges = TopExp_Explorer(face, TopAbs_EDGE)
            while edges.More():
                edge = TopoDS.Edge_s(edges.Current())
                edges.Next()
                poly = BRep_Tool.PolygonOnTriangulation_s(edge, tri, loc)
                if poly is None:
                    unknown = unknown or (not BRep_Tool.Degenerated_s(edge)
                                          and BRepAdaptor_Curve(edge).GetType() != GeomAbs_Line)
                    continue
                if poly.Deflection() <= 0.0:
                    continue
                edge_del = max(edge_del, poly.Deflection())
                idx = np.array([poly.Node(i) for i in range(1, poly.NbNodes() + 1)], np.int64) - 1
                lo_, hi_ = np.minimum(idx[:-1], idx[1:]), np.maximum(idx[:-1], idx[1:])
                seg_keys.append(lo_ * nv + hi_)
                seg_del.append(np.full(len(lo_), poly.Deflection()))
            if planar and unknown:
                tdel = np.full(nf, max(requested, edge_del))
            elif planar:
                tdel = np.zeros(nf)
                if seg_keys:
                    keys = np.concatenate(seg_keys)
                    vals = np.concatenate(seg_del)
                    order = np.argsort(keys)
                    keys, vals = keys[order], vals[order]
                    for e0, e1 in ((0, 1), (1, 2), (2, 0)):
                        k = np.minimum(ij[:, e0], ij[:, e1]) * nv + np.maximum(ij[:, e0], ij[:, e1])
                        pos = np.clip(np.searchsorted(keys, k), 0, len(keys) - 1)
                        hit = keys[pos] == k
                        tdel = np.where(hit, np.maximum(tdel, vals[pos]), tdel)
            else:
                face_del = tri.Deflection() if tri.Deflection() > 0.0 else requested
                tdel = np.full(nf, max(face_del, edge_del, requested if unknown else 0.0))
            if planar:
                plane = surface.Plane()
                n = np.array(plane.Axis().Direction().Coord())
                o = float(n @ np.array(plane.Location().Coord()))
            else:
                n, o = np.zeros(3), 0.0
            f = len(faces)
            faces.append(face)
            fpl.append(1 if planar else 0)
            fn.append(n)
            fo.append(o)
            tris.append(P[ij])
            tdels.append(DEFLECTION_SAFETY * tdel)
            fids.append(np.full(len(ij), f, np.int64))
            nodes.append(P)
        self.faces = faces
        self._compounds = {}
        if not tris:
            self.tris = np.zeros((0, 3, 3))
            return
        tris = np.ascontiguousarray(np.concatenate(tris))
        lo, hi, left, right, start, count, order = _bvh_build(tris)
        self.tris = np.ascontiguousarray(tris[order])
        self.tdel = np.ascontiguousarray(np.concatenate(tdels)[order])
        self.fid = np.ascontiguousarray(np.concatenate(fids)[order])
        self.bvh = (lo, hi, left, right, start, count)
        self.ndel = _node_delta(left, right, start, count, self.tdel)
        self.fpl = np.array(fpl, np.int8)
        self.fn = np.array(fn, float).reshape(-1, 3)
        self.fo = np.array(fo, float)
        self.dmax = float(self.tdel.max())
        self.nodes = np.ascontiguousarray(np.unique(np.concatenate(nodes), axis=0))

    def faces_compound(self, indices):
        """A compound of some faces (indices into :attr:`faces`), cached."""
        key = tuple(sorted(set(int(i) for i in indices)))
        comp = self._compounds.get(key)
        if comp is None:
            from OCP.BRep import BRep_Builder
            from OCP.TopoDS import TopoDS_Compound

            comp = TopoDS_Compound()
            builder = BRep_Builder()
            builder.MakeCompound(comp)
            for i in key:
                builder.Add(comp, self.faces[i])
            if len(self._compounds) < 4096:
                self._compounds[key] = comp
        return comp

    @property
    def samples(self):
        """Points on the mesh (nodes and a grid on every triangle, spacing about 1/16 of the
        box diagonal), for the depth estimate; within the chord error of the exact surface."""
        if getattr(self, "_samples", None) is None:
            spacing = max(np.linalg.norm(self.hi - self.lo) / 16.0, 1e-12)
            T = self.tris
            edge = np.max(np.linalg.norm(T - T[:, [1, 2, 0]], axis=2), axis=1)
            n = np.clip(np.ceil(edge / spacing).astype(np.int64), 1, 12)
            pts = [self.nodes]
            for k in np.unique(n):
                if k < 2:
                    continue
                i, j = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
                keep = (i + j <= k) & ~((i == 0) & (j == 0)) & (i != k) & (j != k)
                u, v = i[keep] / k, j[keep] / k
                Tk = T[n == k]
                P = (Tk[:, None, 0] * (1 - u - v)[None, :, None] + Tk[:, None, 1] * u[None, :, None]
                     + Tk[:, None, 2] * v[None, :, None])
                pts.append(P.reshape(-1, 3))
            self._samples = np.ascontiguousarray(np.concatenate(pts))
        return self._samples

    # -- exact tools (lazy) ---------------------------------------------------------------

    @property
    def classifier(self):
        """OCCT's solid classifier of the shape (None when it has no solid)."""
        if self._classifier is None and self.has_solid:
            from OCP.BRepClass3d import BRepClass3d_SolidClassifier

            self._classifier = BRepClass3d_SolidClassifier(self.shape)
        return self._classifier

    @property
    def dss(self):
        """A BRepExtrema_DistShapeShape with this shape loaded first (its boxes are kept)."""
        if self._dss is None:
            from OCP.BRepExtrema import BRepExtrema_DistShapeShape
            from OCP.Extrema import Extrema_ExtFlag_MIN

            self._dss = BRepExtrema_DistShapeShape()
            self._dss.SetFlag(Extrema_ExtFlag_MIN)
            self._dss.LoadS1(self.cmp)  # a compound: no costly inside test of every vertex
        return self._dss

    def mesh_args(self):
        return self.bvh + (self.ndel, self.tris, self.tdel, self.fid, self.fpl, self.fn, self.fo)

    def classify(self, points, tol):
        """OCCT states of points (part frame): 'in', 'on' or 'out'."""
        from OCP.gp import gp_Pnt
        from OCP.TopAbs import TopAbs_IN, TopAbs_ON

        cls = self.classifier
        out = []
        for q in points:
            cls.Perform(gp_Pnt(float(q[0]), float(q[1]), float(q[2])), tol)
            state = cls.State()
            out.append("in" if state == TopAbs_IN else "on" if state == TopAbs_ON else "out")
        return out

    def point_distance(self, q):
        """Exact distance from a point (part frame) to the boundary of the shape."""
        from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
        from OCP.gp import gp_Pnt

        dss = self.dss
        dss.LoadS2(BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, q))).Vertex())
        dss.Perform()
        return float(dss.Value()) if dss.IsDone() else math.inf

    def surface_point(self, q):
        """The point of the exact surface nearest to ``q`` (part frame), or None."""
        from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
        from OCP.gp import gp_Pnt

        dss = self.dss
        dss.LoadS2(BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, q))).Vertex())
        dss.Perform()
        if not dss.IsDone() or dss.NbSolution() == 0:
            return None
        return np.array(dss.PointOnShape1(1).Coord())


# ============================================================================ report


@dataclass(frozen=True)
class PairInterference:
    """What was found for one pair of parts.

    Attributes
    ----------
    parts : (name_a, name_b)
    kind : ``"penetration"`` (the parts overlap), ``"contact"`` (they touch), ``"clearance"``
        (closer than the threshold but not touching) or ``"near"`` (within ``near``, no
        violation).
    first_time : float or None
        s; the first time the pair is closer than its threshold (None for ``near``).
    min_distance : float
        m; the smallest exact distance over the motion (0 when touching or overlapping).
    min_distance_time : float
        s; when it occurs (the first time of contact when it is 0).
    depth : float
        m; the largest penetration depth found (see the module docstring), 0 unless
        ``kind == "penetration"``.
    depth_time : float or None
        s; when that depth was found.
    threshold : float
        m; the clearance the pair was checked against.
    joints : tuple of str
        Joints that connect the two parts (pairs with joints are checked only with
        ``exclude_jointed=False``).
    moving : bool
        False when the two parts keep the same relative pose over the whole motion.
    message : str
        One readable line.
    """

    parts: Tuple[str, str]
    kind: str
    first_time: Optional[float]
    min_distance: float
    min_distance_time: float
    depth: float = 0.0
    depth_time: Optional[float] = None
    threshold: float = 0.0
    joints: Tuple[str, ...] = ()
    moving: bool = True
    message: str = ""

    def to_dict(self):
        """A JSON-friendly dict (lists instead of tuples)."""
        d = asdict(self)
        d["parts"] = list(self.parts)
        d["joints"] = list(self.joints)
        return d


@dataclass
class InterferenceReport:
    """Result of :func:`find_interference`.

    Attributes
    ----------
    collisions : pairs closer than their threshold along the motion (moving pairs, and
        static pairs when ``check_static``), ordered by first time.
    near : pairs that came within ``near`` without violating their threshold.
    static : pairs that never move relative to each other and touch or overlap (checked at
        the first frame; not collisions unless ``check_static``).
    skipped : parts without geometry (not checked).
    stats : counts (``parts`` with geometry, ``shapes`` distinct, ``frames``, ``pairs``,
        ``pairs_excluded`` (jointed or ignored), ``pairs_static``, ``pairs_moving``,
        ``candidates`` (pair-intervals kept by the broad phase), ``mesh_queries``,
        ``exact_distances`` (OCCT distance calls), ``classifications`` (OCCT point
        classifications), ``unproven_intervals``) and seconds (``seconds_prepare``,
        ``seconds_broad``, ``seconds_narrow``, ``seconds_total``).
    messages : notes for the user.
    """

    collisions: List[PairInterference] = field(default_factory=list)
    near: List[PairInterference] = field(default_factory=list)
    static: List[PairInterference] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    stats: Dict[str, float] = field(default_factory=dict)
    messages: List[str] = field(default_factory=list)

    @property
    def collides(self):
        """True when any pair violates its threshold."""
        return bool(self.collisions)

    @property
    def first(self):
        """The earliest collision, or None."""
        return self.collisions[0] if self.collisions else None

    def pair(self, a, b):
        """The entry for parts ``a`` and ``b`` (either order) in any list; KeyError if none."""
        for p in self.collisions + self.near + self.static:
            if set(p.parts) == {a, b}:
                return p
        raise KeyError(f"no interference entry for {a!r} and {b!r}")

    def to_dicts(self):
        """The collisions as JSON-friendly dicts (what ``CheckReport.collisions`` holds)."""
        return [p.to_dict() for p in self.collisions]

    def to_dict(self):
        return dict(collisions=self.to_dicts(), near=[p.to_dict() for p in self.near],
                    static=[p.to_dict() for p in self.static], skipped=list(self.skipped),
                    stats=dict(self.stats), messages=list(self.messages))

    def summary(self):
        """Readable lines: one per collision, then near and static pairs."""
        lines = []
        if self.collisions:
            lines.append(f"interference: {len(self.collisions)} colliding pair(s)")
            lines += ["  " + p.message for p in self.collisions]
        else:
            lines.append("interference: no collisions")
        if self.near:
            lines.append(f"close pairs ({len(self.near)}):")
            lines += ["  " + p.message for p in self.near]
        if self.static:
            lines.append(f"{len(self.static)} pair(s) touch without moving relative to each other "
                         "(fastened; not counted)")
        lines += self.messages
        return "\n".join(lines)


def _mm(x):
    return f"{1e3 * x:.4g} mm"


# ============================================================================ poses


class _Poses:
    """Poses of the parts at the output frames (from the Motion) and between them (Motion.pose)."""

    def __init__(self, motion):
        self.motion = motion
        self.names = list(motion.parts)
        self.t = np.asarray(motion.time, float)
        q = np.asarray(motion.quaternion, float)
        self.q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        self.R = quat_to_matrix(self.q)
        self.p = np.asarray(motion.position, float)
        self.v = np.asarray(motion.velocity, float)

    @property
    def nt(self):
        return len(self.t)

    def rel(self, a, b, k):
        """Pose (R, p) of part b in part a's frame at frame k."""
        Ra = self.R[k, a]
        return Ra.T @ self.R[k, b], Ra.T @ (self.p[k, b] - self.p[k, a])

    def rel_t(self, a, b, t):
        """Pose (R, p) of part b in part a's frame at time t on the interpolated motion."""
        Xa = self.motion.pose(self.names[a], t)
        Xb = self.motion.pose(self.names[b], t)
        Ra = Xa[:3, :3]
        return Ra.T @ Xb[:3, :3], Ra.T @ (Xb[:3, 3] - Xa[:3, 3])

    def boxes(self, centre, half):
        """World boxes (lo, hi), shape (nt, nb, 3), of part boxes given in part frames."""
        C = np.einsum("kbij,bj->kbi", self.R, centre) + self.p
        H = np.einsum("kbij,bj->kbi", np.abs(self.R), half)
        return C - H, C + H

    def interval_bounds(self, centre, rho, r0):
        """Per frame interval and part: deviation of the interpolated motion from the chord
        (m, bounds how far the part leaves the union of its end boxes) and the largest
        speed of any point of the part (m/s). Shapes (nt-1, nb).

        Positions follow the cubic Hermite curve of Motion.pose: its deviation from the
        chord is at most max(|h v0 - dp|, |h v1 - dp|)/4, and its velocity lies in the
        convex hull of the Bezier control velocities v0, 3 dp/h - v0 - v1, v1. Orientations
        follow slerp, a rotation by theta about a fixed axis at constant rate theta/h.
        """
        t, p, v, q, R = self.t, self.p, self.v, self.q, self.R
        h = np.diff(t)[:, None]
        hs = np.where(h > 0, h, 1.0)
        dp = p[1:] - p[:-1]
        hv0 = v[:-1] * h[..., None]
        hv1 = v[1:] * h[..., None]
        dev_t = 0.25 * np.maximum(np.linalg.norm(hv0 - dp, axis=-1), np.linalg.norm(hv1 - dp, axis=-1))
        q0, q1 = q[:-1], q[1:]
        dots = np.clip(np.abs(np.sum(q0 * q1, axis=-1)), 0.0, 1.0)
        theta = 2.0 * np.arccos(dots)
        dev = dev_t + r0[None, :] * (1.0 - np.cos(0.5 * theta))
        # rotation axis of q0^-1 q1 in the body, then in the world
        w0, x0 = q0[..., :1], q0[..., 1:]
        w1, x1 = q1[..., :1], q1[..., 1:]
        vec = w0 * x1 - w1 * x0 - np.cross(x0, x1)   # vector part of conj(q0) * q1
        sgn = np.sign(np.sum(q0 * q1, axis=-1, keepdims=True))
        vec = vec * np.where(sgn == 0, 1.0, sgn)
        nv = np.linalg.norm(vec, axis=-1, keepdims=True)
        axis_b = np.divide(vec, nv, out=np.zeros_like(vec), where=nv > 1e-300)
        axis_w = np.einsum("kbij,kbj->kbi", R[:-1], axis_b)
        omega = axis_w * (theta / hs)[..., None]
        wc = np.einsum("kbij,bj->kbi", R[:-1], centre)
        k = np.cross(omega, wc)
        cv = (v[:-1], 3.0 * dp / hs[..., None] - v[:-1] - v[1:], v[1:])
        vmax = np.max([np.linalg.norm(c + k, axis=-1) for c in cv], axis=0)
        om = theta / hs
        speed = vmax + om * (np.linalg.norm(centre, axis=-1)[None, :] * theta + rho[None, :])
        return dev, np.where(h > 0, speed, 0.0)


def _rigid_groups(poses, scale, tol):
    """Group index per part: parts with the same displacement X(t) X(t0)^-1 at every frame."""
    R, p = poses.R, poses.p
    Rd = np.einsum("kbij,blj->kbil", R, R[0])
    td = p - np.einsum("kbil,bl->kbi", Rd, p[0])
    nt, nb = p.shape[:2]
    feat = np.concatenate([Rd.reshape(nt, nb, 9) * scale, td], axis=-1).transpose(1, 0, 2).reshape(nb, -1)
    group = np.full(nb, -1, np.int64)
    reps = []
    for b in range(nb):
        if reps:
            diff = np.max(np.abs(feat[reps] - feat[b]), axis=1)
            j = int(np.argmin(diff))
            if diff[j] <= tol:
                group[b] = group[reps[j]]
                continue
        group[b] = len(reps)
        reps.append(b)
    return group


def _obb_separated(Ra, ca, ha, Rb, cb, hb):
    """Separating-axis test of oriented boxes (world rotations R, centres c, half sizes h),
    vectorised over the first axis; True where they are certainly apart."""
    T = cb - ca
    t = np.einsum("eji,ej->ei", Ra, T)           # in A's axes
    M = np.einsum("eji,ejk->eik", Ra, Rb)        # B's axes in A's axes
    A = np.abs(M) + 1e-12
    sep = np.zeros(len(T), bool)
    for i in range(3):
        sep |= np.abs(t[:, i]) > ha[:, i] + np.sum(hb * A[:, i, :], axis=1)
    for j in range(3):
        sep |= np.abs(np.sum(t * M[:, :, j], axis=1)) > np.sum(ha * A[:, :, j], axis=1) + hb[:, j]
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            ra = ha[:, i1] * A[:, i2, j] + ha[:, i2] * A[:, i1, j]
            rb = hb[:, j1] * A[:, i, j2] + hb[:, j2] * A[:, i, j1]
            tl = t[:, i2] * M[:, i1, j] - t[:, i1] * M[:, i2, j]
            sep |= np.abs(tl) > ra + rb
    return sep


# ============================================================================ narrow phase


@dataclass
class _Sample:
    t: float
    lb: float
    ub: float
    dm: float
    ia: int
    ib: int
    violation: bool
    touch: Optional[bool] = None
    depth: Optional[float] = None


class _Context:
    def __init__(self, poses, tol, time_tol, depth_samples):
        self.poses = poses
        self.tol = tol
        self.time_tol = time_tol
        self.depth_samples = depth_samples
        self.stats = dict(mesh_queries=0, exact_distances=0, classifications=0,
                          unproven_intervals=0)


class _PairCheck:
    """Narrow phase of one pair of parts (a, b): everything is computed in a's part frame."""

    def __init__(self, ctx, a, b, ga, gb, c, margin):
        self.ctx = ctx
        self.a, self.b = a, b
        self.ga, self.gb = ga, gb
        self.c = c
        self.margin = margin
        tol = ctx.tol
        self.lim = c + tol if c >= 0 else tol  # violation possible only when d <= lim
        self.cap = max(margin, self.lim) + 1e-12  # lower bounds are searched up to here

    # -- exact and mesh tools ---------------------------------------------------------------

    def bounds(self, R, p, cap, stop=-1.0):
        """(lb, ub, dm, ia, ib) from the meshes (see :func:`_mesh_bounds`)."""
        self.ctx.stats["mesh_queries"] += 1
        return _mesh_bounds(*self.ga.mesh_args(), *self.gb.mesh_args(), R, p, float(cap),
                            float(stop), 0.0)[:5]

    def exact(self, R, p, ub=None):
        """Exact distance between the boundaries (BRepExtrema_DistShapeShape).

        With ``ub`` (an upper bound of the distance) only the faces that may come that close
        are handed to OCCT: the faces of triangle pairs whose lower bound is at most ``ub``.
        """
        from OCP.TopLoc import TopLoc_Location

        self.ctx.stats["exact_distances"] += 1
        loc = TopLoc_Location(_trsf(R, p))
        if ub is not None and np.isfinite(ub):
            self.ctx.stats["mesh_queries"] += 1
            pairs = _mesh_bounds(*self.ga.mesh_args(), *self.gb.mesh_args(), R, p, float(ub) + 1e-12,
                                 -1.0, float(ub) + 1e-12)[5]
            if len(pairs) and len(set(pairs[:, 0])) < len(self.ga.faces):
                from OCP.BRepExtrema import BRepExtrema_DistShapeShape
                from OCP.Extrema import Extrema_ExtFlag_MIN

                dss = BRepExtrema_DistShapeShape()
                dss.SetFlag(Extrema_ExtFlag_MIN)
                dss.LoadS1(self.ga.faces_compound(pairs[:, 0]))
                dss.LoadS2(self.gb.faces_compound(pairs[:, 1]).Located(loc))
                dss.Perform()
                if dss.IsDone():
                    return float(dss.Value())
        dss = self.ga.dss
        dss.LoadS2(self.gb.cmp.Located(loc))
        dss.Perform()
        return float(dss.Value()) if dss.IsDone() else math.inf

    def _sides(self, R, p):
        """(X, Y, R, p): part Y moved into part X's frame, for both orders."""
        Rt = R.T
        return ((self.ga, self.gb, R, p), (self.gb, self.ga, Rt, -Rt @ p))

    def _nodes_in_box(self, X, Y, R, p, grow):
        P = Y.nodes @ R.T + p
        m = np.all((P >= X.lo - grow) & (P <= X.hi + grow), axis=1)
        return P[m]

    def witness(self, R, p):
        """True when a surface node of one part lies in or on the other (exact classifier)."""
        tol = self.ctx.tol
        for X, Y, R_, p_ in self._sides(R, p):
            if X.classifier is None:
                continue
            P = self._nodes_in_box(X, Y, R_, p_, X.dmax + tol)
            if not len(P):
                continue
            u = _points_distance(*X.bvh, X.tris, P, X.dmax + tol + 1e-300)
            order = np.argsort(u)
            near = order[u[order] <= X.dmax + tol][:WITNESS_NODES]
            self.ctx.stats["classifications"] += len(near)
            if any(s != "out" for s in X.classify(P[near], tol)):
                return True
            # nodes well inside the other mesh (beyond its chord error) are inside the solid
            far = order[u[order] > X.dmax + tol]
            if len(far):
                far = far[:: max(1, len(far) // 64)][:64]
                inside = far[_inside(*X.bvh, X.tris, np.ascontiguousarray(P[far]), _RAYS)]
                if len(inside):
                    self.ctx.stats["classifications"] += 1
                    if X.classify(P[inside[:1]], tol)[0] == "in":
                        return True
        return False

    def contained(self, R, p):
        """True when one part lies entirely inside the other (their surfaces apart)."""
        tol = self.ctx.tol
        for X, Y, R_, p_ in self._sides(R, p):
            if X.classifier is None:
                continue
            c = R_ @ Y.centre + p_
            h = np.abs(R_) @ Y.half
            if np.all(c - h >= X.lo - tol) and np.all(c + h <= X.hi + tol):
                self.ctx.stats["classifications"] += 1
                q = R_ @ Y.nodes[0] + p_
                if X.classify([q], tol)[0] == "in":
                    return True
        return False

    def touching(self, R, p, lb=None, ub=None):
        """Exact decision: is the distance at most tol (touching, overlapping or contained)?"""
        tol = self.ctx.tol
        if lb is None:
            lb, ub, _, _, _ = self.bounds(R, p, cap=2 * tol + 1e-12, stop=tol)
        if ub <= tol:
            return True
        if lb > tol:
            return self.contained(R, p)
        if self.witness(R, p):
            return True
        return self.exact(R, p, ub) <= tol or self.contained(R, p)

    def depth(self, R, p):
        """Penetration depth estimate (module docstring): deepest surface point of one part
        inside the other, measured to the other's boundary."""
        tol = self.ctx.tol
        best = 0.0
        for X, Y, R_, p_ in self._sides(R, p):
            if X.classifier is None:
                continue
            S = Y.samples @ R_.T + p_
            S = S[np.all((S >= X.lo) & (S <= X.hi), axis=1)]
            if not len(S):
                continue
            u = _points_distance(*X.bvh, X.tris, S, np.inf)
            order = np.argsort(-u)
            order = order[u[order] > max(tol, best - X.dmax)]
            found = []
            for start in range(0, len(order), 512):
                chunk = order[start:start + 512]
                found += list(chunk[_inside(*X.bvh, X.tris, np.ascontiguousarray(S[chunk]), _RAYS)])
                if len(found) >= DEPTH_NODES:
                    break
            Rt = R_.T
            for i in found[:DEPTH_NODES]:
                y = Y.surface_point(Rt @ (S[i] - p_))   # the nearest point of Y's exact surface
                q = S[i] if y is None else R_ @ y + p_
                self.ctx.stats["classifications"] += 1
                if X.classify([q], tol)[0] != "in":
                    continue
                self.ctx.stats["exact_distances"] += 1
                best = max(best, X.point_distance(q))
        return best

    def value(self, R, p, s):
        """Exact distance at a sample (m): from the mesh witnesses when they pin it, else exact."""
        tol = self.ctx.tol
        if s.ia >= 0 and np.isfinite(s.dm) and s.dm > 0:
            A = self.ga.tris[s.ia]
            B = self.gb.tris[s.ib] @ R.T + p
            xa, xb = _tri_tri_closest(*(tuple(v) for v in A), *(tuple(v) for v in B))
            ya = self.ga.surface_point(np.array(xa))
            yb = self.gb.surface_point(R.T @ (np.array(xb) - p))
            if ya is not None and yb is not None:
                ub = float(np.linalg.norm(ya - (R @ yb + p)))
                if ub - s.lb <= max(tol, 1e-6 * ub):
                    return ub
        return self.exact(R, p, s.ub)

    # -- samples --------------------------------------------------------------------------------

    def sample(self, t, R, p):
        """Decide at one pose whether the pair violates its threshold."""
        tol, c = self.ctx.tol, self.c
        lim = self.lim
        lb, ub, dm, ia, ib = self.bounds(R, p, cap=self.cap, stop=lim if c >= 0 else tol)
        s = _Sample(t, lb, ub, dm, ia, ib, False)
        if c >= 0:
            if ub <= lim:  # (the search stopped there: lb is not a bound)
                s.violation, s.lb = True, 0.0
                s.touch = True if ub <= tol else None
            elif lb > lim:
                s.violation = s.touch = self.contained(R, p)
            elif dm <= 0.0 and self.witness(R, p):  # meshes touch: look for a node in contact
                s.violation = s.touch = True
            else:
                d = self.exact(R, p, ub)
                s.lb = s.ub = d
                inside = d > lim and self.contained(R, p)
                s.violation = d <= lim or inside
                s.touch = d <= tol or inside
            if s.touch:
                s.lb = 0.0
        else:
            s.touch = self.touching(R, p, lb, ub)
            if s.touch:
                s.lb = 0.0
                s.depth = self.depth(R, p)
                s.violation = s.depth > -c - tol
        return s

    def sample_frame(self, k):
        R, p = self.ctx.poses.rel(self.a, self.b, k)
        return self.sample(float(self.ctx.poses.t[k]), R, p)

    def sample_time(self, t):
        R, p = self.ctx.poses.rel_t(self.a, self.b, t)
        return self.sample(t, R, p)

    def scan(self, s0, s1, speed, level=0, quiet=None):
        """First violation in (s0.t, s1.t] when s0 is clear: a bracket (s_clear, s_viol) or None.

        Without a violation at s1 the interval is clear when the distance cannot drop below
        the threshold: d(t) >= max(lb0 - v (t - t0), lb1 - v (t1 - t)) >= (lb0 + lb1 - v h)/2.
        Intervals that cannot be proven are counted, except next to a violation found
        (there the distance is small by nature; they are narrower than h / 2**GUARD_LEVELS).
        """
        if quiet is None:
            quiet = s1.violation
        if not s1.violation:
            room = 0.5 * (s0.lb + s1.lb) - self.lim
            move = speed * (s1.t - s0.t)
            if room > 0.5 * move:
                return None
            # halving proves the interval after log2(move / (2 room)) levels if the lower
            # bounds stay as large in between; do not try when that needs more than the
            # levels left (with a factor 2 to spare: the bounds in between are smaller)
            if room <= 0 or move > room * 2.0 ** (GUARD_LEVELS - level):
                if not quiet:
                    self.ctx.stats["unproven_intervals"] += 1
                return None
        elif level >= GUARD_LEVELS:
            return s0, s1
        sm = self.sample_time(0.5 * (s0.t + s1.t))
        if sm.violation:
            return self.scan(s0, sm, speed, level + 1, quiet)
        return (self.scan(s0, sm, speed, level + 1, quiet)
                or self.scan(sm, s1, speed, level + 1, quiet))

    def refine(self, s0, s1):
        """Bisection between a clear and a violating sample to the time tolerance.

        Returns (s0, s1, t): ``t`` is the time the distance reaches the threshold, from a
        secant through exact distances just before ``s0`` (the bisection alone finds where
        it reaches threshold + tol, about tol / closing speed earlier)."""
        poses = self.ctx.poses
        while s1.t - s0.t > self.ctx.time_tol:
            sm = self.sample_time(0.5 * (s0.t + s1.t))
            if sm.violation:
                s1 = sm
            else:
                s0 = sm
        t_first = 0.5 * (s0.t + s1.t)
        if self.c >= 0:
            step = max(1e3 * self.ctx.time_tol, s1.t - s0.t)
            ta = max(s0.t - step, float(poses.t[0]))
            if ta < s0.t:
                R0, p0 = poses.rel_t(self.a, self.b, s0.t)
                d0 = self.value(R0, p0, s0)
                sa = self.sample_time(ta)
                Ra, pa = poses.rel_t(self.a, self.b, ta)
                da = self.value(Ra, pa, sa)
                rate = (da - d0) / (s0.t - ta)
                if rate > 0 and d0 >= self.c:
                    t_secant = s0.t + (d0 - self.c) / rate
                    if t_secant <= s1.t + 2.0 * self.ctx.tol / rate:
                        t_first = t_secant
        return s0, s1, t_first

    # -- whole motion ---------------------------------------------------------------------------

    def min_distance(self, samples):
        """Exact minimum distance over non-violating samples, refined between frames.

        Returns (d, t). The frames whose lower bound is below the best upper bound are
        evaluated exactly (at most three); the best is refined on the interpolated motion by a
        bounded scalar minimisation of the mesh distance and evaluated exactly there.
        """
        poses = self.ctx.poses
        full = []
        for s in samples:  # bounds of a full search (a sample may have stopped at its threshold)
            R, p = poses.rel_t(self.a, self.b, s.t)
            lb, ub, dm, ia, ib = self.bounds(R, p, cap=self.cap)
            if np.isfinite(ub):
                full.append(_Sample(s.t, lb, ub, dm, ia, ib, s.violation, s.touch))
        samples = full
        if not samples:
            return math.inf, None
        best_ub = min(s.ub for s in samples)
        cands = sorted((s for s in samples if s.lb <= best_ub), key=lambda s: s.lb)[:3]
        best = (math.inf, None)
        for s in cands:
            R, p = poses.rel_t(self.a, self.b, s.t)
            d = self.value(R, p, s)
            if d < best[0]:
                best = (d, s.t)
        t_best = best[1]
        if t_best is None or poses.nt < 2:
            return best
        t = poses.t
        k = int(np.searchsorted(t, t_best))
        lo_t, hi_t = t[max(k - 1, 0)], t[min(k + 1, len(t) - 1)]
        if hi_t - lo_t <= self.ctx.time_tol:
            return best
        from scipy.optimize import minimize_scalar

        def f(tt):
            R, p = poses.rel_t(self.a, self.b, tt)
            return self.bounds(R, p, cap=np.inf)[2]

        res = minimize_scalar(f, bounds=(lo_t, hi_t), method="bounded",
                              options=dict(xatol=max(self.ctx.time_tol, 1e-9 * (hi_t - lo_t))))
        if res.success and abs(res.x - t_best) > self.ctx.time_tol:
            R, p = poses.rel_t(self.a, self.b, float(res.x))
            lb, ub, dm, ia, ib = self.bounds(R, p, cap=np.inf)
            if lb < best[0]:
                d = self.value(R, p, _Sample(float(res.x), lb, ub, dm, ia, ib, False))
                if d < best[0]:
                    best = (d, float(res.x))
        return best

    def depth_over(self, t_first, times):
        """Largest depth (depth, time) over the given times where the parts touch.

        When the parts no longer touch at the first of ``times`` after ``t_first`` (a contact
        shorter than a frame step, e.g. a part passing through another between frames), the
        end of that contact is found by bisection and the depth sampled inside it as well.
        """
        poses = self.ctx.poses
        best = (0.0, None)
        touch = {}
        for tt in times:
            R, p = poses.rel_t(self.a, self.b, tt)
            touch[tt] = self.touching(R, p)
            if not touch[tt]:
                continue
            d = self.depth(R, p)
            if d > best[0]:
                best = (d, tt)
        later = [tt for tt in times if tt > t_first]
        if later and not touch[later[0]]:
            lo, hi = t_first, later[0]
            while hi - lo > max(self.ctx.time_tol, 1e-6 * (later[0] - t_first)):
                tm = 0.5 * (lo + hi)
                if self.touching(*poses.rel_t(self.a, self.b, tm)):
                    lo = tm
                else:
                    hi = tm
            n = self.ctx.depth_samples
            for tt in t_first + (lo - t_first) * (np.arange(1, n + 1) / n):
                R, p = poses.rel_t(self.a, self.b, float(tt))
                if self.touching(R, p):
                    d = self.depth(R, p)
                    if d > best[0]:
                        best = (d, float(tt))
        return best

    def run_moving(self, intervals, speeds):
        """Check the pair over its candidate frame intervals (sorted). Returns a result dict."""
        poses = self.ctx.poses
        t = poses.t
        cset = set(int(k) for k in intervals)
        frames = sorted(cset | {k + 1 for k in cset})
        # lower bounds must reach lim + v h to prove an interval free of contact
        step = max(float(speeds[k]) * float(t[k + 1] - t[k]) for k in cset)
        self.cap = max(self.margin, self.lim + 1.01 * step) + 1e-12
        samples = {}
        first = None          # (clear sample, violating sample)
        for k in frames:
            s = self.sample_frame(k)
            samples[k] = s
            prev = samples.get(k - 1)
            if (k - 1) in cset and prev is not None and not prev.violation:
                br = self.scan(prev, s, float(speeds[k - 1]))
                if br is not None:
                    first = self.refine(*br)
                    break
            if s.violation:
                first = (None, s, s.t)
                break
        after = [k for k in frames if first is not None and t[k] >= first[1].t]
        return self._result(first, samples, after)

    def run_static(self):
        """Check the pair once, at the first frame (its relative pose never changes)."""
        s = self.sample_frame(0)
        return self._result((None, s, s.t) if s.violation else None, {0: s}, [0] if s.violation else [])

    def _result(self, first, samples, after):
        """Collect first time, touch, depth and minimum distance."""
        poses = self.ctx.poses
        tol = self.ctx.tol
        out = dict(first_time=None, touch=False, depth=0.0, depth_time=None,
                   min_distance=math.inf, min_distance_time=None)
        if first is not None:
            s0, s1, tf = first
            out["first_time"] = float(tf)
            R, p = poses.rel_t(self.a, self.b, s1.t)
            touch = s1.touch if s1.touch is not None else self.touching(R, p)
            times = [float(poses.t[k]) for k in after]
            if len(times) > self.ctx.depth_samples:
                idx = np.unique(np.linspace(0, len(times) - 1, self.ctx.depth_samples).round().astype(int))
                times = [times[i] for i in idx]
            if touch or self.c < 0:
                out["touch"] = True
                times = sorted(set([float(s1.t)] + times))
            else:
                # a clearance violation: does it touch later? the minimum distance tells
                more = []
                for k in after:
                    m = self.sample_frame(k)
                    if m.touch is None and m.lb <= tol:
                        m.touch = self.touching(*poses.rel(self.a, self.b, k))
                    more.append(m)
                touched = [m for m in more if m.touch]
                d, td = self.min_distance([s1] + [m for m in more if not m.touch])
                if touched:
                    out["touch"] = True
                    out["min_distance"], out["min_distance_time"] = 0.0, touched[0].t
                else:
                    out["min_distance"], out["min_distance_time"] = d, td
                times = [m.t for m in touched][: self.ctx.depth_samples]
            if out["touch"]:
                if out["min_distance_time"] is None:
                    out["min_distance"], out["min_distance_time"] = 0.0, float(tf)
                d, td = self.depth_over(float(s1.t), times)
                if s1.depth is not None and s1.depth > d:
                    d, td = s1.depth, s1.t
                out["depth"], out["depth_time"] = d, td
            return out
        near = [s for s in samples.values() if s.lb <= self.margin]
        if near:
            out["min_distance"], out["min_distance_time"] = self.min_distance(near)
        return out


# ============================================================================ entry point


def _joint_table(spec, joint_clearance):
    """frozenset({part_i, part_j}) -> (joint names, threshold)."""
    table = {}
    for j in spec.joints:
        if len(j.parts) != 2 or j.parts[0] == j.parts[1]:
            continue
        key = frozenset(j.parts)
        if isinstance(joint_clearance, dict):
            default = float(joint_clearance.get(j.name, 0.0))
        else:
            default = float(joint_clearance)
        c = j.param("clearance", default)
        names, c_old = table.get(key, ((), math.inf))
        table[key] = (names + (j.name,), min(c_old, float(c)))
    return table


def _check_number(name, value, *, nonneg=False, positive=False):
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or (nonneg and x < 0) or (positive and x <= 0):
        need = "a positive" if positive else "a non-negative" if nonneg else "a finite"
        raise MechanismError(f"{name} must be {need} number (metres or seconds), got {value!r}")
    return x


def find_interference(motion, spec=None, *, exclude_jointed=True, clearance=0.0, broad="aabb",
                      joint_clearance=0.0, near=None, ignore=(), check_static=False, tol=1e-7,
                      time_tol=None, depth_samples=8):
    """Pairs of parts that collide along a motion, when they first touch, how deep, how close.

    Parameters
    ----------
    motion : :class:`~cadmotion.kernel.motion.Motion`
    spec : :class:`~cadmotion.kernel.spec.MechanismSpec`, optional
        The parts' shapes (``PartSpec.shape``, part frame, m) and joints; default
        ``motion.spec``. Parts are matched by name; parts without a shape are skipped.
    exclude_jointed : bool, default True
        Leave out pairs of parts connected by a joint. When False they are checked against
        ``joint_clearance``.
    clearance : float, default 0.0
        m; the gap ordinary pairs must keep. 0 reports touching and overlapping parts.
    broad : {"aabb", "obb"}
        Broad phase (:data:`BROAD_PHASES`).
    joint_clearance : float or dict, default 0.0
        m; threshold for jointed pairs (a dict maps joint names to thresholds). Negative
        values allow that much penetration (pins modelled line-to-line). A joint's own
        ``clearance`` parameter takes precedence.
    near : float, optional
        m; pairs that move relative to each other and whose minimum distance is at most
        ``near`` without violating their threshold are listed in ``report.near`` with that
        distance. Default: no such list.
    ignore : iterable of (part_a, part_b)
        Pairs not to check.
    check_static : bool, default False
        Count contacts between parts that never move relative to each other as collisions.
    tol : float, default 1e-7
        m; distances up to ``tol`` count as contact.
    time_tol : float, optional
        s; accuracy of the first time of violation (default 1e-9 of the motion's duration,
        at least 1e-12 s).
    depth_samples : int, default 8
        Frames of a contact at which the penetration depth is measured.

    Returns
    -------
    InterferenceReport

    Raises
    ------
    MechanismError
        Bad arguments, a spec without the motion's parts, or unknown names in ``ignore``.
    """
    t_begin = _time.perf_counter()
    spec = spec if spec is not None else getattr(motion, "spec", None)
    if spec is None:
        raise MechanismError("interference needs the parts' shapes: no MechanismSpec given",
                             hint="pass spec=..., or use a Motion from kinematics(), which carries it")
    if broad not in BROAD_PHASES:
        raise MechanismError(f"unknown broad phase {broad!r}", hint=f"use one of {', '.join(BROAD_PHASES)}")
    clearance = _check_number("clearance", clearance, nonneg=True)
    tol = _check_number("tol", tol, positive=True)
    near = clearance if near is None else max(_check_number("near", near, nonneg=True), clearance)
    depth_samples = int(_check_number("depth_samples", depth_samples, positive=True))
    if isinstance(joint_clearance, dict):
        for k, v in joint_clearance.items():
            _check_number(f"joint_clearance[{k!r}]", v)
    else:
        _check_number("joint_clearance", joint_clearance)
    poses = _Poses(motion)
    nt = poses.nt
    span = float(poses.t[-1] - poses.t[0]) if nt > 1 else 0.0
    if time_tol is None:
        time_tol = max(1e-9 * span, 1e-12)
    time_tol = _check_number("time_tol", time_tol, positive=True)

    by_name = {p.name: p for p in spec.parts}
    missing = [n for n in poses.names if n not in by_name]
    if missing:
        raise MechanismError(f"the motion has parts the spec does not: {', '.join(missing[:10])}",
                             hint="pass the MechanismSpec the motion was computed from")
    ignored = set()
    for pair in ignore:
        pair = tuple(pair)
        if len(pair) != 2 or any(n not in by_name for n in pair):
            raise MechanismError(f"ignore: {pair!r} is not a pair of part names",
                                 hint=f"parts are {', '.join(list(by_name)[:20])}")
        ignored.add(frozenset(pair))
    joints = _joint_table(spec, joint_clearance)

    report = InterferenceReport()
    # -- prepare geometry once per distinct shape
    geoms, cache = [], {}
    for name in poses.names:
        shape = by_name[name].shape
        if shape is None:
            geoms.append(None)
            report.skipped.append(name)
            continue
        key = id(shape)
        if key not in cache:
            try:
                cache[key] = (shape, _Geometry(shape))
            except _NoGeometry:
                cache[key] = (shape, None)
        geoms.append(cache[key][1])
        if cache[key][1] is None:
            report.skipped.append(name)
    t_prepared = _time.perf_counter()

    nb = len(poses.names)
    have = [i for i in range(nb) if geoms[i] is not None]
    centre = np.zeros((nb, 3))
    half = np.zeros((nb, 3))
    rho = np.zeros(nb)
    r0 = np.zeros(nb)
    for i in have:
        g = geoms[i]
        centre[i], half[i], rho[i], r0[i] = g.centre, g.half, g.rho, g.r0
    scale = float(np.max(r0 + np.linalg.norm(poses.p[0], axis=1))) if nb else 1.0
    group = _rigid_groups(poses, max(scale, 1e-9), max(10 * tol, 1e-9 * scale))

    # -- pairs
    pairs = []  # (i, j, threshold, margin, joint names)
    excluded = 0
    for x, i in enumerate(have):
        for j in have[x + 1:]:
            key = frozenset((poses.names[i], poses.names[j]))
            if key in ignored:
                excluded += 1
                continue
            jn, c = (), clearance
            if key in joints:
                if exclude_jointed:
                    excluded += 1
                    continue
                jn, c = joints[key]
            margin = max(c, near, 0.0) + tol
            pairs.append((i, j, c, margin, jn))
    I = np.array([p[0] for p in pairs], np.int64)
    J = np.array([p[1] for p in pairs], np.int64)
    M = np.array([p[3] for p in pairs], float)
    static = group[I] == group[J] if len(pairs) else np.zeros(0, bool)

    # -- broad phase
    lo, hi = poses.boxes(centre, half)
    if nt > 1:
        dev, speed = poses.interval_bounds(centre, rho, r0)
        slo = np.minimum(lo[:-1], lo[1:]) - dev[..., None]
        shi = np.maximum(hi[:-1], hi[1:]) + dev[..., None]
    moving_idx = np.flatnonzero(~static)
    static_idx = np.flatnonzero(static)
    cand = {}  # pair index -> sorted candidate intervals
    chunk = 2048
    if nt > 1:
        for s0 in range(0, len(moving_idx), chunk):
            sel = moving_idx[s0:s0 + chunk]
            ii, jj, mm = I[sel], J[sel], M[sel]
            ok = np.ones((nt - 1, len(sel)), bool)
            for ax in range(3):
                ok &= slo[:, ii, ax] <= shi[:, jj, ax] + mm
                ok &= slo[:, jj, ax] <= shi[:, ii, ax] + mm
            kk, pp = np.nonzero(ok)
            if broad == "obb" and len(kk):
                grow_i = (speed[kk, ii[pp]] * np.diff(poses.t)[kk] + 0.5 * mm[pp])[:, None]
                grow_j = (speed[kk, jj[pp]] * np.diff(poses.t)[kk] + 0.5 * mm[pp])[:, None]
                Ri, Rj = poses.R[kk, ii[pp]], poses.R[kk, jj[pp]]
                ci = np.einsum("eij,ej->ei", Ri, centre[ii[pp]]) + poses.p[kk, ii[pp]]
                cj = np.einsum("eij,ej->ei", Rj, centre[jj[pp]]) + poses.p[kk, jj[pp]]
                sep = _obb_separated(Ri, ci, half[ii[pp]] + grow_i, Rj, cj, half[jj[pp]] + grow_j)
                kk, pp = kk[~sep], pp[~sep]
            for k, q in zip(kk, pp):
                cand.setdefault(int(sel[q]), []).append(int(k))
    else:
        moving_idx, static_idx = np.zeros(0, np.int64), np.arange(len(pairs))
    if len(static_idx):
        ii, jj, mm = I[static_idx], J[static_idx], M[static_idx]
        ok = np.all((lo[0, ii] <= hi[0, jj] + mm[:, None]) & (lo[0, jj] <= hi[0, ii] + mm[:, None]), axis=1)
        static_cand = [int(x) for x in static_idx[ok]]
    else:
        static_cand = []
    n_candidates = sum(len(v) for v in cand.values()) + len(static_cand)
    t_broad = _time.perf_counter()

    # -- narrow phase
    ctx = _Context(poses, tol, time_tol, depth_samples)
    names = poses.names
    for q in sorted(cand) + static_cand:
        i, j, c, margin, jn = pairs[q]
        pc = _PairCheck(ctx, i, j, geoms[i], geoms[j], c, margin)
        moving = not static[q]
        if moving:
            res = pc.run_moving(sorted(cand[q]), speed[:, i] + speed[:, j])
        else:
            res = pc.run_static()
        entry = _entry(names[i], names[j], res, c, near, jn, moving, tol)
        if entry is None:
            continue
        if entry.kind == "near":
            if moving:  # a static pair's gap never changes: nothing to watch along the motion
                report.near.append(entry)
        elif moving or check_static:
            report.collisions.append(entry)
        else:
            report.static.append(entry)
    report.collisions.sort(key=lambda e: (e.first_time, e.parts))
    report.near.sort(key=lambda e: (e.min_distance, e.parts))
    t_end = _time.perf_counter()
    report.stats = dict(
        parts=len(have), frames=nt, pairs=len(pairs) + excluded, pairs_excluded=excluded,
        pairs_static=int(np.sum(static)), pairs_moving=int(len(pairs) - np.sum(static)),
        candidates=n_candidates, shapes=sum(1 for _, g in cache.values() if g is not None),
        **ctx.stats,
        seconds_prepare=t_prepared - t_begin, seconds_broad=t_broad - t_prepared,
        seconds_narrow=t_end - t_broad, seconds_total=t_end - t_begin,
    )
    if report.skipped:
        report.messages.append(f"{len(report.skipped)} part(s) without geometry were not checked: "
                               + ", ".join(report.skipped[:10]) + (" ..." if len(report.skipped) > 10 else ""))
    if ctx.stats["unproven_intervals"]:
        report.messages.append(
            f"{ctx.stats['unproven_intervals']} frame interval(s) of close pairs could not be proven free of "
            "contact between frames at the finest subdivision; use more output steps for certainty")
    return report


def _entry(a, b, res, c, near, joints, moving, tol):
    """A PairInterference from a pair's result, or None when there is nothing to report."""
    tag = f" (joint {', '.join(joints)})" if joints else ""
    tf = res["first_time"]
    if tf is None:
        d = res["min_distance"]
        if not (d <= near):
            return None
        msg = f"{a} and {b}{tag} come within {_mm(d)} at t = {res['min_distance_time']:.6g} s"
        return PairInterference((a, b), "near", None, float(d), float(res["min_distance_time"]),
                                threshold=c, joints=joints, moving=moving, message=msg)
    depth = float(res["depth"])
    if res["touch"]:
        kind = "penetration" if depth > tol else "contact"
    else:
        kind = "clearance"
    if not moving:
        what = {"penetration": f"overlap by {_mm(depth)}", "contact": "touch",
                "clearance": f"are {_mm(res['min_distance'])} apart (clearance {_mm(c)})"}[kind]
        msg = f"{a} and {b}{tag} {what} and never move relative to each other"
    elif kind == "penetration":
        msg = (f"{a} and {b}{tag} collide at t = {tf:.6g} s; penetration up to {_mm(depth)} "
               f"(at t = {res['depth_time']:.6g} s)")
    elif kind == "contact":
        msg = f"{a} and {b}{tag} touch at t = {tf:.6g} s"
    else:
        msg = (f"{a} and {b}{tag} come closer than {_mm(c)} at t = {tf:.6g} s; minimum distance "
               f"{_mm(res['min_distance'])} at t = {res['min_distance_time']:.6g} s")
    if c < 0 and kind != "clearance":
        msg += f" (allowed penetration {_mm(-c)})"
    return PairInterference((a, b), kind, float(tf), float(res["min_distance"]),
                            float(res["min_distance_time"]), depth=depth,
                            depth_time=None if res["depth_time"] is None else float(res["depth_time"]),
                            threshold=c, joints=joints, moving=moving, message=msg)
