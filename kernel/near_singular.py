"""Frames near a singular configuration: the constraint Jacobian's conditioning there, what it does to
the velocities and accelerations solved at them, and the ``near-singular`` events of kinematic runs
(inverse dynamics, :mod:`.dynamics.inverse`, names its own from the same measure).

Conditioning: σ_min/σ_max of the *equilibrated* Jacobian (rows, then columns, then rows scaled to unit
norm, :func:`equilibrated`), free of the rows' units and of the parts' sizes; inverse dynamics calls a
frame near a singular configuration at a local minimum below :data:`NEAR_SINGULAR`. The constraints named
are those of the smallest singular direction (:func:`weakest_rows`).

Accuracy of a kinematic frame (:func:`kinematic_events`). Near a singular configuration (a change point,
a dead centre) the kept rows J = Φq[rows] have a small singular value σ_min, with right and left singular
vectors n and u. A pose whose kept rows' residual is Φ (what the position iteration left; driven angles
taken modulo a turn) is fixed only to

    δ = (|uᵀ Φ| + Σ |u_i| ε (|J| |q|)_i) / σ_min        along n

(the second term the round-off of each row's terms, which no iteration removes), and q̇ (Φq q̇ = −Φt)
and q̈ (Φq q̈ = γ) solved at it inherit that error amplified by about 1/σ and 1/σ² (a parallelogram
3.8e-5 s from its change point: pose 1e-11 off, angular accelerations 2e-4 … 2e-3 rad/s² off where they
are exactly 0). The estimate solves them again at the poses q ± δ n (q̈ with its own q̇) and takes the
largest change of every part's velocity, angular velocity, acceleration and angular acceleration: e_v
(m/s or rad/s) and e_a (m/s² or rad/s²). Measured on the parallelogram's frames within 2 ms of its change
points (2,000 frames, both paths, tol 1e-6 and 1e-10) e_a is 5 … 540 times the actual error, mostly
15 … 40: an upper estimate, not a bound. A frame whose e_v exceeds
:data:`VELOCITY_LIMIT` or whose e_a exceeds :data:`ACCELERATION_LIMIT` times the run's largest value
cannot be trusted to that accuracy (the kinematics sweep's allowances); each stretch of such frames is
one ``near-singular`` event at its frame of least σ_min/σ_max.

Cost: only frames whose kept rows' reciprocal condition number (the run's own LU, 1-norm) is below
:data:`WATCH_RCOND` are examined (a dense SVD and two more velocity and acceleration solves each); the
regular samples stay above 9e-3. Models of more than :data:`WATCH_MAX_NQ` coordinates are not examined.
"""

from __future__ import annotations

import numpy as np

from .linalg import RowSolver
from .motion import Event

__all__ = ["NEAR_SINGULAR", "WATCH_RCOND", "VELOCITY_LIMIT", "ACCELERATION_LIMIT", "WATCH_MAX_NQ",
           "equilibrated", "weakest_rows", "kinematic_events", "frame_errors"]

#: σ_min/σ_max of the equilibrated Jacobian (:func:`equilibrated`) below which a frame is near a singular configuration
NEAR_SINGULAR = 1e-3
#: reciprocal condition number of the kept rows (1-norm, unscaled) below which a kinematic frame is examined
WATCH_RCOND = 1e-3
#: estimated error of a frame's velocities, relative to the run's largest velocity, above which it is flagged
VELOCITY_LIMIT = 1e-7
#: estimated error of a frame's accelerations, relative to the run's largest acceleration, above which it is flagged
ACCELERATION_LIMIT = 1e-5
#: the largest number of coordinates whose frames are examined (a dense SVD each)
WATCH_MAX_NQ = 300


def equilibrated(J):
    """J with its rows, then its columns, then its rows scaled to unit norm: free of the units of
    its rows and of the parts' sizes (a rotation column of a 1 mm crank is 1e-3 of a translation
    column; without the column scaling a regular slider-crank at 1/100 scale read σ_min/σ_max 1e-3).
    Positive diagonal scalings keep the signs of its minors."""
    J = J / np.maximum(np.linalg.norm(J, axis=1), 1e-300)[:, None]
    J = J / np.maximum(np.linalg.norm(J, axis=0), 1e-300)[None, :]
    return J / np.maximum(np.linalg.norm(J, axis=1), 1e-300)[:, None]


def weakest_rows(J, k):
    """The rows of J (m, n) taking part in its k-th singular direction (0-based, largest first; k = rank − 1:
    the smallest of a full-rank J): those whose left singular vector's entry is at least 0.1 of its largest."""
    U = np.linalg.svd(J, full_matrices=False)[0]
    u = np.abs(U[:, min(k, U.shape[1] - 1)])
    return np.flatnonzero(u >= 0.1 * u.max())


