"""Rigid transforms between OCCT and numpy, and shapes moved by them.

A pose is a 4x4 homogeneous matrix ``X`` (``x -> X[:3, :3] x + X[:3, 3]``) or a rotation
``R`` (3, 3) with a translation ``p`` (3,), in the unit of the shapes it moves (metres for
parts). OCCT's ``gp_Trsf`` and ``TopLoc_Location`` stay opaque handles that pass between the
functions of this package and the shapes; callers read them back as numbers with
:func:`matrix_of_trsf`, :func:`location_matrix` or :func:`pose_of_trsf`.

Moving a shape (:func:`moved`, :func:`placed`) only changes its location: the geometry is
shared. :func:`transformed` and :func:`scaled` rewrite the geometry (a copy).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["trsf", "trsf_of_matrix", "rotation_trsf", "identity_trsf", "scale_trsf", "compose",
           "matrix_of_trsf", "matrix_of_location", "location_matrix", "pose_of_trsf", "is_rigid", "location",
           "moved", "placed", "located", "transformed", "scaled", "orthonormalised"]

#: how far from 1 a transform's scale factor may be for it to count as rigid
RIGID_TOL = 1e-9


def trsf(R, p):
    """An OCCT ``gp_Trsf`` of the rigid motion x -> R x + p (R (3, 3), p (3,), the shapes' unit).

    The matrix is set as given (``gp_Trsf::SetValues``), so it must be orthonormal to
    OCCT's tolerance; see :func:`orthonormalised`.
    """
    from OCP.gp import gp_Trsf

    T = gp_Trsf()
    T.SetValues(R[0, 0], R[0, 1], R[0, 2], p[0],
                R[1, 0], R[1, 1], R[1, 2], p[1],
                R[2, 0], R[2, 1], R[2, 2], p[2])
    return T


def trsf_of_matrix(X):
    """A ``gp_Trsf`` of the pose X (4x4 or 3x4, numpy)."""
    return trsf(X[:3, :3], X[:3, 3])


def rotation_trsf(R, p):
    """A ``gp_Trsf`` of x -> R x + p built as OCCT's rotation form (through ``gp_Quaternion``),
    as ``cq.Location`` values are; R must be a proper rotation (see :func:`orthonormalised`)."""
    from OCP.gp import gp_Mat, gp_Quaternion, gp_Trsf, gp_Vec

    T = gp_Trsf()
    T.SetRotation(gp_Quaternion(gp_Mat(*np.asarray(R, float).ravel().tolist())))
    T.SetTranslationPart(gp_Vec(*np.asarray(p, float).tolist()))
    return T


def identity_trsf():
    """The identity ``gp_Trsf``."""
    from OCP.gp import gp_Trsf

    return gp_Trsf()


def scale_trsf(factor):
    """A ``gp_Trsf`` scaling about the origin by ``factor``."""
    from OCP.gp import gp_Pnt, gp_Trsf

    T = gp_Trsf()
    T.SetScale(gp_Pnt(0, 0, 0), factor)
    return T


def compose(a, b):
    """The ``gp_Trsf`` a · b (b applied first)."""
    return a.Multiplied(b)


def matrix_of_trsf(T):
    """The 4x4 numpy matrix of a ``gp_Trsf`` (last row 0, 0, 0, 1)."""
    X = np.eye(4)
    X[:3, :] = [[T.Value(r, c) for c in range(1, 5)] for r in range(1, 4)]
    return X


def matrix_of_location(loc):
    """The 4x4 numpy matrix of a ``TopLoc_Location`` (e.g. ``cq.Location.wrapped``)."""
    return matrix_of_trsf(loc.Transformation())


def location_matrix(shape):
    """The 4x4 numpy matrix of a shape's own location (identity for a shape without one)."""
    return matrix_of_location(shape.Location())


def pose_of_trsf(T):
    """(position (x, y, z), unit quaternion (w, x, y, z) with w >= 0) of a rigid ``gp_Trsf``."""
    t = T.TranslationPart()
    q = T.GetRotation()
    w, x, y, z = q.W(), q.X(), q.Y(), q.Z()
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = (v / n for v in (w, x, y, z))
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    return (t.X(), t.Y(), t.Z()), (w, x, y, z)


def is_rigid(T) -> bool:
    """True when a ``gp_Trsf`` neither scales (beyond :data:`RIGID_TOL`) nor mirrors."""
    return abs(T.ScaleFactor() - 1.0) <= RIGID_TOL and not T.IsNegative()


def location(R, p):
    """A ``TopLoc_Location`` of x -> R x + p (as :func:`trsf`)."""
    from OCP.TopLoc import TopLoc_Location

    return TopLoc_Location(trsf(R, p))


def moved(shape, X):
    """``shape`` moved by the pose X (4x4, numpy): its location composed with X, geometry shared."""
    return shape.Moved(location(X[:3, :3], X[:3, 3]))


def placed(shape, position, orientation):
    """``shape`` moved by the pose (``position`` (3,), unit quaternion ``orientation`` (w, x, y, z)):
    a part's shape in the assembly frame from its ``PartSpec`` placement; geometry shared."""
    from OCP.gp import gp_Quaternion, gp_Trsf, gp_Vec
    from OCP.TopLoc import TopLoc_Location

    w, x, y, z = orientation
    T = gp_Trsf()
    T.SetRotation(gp_Quaternion(x, y, z, w))
    T.SetTranslationPart(gp_Vec(*position))
    return shape.Moved(TopLoc_Location(T))


def located(shape, loc=None):
    """``shape`` with its location replaced by ``loc`` (a ``TopLoc_Location`` from :func:`location`;
    None: no location), geometry shared."""
    from OCP.TopLoc import TopLoc_Location

    return shape.Located(TopLoc_Location() if loc is None else loc)


def transformed(shape, T):
    """A copy of ``shape`` with its geometry transformed by the ``gp_Trsf`` T (scales and mirrors too)."""
    from OCP.BRepBuilderAPI import BRepBuilderAPI_Transform

    return BRepBuilderAPI_Transform(shape, T, True).Shape()


def scaled(shape, factor):
    """A copy of ``shape`` scaled about the origin by ``factor`` (the shape itself when it is 1)."""
    if factor == 1.0:
        return shape
    return transformed(shape, scale_trsf(factor))


def orthonormalised(R):
    """The rotation nearest to R (3, 3) (SVD, a proper rotation), so that OCCT accepts it:
    round-off of a product of rotations is removed, a rotation is returned unchanged to round-off."""
    U, _, Vt = np.linalg.svd(np.asarray(R, float))
    Q = U @ Vt
    if np.linalg.det(Q) < 0:
        U[:, -1] *= -1
        Q = U @ Vt
    return Q
