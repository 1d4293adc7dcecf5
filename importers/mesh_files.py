"""Triangle-mesh files read into OCCT triangulations: STL (binary and ASCII, OCCT's ``RWStl``), Wavefront OBJ
(read here) and COLLADA ``.dae`` (through pycollada, an optional dependency of the ``cad`` extra).

:func:`read_mesh` returns a :class:`MeshFile`: the triangulation in metres, in the file's own frame, and the
file's colour where it has a simple one. It raises :class:`MeshFileError` with the reason when the file
cannot be read; the URDF reader names the file and that reason in its "not read" warning.

OBJ: ``v`` vertices and ``f`` faces (``i``, ``i/t``, ``i/t/n``, ``i//n``; negative indices count back from the
last vertex; polygons are split into fans); every other statement (normals, texture coordinates, groups,
materials) is not needed and skipped. The unit is the file's (OBJ stores none): metres, as URDF files use them.

COLLADA: the ``<triangles>``, ``<polylist>`` and ``<polygons>`` of every geometry instanced in the scene (an
instance whose material refers to a missing effect or texture too, without that material), moved by the
transforms of their nodes composed down the scene, in ``<unit meter>`` (metres per unit). ``<up_axis>`` is not
applied: ROS's tools (rviz, Gazebo, the FCL mesh loaders) read COLLADA through assimp and skip the turn assimp
puts on the root node for it (rviz reads ``<unit>`` itself, as here); meshes made for URDF robots are drawn
that way — Tiago's Y_UP collision meshes of example-robot-data lie on its STL visuals only unturned. The
colour is the ``diffuse`` colour of the material holding the most triangles, when it is a colour (not a
texture). Lines, points and controllers (skinned meshes) are not read.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["MeshFile", "MeshFileError", "read_mesh", "read_obj", "read_collada", "MESH_SUFFIXES"]

#: file suffixes (lower case) read, and the format's name
MESH_SUFFIXES = {".stl": "STL", ".obj": "OBJ", ".dae": "COLLADA"}


class MeshFileError(Exception):
    """A mesh file that cannot be read; ``str()`` is the reason (the caller names the file)."""


@dataclass(frozen=True)
class MeshFile:
    """A mesh file read: ``triangulation`` an OCCT ``Poly_Triangulation`` in metres, the file's frame;
    ``rgba`` its colour (4 floats, 0-1) or None."""

    triangulation: object
    rgba: Optional[tuple] = None

    @property
    def triangles(self) -> int:
        """The number of triangles."""
        return self.triangulation.NbTriangles()


def read_mesh(path) -> MeshFile:
    """Read an STL, OBJ or COLLADA file (chosen by its suffix, any case) — see the module docstring.

    Raises
    ------
    MeshFileError : the suffix is none of those, the reader it needs is not installed, or the file is not
        a readable mesh of that format (the message says which).
    """
    from ..geometry import meshes

    path = Path(path)
    kind = MESH_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise MeshFileError(f"{path.suffix or 'no suffix'}: not a mesh format read here (STL, OBJ, COLLADA)")
    if kind == "STL":
        tri = meshes.read_stl(path)
        if tri is None:
            raise MeshFileError("OpenCascade read no triangle from it (not an STL file?)")
        return MeshFile(tri)
    nodes, triangles, rgba = read_obj(path) if kind == "OBJ" else read_collada(path)
    if len(triangles) == 0:
        raise MeshFileError(f"no triangle in this {kind} file")
    try:
        return MeshFile(meshes.triangulation(nodes, triangles), rgba)
    except ValueError as exc:
        raise MeshFileError(str(exc)) from None


def read_obj(path):
    """(nodes (n, 3), triangles (m, 3) 0-based, None) of a Wavefront OBJ file (module docstring)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise MeshFileError(f"cannot read it: {exc.strerror or exc}") from None
    nodes, triangles = [], []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "v":
                nodes.append((float(words[1]), float(words[2]), float(words[3])))
            elif words[0] == "f":
                corners = [int(w.split("/", 1)[0]) for w in words[1:]]
                corners = [c - 1 if c > 0 else len(nodes) + c for c in corners]
                triangles += [(corners[0], corners[k], corners[k + 1]) for k in range(1, len(corners) - 1)]
        except (ValueError, IndexError):
            raise MeshFileError(f"line {number}: {line.strip()[:60]!r} is not a vertex or face") from None
    nodes = np.array(nodes, float).reshape(-1, 3)
    triangles = np.array(triangles, np.int64).reshape(-1, 3)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(nodes)):
        raise MeshFileError(f"a face names a vertex outside the {len(nodes)} vertices")
    return nodes, triangles, None


