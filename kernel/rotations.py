"""Rotations and rigid poses: unit quaternions (w, x, y, z), 3x3 matrices, 4x4 poses.

One home for the conversions every importer and writer needs, so that the quaternion
convention (scalar first, active rotation, body to world) is written down once.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["quat_to_matrix", "unit_quat_to_matrix", "matrix_to_quaternion", "pose_matrix", "invert_pose"]


def quat_to_matrix(q):
    """Rotation matrix of a unit quaternion (w, x, y, z); works on (..., 4) arrays."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def unit_quat_to_matrix(q):
    """Rotation matrix of a quaternion (w, x, y, z) of any non-zero length (normalised first)."""
    q = np.asarray(q, float)
    return quat_to_matrix(q / np.linalg.norm(q))


def matrix_to_quaternion(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method), w >= 0."""
    R = np.asarray(R, float)
    t = np.trace(R)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] > R[2, 2]:
        s = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    return tuple(float(x) for x in q)


def pose_matrix(position, rotation):
    """4x4 pose from a position (3,) and a rotation: a 3x3 matrix or a quaternion (w, x, y, z)."""
    rotation = np.asarray(rotation, float)
    X = np.eye(4)
    X[:3, :3] = unit_quat_to_matrix(rotation) if rotation.shape == (4,) else rotation
    X[:3, 3] = position
    return X


def invert_pose(X):
    """Inverse of a 4x4 rigid pose (rotation transposed, translation carried back)."""
    Y = np.eye(4)
    Y[:3, :3] = X[:3, :3].T
    Y[:3, 3] = -X[:3, :3].T @ X[:3, 3]
    return Y
