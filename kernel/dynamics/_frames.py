"""Rotation matrices and marker axes of bodies, shared by the compiled kernels.

Compiled with numba when it is installed (``HAVE_NUMBA``); without it the same loops run as
Python (FreeCAD's interpreter), so the modules that must work there (:mod:`.force_jacobians`,
:mod:`.index3_kernels`) and the numba-only :mod:`._kernels` call the same code.
"""

from __future__ import annotations

import math

import numpy as np

try:  # numba is optional: the same loops run as Python without it
    from ..numba_cache import numba  # its cache folder named by the kernel sources

    jit = numba.njit(cache=True, nogil=True)
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    numba = None
    HAVE_NUMBA = False

    def jit(fn):
        """Without numba: the function itself."""
        return fn


__all__ = ["jit", "HAVE_NUMBA", "euler_rotation", "frame_axes", "relative_rotation_vector"]


@jit
def euler_rotation(A, b, e0, e1, e2, e3):
    """A[b] (3, 3) ← the rotation matrix of the unit Euler parameters (e0, e1, e2, e3)
    (body axes → world)."""
    d = 2 * e0 * e0 - 1
    A[b, 0, 0] = d + 2 * e1 * e1
    A[b, 1, 1] = d + 2 * e2 * e2
    A[b, 2, 2] = d + 2 * e3 * e3
    A[b, 0, 1] = 2 * (e1 * e2 - e0 * e3)
    A[b, 1, 0] = 2 * (e1 * e2 + e0 * e3)
    A[b, 0, 2] = 2 * (e1 * e3 + e0 * e2)
    A[b, 2, 0] = 2 * (e1 * e3 - e0 * e2)
    A[b, 1, 2] = 2 * (e2 * e3 - e0 * e1)
    A[b, 2, 1] = 2 * (e2 * e3 + e0 * e1)


@jit
def frame_axes(A, b, R):
    """World axes A_b R (3, 3) of a marker R (part axes) on body b."""
    W = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            for k in range(3):
                W[i, j] += A[b, i, k] * R[k, j]
    return W


@jit
def relative_rotation_vector(Wi, Wj):
    """Rotation vector φ (rad, |φ| ≤ π, in frame i's axes) of frame j relative to frame i, from
    their world axes Wi, Wj (3, 3) — as :func:`.mass.rotation_vector` of Wiᵀ Wj."""
    R = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            for k in range(3):
                R[i, j] += Wi[k, i] * Wj[k, j]
    s0 = 0.5 * (R[2, 1] - R[1, 2])
    s1 = 0.5 * (R[0, 2] - R[2, 0])
    s2 = 0.5 * (R[1, 0] - R[0, 1])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    ns = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    th = math.atan2(ns, c)
    fac = 1.0 + ns * ns / 6.0 if ns < 1e-8 else th / ns
    return s0 * fac, s1 * fac, s2 * fac