def kinematic_events(model, system, rows, times, Q, rcond, motion, quantities):
    """``near-singular`` events of a kinematic run (module docstring).

    ``rows`` the kept rows of Φq (square); Q (nt, nq) the frames' poses; ``rcond`` (nt,) the kept rows'
    reciprocal condition number at each frame (the run's LU); ``motion`` the run's :class:`~.motion.Motion`
    (the scales of its velocities and accelerations); ``quantities(model, Q, Qd, Qdd)`` the parts' positions,
    quaternions, velocities, angular velocities, accelerations and angular accelerations of coordinates (the
    kinematics' own).

    Returns (events, series): with events, ``series`` has the estimates ``near_singular.velocity_error`` (m/s,
    rad/s) and ``near_singular.acceleration_error`` (m/s², rad/s²) per frame (nt,), 0 at the frames not
    flagged, for ``Motion.extra``; without, it is empty."""
    nt, nq = Q.shape
    scale_v = max(float(np.abs(motion.velocity).max()), float(np.abs(motion.angular_velocity).max()), 1e-300)
    span = max(float(times[nt - 1] - times[0]), 1e-300)
    scale_a = max(float(np.abs(motion.acceleration).max()), float(np.abs(motion.angular_acceleration).max()),
                  scale_v / span)
    found = {}  # frame -> (δ, e_v, e_a, Φq)
    for k, delta, e_v, e_a, J in frame_errors(model, system, rows, times, Q, rcond, quantities):
        if e_v > VELOCITY_LIMIT * scale_v or e_a > ACCELERATION_LIMIT * scale_a:
            found[k] = (delta, e_v, e_a, J)
    events = []
    series = {}
    if found:
        flagged = np.array(sorted(found), dtype=int)
        for n, name in ((1, "velocity"), (2, "acceleration")):
            series[f"near_singular.{name}_error"] = np.zeros(nt)
            series[f"near_singular.{name}_error"][flagged] = [found[k][n] for k in flagged]
    for stretch in _stretches(sorted(found)):
        ratios = {j: _ratio(found[j][3], nq) for j in stretch}
        k = min(stretch, key=ratios.get)
        delta, J = found[k][0], found[k][3]
        e_v = max(found[j][1] for j in stretch)
        e_a = max(found[j][2] for j in stretch)
        names = _names(model, equilibrated(J), nq)
        where = (f"the frame at t = {times[k]:.6g} s" if len(stretch) == 1 else
                 f"{len(stretch)} frames from t = {times[stretch[0]]:.6g} to {times[stretch[-1]]:.6g} s")
        events.append(Event("near-singular", float(times[k]), (
            f"at t = {times[k]:.6g} s the mechanism is near a singular configuration (σ_min/σ_max of the constraint "
            f"Jacobian {ratios[k]:.2e}; the pose is fixed only to {delta:.1e} along its near-null direction): the "
            f"velocities and accelerations of {where} may be off by up to about {e_v:.1e} (m/s, rad/s) and "
            f"{e_a:.1e} (m/s², rad/s²), {e_v / scale_v:.1e} and {e_a / scale_a:.1e} of the run's largest; the "
            f"constraints of the near-null direction: {', '.join(names)} (per frame: "
            f"near_singular.velocity_error, near_singular.acceleration_error)"), tuple(names)))
    return events, series


def frame_errors(model, system, rows, times, Q, rcond, quantities):
    """(k, δ, e_v, e_a, Φq (nc, nq)) of each frame k examined (``rcond`` below :data:`WATCH_RCOND`): the pose's
    uncertainty along the near-null direction and the estimated errors of its velocities (m/s, rad/s) and
    accelerations (m/s², rad/s²) (module docstring; arguments as :func:`kinematic_events`)."""
    nt, nq = Q.shape
    watch = np.flatnonzero(rcond[:nt] < WATCH_RCOND)
    if not watch.size or nq > WATCH_MAX_NQ or len(rows) != nq:
        return
    from .system import AngleState

    eps = np.finfo(float).eps
    for k in watch:
        q, t = Q[k], times[k]
        # the angles' turns taken from this pose: a driven angle's row is off by whole turns, taken out below
        angles = AngleState(model, q)
        J = system.jacobian_dense(q, t, angles)
        Jr = J[rows]
        U, sv, Vt = np.linalg.svd(Jr)
        if not sv[-1] > 0.0:
            continue
        phi = np.remainder(system.phi(q, t, angles)[rows] + np.pi, 2.0 * np.pi) - np.pi
        floor = eps * (np.abs(Jr) @ np.abs(q))  # the round-off of each row's terms
        delta = float((abs(U[:, -1] @ phi) + np.abs(U[:, -1]) @ floor) / sv[-1])
        states = [_rates(system, rows, q + s * delta * Vt[-1], t, angles) for s in (0.0, 1.0, -1.0)]
        _, _, vel, om, acc, al = quantities(model, *(np.array(a) for a in zip(*states)))
        e_v = max(float(np.abs(vel[1:] - vel[0]).max()), float(np.abs(om[1:] - om[0]).max()))
        e_a = max(float(np.abs(acc[1:] - acc[0]).max()), float(np.abs(al[1:] - al[0]).max()))
        yield int(k), delta, e_v, e_a, J


def _ratio(J, nq):
    """σ_min/σ_max of the equilibrated Φq ``J`` (nc, nq)."""
    sv = np.linalg.svd(equilibrated(J), compute_uv=False)
    return float(sv[nq - 1] / sv[0])


def _rates(system, rows, q, t, angles):
    """(q, q̇, q̈) solved on the kept rows at the pose ``q`` (s: ``t``), whether or not it satisfies Φ = 0."""
    solver = RowSolver(system.jacobian_dense(q, t, angles), rows)
    qd = solver.solve(-system.phit(q, t, angles))
    return q, qd, solver.solve(system.gamma(q, qd, t, angles))


def _stretches(frames):
    """Consecutive runs of the sorted frame indices ``frames``, as lists."""
    out = []
    for k in frames:
        if out and k == out[-1][-1] + 1:
            out[-1].append(k)
        else:
            out.append([k])
    return out


def _names(model, J, nq):
    """The joints and drivers of the smallest singular direction of the equilibrated Φq ``J`` (nc, nq)."""
    labels = model.row_labels
    return sorted({labels[r][0] for r in weakest_rows(J, nq - 1) if labels[r][1] != "normalize"})
