"""Triangle meshes of part shapes, for the glTF and HTML writers.

Each distinct shape is tessellated once: :class:`MeshCache` keys meshes by ``id(shape)``
and holds a reference to the shape, so the id cannot be reused while the cache lives
(a cache lives for one :func:`cadmotion.plugin.writers.write_outputs` call; drop it to
invalidate). A product shared by 100 instances therefore gives one mesh.

Shapes are OCP ``TopoDS_Shape`` objects in the part frame, in metres (the units of
:class:`~cadmotion.kernel.spec.PartSpec`). Tessellation uses ``BRepMesh_IncrementalMesh``
(:func:`cadmotion.geometry.triangulation.mesh`) with a linear deflection of
``LINEAR_DEFLECTION`` times the shape's bounding-box diagonal and an angular deflection of
``ANGULAR_DEFLECTION`` rad. Note that OCCT stores the triangulation in the shape itself (an
existing finer one is reused). Faces without surface — meshes read from files, such as a URDF
robot's ``<mesh>`` visuals (:mod:`cadmotion.geometry.meshes`) — are left as they are by
``BRepMesh``: their own triangles are written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...geometry.shapes import bounding_box, is_empty
from ...geometry.triangulation import TriangulatedFace, mesh, triangulated_faces

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
    if is_empty(shape):
        return None
    if linear is None:
        box = bounding_box(shape, optimal=False)
        if box is None:
            return None
        (xmin, ymin, zmin), (xmax, ymax, zmax) = box
        diag = math.sqrt((xmax - xmin) ** 2 + (ymax - ymin) ** 2 + (zmax - zmin) ** 2)
        linear = max(LINEAR_DEFLECTION * diag, 1e-9)
    mesh(shape, linear, angular)

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
