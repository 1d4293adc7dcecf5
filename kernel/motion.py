"""Motion: the time series an analysis produces, the one object every writer reads.

Frames and units: every array is in the assembly (world) frame W, SI units.
``position[k, b]`` is the origin of part b's frame at ``time[k]`` (m), ``quaternion[k, b]``
its orientation (w, x, y, z), ``velocity``/``acceleration`` the origin's linear velocity
(m/s) and acceleration (m/s^2), ``angular_velocity``/``angular_acceleration`` the part's
angular velocity (rad/s) and acceleration (rad/s^2), all expressed in W.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np

from .rotations import quat_to_matrix

__all__ = ["Motion", "JointCoordinate", "Event", "quat_to_matrix", "slerp", "turned_slerp", "turn_angles"]


@dataclass(frozen=True)
class JointCoordinate:
    """One joint coordinate over time: ``kind`` is ``angle`` (rad) or ``disp`` (m)."""

    joint: str
    kind: str
    values: np.ndarray  # shape (nt,)

    @property
    def column(self):
        """The CSV column name, ``<joint>.<kind>``."""
        return f"{self.joint}.{self.kind}"


@dataclass(frozen=True)
class Event:
    """Something the analysis noticed: ``kind`` in {singular, lockup, branch, limit, ...}."""

    kind: str
    time: float
    message: str
    items: Tuple[str, ...] = ()


@dataclass
class Motion:
    """Poses, velocities and accelerations of every part at every output time.

    Attributes
    ----------
    time : ndarray, shape (nt,), s
    parts : list of part names, length nb (fixed parts included)
    position, velocity, acceleration : ndarray, shape (nt, nb, 3)
    quaternion : ndarray, shape (nt, nb, 4), (w, x, y, z)
    angular_velocity, angular_acceleration : ndarray, shape (nt, nb, 3)
    joint_coordinates : list of :class:`JointCoordinate`
    extra : named extra series (``name -> ndarray (nt,)``), e.g. reactions, energy
    events : list of :class:`Event`
    complete : False when the run stopped early (error or interrupt); the frames are valid
    message : why the run stopped, if it did
    invariants : the run's checks of itself (an :class:`~.dynamics.invariants.InvariantReport`:
        a kinematic run's continuity, :mod:`.kinematic_checks`), or None
    """

    time: np.ndarray
    parts: List[str]
    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    joint_coordinates: List[JointCoordinate] = field(default_factory=list)
    extra: Dict[str, np.ndarray] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    complete: bool = True
    message: str = ""
    spec: object = None  # the MechanismSpec it was computed from (for writers)
    invariants: object = None

    @property
    def nt(self):
        """Number of output frames."""
        return len(self.time)

    def part_index(self, part):
        """Index of a part name in :attr:`parts`; KeyError with the known names otherwise."""
        try:
            return self.parts.index(part)
        except ValueError:
            raise KeyError(f"no part {part!r}; parts are {', '.join(self.parts)}") from None

    def pose(self, part, t):
        """Pose of ``part`` at time ``t`` as a 4x4 homogeneous matrix X_WP.

        Positions are interpolated by cubic Hermite splines using the stored velocities,
        orientations by spherical linear interpolation, turned by the whole turns the angular
        velocities make between the frames (:func:`turned_slerp`); ``t`` is clamped to the run.
        """
        b = self.part_index(part)
        if self.nt == 1:
            X = np.eye(4)
            X[:3, :3] = quat_to_matrix(self.quaternion[0, b])
            X[:3, 3] = self.position[0, b]
            return X
        k, s, h = self._bracket(t)
        p = _hermite(self.position[k, b], self.velocity[k, b], self.position[k + 1, b], self.velocity[k + 1, b], h, s)
        qt = turned_slerp(self.quaternion[k, b], self.quaternion[k + 1, b], self.angular_velocity[k, b],
                          self.angular_velocity[k + 1, b], h, s)
        X = np.eye(4)
        X[:3, :3] = quat_to_matrix(qt)
        X[:3, 3] = p
        return X

    def _bracket(self, t):
        time = self.time
        if len(time) == 1:
            return 0, 0.0, 0.0
        t = float(np.clip(t, time[0], time[-1]))
        k = int(np.clip(np.searchsorted(time, t, side="right") - 1, 0, len(time) - 2))
        h = time[k + 1] - time[k]
        s = (t - time[k]) / h if h > 0 else 0.0
        return k, s, h

    def coordinate(self, column):
        """A joint coordinate series by its column name (``crank_pivot.angle``)."""
        for jc in self.joint_coordinates:
            if jc.column == column:
                return jc.values
        raise KeyError(column)

    def with_turn_frames(self, max_turn=np.pi / 2):
        """This motion with frames inserted wherever a part turns by more than ``max_turn`` rad
        between two frames (the turn of :func:`turned_slerp`), so that interpolating between the
        frames by slerp, as animations and the interference check do, turns every part the right
        way; ``self`` where none does. The inserted frames are the interpolated motion
        (:meth:`pose`; velocities the Hermite curve's, the rest interpolated linearly)."""
        nt, nb = self.nt, len(self.parts)
        if nt < 2:
            return self
        h = np.diff(np.asarray(self.time, float))
        turn = np.abs(turn_angles(self.quaternion, self.angular_velocity, h))
        cuts = np.ceil(np.max(turn, axis=1, initial=0.0) / max_turn).astype(int)
        if not np.any(cuts > 1):
            return self
        ks, ss = [], []
        for k in range(nt - 1):
            for j in range(max(cuts[k], 1)):
                ks.append(k)
                ss.append(j / max(cuts[k], 1))
        ks.append(nt - 2)
        ss.append(1.0)
        ks, ss = np.array(ks), np.array(ss)
        t = self.time[ks] + ss * h[ks]
        ends = (self.position[ks], self.velocity[ks], self.position[ks + 1], self.velocity[ks + 1],
                h[ks][:, None, None], ss[:, None, None])
        position, velocity = _hermite(*ends), _hermite(*ends, rate=True)
        quaternion = np.empty((len(ks), nb, 4))
        for i, (k, s) in enumerate(zip(ks, ss)):
            for b in range(nb):
                quaternion[i, b] = turned_slerp(self.quaternion[k, b], self.quaternion[k + 1, b],
                                                self.angular_velocity[k, b], self.angular_velocity[k + 1, b], h[k], s)

        def linear(a):
            a = np.asarray(a, float)
            sk = ss.reshape((-1,) + (1,) * (a.ndim - 1))
            return (1.0 - sk) * a[ks] + sk * a[ks + 1]

        return Motion(
            time=t, parts=list(self.parts), position=position, quaternion=quaternion, velocity=velocity,
            angular_velocity=linear(self.angular_velocity), acceleration=linear(self.acceleration),
            angular_acceleration=linear(self.angular_acceleration),
            joint_coordinates=[JointCoordinate(j.joint, j.kind, linear(j.values)) for j in self.joint_coordinates],
            extra={k: linear(v) for k, v in self.extra.items()}, events=list(self.events),
            complete=self.complete, message=self.message, spec=self.spec,
        )

    def truncated(self, n, message):
        """The first ``n`` frames, marked incomplete with ``message``."""
        cut = lambda a: a[:n]
        return Motion(
            time=cut(self.time), parts=list(self.parts), position=cut(self.position),
            quaternion=cut(self.quaternion), velocity=cut(self.velocity),
            angular_velocity=cut(self.angular_velocity), acceleration=cut(self.acceleration),
            angular_acceleration=cut(self.angular_acceleration),
            joint_coordinates=[JointCoordinate(j.joint, j.kind, j.values[:n]) for j in self.joint_coordinates],
            extra={k: v[:n] for k, v in self.extra.items()}, events=list(self.events),
            complete=False, message=message, spec=self.spec,
        )


def _hermite(p0, v0, p1, v1, h, s, rate=False):
    """The cubic Hermite curve through positions p0, p1 (m) with velocities v0, v1 (m/s) at the ends of an
    interval of h s, at fraction s: its position (m), or with ``rate`` its velocity (m/s; v0 where h is 0)."""
    if rate:
        dh = np.where(h > 0, h, 1.0)
        return ((6 * s**2 - 6 * s) * p0 / dh + (3 * s**2 - 4 * s + 1) * v0
                + (6 * s - 6 * s**2) * p1 / dh + (3 * s**2 - 2 * s) * v1)
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * p0 + h10 * (v0 * h) + h01 * p1 + h11 * (v1 * h)


def _turn(q0, q1, w0, w1, h):
    """(u, φ, θ) of the rotation from unit quaternions q0 to q1 (…, 4), (w, x, y, z), over h (…) s with
    the angular velocities w0, w1 (…, 3, rad/s, world) at its ends: u (…, 3) the world axis of q1 q0⁻¹
    (the mean angular velocity's where that rotation is nil), φ (…) its angle in [0, π], θ = φ + 2π n the
    turn with the whole turns n nearest ½ (w0 + w1)·u h − φ (rad)."""
    # q1 q0⁻¹ = (w1 w0 + x1·x0, w0 x1 − w1 x0 − x1 × x0)
    dw = q1[..., 0] * q0[..., 0] + np.einsum("...i,...i->...", q1[..., 1:], q0[..., 1:])
    dx = q0[..., :1] * q1[..., 1:] - q1[..., :1] * q0[..., 1:] - np.cross(q1[..., 1:], q0[..., 1:])
    sign = np.where(dw < 0.0, -1.0, 1.0)
    dw, dx = dw * sign, dx * sign[..., None]
    sin_half = np.linalg.norm(dx, axis=-1)
    mean = 0.5 * (w0 + w1)
    speed = np.linalg.norm(mean, axis=-1)
    turning = sin_half > 1e-12
    u = np.where(turning[..., None], dx / np.where(turning, sin_half, 1.0)[..., None],
                 mean / np.where(speed > 0, speed, 1.0)[..., None])
    phi = np.where(turning, 2.0 * np.arctan2(sin_half, dw), 0.0)
    along = np.einsum("...i,...i->...", mean, u) * h
    return u, phi, phi + 2.0 * np.pi * np.round(np.nan_to_num(along - phi) / (2.0 * np.pi))


def turn_angles(quaternion, angular_velocity, h):
    """The angle (rad) each part turns by between consecutive frames, whole turns included, as
    :func:`turned_slerp` interpolates it: shape (nt − 1, nb) from ``quaternion`` (nt, nb, 4) and
    ``angular_velocity`` (nt, nb, 3, rad/s, world) at frames ``h`` (nt − 1,) s apart."""
    q = np.asarray(quaternion, float)
    w = np.asarray(angular_velocity, float)
    return _turn(q[:-1], q[1:], w[:-1], w[1:], np.asarray(h, float)[:, None])[2]


def turned_slerp(q0, q1, w0, w1, h, s):
    """The orientation at fraction s of a frame interval of h s from the unit quaternion q0 to q1
    (w, x, y, z), with the angular velocities w0, w1 (rad/s, world) at its ends: the rotation about
    the axis of q1 q0⁻¹ by its angle φ ∈ [0, π] plus the whole turns nearest the mean angular
    velocity's turn over h (:func:`_turn`). Where there are none this is :func:`slerp` itself; slerp
    alone takes the short way round, the wrong way for a part that turns by more than half a turn
    between the frames."""
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    u, phi, theta = _turn(q0, q1, np.asarray(w0, float), np.asarray(w1, float), float(h))
    if not (np.isfinite(theta) and theta != phi) or not np.any(u):
        return slerp(q0, q1, s)
    half = 0.5 * s * theta
    c, sn = np.cos(half), np.sin(half)
    # (c, sn u) q0
    w = c * q0[0] - sn * np.dot(u, q0[1:])
    x = c * q0[1:] + sn * q0[0] * u + sn * np.cross(u, q0[1:])
    q = np.concatenate([[w], x])
    return q / np.linalg.norm(q)


def slerp(q0, q1, s):
    """Spherical linear interpolation between unit quaternions q0 and q1 at fraction s."""
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    d = float(np.dot(q0, q1))
    if d < 0.0:
        q1, d = -q1, -d
    if d > 0.9995:
        q = q0 + s * (q1 - q0)
        return q / np.linalg.norm(q)
    th = np.arccos(d)
    return (np.sin((1 - s) * th) * q0 + np.sin(s * th) * q1) / np.sin(th)
