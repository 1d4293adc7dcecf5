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

import numpy as np

from ...errors import MechanismError
from .geometry import Geometry, NoGeometry
from .narrow import Context, PairCheck
from .poses import Poses, obb_separated, rigid_groups
from .report import InterferenceReport, PairInterference, format_mm

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
    poses = Poses(motion.with_turn_frames())  # between frames a quarter turn at most: slerp turns the right way
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
                cache[key] = (shape, Geometry(shape))
            except NoGeometry:
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
    group = rigid_groups(poses, max(scale, 1e-9), max(10 * tol, 1e-9 * scale))

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
                sep = obb_separated(Ri, ci, half[ii[pp]] + grow_i, Rj, cj, half[jj[pp]] + grow_j)
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
    ctx = Context(poses, tol, time_tol, depth_samples)
    names = poses.names
    for q in sorted(cand) + static_cand:
        i, j, c, margin, jn = pairs[q]
        pc = PairCheck(ctx, i, j, geoms[i], geoms[j], c, margin)
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
        msg = f"{a} and {b}{tag} come within {format_mm(d)} at t = {res['min_distance_time']:.6g} s"
        return PairInterference((a, b), "near", None, float(d), float(res["min_distance_time"]),
                                threshold=c, joints=joints, moving=moving, message=msg)
    depth = float(res["depth"])
    if res["touch"]:
        kind = "penetration" if depth > tol else "contact"
    else:
        kind = "clearance"
    if not moving:
        what = {"penetration": f"overlap by {format_mm(depth)}", "contact": "touch",
                "clearance": f"are {format_mm(res['min_distance'])} apart (clearance {format_mm(c)})"}[kind]
        msg = f"{a} and {b}{tag} {what} and never move relative to each other"
    elif kind == "penetration":
        msg = (f"{a} and {b}{tag} collide at t = {tf:.6g} s; penetration up to {format_mm(depth)} "
               f"(at t = {res['depth_time']:.6g} s)")
    elif kind == "contact":
        msg = f"{a} and {b}{tag} touch at t = {tf:.6g} s"
    else:
        msg = (f"{a} and {b}{tag} come closer than {format_mm(c)} at t = {tf:.6g} s; minimum distance "
               f"{format_mm(res['min_distance'])} at t = {res['min_distance_time']:.6g} s")
    if c < 0 and kind != "clearance":
        msg += f" (allowed penetration {format_mm(-c)})"
    return PairInterference((a, b), kind, float(tf), float(res["min_distance"]),
                            float(res["min_distance_time"]), depth=depth,
                            depth_time=None if res["depth_time"] is None else float(res["depth_time"]),
                            threshold=c, joints=joints, moving=moving, message=msg)
