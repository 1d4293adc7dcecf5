"""Triangle meshes of part shapes, for the glTF and HTML writers.

Each distinct shape is tessellated once: :class:`MeshCache` keys meshes by ``id(shape)``
and holds a reference to the shape, so the id cannot be reused while the cache lives
(a cache lives for one :func:`cadmotion.plugin.writers.write_outputs` call; drop it to
invalidate). A product shared by 100 instances therefore gives one mesh.

Shapes are OCP ``TopoDS_Shape`` objects in the part frame, in metres (the units of
:class:`~cadmotion.kernel.spec.PartSpec`). Tessellation uses ``BRepMesh_IncrementalMesh``
with a linear deflection of ``LINEAR_DEFLECTION`` times the shape's bounding-box diagonal
and an angular deflection of ``ANGULAR_DEFLECTION`` rad. Note that OCCT stores the
triangulation in the shape itself (an existing finer one is reused).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Mesh", "MeshCache", "tessellate", "triangulated_faces", "TriangulatedFace", "box_mesh", "LINEAR_DEFLECTION",
           "ANGULAR_DEFLECTION"]

#: linear deflection relative to the bounding-box diagonal of the shape
LINEAR_DEFLECTION = 1e-3
#: angular deflection, rad (about 21 segments around a full circle)
ANGULAR_DEFLECTION = 0.3


@dataclass(frozen=True)
class Mesh:
    """An indexed triangle mesh in a part frame.

    Attributes
    ----------
    positions : ndarray, shape (nv, 3), float32, m
    normals : ndarray, shape (nv, 3), float32, unit vectors pointing out of the material
    indices : ndarray, shape (ntri, 3), uint32, counter-clockwise seen from outside
    placeholder : True for the box standing in for a part without geometry
    """

    positions: np.ndarray
    normals: np.ndarray
    indices: np.ndarray
    placeholder: bool = False

    @property
    def bounds(self):
        """(min, max) corners, each ndarray shape (3,), m."""
        return self.positions.min(axis=0), self.positions.max(axis=0)


def _trsf_matrix(trsf):
    """3x4 matrix [R | t] of a gp_Trsf."""
    return np.array([[trsf.Value(r, c) for c in range(1, 5)] for r in range(1, 4)])


def tessellate(shape, *, linear=None, angular=ANGULAR_DEFLECTION):
    """Triangulate an OCP shape; None if it has no faces (wire, vertex, empty compound).

    Parameters
    ----------
    shape : OCP.TopoDS.TopoDS_Shape, part frame, m
    linear : linear deflection, m; default ``LINEAR_DEFLECTION`` x bounding-box diagonal
    angular : angular deflection, rad

    Returns
    -------
    Mesh or None
        Triangles and per-vertex normals of every face, with the face's orientation
        (reversed faces have their winding and normals flipped) and location applied.
    """
    from OCP.Bnd import Bnd_Box
    from OCP.BRepBndLib import BRepBndLib
    from OCP.BRepMesh import BRepMesh_IncrementalMesh

    if shape is None or shape.IsNull():
        return None
    if linear is None:
        box = Bnd_Box()
        BRepBndLib.Add_s(shape, box, False)
        if box.IsVoid():
            return None
        xmin, ymin, zmin, xmax, ymax, zmax = box.Get()
        diag = math.sqrt((xmax - xmin) ** 2 + (ymax - ymin) ** 2 + (zmax - zmin) ** 2)
        linear = max(LINEAR_DEFLECTION * diag, 1e-9)
    BRepMesh_IncrementalMesh(shape, linear, False, angular, True)

    positions, normals, indices = [], [], []
    offset = 0
    for face in triangulated_faces(shape, normals=True):
        positions.append(face.nodes)
        normals.append(face.normals)
        indices.append(face.triangles + offset)
        offset += len(face.nodes)
    if not indices:
        return None
    n = np.concatenate(normals)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0)
    return Mesh(np.concatenate(positions).astype(np.float32), n.astype(np.float32),
                np.concatenate(indices).astype(np.uint32))


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


def box_mesh(center, size):
    """A cube of edge ``size`` (m) centred at ``center`` (part frame): 24 vertices, 12 triangles."""
    c = np.asarray(center, float)
    h = 0.5 * float(size)
    positions, normals, indices = [], [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            normal = np.zeros(3)
            normal[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1.0
            v = np.cross(normal, u)          # (u, v, normal) right-handed -> CCW from outside
            base = len(positions)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                positions.append(c + h * (normal + a * u + b * v))
                normals.append(normal)
            indices += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return Mesh(np.array(positions, np.float32), np.array(normals, np.float32),
                np.array(indices, np.uint32), placeholder=True)


def bar_mesh(a, b, width):
    """A square bar of side ``width`` (m) from point ``a`` to point ``b`` (part frame)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    length = float(np.linalg.norm(d))
    cube = box_mesh((0.0, 0.0, 0.0), 1.0)
    if length < 1e-12:
        return box_mesh(a, width)
    x = d / length
    e = np.eye(3)[int(np.argmin(np.abs(x)))]
    y = np.cross(x, e)
    y /= np.linalg.norm(y)
    z = np.cross(x, y)
    R = np.column_stack([x, y, z])
    scale = np.array([length + width, width, width])
    positions = (cube.positions * scale) @ R.T + 0.5 * (a + b)
    normals = cube.normals @ R.T
    return Mesh(positions.astype(np.float32), normals.astype(np.float32), cube.indices, placeholder=True)


def merge_meshes(meshes):
    """One mesh holding all ``meshes`` (indices shifted)."""
    offset, indices = 0, []
    for m in meshes:
        indices.append(m.indices + offset)
        offset += len(m.positions)
    return Mesh(np.concatenate([m.positions for m in meshes]), np.concatenate([m.normals for m in meshes]),
                np.concatenate(indices), placeholder=True)


class MeshCache:
    """Meshes by shape identity, for the lifetime of this object.

    ``get(shape)`` tessellates on the first request for a shape object and returns the
    same :class:`Mesh` afterwards; ``tessellations`` counts the real tessellations.
    """

    def __init__(self):
        self._meshes = {}  # id(shape) -> (shape, mesh or None)
        self.tessellations = 0

    def get(self, shape):
        """The mesh of ``shape`` (None if it has no faces)."""
        key = id(shape)
        hit = self._meshes.get(key)
        if hit is not None and hit[0] is shape:
            return hit[1]
        mesh = tessellate(shape)
        self.tessellations += 1
        self._meshes[key] = (shape, mesh)
        return mesh

    def __len__(self):
        return len(self._meshes)
