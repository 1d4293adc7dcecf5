"""Cam pairs: a follower kept on a cam profile, as one constraint between two joints.

A cam pair couples the cam's revolute joint (angle θ, rad, zero at the initial pose) and the
follower's joint: a prismatic one (a translating follower, displacement s in m) or a
revolute one (an oscillating follower, angle φ in rad). Its equation is

    Φ = m_b − L(θ_a) = 0,    m_b = s or φ of the follower joint,

with the *lift law* L periodic over one turn of the cam. The law is a periodic quintic
spline (so L, L′, L″ are continuous and the follower's acceleration is accurate to the
spline's O(h⁴)) through samples given as a table, or computed here from the cam *profile*
and the follower's geometry (:func:`lift_law`): a closed curve in the plane normal to the
cam axis, traced by a periodic spline through its points, and a translating follower that
is a point (knife edge), a roller of radius r or a flat face normal to its slide. Where the
samples show the law's (or the outline's) acceleration or jerk jumping — a harmonic rise
meeting a dwell — a spline would ring across the jump (9 % on the acceleration whatever the
sampling); there the law and the outline are piecewise quintic Hermite interpolants on
stencils that leave the jump out (:func:`_periodic_interpolant`): C¹, the acceleration
exact to O(h⁵) up to the sample interval of the jump.

Φq, Φt and γ follow from the joint coordinates' own generated code (the ``drive-angle`` and
``drive-disp`` templates give θ, s, their Jacobian rows and their quadratic velocity terms):

    Φq = J_b − L′(θ) J_a,    Φt = 0,    γ = γ_b − L′(θ) γ_a + L″(θ) θ̇²,

where J_x q̈ = m̈_x + γ_x for each coordinate. :class:`CamCode` is that composition, with the
interface of generated template code (:mod:`.symbolic.codegen`), so every solver that
evaluates constraint groups through ``phi``/``jac``/``phit``/``gamma`` handles cams; the
compiled dynamics path (:mod:`.dynamics.fast`) does not and leaves such models to numpy.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CamLaw", "CamCode", "lift_law", "cam_pair_law", "load_between_frames", "FOLLOWER_SHAPES",
           "LAW_SAMPLES"]

#: follower shapes :func:`lift_law` computes a law for (translating followers)
FOLLOWER_SHAPES = ("point", "roller", "flat")
#: cam angles at which a law computed from a profile is sampled over one turn
LAW_SAMPLES = 720
_TWO_PI = 2.0 * math.pi


class CamLaw:
    """A periodic lift law m(θ) over one turn: a quintic spline (or Hermite interpolant,
    :func:`_periodic_interpolant`) through samples.

    ``theta`` (rad, increasing, spanning less than 2π) and ``value`` (m or rad) are the
    samples; the law is extended periodically and shifted so that ``L(0) = 0``: the joint
    coordinates are zero at the initial pose, where the follower touches the cam.
    """

    def __init__(self, theta, value, pressure=None):
        theta = np.asarray(theta, float)
        value = np.asarray(value, float)
        if theta.ndim != 1 or theta.shape != value.shape or len(theta) < 6:
            raise ValueError("a cam law needs at least 6 (angle, value) samples")
        order = np.argsort(np.mod(theta, _TWO_PI))
        theta = np.mod(theta, _TWO_PI)[order]
        value = value[order]
        if np.any(np.diff(theta) <= 0):
            raise ValueError("the cam angles of a law must be distinct over one turn")
        if not np.all(np.isfinite(value)):
            raise ValueError("the values of a cam law must be finite numbers")
        self._spline = _periodic_interpolant(theta, value)
        self._x0 = theta[0]
        self.offset = float(self._spline(self._wrap(0.0)))
        self.theta, self.value = theta, value - self.offset
        self._pressure = None
        if pressure is not None:
            self._pressure = _periodic_interpolant(theta, np.asarray(pressure, float)[order], kinks=True)

    def _wrap(self, theta):
        return self._x0 + np.mod(np.asarray(theta, float) - self._x0, _TWO_PI)

    def __call__(self, theta, derivative=0):
        """L(θ) (derivative 0), L′(θ) or L″(θ); θ in rad, any number of turns."""
        out = self._spline(self._wrap(theta), derivative)
        return out - self.offset if derivative == 0 else out

    def pressure_angle(self, theta):
        """The pressure angle (rad) at cam angles θ: between the contact normal and the
        follower's direction of motion, positive towards the follower slide's left normal
        (u turned +90° about the cam axis); NaN where the law was given as a table."""
        if self._pressure is None:
            return np.full(np.shape(theta), np.nan)
        return self._pressure(self._wrap(theta))


#: below this share of the values' range a stencil's roughness is round-off
_ROUGH = 1e-12


def _periodic_interpolant(x, y, period=_TWO_PI, kinks=False):
    """f(x, nu): an interpolant of the periodic samples (x increasing over less than one
    ``period``, y (n,) or (n, d)), evaluated at x (already wrapped into [x₀, x₀ + period)) or
    its derivative nu. Used for lift laws and for the cam's outline (each coordinate).

    A smooth law is the periodic quintic spline through the samples (C⁴). A law whose
    acceleration or jerk jumps (a harmonic or constant-acceleration segment meeting a dwell, a
    cycloidal rise meeting its return) would make that spline ring: its acceleration overshoots
    an acceleration jump by about 9 % whatever the sampling (Gibbs), and a lift-off is reported
    below the speed where it happens. There each interval between samples takes the degree-6
    polynomial through the smoothest of the six 7-sample stencils that contain it (ENO: it leaves
    out a jump beside it; roughness the sum of the polynomial's 4th to 6th coefficients in units
    of the sample spacing, a central stencil kept unless another is 1.5 times smoother), and the
    law is the quintic Hermite interpolant of the samples, the slopes (averaged over the two
    intervals at each sample) and each interval's own curvature at its ends: C¹, its
    acceleration jumps where the law's does (at a sample) or within the interval of the jump.
    With ``kinks`` (the pressure angle, whose slope jumps where the law's acceleration does) the
    slopes are each interval's own too: C⁰.
    """
    from scipy.interpolate import PPoly, make_interp_spline

    n = len(x)
    y = np.asarray(y, float)
    Y = y.reshape(n, -1)
    xx = np.append(x, x[0] + period)
    spline = make_interp_spline(xx, np.concatenate([y, y[:1]]), k=5, bc_type="periodic")
    if n < 8:
        return spline
    h = period / n
    k = np.arange(n)[:, None, None]
    idx = k - np.arange(6)[None, :, None] + np.arange(7)[None, None, :]  # interval k, stencil j, point m
    X = x[idx % n] + period * (idx // n)
    Z = (X - x[:, None, None]) / h  # about the interval's left sample
    coef = np.linalg.solve(Z[..., :, None] ** np.arange(7), Y[idx % n])  # (n, j, power, d)
    rough = np.sum(np.abs(coef[:, :, 4:]), axis=(2, 3)) * np.array([1.5, 1.5, 1.0, 1.0, 1.5, 1.5])
    floor = _ROUGH * max(float(np.max(np.ptp(Y, axis=0))), 1e-300)
    central = np.where(rough[:, 2] <= rough[:, 3], 2, 3)
    pick = np.where(np.minimum(rough[:, 2], rough[:, 3]) <= floor, central, np.argmin(rough, axis=1))
    if np.all((pick == 2) | (pick == 3)):
        return spline  # every interval is smooth: a central stencil is as smooth as any
    c = coef[np.arange(n), pick]  # (n, 7, d): the interval's polynomial in z = (x − x_k)/h
    w = np.diff(xx)[:, None]
    zr = w / h
    p = np.arange(7)[None, :, None]
    end1 = np.sum(c * p * zr[:, None] ** np.maximum(p - 1, 0), axis=1) / h  # p′ at the interval's right end
    end2 = np.sum(c * p * (p - 1) * zr[:, None] ** np.maximum(p - 2, 0), axis=1) / h**2
    y0, y1 = Y, np.roll(Y, -1, axis=0)
    if kinks:
        s0, s1 = c[:, 1] / h, end1
    else:
        slope = 0.5 * (c[:, 1] / h + np.roll(end1, 1, axis=0))  # at each sample, from the intervals on both sides
        s0, s1 = slope, np.roll(slope, -1, axis=0)
    a0, a1 = 2 * c[:, 2] / h**2, end2
    # the quintic p(t) = Σ b_m t^m on [0, w] with p, p′, p″ given at both ends
    b = np.empty((6,) + Y.shape)
    b[0], b[1], b[2] = y0, s0, a0 / 2
    r0 = y1 - (y0 + s0 * w + a0 / 2 * w**2)
    r1 = s1 - (s0 + a0 * w)
    r2 = a1 - a0
    b[3] = (10 * r0 - 4 * r1 * w + r2 * w**2 / 2) / w**3
    b[4] = (-15 * r0 + 7 * r1 * w - r2 * w**2) / w**4
    b[5] = (6 * r0 - 3 * r1 * w + r2 * w**2 / 2) / w**5
    return PPoly(b[::-1].reshape((6,) + y.shape), xx)


# --------------------------------------------------------------------- laws from geometry
def _closed_curve(points):
    """A closed curve c(τ), τ in [0, 1) by chord length, through the profile points (n, 2) (m):
    the periodic quintic spline, or where the outline's curvature jumps (a cam built from a law
    whose acceleration jumps) the interpolant of :func:`_periodic_interpolant` that does not ring."""
    P = np.asarray(points, float)
    if P.ndim != 2 or P.shape[1] != 2 or len(P) < 8:
        raise ValueError("a cam profile needs at least 8 points [x, y] around the cam")
    if np.linalg.norm(P[0] - P[-1]) < 1e-12 * np.ptp(P):
        P = P[:-1]
    seg = np.linalg.norm(np.diff(np.vstack([P, P[:1]]), axis=0), axis=1)
    if np.any(seg <= 0):
        raise ValueError("a cam profile has repeated consecutive points")
    tau = np.concatenate([[0.0], np.cumsum(seg)]) / seg.sum()  # chord-length parameter
    return _periodic_interpolant(tau[:-1], P, period=1.0)


def _rot(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def lift_law(profile, follower, radius=0.0, point=(0.0, 0.0), direction=(0.0, 1.0), samples=LAW_SAMPLES):
    """The law s(θ) of a translating follower on a cam profile; returns a :class:`CamLaw`.

    Everything is in the cam's joint frame at the initial pose, in the plane normal to the
    cam axis (m): ``profile`` (n, 2) points around the cam; the follower slides along the
    line through ``point`` with unit ``direction`` u and rests on the cam from the +u side.
    The cam turns by θ about the axis (counter-clockwise seen from +z). ``follower``:

    - ``"point"``: the follower tip is on the line; s = the farthest crossing of the line and
      the profile along u;
    - ``"roller"``: a roller of ``radius`` r centred on the line; s = the centre's position
      where it touches the profile (the farthest one along u);
    - ``"flat"``: a face normal to u; s = the support function max u·c.

    s is measured along u from ``point`` and shifted so that s(0) = 0. Each sample is solved
    on the profile's spline to round-off (Newton from the best of a dense polygon). An outline
    the follower cannot stay on in one continuous contact (one that crosses itself, a hollow
    under a flat face or tighter than the roller) raises ValueError (:func:`_check_followable`).
    """
    if follower not in FOLLOWER_SHAPES:
        raise ValueError(f"follower must be one of {', '.join(FOLLOWER_SHAPES)}, not {follower!r}")
    if follower == "roller" and not radius > 0:
        raise ValueError("a roller follower needs a radius > 0")
    curve = _closed_curve(profile)
    d1 = curve.derivative(1)
    _check_followable(profile, curve, follower, float(radius) if follower == "roller" else 0.0)
    u = np.asarray(direction, float)
    u = u / np.linalg.norm(u)
    n = np.array([-u[1], u[0]])
    p0 = np.asarray(point, float)
    r = float(radius) if follower == "roller" else 0.0
    dense = np.linspace(0.0, 1.0, 64 * len(np.asarray(profile)) + 1)[:-1]
    C, T = curve(dense), d1(dense)
    thetas = np.linspace(0.0, _TWO_PI, samples, endpoint=False)
    values, pressure = np.empty(samples), np.empty(samples)
    for k, th in enumerate(thetas):
        # the follower's line in the cam's frame: turning the cam by θ is turning the line by −θ
        Rt = _rot(-th)
        uc, nc, pc = Rt @ u, Rt @ n, Rt @ p0
        values[k], pressure[k] = _contact(curve, d1, C, T, dense, uc, nc, pc, r, follower)
    return CamLaw(thetas, values, pressure)


def _crossing(P):
    """A point (2,) where the closed polygon P (n, 2) crosses itself, or None (segments
    that do not share a vertex, tested in blocks)."""
    A, B = P, np.roll(P, -1, axis=0)
    n = len(P)
    for lo in range(0, n, 256):
        a, b = A[lo:lo + 256, None], B[lo:lo + 256, None]
        d, c = b - a, B[None] - A[None]
        den = d[..., 0] * c[..., 1] - d[..., 1] * c[..., 0]
        w = A[None] - a
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (w[..., 0] * c[..., 1] - w[..., 1] * c[..., 0]) / den
            t = (w[..., 0] * d[..., 1] - w[..., 1] * d[..., 0]) / den
        i, j = np.meshgrid(np.arange(lo, min(lo + 256, n)), np.arange(n), indexing="ij")
        near = (np.abs(i - j) <= 1) | (np.abs(i - j) == n - 1)
        hit = (s > 0) & (s < 1) & (t > 0) & (t < 1) & ~near & (den != 0)
        if hit.any():
            k, m = np.argwhere(hit)[0]
            return A[lo + k] + s[k, m] * (B[lo + k] - A[lo + k])
    return None


def _check_followable(profile, curve, follower, r):
    """Refuse an outline the follower cannot stay on in one continuous contact (ValueError):
    one that crosses itself (an undercut cam: the outline designed for a roller bigger than
    its pitch curve's bend, or for a flat face where r_b + s + s″ < 0, folds over), a hollow
    that a flat face bridges (it needs a convex cam) or that is tighter than the roller. There
    the follower would jump from one point of the cam to another: its lift has a corner, and a
    law through it would be a smooth wrong one."""
    P = np.asarray(profile, float)
    size = float(np.max(np.ptp(P, axis=0)))
    hit = _crossing(P)
    if hit is not None:
        raise ValueError(f"the cam's outline crosses itself near ({hit[0]:.6g}, {hit[1]:.6g}) m in the cam's "
                         "frame: an undercut cam (its outline folds over where it was designed for a roller "
                         "bigger than the pitch curve's bend, or for a flat face on too small a base circle) or "
                         "a looped edge; give a simple closed outline: a larger base circle, a smaller roller, "
                         "or the right face with `profile.near`")
    if follower == "point":
        return
    tau = np.linspace(0.0, 1.0, 64 * len(P) + 1)[:-1]
    C, d1, d2 = curve(tau), curve(tau, 1), curve(tau, 2)
    speed = np.hypot(d1[:, 0], d1[:, 1])
    kappa = (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]) / speed**3
    kappa *= 1.0 if _signed_area(C) >= 0 else -1.0  # > 0 where the outline is convex
    k = int(np.argmin(kappa))
    where = f"({C[k, 0]:.6g}, {C[k, 1]:.6g}) m in the cam's frame"
    if follower == "flat" and kappa[k] * size < -1e-3:
        raise ValueError(f"a flat-faced follower needs a convex cam, but its outline is hollow (radius of "
                         f"curvature {-1 / kappa[k]:.4g} m) near {where}: the face would bridge the hollow and "
                         "jump across it; use a roller or point follower, or a cam without hollows (a larger "
                         "base circle)")
    if follower == "roller" and 1.0 + r * kappa[k] <= 0.0:
        raise ValueError(f"the roller (radius {r:.4g} m) does not fit the cam's hollow of radius "
                         f"{-1 / kappa[k]:.4g} m near {where}: it would bridge it and jump across; use a roller "
                         f"smaller than {-1 / kappa[k]:.4g} m or a cam designed for this one")


def _contact(curve, d1, C, T, dense, u, n, p0, r, follower):
    """(position along u, pressure angle) of the follower on the curve (cam frame; m, rad),
    solved on the spline: the root in τ of u·c′ (flat face) or of the side function
    n·(c + r ν − p0) (point, roller) bracketed by the dense polygon, by Brent's method."""
    from scipy.optimize import brentq

    step = 1.0 / len(dense)
    orient = 1.0 if _signed_area(C) >= 0 else -1.0  # outward normal ν = orient·(c′y, −c′x)/|c′|

    def normal(t):
        c1 = d1(t % 1.0)
        return orient * np.array([c1[1], -c1[0]]) / np.hypot(c1[0], c1[1])

    if follower == "flat":
        i = int(np.argmax(C @ u))
        a, b = dense[i] - step, dense[i] + step
        slope = lambda t: d1(t % 1.0) @ u  # noqa: E731 - one-line root function
        tau = brentq(slope, a, b, xtol=1e-15) if slope(a) > 0 > slope(b) else dense[i]
        nu = normal(tau)
        return float(curve(tau % 1.0) @ u - p0 @ u), math.atan2(nu @ n, nu @ u)

    def centre(t):
        return curve(t % 1.0) + r * normal(t) - p0

    nu = orient * np.column_stack([T[:, 1], -T[:, 0]]) / np.linalg.norm(T, axis=1)[:, None]
    side = (C + r * nu - p0) @ n
    along = (C + r * nu - p0) @ u
    cross = np.flatnonzero(side * np.roll(side, -1) <= 0)
    if not len(cross):
        raise ValueError("the follower's line misses the cam profile: move its slide (or `contact`) so that "
                         "its line crosses the cam")
    i = cross[np.argmax(along[cross])]
    a, b = dense[i], dense[i] + step
    fa, fb = centre(a) @ n, centre(b) @ n
    tau = a if fa == 0 else b if fb == 0 or fa * fb > 0 else brentq(lambda t: centre(t) @ n, a, b, xtol=1e-15)
    nv = normal(tau)
    return float(centre(tau) @ u), math.atan2(nv @ n, nv @ u)


def cam_pair_law(joint, cam_frame, follower_frame, *, cam_turns, follower_moves, follower):
    """The :class:`CamLaw` of a cam pair, in its joints' coordinates (θ_a → m_b).

    ``joint`` a :class:`~cadmotion.kernel.spec.JointSpec` of type ``cam`` with either
    ``law`` ((θ, m) pairs over one turn: rad → m or rad) or ``profile`` (points of the cam
    outline, assembly frame at the initial pose, m) with ``follower`` (a name of
    :data:`FOLLOWER_SHAPES`), ``radius`` (m, rollers) and optionally ``contact`` (the
    follower's tip or roller centre, assembly frame, m; default: the follower joint's origin).
    ``cam_frame``/``follower_frame``: (origin, axes (3, 3) columns x, y, z) of the cam's and
    the follower's joint frames in the assembly frame at the initial pose; ``cam_turns`` and
    ``follower_moves`` (±1) say whether the cam turns by +θ about the cam axis and the
    follower moves by +s along its slide when the joint coordinates grow.
    """
    table = joint.param("law")
    if table is not None:
        theta, value = np.asarray(table, float).T
        return CamLaw(theta, value)
    profile = joint.param("profile")
    if profile is None:
        raise ValueError("give the lift law (`law`) or the cam's outline (`profile`) with the follower's shape")
    if follower != "prismatic":
        raise ValueError("a law from the cam's outline is computed for translating (prismatic) followers; "
                         "give an oscillating follower's `law` as a table")
    O, R = (np.asarray(x, float) for x in cam_frame)
    F, Rf = (np.asarray(x, float) for x in follower_frame)
    slide = Rf[:, 2]
    if abs(slide @ R[:, 2]) > 1e-6:
        raise ValueError("the follower's slide is not normal to the cam axis")

    def plane(p):  # assembly point -> cam-plane coordinates (m)
        d = np.asarray(p, float) - O
        return np.array([d @ R[:, 0], d @ R[:, 1]])

    pts = np.array([plane(p) for p in profile])
    axial = np.array([(np.asarray(p, float) - O) @ R[:, 2] for p in profile])
    if np.ptp(axial) > 1e-6 * max(float(np.max(np.ptp(pts, axis=0))), 1e-12):
        raise ValueError(f"the cam's outline is not in a plane normal to the cam axis (its points spread "
                         f"{np.ptp(axial):.4g} m along the axis): name a planar side face of the cam normal to "
                         "its shaft with `profile.near`, or give points of one section")
    contact = joint.param("contact")
    shape = joint.param("follower") or "flat"
    u = np.array([slide @ R[:, 0], slide @ R[:, 1]]) * follower_moves
    tip = plane(F if contact is None else contact)
    law = lift_law(pts, shape, radius=joint.param("radius") or 0.0, point=tip, direction=u)
    # the follower touches the cam at the initial pose: its tip, roller centre or face where the law starts
    size = float(np.max(np.ptp(pts, axis=0)))
    if abs(law.offset) > 1e-2 * size:
        what = {"flat": "face", "point": "tip", "roller": "roller centre"}[shape]
        where = "inside the cam" if law.offset > 0 else "clear of the cam"
        raise ValueError(f"the follower's {what} at ({tip[0]:.6g}, {tip[1]:.6g}) m in the cam's frame is "
                         f"{abs(law.offset):.4g} m {where} at the initial pose (the outline spans {size:.4g} m): place "
                         "the follower on the cam, give `contact` (its tip or roller centre), or check that the "
                         "outline is the cam's (`profile.near` picks the planar face nearest to it)")
    # the law of the cam turned by α = cam_turns·θ, along +u = follower_moves·(slide)
    return CamLaw(cam_turns * law.theta, law.value, law.pressure_angle(law.theta))


def _signed_area(C):
    x, y = C[:, 0], C[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


# --------------------------------------------------------------------- the follower's load between frames
def load_between_frames(law, times, theta, load, step=math.radians(0.25)):
    """(t, N): the follower's load from the cam on a grid that turns the cam by at most ``step``
    (rad) between points, from its values at the run's frames.

    A load checked only at the frames misses a lift-off whose window (a few degrees at speeds
    just above the lift-off speed, ending where the law's acceleration jumps) falls between
    them, or finds a later one. The load of a follower on a spring, a damper and its own inertia
    is N = β₀ + β₁ L(θ) + β₂ L′(θ) θ̇ + β₃ (L″(θ) θ̇² + L′(θ) θ̈): its coefficients are fitted to
    the frames (least squares), θ(t) is the cubic spline through the frames' cam angles, and what
    the fit leaves at the frames is interpolated linearly, so N is the frames' own values there.

    ``times`` (nt,) s, ``theta`` (nt,) the cam joint's angle (rad, the law's argument), ``load``
    (nt,) N or N m. Returns the frames' own series where there are fewer than 8 frames.
    """
    from scipy.interpolate import CubicSpline

    t = np.asarray(times, float)
    th = np.asarray(theta, float)
    N = np.asarray(load, float)
    if len(t) < 8 or np.any(np.diff(t) <= 0):
        return t, N
    path = CubicSpline(t, th)

    def basis(tt):
        a, w, dw = path(tt), path(tt, 1), path(tt, 2)
        d1 = law(a, 1)
        return np.column_stack([np.ones_like(a), law(a), d1 * w, law(a, 2) * w**2 + d1 * dw])

    B = basis(t)
    beta = np.linalg.lstsq(B, N, rcond=None)[0]
    rest = N - B @ beta
    cuts = np.clip(np.ceil(np.abs(np.diff(th)) / step).astype(int), 1, 1000)
    fine = np.concatenate([t[k] + (t[k + 1] - t[k]) * np.arange(cuts[k]) / cuts[k] for k in range(len(t) - 1)]
                          + [t[-1:]])
    return fine, basis(fine) @ beta + np.interp(fine, t, rest)


# --------------------------------------------------------------------- the constraint code
class CamCode:
    """Constraint code of a group of cam pairs (the interface of generated template code).

    Slots 0, 1: the cam's revolute joint; slots 2, 3: the follower's joint. ``laws`` holds
    one :class:`CamLaw` per instance; the group's parameter 0 is the instance's law index.
    ``follower`` is ``"disp"`` (prismatic follower) or ``"angle"`` (revolute follower).
    """

    neq = 1

    def __init__(self, laws, follower, parametrization="euler-parameters"):
        from .symbolic.codegen import generated

        self.laws = list(laws)
        self.follower = follower
        self._a = generated("drive-angle", parametrization)
        self._b = generated("drive-" + follower, parametrization)
        self.nq_slots = 2 * self._a.nq_slots
        self._half = self._a.nq_slots

    def _split(self, Q, M, W):
        h = self._half
        n = Q.shape[0]
        Wa = W[:, :1]
        Wb = W[:, 1:2] if self.follower == "angle" else np.zeros((n, 0))
        return Q[:, :h], Q[:, h:], M[:, :24], M[:, 24:], Wa, Wb

    def _law(self, S, theta, derivative):
        out = np.empty(len(theta))
        idx = S[:, 0].astype(np.int64)
        for i in np.unique(idx):
            sel = idx == i
            out[sel] = self.laws[i](theta[sel], derivative)
        return out

    @staticmethod
    def _none(n):
        return np.zeros((n, 0)), np.zeros((n, 3))

    def phi(self, Q, M, S, F, W):
        """Φ (n, 1) = m − L(θ): the follower's coordinate m (m or rad) less the law at the cam angle θ."""
        Qa, Qb, Ma, Mb, Wa, Wb = self._split(Q, M, W)
        P, F0 = self._none(len(Q))
        theta = self._a.phi(Qa, Ma, P, F0, Wa)[:, 0]
        m = self._b.phi(Qb, Mb, P, F0, Wb)[:, 0]
        return (m - self._law(S, theta, 0))[:, None]

    def jac(self, Q, M, S, F, W):
        """Φq (n, 1, 4 slots × coordinates): −L'(θ) θ_q on the cam's slots, m_q on the follower's."""
        Qa, Qb, Ma, Mb, Wa, Wb = self._split(Q, M, W)
        P, F0 = self._none(len(Q))
        theta = self._a.phi(Qa, Ma, P, F0, Wa)[:, 0]
        Ja = self._a.jac(Qa, Ma, P, F0, Wa)
        Jb = self._b.jac(Qb, Mb, P, F0, Wb)
        return np.concatenate([-self._law(S, theta, 1)[:, None, None] * Ja, Jb], axis=2)

    def phit(self, Q, M, S, F, W):
        """Φt (n, 1): zeros (a cam law does not depend on time)."""
        return np.zeros((len(Q), 1))

    def gamma(self, Q, QD, M, S, F, W):
        """γ (n, 1) = γ_m − L'(θ) γ_θ + L''(θ) θ̇² (the acceleration right-hand side)."""
        Qa, Qb, Ma, Mb, Wa, Wb = self._split(Q, M, W)
        h = self._half
        P, F0 = self._none(len(Q))
        theta = self._a.phi(Qa, Ma, P, F0, Wa)[:, 0]
        rate = np.einsum("nj,nj->n", self._a.jac(Qa, Ma, P, F0, Wa)[:, 0], QD[:, :h])
        ga = self._a.gamma(Qa, QD[:, :h], Ma, P, F0, Wa)[:, 0]
        gb = self._b.gamma(Qb, QD[:, h:], Mb, P, F0, Wb)[:, 0]
        return (gb - self._law(S, theta, 1) * ga + self._law(S, theta, 2) * rate**2)[:, None]

    def angles(self, Q, M):
        """Raw angles (n, 1 or 2), rad: the cam's, and the follower's for a revolute follower."""
        h = self._half
        raw = [self._a.angles(Q[:, :h], M[:, :24])]
        if self.follower == "angle":
            raw.append(self._b.angles(Q[:, h:], M[:, 24:]))
        return np.concatenate(raw, axis=1)

    def measures(self, Q, M):
        """Joint measures (n, 0): a cam pair reports none of its own."""
        return np.zeros((len(Q), 0))

    def pressure_angles(self, Q, M, S):
        """(n,) pressure angles (rad) of the instances at coordinates Q (NaN for table laws)."""
        Qa, _, Ma, _, Wa, _ = self._split(Q, M, np.zeros((len(Q), 2)))
        P, F0 = self._none(len(Q))
        theta = self._a.phi(Qa, Ma, P, F0, Wa)[:, 0]
        out = np.empty(len(Q))
        idx = S[:, 0].astype(np.int64)
        for i in np.unique(idx):
            out[idx == i] = self.laws[i].pressure_angle(theta[idx == i])
        return out
