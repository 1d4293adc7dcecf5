"""Meshing a shape (``BRepMesh``) and its stored triangulation, read face by face
(OCCT ``Poly_Triangulation``).

Shared by the writers' meshes (:mod:`cadmotion.plugin.writers.tessellate`), the interference
checks (which also read the chord errors of the faces' boundary polygons) and the contact
points taken from a part's tessellation (:mod:`cadmotion.importers.contact_shapes`). Mesh the
shape first (:func:`mesh`); coordinates are in the shape's frame and unit. OCCT stores the
triangulation in the shape itself, and a finer one already there is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .placements import matrix_of_trsf

__all__ = ["TriangulatedFace", "triangulated_faces", "mesh", "face_deflection", "boundary_polygons"]


def mesh(shape, linear, angular):
    """Triangulate ``shape`` in place (``BRepMesh_IncrementalMesh``, in parallel) with a linear
    deflection ``linear`` (the shape's unit: the largest distance between a triangle and the
    surface) and an angular deflection ``angular`` (rad)."""
    from OCP.BRepMesh import BRepMesh_IncrementalMesh

    BRepMesh_IncrementalMesh(shape, linear, False, angular, True)


@dataclass(frozen=True)
class TriangulatedFace:
    """One face's stored triangulation, in the shape's frame.

    ``nodes`` (n, 3) and ``normals`` (n, 3, or None) have the face location applied;
    ``triangles`` (m, 3) index ``nodes`` (0-based), wound outwards (reversed faces
    flipped, their normals too). ``face``, ``triangulation`` and ``location`` are the OCCT
    objects, for callers that read more (e.g. edge polygons on the triangulation).
    ``exact``: the face has no surface (a mesh read from a file, :mod:`.meshes`): its
    triangles are its geometry, without chord error, and OCCT's exact tools (distances,
    classification) do not measure it.
    """

    face: object
    triangulation: object
    location: object
    nodes: np.ndarray
    triangles: np.ndarray
    normals: Optional[np.ndarray] = None
    exact: bool = False


def triangulated_faces(shape, normals=False):
    """Yield a :class:`TriangulatedFace` for every face of ``shape`` that has a triangulation
    (mesh the shape first, :func:`mesh`); with ``normals`` the vertex normals too."""
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
            m = matrix_of_trsf(loc.Transformation())[:3]
            p = p @ m[:, :3].T + m[:, 3]
            n = None if n is None else n @ m[:, :3].T
        yield TriangulatedFace(face, tri, loc, p, ij, n, BRep_Tool.Surface_s(face) is None)


def face_deflection(tf) -> float:
    """The chord error OCCT reports for the triangulation of the face ``tf`` (a
    :class:`TriangulatedFace`), in the shape's unit; 0 when it reports none."""
    return tf.triangulation.Deflection()


def boundary_polygons(tf):
    """The boundary edges of the face ``tf`` (a :class:`TriangulatedFace`) as polygons on its
    triangulation: ``(polygons, unknown)``.

    ``polygons`` is a list of ``(nodes, deflection)``, one per edge whose polygon has a positive
    chord error: ``nodes`` (k,) int64 0-based indices into ``tf.nodes`` along the edge,
    ``deflection`` the polygon's chord error (the shape's unit). ``unknown`` is True when a
    curved edge that is not degenerate has no polygon on the triangulation (its chord error is
    not known).
    """
    from OCP.BRep import BRep_Tool
    from OCP.TopAbs import TopAbs_EDGE
    from OCP.TopExp import TopExp_Explorer
    from OCP.TopoDS import TopoDS

    from .analytic import curve_kind

    polygons, unknown = [], False
    edges = TopExp_Explorer(tf.face, TopAbs_EDGE)
    while edges.More():
        edge = TopoDS.Edge_s(edges.Current())
        edges.Next()
        poly = BRep_Tool.PolygonOnTriangulation_s(edge, tf.triangulation, tf.location)
        if poly is None:
            unknown = unknown or (not BRep_Tool.Degenerated_s(edge) and curve_kind(edge) != "line")
            continue
        if poly.Deflection() <= 0.0:
            continue
        nodes = np.array([poly.Node(i) for i in range(1, poly.NbNodes() + 1)], np.int64) - 1
        polygons.append((nodes, poly.Deflection()))
    return polygons, unknown
