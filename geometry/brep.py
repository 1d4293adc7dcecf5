"""OCCT's BRep text format, read from and written to bytes (the ``<Object>.Shape.brp``
members of a FreeCAD ``.FCStd`` archive). Shapes keep the unit and location written in the
text (millimetres for FreeCAD)."""

from __future__ import annotations

import io

__all__ = ["read_brep", "write_brep"]


def read_brep(data: bytes):
    """The shape held by the BRep text ``data``, or None when OCCT reads no shape from it."""
    from OCP.BRep import BRep_Builder
    from OCP.BRepTools import BRepTools
    from OCP.TopoDS import TopoDS_Shape

    shape = TopoDS_Shape()
    BRepTools.Read_s(shape, io.BytesIO(data), BRep_Builder())
    return None if shape.IsNull() else shape


def write_brep(shape) -> bytes:
    """``shape`` as BRep text in format version 1 (readable by FreeCAD 0.19 and later), without
    its triangulation."""
    from OCP.BRepTools import BRepTools
    from OCP.TopTools import TopTools_FormatVersion

    out = io.BytesIO()
    BRepTools.Write_s(shape, out, False, False, TopTools_FormatVersion.TopTools_FormatVersion_VERSION_1)
    return out.getvalue()
