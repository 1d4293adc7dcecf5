"""Topology of a shape: compounds, numbered sub-shapes, neighbours, copies and bounding boxes.

Sub-shapes are numbered from 1 in ``TopExp::MapShapes`` order — the numbering FreeCAD
shows as ``Face3`` or ``Edge7`` and geometry references report. Boxes are axis-aligned in
the shape's frame and unit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SUB_SHAPE_KINDS", "is_empty", "compound", "sub_shapes", "sub_shape", "faces_around", "is_face", "has_solid",
           "count_loose_faces", "copy", "bounding_box"]

#: the sub-shape kinds :func:`sub_shapes` numbers
SUB_SHAPE_KINDS = ("vertex", "edge", "face")


def _topabs(kind):
    from OCP.TopAbs import TopAbs_EDGE, TopAbs_FACE, TopAbs_VERTEX

    return {"vertex": TopAbs_VERTEX, "edge": TopAbs_EDGE, "face": TopAbs_FACE}[kind]


def _cast(kind):
    from OCP.TopoDS import TopoDS

    return {"vertex": TopoDS.Vertex_s, "edge": TopoDS.Edge_s, "face": TopoDS.Face_s}[kind]


def is_empty(shape) -> bool:
    """True when there is no shape: None, or a null ``TopoDS_Shape``."""
    return shape is None or shape.IsNull()


def compound(shapes):
    """A compound holding ``shapes`` (a location can then be put on the whole)."""
    from OCP.BRep import BRep_Builder
    from OCP.TopoDS import TopoDS_Compound

    comp = TopoDS_Compound()
    builder = BRep_Builder()
    builder.MakeCompound(comp)
    for s in shapes:
        builder.Add(comp, s)
    return comp


def sub_shapes(shape, kind):
    """The distinct sub-shapes of ``kind`` (``"vertex"``, ``"edge"`` or ``"face"``) of ``shape``,
    as a list in ``TopExp::MapShapes`` order: item ``i - 1`` is FreeCAD's ``Face<i>``."""
    from OCP.TopExp import TopExp
    from OCP.TopTools import TopTools_IndexedMapOfShape

    found = TopTools_IndexedMapOfShape()
    TopExp.MapShapes_s(shape, _topabs(kind), found)
    cast = _cast(kind)
    return [cast(found.FindKey(i)) for i in range(1, found.Extent() + 1)]


def sub_shape(shape, kind, index):
    """Sub-shape number ``index`` (1-based, see :func:`sub_shapes`) of ``kind``, or None when there is none."""
    from OCP.TopExp import TopExp
    from OCP.TopTools import TopTools_IndexedMapOfShape

    found = TopTools_IndexedMapOfShape()
    TopExp.MapShapes_s(shape, _topabs(kind), found)
    if not 1 <= index <= found.Extent():
        return None
    return _cast(kind)(found.FindKey(index))


def is_face(shape) -> bool:
    """True when ``shape`` is a face."""
    from OCP.TopAbs import TopAbs_FACE

    return shape.ShapeType() == TopAbs_FACE


def faces_around(shape, support):
    """The faces of ``shape`` a point on ``support`` lies on: ``support`` itself when it is a face,
    else the faces that share the edge or vertex ``support`` (none when ``shape`` does not hold it)."""
    from OCP.TopAbs import TopAbs_FACE
    from OCP.TopExp import TopExp
    from OCP.TopoDS import TopoDS
    from OCP.TopTools import TopTools_IndexedDataMapOfShapeListOfShape

    if support.ShapeType() == TopAbs_FACE:
        return [TopoDS.Face_s(support)]
    around = TopTools_IndexedDataMapOfShapeListOfShape()
    TopExp.MapShapesAndAncestors_s(shape, support.ShapeType(), TopAbs_FACE, around)
    if not around.Contains(support):
        return []
    return [TopoDS.Face_s(f) for f in around.FindFromKey(support)]


def has_solid(shape) -> bool:
    """True when ``shape`` holds at least one solid."""
    from OCP.TopAbs import TopAbs_SOLID
    from OCP.TopExp import TopExp_Explorer

    return TopExp_Explorer(shape, TopAbs_SOLID).More()


def count_loose_faces(shape) -> int:
    """Number of faces of ``shape`` that do not belong to any solid (sheets, open shells)."""
    from OCP.TopAbs import TopAbs_FACE, TopAbs_SOLID
    from OCP.TopExp import TopExp_Explorer

    n = 0
    explorer = TopExp_Explorer(shape, TopAbs_FACE, TopAbs_SOLID)
    while explorer.More():
        n += 1
        explorer.Next()
    return n


def copy(shape, geometry=True):
    """A copy of ``shape`` (``BRepBuilderAPI_Copy``): with ``geometry`` its surfaces and curves are
    copied too; the copy holds no triangulation, so meshing it leaves the original alone."""
    from OCP.BRepBuilderAPI import BRepBuilderAPI_Copy

    return BRepBuilderAPI_Copy(shape, geometry, False).Shape()


def bounding_box(shape, optimal=True):
    """(lo (3,), hi (3,)) corners of the axis-aligned box of ``shape`` in its frame and unit, or
    None when the box is void (no geometry).

    ``optimal``: the exact box of the geometry (``BRepBndLib::AddOptimal``) — of a face without surface
    (a mesh, :mod:`.meshes`), the box of its triangulation's nodes, which are its exact geometry; otherwise
    OCCT's quick box, which may be larger (control points, tolerances).
    """
    from OCP.Bnd import Bnd_Box
    from OCP.BRep import BRep_Tool
    from OCP.BRepBndLib import BRepBndLib
    from OCP.TopAbs import TopAbs_FACE
    from OCP.TopExp import TopExp_Explorer
    from OCP.TopoDS import TopoDS

    box = Bnd_Box()
    if optimal:
        BRepBndLib.AddOptimal_s(shape, box, False, False)  # skips faces without surface
        faces = TopExp_Explorer(shape, TopAbs_FACE)
        while faces.More():
            face = TopoDS.Face_s(faces.Current())
            faces.Next()
            if BRep_Tool.Surface_s(face) is None:
                BRepBndLib.AddOptimal_s(face, box, True, False)
    else:
        BRepBndLib.Add_s(shape, box, False)
    if box.IsVoid():
        return None
    x0, y0, z0, x1, y1, z1 = box.Get()
    return np.array([x0, y0, z0]), np.array([x1, y1, z1])
