"""Which parts and joints of a motion move, and how much: one rule for every writer.

A solved motion is exact only to round-off: parts that stand still (welded screws, the
frame) show pose changes of ~1e-15 m and ~1e-15 rad from frame to frame. A part counts as
moving when it travels more than :data:`REL_TOL` times the model size; every writer (glTF
and HTML animation channels, the default plot, OCP CAD Viewer tracks) asks
:func:`moving_parts`, so none of them animates noise.

Measures (SI, assembly frame):

- model size ``L`` (m): the diagonal of the box holding every part origin and centre of
  mass over the run (:func:`model_size`), at least :data:`MIN_SIZE`;
- a part's travel (dimensionless): ``max_t |r(t) - r(0)| / L + max_t angle(R(0)^T R(t))``,
  the largest displacement, in model sizes, of a point of the part within one model size
  of its origin (a turn of θ rad moves such a point by up to θ L);
- a joint coordinate's travel: its range, in rad for angles, in model sizes for
  displacements.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REL_TOL", "MIN_SIZE", "model_size", "part_travel", "moving_parts", "coordinate_travel"]

#: a part moves when it travels more than this fraction of the model size (1e-7: 10 nm on a
#: 0.1 m mechanism, far below a pixel and far above round-off, ~1e-15)
REL_TOL = 1e-7
#: smallest model size, m (a model of one point)
MIN_SIZE = 1e-6


def model_size(motion):
    """Diagonal (m) of the box holding every part origin and centre of mass over the run."""
    pos = np.asarray(motion.position, float).reshape(-1, 3)
    points = [pos[np.isfinite(pos).all(axis=1)]]
    spec = getattr(motion, "spec", None)
    for p in getattr(spec, "parts", ()) or ():
        com = getattr(p, "com", None)
        position = getattr(p, "position", None)
        for v in (com, position):
            if v is not None and len(v) == 3 and np.isfinite(np.asarray(v, float)).all():
                points.append(np.asarray(v, float)[None, :])
    pts = np.vstack(points) if points else np.zeros((0, 3))
    if len(pts) == 0:
        return MIN_SIZE
    return max(float(np.linalg.norm(np.ptp(pts, axis=0))), MIN_SIZE)


def _turn_angle(q0, q):
    """Angle (rad) of the rotation from unit quaternions q0 (4,) to q (nt, 4), (w, x, y, z)."""
    w0, v0 = q0[0], q0[1:]
    w, v = q[:, 0], q[:, 1:]
    # relative rotation q0* q: scalar part and vector part
    rw = w0 * w + v @ v0
    rv = w0 * v - w[:, None] * v0[None, :] - np.cross(v0[None, :], v)
    return 2.0 * np.arctan2(np.linalg.norm(rv, axis=1), np.abs(rw))


def part_travel(motion, size=None):
    """Travel of every part (see the module doc), array (nb,); 0 for a run of no frames."""
    pos = np.asarray(motion.position, float)
    quat = np.asarray(motion.quaternion, float)
    nb = len(motion.parts)
    if pos.shape[0] == 0:
        return np.zeros(nb)
    L = model_size(motion) if size is None else float(size)
    out = np.zeros(nb)
    for b in range(nb):
        disp = np.linalg.norm(pos[:, b] - pos[:1, b], axis=1)
        angle = _turn_angle(quat[0, b], quat[:, b])
        out[b] = np.nanmax(disp) / L + np.nanmax(angle)
    return out


def moving_parts(motion, rel_tol=REL_TOL):
    """Boolean array (nb,): the parts whose travel exceeds ``rel_tol``."""
    return part_travel(motion) > rel_tol


def coordinate_travel(motion, jc, size=None):
    """Range of a joint coordinate: rad for angles, model sizes for displacements (others as stored)."""
    values = np.asarray(jc.values, float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return 0.0
    span = float(values.max() - values.min())
    if jc.kind == "disp":
        span /= model_size(motion) if size is None else float(size)
    return span
