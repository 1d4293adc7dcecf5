"""Mesh kernels of the interference check: a BVH over a part's triangles and exact
triangle distances (numba when available, plain Python otherwise).

Triangles are float64 arrays (nf, 3, 3) in a part frame (m). A BVH is a tuple of arrays
(lo, hi, left, right, start, count) over the triangles sorted so every leaf is contiguous.
"""

from __future__ import annotations

import math

import numpy as np

try:  # numba is a dependency of cadmotion; FreeCAD's own Python may lack it
    import numba as _numba

    njit = _numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy")
except Exception:  # pragma: no cover - pure-Python fallback, slow but correct
    def njit(f):
        return f


_LEAF = 4


@njit
def bvh_build(tris):
    """A BVH over triangles (nf, 3, 3) in a part frame: (lo, hi, left, right, start, count)
    per node and the triangle order; leaves hold up to ``_LEAF`` contiguous triangles."""
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


@njit
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit
def _mul(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit
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


@njit
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


@njit
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


@njit
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


@njit
def tri_tri_closest(a0, a1, a2, b0, b1, b2):
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


@njit
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


@njit
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


@njit
def _vtx(tris, j, v):
    return (tris[j, v, 0], tris[j, v, 1], tris[j, v, 2])


@njit
def _vtx_moved(tris, j, v, R, p):
    x = tris[j, v, 0]
    y = tris[j, v, 1]
    z = tris[j, v, 2]
    return (R[0, 0] * x + R[0, 1] * y + R[0, 2] * z + p[0],
            R[1, 0] * x + R[1, 1] * y + R[1, 2] * z + p[1],
            R[2, 0] * x + R[2, 1] * y + R[2, 2] * z + p[2])


@njit
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


@njit
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


@njit
def node_delta(left, right, start, count, tdel):
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


@njit
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


@njit
def _b_planes(fn_b, fo_b, R, p):
    nfb = fn_b.shape[0]
    nb_a = np.empty((nfb, 3))
    ob_a = np.empty(nfb)
    for f in range(nfb):
        for k in range(3):
            nb_a[f, k] = R[k, 0] * fn_b[f, 0] + R[k, 1] * fn_b[f, 1] + R[k, 2] * fn_b[f, 2]
        ob_a[f] = fo_b[f] + nb_a[f, 0] * p[0] + nb_a[f, 1] * p[1] + nb_a[f, 2] * p[2]
    return nb_a, ob_a


@njit
def mesh_bounds(lo_a, hi_a, left_a, right_a, start_a, count_a, ndel_a, tris_a, tdel_a, fid_a, fpl_a, fn_a, fo_a,
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


@njit
def points_distance(lo, hi, left, right, start, count, tris, pts, cap):
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


RAYS = np.array([[0.48018, 0.62402, 0.61640], [-0.70711, 0.31623, 0.63246], [0.26726, -0.80178, 0.53452]])
RAYS = RAYS / np.linalg.norm(RAYS, axis=1, keepdims=True)


@njit
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


@njit
def points_inside(lo, hi, left, right, start, count, tris, pts, rays):
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
