"""Triangle meshes as OCCT faces: one face carrying a ``Poly_Triangulation`` and no surface, for files that
describe parts by triangles instead of B-rep geometry (a URDF robot's ``<mesh>`` visuals: STL, OBJ, COLLADA).

Such a face needs no meshing: :func:`cadmotion.geometry.triangulation.triangulated_faces` reads its
triangulation directly, and ``BRepMesh_IncrementalMesh`` leaves it as it is (it has no surface to mesh), so the
writers' tessellation keeps the file's triangles. Coordinates are in the unit the caller gives (metres for the
importers); triangles are wound counter-clockwise seen from outside, as STL and the other formats store them.

:func:`read_stl` is OCCT's own reader (``RWStl``, binary and ASCII, coincident nodes merged);
:func:`triangulation` builds one from numpy arrays (the OBJ and COLLADA readers' output).
"""

from __future__ import annotations

import numpy as np

__all__ = ["read_stl", "triangulation", "arrays", "mesh_face", "placed_mesh", "has_mesh_faces"]


def read_stl(path):
    """The triangulation of an STL file (binary or ASCII), in the file's unit; None if OCCT cannot read it
    (not an STL file, or no triangle)."""
    from OCP.RWStl import RWStl

    tri = RWStl.ReadFile_s(str(path))
    if tri is None or tri.NbTriangles() == 0:
        return None
    return tri


def triangulation(nodes, triangles):
    """A ``Poly_Triangulation`` of ``nodes`` (n, 3) and ``triangles`` (m, 3), 0-based indices into ``nodes``.

    Raises ValueError when an index is outside ``nodes`` (OCCT would read past its array)."""
    from OCP.gp import gp_Pnt
    from OCP.Poly import Poly_Triangle, Poly_Triangulation

    nodes = np.asarray(nodes, float).reshape(-1, 3)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(nodes)):
        raise ValueError(f"a triangle's node index is outside the {len(nodes)} nodes")
    tri = Poly_Triangulation(len(nodes), len(triangles), False)
    set_node, set_triangle = tri.SetNode, tri.SetTriangle
    # columns as flat lists: a list per row would be 10⁵ containers, each allocation a step towards the
    # garbage collector's next full pass over them all
    for i, x, y, z in zip(range(1, len(nodes) + 1), *nodes.T.tolist()):
        set_node(i, gp_Pnt(x, y, z))
    for i, a, b, c in zip(range(1, len(triangles) + 1), *(triangles + 1).T.tolist()):
        set_triangle(i, Poly_Triangle(a, b, c))
    return tri


def arrays(tri):
    """(nodes (n, 3) float, triangles (m, 3) int64, 0-based) of a ``Poly_Triangulation``."""
    nodes = np.array([tri.Node(i).Coord() for i in range(1, tri.NbNodes() + 1)], float).reshape(-1, 3)
    triangles = np.array([tri.Triangle(i).Get() for i in range(1, tri.NbTriangles() + 1)], np.int64) - 1
    return nodes, triangles.reshape(-1, 3)


def mesh_face(tri):
    """A face without surface carrying the triangulation ``tri`` (``BRep_Builder.MakeFace``)."""
    from OCP.BRep import BRep_Builder
    from OCP.TopoDS import TopoDS_Face

    face = TopoDS_Face()
    BRep_Builder().MakeFace(face, tri)
    return face


def placed_mesh(tri, X, scale=(1.0, 1.0, 1.0)):
    """The face of triangulation ``tri`` scaled along its own axes by ``scale`` (3,), then placed by the pose
    ``X`` (4x4): nodes x → R (s ∘ x) + p.

    Unscaled, the face shares ``tri`` and carries ``X`` as its location; scaled, the nodes are copied and
    scaled (a location cannot scale), and a mirroring scale (an odd number of negative factors) turns the
    triangles' winding so that they still face outwards."""
    from .placements import moved

    scale = np.asarray(scale, float)
    if np.all(scale == 1.0):
        return moved(mesh_face(tri), np.asarray(X, float))
    nodes, triangles = arrays(tri)
    if np.prod(scale) < 0:
        triangles = triangles[:, ::-1]
    return moved(mesh_face(triangulation(nodes * scale, triangles)), np.asarray(X, float))


def has_mesh_faces(shape) -> bool:
    """True when ``shape`` has a face without surface (a mesh, :func:`mesh_face`)."""
    from OCP.BRep import BRep_Tool
    from OCP.TopAbs import TopAbs_FACE
    from OCP.TopExp import TopExp_Explorer
    from OCP.TopoDS import TopoDS

    faces = TopExp_Explorer(shape, TopAbs_FACE)
    while faces.More():
        if BRep_Tool.Surface_s(TopoDS.Face_s(faces.Current())) is None:
            return True
        faces.Next()
    return False
