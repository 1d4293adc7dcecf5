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

__all__ = ["Motion", "JointCoordinate", "Event", "quat_to_matrix", "slerp"]


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
        orientations by spherical linear interpolation; ``t`` is clamped to the run.
        """
        b = self.part_index(part)
        if self.nt == 1:
            X = np.eye(4)
            X[:3, :3] = quat_to_matrix(self.quaternion[0, b])
            X[:3, 3] = self.position[0, b]
            return X
        k, s, h = self._bracket(t)
        p0, p1 = self.position[k, b], self.position[k + 1, b]
        v0, v1 = self.velocity[k, b] * h, self.velocity[k + 1, b] * h
        h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
        h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
        p = h00 * p0 + h10 * v0 + h01 * p1 + h11 * v1
        qt = slerp(self.quaternion[k, b], self.quaternion[k + 1, b], s)
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
