"""FreeCAD placements as poses: 4x4 matrices in metres, and back (FreeCAD works in mm).

A pose ``X_AB`` is a rigid 4x4 matrix, rotation and translation in metres, of frame B
measured in frame A; a FreeCAD ``Placement`` is the same pose with its translation in mm.
:func:`global_placement` gives an object's placement in the document's global frame W.
Runs inside FreeCAD; :func:`placement_matrix` needs only the placement object.
"""

from __future__ import annotations

import numpy as np

from ...errors import CadImportError
from ...kernel.rotations import matrix_to_quaternion

__all__ = ["MM", "placement_matrix", "matrix_placement", "global_placement", "set_global_placement"]

MM = 1e-3
"""Metres per FreeCAD length unit (mm)."""


def _app():
    try:
        import FreeCAD
    except ImportError:
        raise CadImportError("FreeCAD is not importable in this Python",
                             hint="run this inside FreeCAD or freecadcmd") from None
    return FreeCAD


def placement_matrix(plc):
    """4x4 pose (m) of a FreeCAD ``Placement`` (mm)."""
    m = plc.toMatrix()
    X = np.array([[m.A11, m.A12, m.A13, m.A14], [m.A21, m.A22, m.A23, m.A24],
                  [m.A31, m.A32, m.A33, m.A34], [0.0, 0.0, 0.0, 1.0]], float)
    X[:3, 3] *= MM
    return X


def matrix_placement(X):
    """FreeCAD ``Placement`` (mm) of a rigid 4x4 pose (m)."""
    App = _app()
    X = np.asarray(X, float)
    R = X[:3, :3]
    w, x, y, z = matrix_to_quaternion(R)
    return App.Placement(App.Vector(*(X[:3, 3] / MM)), App.Rotation(x, y, z, w))


def global_placement(obj):
    """The object's placement in the document's global frame (follows the first tree path)."""
    parents = getattr(obj, "Parents", None) or []
    if parents:
        root, sub = parents[0]
        plc = root.getSubObject(sub, retType=3)
        if plc is not None:
            return plc
    return obj.Placement


def set_global_placement(obj, plc):
    """Give ``obj`` the global placement ``plc`` by changing its own ``Placement``."""
    parent = global_placement(obj).multiply(obj.Placement.inverse())
    obj.Placement = parent.inverse().multiply(plc)
