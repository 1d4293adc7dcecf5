"""A kinematic run checks itself: its frames are one continuous motion with the velocities and accelerations it reports.

The kinematic analysis (:func:`~cadmotion.kernel.kinematics.kinematics`) solves each frame's pose by Newton's
method from a prediction, then its velocities and accelerations from the joints' equations. Nothing in that
chain sees two frames together: a pose taken on the other assembly branch, a turn lost between frames, or a
velocity of the wrong sign would each be a valid-looking frame. This check takes the frames as they came out
and asks, for every part and every frame interval, whether the part moved as its velocities and accelerations
at the interval's two ends say it did — independent of how the frames were solved (compiled loop or stepper,
Newton, branch tracking).

The rule
--------
For a part origin p (m) with velocity v and acceleration a (world frame) at the times t0, t1 = t0 + h, the
two-point Hermite rule integrates v over the interval with an error of order h⁵:

    r = p1 − p0 − h/2 (v0 + v1) + h²/12 (a1 − a0) = h⁵/720 p⁽⁵⁾(ξ)

and for its orientation (world-frame ω, α; φ the rotation vector of R1 R0ᵀ, the Magnus expansion)

    r_φ = φ − h/2 (ω0 + ω1) − h²/12 (α0 − α1),   |r_φ| ≤ h²/12 |ω0 × ω1| + O(h⁵).

Allowance of each interval, per part (m, or rad for φ):

    h/2 |v1 − v0| + h²/4 |a1 − a0|         a kink in the velocity or the acceleration inside the interval
                                             (a piecewise driver): |r| is at most these
    + h²/6 |ω0 × ω1|                        (rotations) twice the Magnus term
    + h V (h ω_m)⁴ / 72                     ten times the smooth motion's h⁵ term, V the part's largest
                                             speed (|v|, or |ω| for φ), ω_m the motion's rate
    + 10 tol (1 + L)                        the poses' own tolerance (tol on ‖Φ‖∞; L the largest |p|, m)

The check is the largest |r| / allowance over the parts and intervals, allowed 1. A frame on another branch
moves a part by a distance of the order of the mechanism's links, beyond every term above when the frames
resolve the motion. They do when h ω_m ≤ 1 (a radian a frame at most), ω_m being the largest of the parts'
|ω| and max |a| / max |v| over the run; coarser intervals are not checked (the rule's series does not
hold there) and the report says how many. What the rule cannot see: a velocity wrong at a single frame by
up to its own size (the data cannot tell it from a kink of a driver at that frame), and turns a part makes
between frames too coarse to be checked. Intervals a singular configuration was passed in (the run
reports them as events) are not checked either: the motion has a kink there by nature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dynamics.invariants import Invariant, InvariantReport

#: the largest motion a frame interval may carry to be checked: h ω_m ≤ RESOLVED (rad)
RESOLVED = 1.0
#: a part slower than this fraction of the fastest is taken to be at rest when the motion's rate is measured
SPEED_FLOOR = 1e-6
#: the rule's allowance for the poses' own error, in units of the run's position tolerance
POSE_TOLERANCES = 10.0


@dataclass(frozen=True)
class ContinuityCheck(Invariant):
    """The ``continuity`` check: the worst interval's |r| / allowance (module docstring), allowed 1.

    Attributes (besides :class:`~.dynamics.invariants.Invariant`'s)
    ----------
    part : the part whose motion breaks the rule worst
    residual : |r| there (m, or rad for an orientation)
    what : ``"position"`` or ``"orientation"``
    """

    part: str = ""
    residual: float = 0.0
    what: str = "position"

    def message(self):
        """One sentence: the part, the jump, where, and what it means."""
        unit = "m" if self.what == "position" else "rad"
        return (f"part {self.part!r} moves between the frames at t = {self.time:.6g} s by {self.residual:.3g} {unit} "
                f"more than its {self.what}'s velocities and accelerations at those frames explain "
                f"({self.max_drift:.3g} × the allowance) — the frames jump to another assembly branch, lose a "
                f"turn, or report wrong velocities: take more frames, or look for a singular configuration near "
                f"that time")

    def line(self):
        """A short line for a summary."""
        flag = "BROKEN" if self.broken else "ok"
        return f"{self.name}: {self.max_drift:.3g} of the allowance ({self.part!r}, {self.what}) {flag}"


def rotation_vectors(q0, q1):
    """Rotation vectors φ (rad, world frame) of R1 R0ᵀ for unit quaternions (w, x, y, z) of shape (..., 4):
    the shorter way round, |φ| ≤ π."""
    w0, v0 = q0[..., :1], q0[..., 1:]
    w1, v1 = q1[..., :1], q1[..., 1:]
    # q1 ⊗ conj(q0)
    w = w1 * w0 + np.sum(v1 * v0, axis=-1, keepdims=True)
    v = -w1 * v0 + w0 * v1 - np.cross(v1, v0)
    v = np.where(w < 0, -v, v)
    w = np.abs(w)
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(s > 1e-12, angle / np.where(s > 0, s, 1.0), 2.0)
    return v * scale


def motion_rate(motion):
    """ω_m (1/s): the largest of the parts' |ω| and, per part, max |a| / max |v| over the frames (parts
    slower than :data:`SPEED_FLOOR` of the fastest left out)."""
    om = np.linalg.norm(motion.angular_velocity, axis=-1)
    vmax = np.linalg.norm(motion.velocity, axis=-1).max(axis=0)
    amax = np.linalg.norm(motion.acceleration, axis=-1).max(axis=0)
    # a part at rest has velocities of round-off and accelerations of round-off: its ratio says nothing
    floor = SPEED_FLOOR * float(vmax.max(initial=0.0))
    ratio = np.where(vmax > floor, amax / np.where(vmax > floor, vmax, 1.0), 0.0)
    return float(max(om.max(initial=0.0), ratio.max(initial=0.0)))


def _norm(x):
    return np.linalg.norm(x, axis=-1)


def check_continuity(motion, tol, skip_intervals=(), rate=None):
    """The ``continuity`` check of a kinematic run's frames (module docstring).

    Parameters
    ----------
    motion : the run's :class:`~cadmotion.kernel.motion.Motion`
    tol : the run's position tolerance on ‖Φ‖∞ (m)
    skip_intervals : indices k of the intervals [t_k, t_k+1] not to check (a singular configuration passed)
    rate : ω_m (1/s) if the caller has it (:func:`motion_rate`)

    Returns
    -------
    (ContinuityCheck or None, list of str)
        The check (None when no interval could be checked) and what was not checked, and why.
    """
    nt = motion.nt
    if nt < 2:
        return None, ["continuity: one frame"]
    h = np.diff(motion.time)[:, None]
    rate = motion_rate(motion) if rate is None else rate
    checked = (h[:, 0] * rate <= RESOLVED) & (h[:, 0] > 0)
    checked[[k for k in skip_intervals if 0 <= k < nt - 1]] = False
    skipped = []
    coarse = int(np.sum(h[:, 0] * rate > RESOLVED))
    if coarse:
        skipped.append(f"continuity: {coarse} of {nt - 1} frame interval(s) too coarse to follow the motion "
                       f"(h ω_m up to {float(h.max() * rate):.3g} rad a frame, checked up to {RESOLVED:g}): "
                       f"take more frames to check them")
    if not checked.any():
        return None, skipped or ["continuity: no frame interval to check"]
    P, W = motion.position, motion.angular_velocity
    hh = h[:, :, None]
    length = float(np.abs(P).max(initial=0.0))
    floor = POSE_TOLERANCES * tol * (1.0 + length)
    smooth = (h * rate) ** 4 / 72.0  # (nt − 1, 1)
    # what each part moved between frames, its rates and their rates; orientations by the rotation vector,
    # with the Magnus term's allowance
    moves = (("position", P[1:] - P[:-1], motion.velocity, motion.acceleration, 0.0),
             ("orientation", rotation_vectors(motion.quaternion[:-1], motion.quaternion[1:]), W,
              motion.angular_acceleration, h ** 2 / 6 * _norm(np.cross(W[:-1], W[1:]))))
    ratios = []
    for what, delta, Xd, Xdd, extra in moves:
        r = delta - hh / 2 * (Xd[:-1] + Xd[1:]) + hh ** 2 / 12 * (Xdd[1:] - Xdd[:-1])
        speed = _norm(Xd).max(axis=0)[None, :]  # (1, nb)
        allow = (h / 2 * _norm(Xd[1:] - Xd[:-1]) + h ** 2 / 4 * _norm(Xdd[1:] - Xdd[:-1]) + extra
                 + h * speed * smooth + floor)
        res = _norm(r)
        ratios.append((what, res, res / allow))
    what, res, ratio = max(ratios, key=lambda item: float(np.max(item[2][checked])))
    ratio = np.where(checked[:, None], ratio, 0.0)
    k, b = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    worst = float(ratio[k, b])
    over = np.nonzero(ratio.max(axis=1) > 1.0)[0]
    check = ContinuityCheck(
        name="continuity", unit="of the allowance", max_drift=worst, time=float(motion.time[k + 1]), allowed=1.0,
        description="the parts' moves between frames against their velocities and accelerations (Hermite rule)",
        first_time=float(motion.time[over[0] + 1]) if over.size else None,
        part=motion.parts[b], residual=float(res[k, b]), what=what)
    return check, skipped


def check_kinematic_run(motion, tol, skip_intervals=()):
    """The :class:`~.dynamics.invariants.InvariantReport` of a kinematic run: its ``continuity``
    (:func:`check_continuity`); each broken check is also an ``invariant`` Event on the Motion."""
    rate = motion_rate(motion) if motion.nt > 1 else 0.0
    check, skipped = check_continuity(motion, tol, skip_intervals, rate)
    report = InvariantReport(checks=[check] if check is not None else [], skipped=skipped, rate=rate)
    motion.events.extend(report.events())
    return report
