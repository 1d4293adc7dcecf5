"""Primitive solids centred on their frame's origin (OCCT's ``BRepPrimAPI``), for files that describe parts by
primitives instead of B-rep geometry (a URDF robot's ``<visual>`` boxes, cylinders and spheres).

Sizes are in metres; each solid is centred on the origin of its own frame, a cylinder's axis along z — URDF's
convention for all three.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box", "cylinder", "sphere"]


def _centred(shape, offset):
    from .placements import moved

    X = np.eye(4)
    X[:3, 3] = offset
    return moved(shape, X)


def box(size):
    """A box of edges ``size`` = (x, y, z) (m), centred on the origin, edges along the axes."""
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeBox

    sx, sy, sz = (float(v) for v in size)
    return _centred(BRepPrimAPI_MakeBox(sx, sy, sz).Shape(), (-sx / 2, -sy / 2, -sz / 2))


def cylinder(radius, length):
    """A cylinder of ``radius`` and ``length`` (m), its axis along z, centred on the origin."""
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeCylinder

    return _centred(BRepPrimAPI_MakeCylinder(float(radius), float(length)).Shape(), (0.0, 0.0, -float(length) / 2))


def sphere(radius):
    """A sphere of ``radius`` (m) centred on the origin."""
    from OCP.BRepPrimAPI import BRepPrimAPI_MakeSphere

    return BRepPrimAPI_MakeSphere(float(radius)).Shape()