def read_collada(path):
    """(nodes (n, 3) m, triangles (m, 3) 0-based, rgba or None) of a COLLADA file (module docstring)."""
    try:
        import collada
        from collada.common import DaeBrokenRefError, DaeError, DaeUnsupportedError
        from collada.polylist import BoundPolylist
        from collada.triangleset import BoundTriangleSet
    except ImportError:
        raise MeshFileError("reading COLLADA needs pycollada (pip install pycollada, or the cad extra)") from None
    try:
        with warnings.catch_warnings():  # pycollada's numpy.matrix (PendingDeprecationWarning), not the user's
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            document = collada.Collada(str(path), ignore=[DaeUnsupportedError, DaeBrokenRefError])
    except OSError as exc:
        raise MeshFileError(f"cannot read it: {exc.strerror or exc}") from None
    except (DaeError, SyntaxError, ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
        # pycollada's own errors, and what its parsers raise on malformed text (ElementTree's ParseError is a
        # SyntaxError)
        raise MeshFileError(f"not a readable COLLADA file ({type(exc).__name__}: {exc})") from None
    unit = document.assetInfo.unitmeter if document.assetInfo is not None else None
    unit = float(unit) if unit else 1.0
    if document.scene is None:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        bound = []
        for node in document.scene.nodes:
            _instanced(document, node, np.eye(4), bound)
        nodes, triangles, weights = _bound_triangles(bound, BoundPolylist, BoundTriangleSet)
    if not triangles:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), None
    rgba = max(weights, key=weights.get)
    return unit * np.concatenate(nodes), np.concatenate(triangles), rgba


def _instanced(document, node, X, bound):
    """Append to ``bound`` the geometries instanced under the pycollada scene node ``node``, bound to their
    pose (``X`` the parent node's, 4x4) — pycollada's own walk (``Scene.objects``), and also the
    ``<instance_geometry>`` it drops because a material refers to a missing effect or texture (ANYmal B's feet
    of example-robot-data): their geometry is bound without those materials."""
    from collada.common import DaeError, tag
    from collada.scene import GeometryNode, MaterialNode, Node, NodeNode

    X = X @ np.asarray(node.matrix, float) if hasattr(node, "matrix") else X
    loaded = []
    for child in getattr(node, "children", ()):
        if isinstance(child, (Node, NodeNode)):
            _instanced(document, child.node if isinstance(child, NodeNode) else child, X, bound)
        elif isinstance(child, GeometryNode):
            bound.append(child.geometry.bind(X, {m.symbol: m for m in child.materials}))
            loaded.append(child.xmlnode)
    xml = getattr(node, "xmlnode", None)
    for element in () if xml is None else xml.findall(tag("instance_geometry")):
        geometry = document.geometries.get(element.get("url", "")[1:])
        if any(element is e for e in loaded) or geometry is None:
            continue
        materials = {}
        for item in element.iter(tag("instance_material")):
            try:
                material = MaterialNode.load(document, item)
            except DaeError:
                continue
            materials[material.symbol] = material
        bound.append(geometry.bind(X, materials))


def _bound_triangles(bound, BoundPolylist, BoundTriangleSet):
    """(nodes, triangles, {rgba: triangles}) of pycollada's bound geometries (their nodes' transforms applied)."""
    nodes, triangles, weights, offset = [], [], {}, 0
    for geometry in bound:
        mirrored = np.linalg.det(np.asarray(geometry.matrix, float)[:3, :3]) < 0
        for primitive in geometry.primitives():
            if isinstance(primitive, BoundPolylist):
                primitive = primitive.triangleset()
            if not isinstance(primitive, BoundTriangleSet) or primitive.vertex_index is None:
                continue
            ij = np.asarray(primitive.vertex_index, np.int64).reshape(-1, 3)
            if len(ij) == 0:
                continue
            nodes.append(np.asarray(primitive.vertex, float).reshape(-1, 3))
            triangles.append((ij[:, ::-1] if mirrored else ij) + offset)
            offset += len(nodes[-1])
            rgba = _diffuse(primitive.material)
            weights[rgba] = weights.get(rgba, 0) + len(ij)
    return nodes, triangles, weights


def _diffuse(material):
    """The diffuse rgba of a pycollada material when it is a colour (None for a texture or no material)."""
    diffuse = getattr(getattr(material, "effect", None), "diffuse", None)
    if isinstance(diffuse, tuple) and len(diffuse) in (3, 4):
        try:
            values = tuple(float(v) for v in diffuse) + ((1.0,) if len(diffuse) == 3 else ())
        except (TypeError, ValueError):
            return None
        return values if all(np.isfinite(values)) else None
    return None
