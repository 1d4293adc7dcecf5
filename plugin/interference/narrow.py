"""Narrow phase of the interference check: one pair of parts along the frame intervals the
broad phase kept — mesh bounds, exact contact certificates, conservative advancement between
samples, first-contact times, depths and closest approaches (everything in part a's frame)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...geometry.distance import DistanceFrom
from ...geometry.placements import located, location
from .geometry import DEPTH_NODES, GUARD_LEVELS, WITNESS_NODES
from .mesh import RAYS, mesh_bounds, points_distance, points_inside, tri_tri_closest

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


class Context:
    """What the pair checks of one run share: the poses, tolerances (m, s), depth sample
    count and the counters of ``stats``."""
    def __init__(self, poses, tol, time_tol, depth_samples):
        self.poses = poses
        self.tol = tol
        self.time_tol = time_tol
        self.depth_samples = depth_samples
        self.stats = dict(mesh_queries=0, exact_distances=0, classifications=0,
                          unproven_intervals=0)


class PairCheck:
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
        """(lb, ub, dm, ia, ib) from the meshes (see :func:`mesh_bounds`)."""
        self.ctx.stats["mesh_queries"] += 1
        return mesh_bounds(*self.ga.mesh_args(), *self.gb.mesh_args(), R, p, float(cap),
                            float(stop), 0.0)[:5]

    def exact(self, R, p, ub=None):
        """Exact distance between the boundaries (BRepExtrema_DistShapeShape).

        With ``ub`` (an upper bound of the distance) only the faces that may come that close
        are handed to OCCT: the faces of triangle pairs whose lower bound is at most ``ub``.
        When OCCT cannot tell and a part has faces that are meshes read from files (no surface:
        OCCT measures no distance to them), the meshes' upper bound: exact between two meshes,
        and within the other part's chord error otherwise.
        """
        d = self._exact(R, p, ub)
        if d == math.inf and (self.ga.mesh_faces or self.gb.mesh_faces):
            d = ub if ub is not None and np.isfinite(ub) else self.bounds(R, p, cap=math.inf)[1]
        return d

    def _exact(self, R, p, ub):
        self.ctx.stats["exact_distances"] += 1
        loc = location(R, p)
        if ub is not None and np.isfinite(ub):
            self.ctx.stats["mesh_queries"] += 1
            pairs = mesh_bounds(*self.ga.mesh_args(), *self.gb.mesh_args(), R, p, float(ub) + 1e-12,
                                 -1.0, float(ub) + 1e-12)[5]
            if len(pairs) and len(set(pairs[:, 0])) < len(self.ga.faces):
                d = DistanceFrom.between(self.ga.faces_compound(pairs[:, 0]),
                                         located(self.gb.faces_compound(pairs[:, 1]), loc))
                if d < math.inf:
                    return d
        return self.ga.dss.to(located(self.gb.cmp, loc))

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
            u = points_distance(*X.bvh, X.tris, P, X.dmax + tol + 1e-300)
            order = np.argsort(u)
            near = order[u[order] <= X.dmax + tol][:WITNESS_NODES]
            self.ctx.stats["classifications"] += len(near)
            if any(s != "out" for s in X.classify(P[near], tol)):
                return True
            # nodes well inside the other mesh (beyond its chord error) are inside the solid
            far = order[u[order] > X.dmax + tol]
            if len(far):
                far = far[:: max(1, len(far) // 64)][:64]
                inside = far[points_inside(*X.bvh, X.tris, np.ascontiguousarray(P[far]), RAYS)]
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
        """Penetration depth estimate (defined in :mod:`cadmotion.plugin.interference`): the
        deepest surface point of one part inside the other, measured to the other's boundary."""
        tol = self.ctx.tol
        best = 0.0
        for X, Y, R_, p_ in self._sides(R, p):
            if X.classifier is None:
                continue
            S = Y.samples @ R_.T + p_
            S = S[np.all((S >= X.lo) & (S <= X.hi), axis=1)]
            if not len(S):
                continue
            u = points_distance(*X.bvh, X.tris, S, np.inf)
            order = np.argsort(-u)
            order = order[u[order] > max(tol, best - X.dmax)]
            found = []
            for start in range(0, len(order), 512):
                chunk = order[start:start + 512]
                found += list(chunk[points_inside(*X.bvh, X.tris, np.ascontiguousarray(S[chunk]), RAYS)])
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
            xa, xb = tri_tri_closest(*(tuple(v) for v in A), *(tuple(v) for v in B))
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
        """The pair sampled at output frame ``k``."""
        R, p = self.ctx.poses.rel(self.a, self.b, k)
        return self.sample(float(self.ctx.poses.t[k]), R, p)

    def sample_time(self, t):
        """The pair sampled at time ``t`` (s) on the interpolated motion."""
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
