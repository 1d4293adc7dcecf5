"""A ``[[contacts]]`` table for parts that collide along a motion, from their CAD geometry.

``cadmotion check`` finds collisions; a collision between parts that are meant to push on
each other (a cam and its follower, a latch, a stop) is a contact to declare, so the dynamics
can let them push. :func:`propose_contacts` writes that declaration for each colliding pair:
at the pair's first contact it asks OCCT for the closest points of the two parts
(``BRepExtrema_DistShapeShape``) and the faces they lie on, and turns each face into the
primitive that fits it exactly (:func:`~cadmotion.importers.contact_shapes.face_primitive`: a plane,
the normal out of the material, a convex sphere or cylinder) — or, for other faces, the part's
bounding box. Primitives are
in the part frame, in the model file's unit. A pair of primitives the contact kernel does not
handle with the tables' (default, unilateral) method (:data:`~cadmotion.kernel.dynamics.contacts.UNILATERAL_PAIRS`)
is written commented out, with the reason, never as a table that would not load.
"""

from __future__ import annotations

import numpy as np

from ..geometry import distance, placements, shapes
from ..geometry.meshes import has_mesh_faces
from ..importers.contact_shapes import face_primitive

__all__ = ["propose_contacts", "fitted_primitive"]


def _bounding_box(shape):
    """(edge lengths (3,), centre (3,)) of the exact box of ``shape`` in its own frame (m)."""
    lo, hi = shapes.bounding_box(shape)
    return hi - lo, 0.5 * (hi + lo)


def fitted_primitive(part, X, shape, support, point, towards):
    """The primitive of ``part`` (at pose X, its moved ``shape``) that fits where it meets the
    other part at ``point`` (assembly frame, m): the analytic face the closest point lies on
    (on an edge or vertex, the adjacent face that faces the other part most, along the unit
    ``towards``), else the part's bounding box; ``(kind, numbers in the part frame, m)``."""
    R, p = X[:3, :3], X[:3, 3]
    best, score = None, -np.inf
    for face in shapes.faces_around(shape, support):
        fitted = face_primitive(face, R, p, point)
        if fitted is None:
            continue
        kind, numbers = fitted
        # a curved face always fits; a plane as far as it faces the other part
        s = 2.0 if kind != "plane" else float((R @ numbers["normal"]) @ towards)
        if s > score:
            best, score = fitted, s
    if best is not None and (best[0] != "plane" or score > 0):
        return best
    edges, centre = _bounding_box(part.shape)
    return "box", dict(box=edges, center=centre)


def _toml(kind, numbers, scale):
    """The inline table of a primitive in the file's unit (``scale`` m per unit)."""
    def vec(v, length=True):
        v = np.asarray(v, float) / (scale if length else 1.0)
        v[np.abs(v) < 1e-12 * max(1.0, np.abs(v).max())] = 0.0  # round-off of axis-aligned directions
        return "[" + ", ".join(f"{x:.6g}" for x in v + 0.0) + "]"

    if kind == "plane":
        return f"{{ plane = {{ point = {vec(numbers['point'])}, normal = {vec(numbers['normal'], False)} }} }}"
    if kind == "sphere":
        return f"{{ sphere = {numbers['radius'] / scale:.6g}, center = {vec(numbers['center'])} }}"
    if kind == "cylinder":
        return (f"{{ cylinder = [{numbers['radius'] / scale:.6g}, {numbers['height'] / scale:.6g}], "
                f"center = {vec(numbers['center'])}, axis = {vec(numbers['axis'], False)} }}")
    return f"{{ box = {vec(numbers['box'])}, center = {vec(numbers['center'])} }}"


def propose_contacts(motion, spec, pairs, scale=1.0):
    """TOML text of one ``[[contacts]]`` table per pair ``(part_a, part_b, first contact time s)``.

    ``scale`` is the model file's unit in metres (1e-3 for mm); the tables are written in it.
    Parts without geometry, meshes (faces without surface), or whose closest points OCCT cannot find, get a
    comment saying so.
    """
    from ..kernel.dynamics.contacts import UNILATERAL_PAIRS

    parts = {p.name: p for p in spec.parts}
    blocks = []
    for a, b, t in pairs:
        pa, pb = parts.get(a), parts.get(b)
        if pa is None or pb is None or pa.shape is None or pb.shape is None:
            blocks.append(f"# {a} / {b}: no CAD geometry to fit a contact shape to")
            continue
        meshes_of = [n for n, p in ((a, pa), (b, pb)) if has_mesh_faces(p.shape)]
        if meshes_of:
            blocks.append(f"# {a} / {b}: {' and '.join(meshes_of)}: triangle meshes (URDF <mesh>), no CAD face to "
                          f"fit a contact shape to")
            continue
        Xa, Xb = motion.pose(a, t), motion.pose(b, t)
        sa, sb = placements.moved(pa.shape, Xa), placements.moved(pb.shape, Xb)
        solutions = distance.closest_points(sa, sb)
        if not solutions:
            blocks.append(f"# {a} / {b}: OCCT found no closest points at t = {t:.6g} s")
            continue
        best = _most_faces(solutions)
        point = 0.5 * (best.point_a + best.point_b)
        ca, cb = (X[:3, :3] @ _bounding_box(q.shape)[1] + X[:3, 3] for X, q in ((Xa, pa), (Xb, pb)))
        ka, na = fitted_primitive(pa, Xa, sa, best.support_a, point, _unit(cb - ca))
        kb, nb = fitted_primitive(pb, Xb, sb, best.support_b, point, _unit(ca - cb))
        if sorted((ka, kb)) not in UNILATERAL_PAIRS and "plane" not in (ka, kb):
            # no plane on either side: the part touched on a face is, locally, its tangent plane
            if ka == "box":
                ka, na = "plane", _tangent_plane(Xa, point, Xb, nb)
            elif kb == "box":
                kb, nb = "plane", _tangent_plane(Xb, point, Xa, na)
        lines = [f"# {a} and {b} first touch at t = {t:.6g} s",
                 "[[contacts]]",
                 f'name = "{a}_{b}"',
                 f'parts = ["{a}", "{b}"]',
                 f"shape = [{_toml(ka, na, scale)}, {_toml(kb, nb, scale)}]",
                 "restitution = 0.5                 # set: 0 plastic .. 1 elastic",
                 "friction = 0.3                    # set: Coulomb coefficient"]
        if sorted((ka, kb)) not in UNILATERAL_PAIRS:
            lines = [f"# {ka}-{kb} contacts are not built yet: replace one shape by the plane it touches"] + [
                "# " + line if not line.startswith("#") else line for line in lines]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _most_faces(solutions):
    """The closest-point solution that lies on faces most (faces fit best); the first of a tie."""
    count = [shapes.is_face(s.support_a) + shapes.is_face(s.support_b) for s in solutions]
    return solutions[int(np.argmax(count))]


def _unit(v):
    n = np.linalg.norm(v)
    return v / n if n > 0 else np.array([0.0, 0.0, 1.0])


def _tangent_plane(X, point, X_other, other):
    """A plane of the part at pose X through ``point`` (assembly frame, m), normal towards the
    other part's primitive centre, in the part frame."""
    R, p = X[:3, :3], X[:3, 3]
    centre = X_other[:3, :3] @ np.asarray(other.get("center", np.zeros(3)), float) + X_other[:3, 3]
    normal = centre - np.asarray(point, float)
    norm = np.linalg.norm(normal)
    normal = normal / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
    return dict(point=R.T @ (np.asarray(point, float) - p), normal=R.T @ normal)
