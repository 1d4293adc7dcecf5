"""A shape's stored triangulation, read face by face (OCCT ``Poly_Triangulation``).

Shared by the writers' meshes (:mod:`cadmotion.plugin.writers.tessellate`), the interference
checks and the contact points taken from a part's tessellation (:mod:`.contact_shapes`). Mesh the
shape first (``BRepMesh_IncrementalMesh``); coordinates are in the shape's frame and unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["TriangulatedFace", "triangulated_faces"]


def _trsf_matrix(trsf):
    """3x4 matrix [R | t] of a gp_Trsf."""
    return np.array([[trsf.Value(r, c) for c in range(1, 5)] for r in range(1, 4)])


@dataclass(frozen=True)
class TriangulatedFace:
    """One face's stored triangulation, in the shape's frame.

    ``nodes`` (n, 3) and ``normals`` (n, 3, or None) have the face location applied;
    ``triangles`` (m, 3) index ``nodes`` (0-based), wound outwards (reversed faces
    flipped, their normals too). ``face``, ``triangulation`` and ``location`` are the OCCT
    objects, for callers that read more (e.g. edge polygons on the triangulation).
    """

    face: object
    triangulation: object
    location: object
    nodes: np.ndarray
    triangles: np.ndarray
    normals: Optional[np.ndarray] = None


def triangulated_faces(shape, normals=False):
    """Yield a :class:`TriangulatedFace` for every face of ``shape`` that has a triangulation
    (mesh the shape first, e.g. with ``BRepMesh_IncrementalMesh``)."""
    from OCP.BRep import BRep_Tool
    from OCP.BRepLib import BRepLib_ToolTriangulatedShape
    from OCP.TopAbs import TopAbs_FACE, TopAbs_REVERSED
    from OCP.TopExp import TopExp_Explorer
    from OCP.TopLoc import TopLoc_Location
    from OCP.TopoDS import TopoDS

    explorer = TopExp_Explorer(shape, TopAbs_FACE)
    while explorer.More():
        face = TopoDS.Face_s(explorer.Current())
        explorer.Next()
        loc = TopLoc_Location()
        tri = BRep_Tool.Triangulation_s(face, loc)
        if tri is None or tri.NbTriangles() == 0:
            continue
        nv, nf = tri.NbNodes(), tri.NbTriangles()
        p = np.array([tri.Node(i).Coord() for i in range(1, nv + 1)], float)
        ij = np.array([tri.Triangle(i).Get() for i in range(1, nf + 1)], np.int64) - 1
        n = None
        if normals:
            BRepLib_ToolTriangulatedShape.ComputeNormals_s(face, tri)
            n = np.array([tri.Normal(i).Coord() for i in range(1, nv + 1)], float)
        if face.Orientation() == TopAbs_REVERSED:
            ij = ij[:, ::-1]
            n = None if n is None else -n
        if not loc.IsIdentity():
            m = _trsf_matrix(loc.Transformation())
            p = p @ m[:, :3].T + m[:, 3]
            n = None if n is None else n @ m[:, :3].T
        yield TriangulatedFace(face, tri, loc, p, ij, n)
