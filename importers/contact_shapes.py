"""Contact primitives taken from a part's CAD faces: the exact plane, sphere or cylinder of a face.

A ``[[contacts]]`` shape can name a face of the part's CAD geometry instead of numbers::

    shape = [{ face = [0.05, 0.0, 0.01] }, { plane = {} }]   # the part's face nearest that point

The face nearest the point (assembly frame, the file's unit; exact distance,
``BRepExtrema_DistShapeShape``) becomes the primitive it is exactly, in the part's frame (m):

==========================  ====================================================================
face                        primitive
==========================  ====================================================================
plane                       ``plane``: the point of the face nearest ``near``, the outward normal
sphere, convex (a ball)     ``sphere``: radius and centre
cylinder, convex (a pin)    ``cylinder``: radius, the face's height along the axis, its mid-point
==========================  ====================================================================

A concave cylinder (a hole) is a bore (``cylinder`` with ``inside = True``: the material outside it,
against a ball inside). Other concave faces (a socket) and other kinds (cones, tori, free-form
surfaces) are refused with a message naming the part and the face's kind
(:data:`~cadmotion.kernel.dynamics.contacts.BUILT_PAIRS`). ``cadmotion check`` uses
:func:`face_primitive` to propose contact tables for colliding parts.

Any other geometry — a free-form (B-spline) surface, a cone, a torus, a concave face or a whole
part — takes part as the vertices of its tessellation (:func:`tessellation_points`)::

    shape = [{ mesh = 0.2 }, { plane = {} }]                      # the whole part, deflection 0.2
    shape = [{ face = [0.05, 0.0, 0.01], mesh = 0.2 }, { plane = {} }]   # one face of it

``BRepMesh_IncrementalMesh`` of a copy of the shape (the part's own triangulation, which the writers
use, is left alone) with that linear deflection (the file's unit: the largest distance between the
triangles and the surface) and an angular deflection of :data:`MESH_ANGULAR_DEFLECTION`; each distinct
vertex becomes a contact point — a sphere of radius 0, like a box's corners — against the other
part's plane, sphere or box. The points lie *on* the surface, so a point contact is never early; it
can be late by up to the deflection where the surface between the vertices touches first (a
smaller deflection: more points, each evaluated at every step the two parts are close).
"""

from __future__ import annotations

import numpy as np

from ..errors import CadImportError
from ..geometry import analytic, distance, shapes, triangulation

__all__ = ["face_primitive", "primitive_near", "tessellation_points", "MESH_ANGULAR_DEFLECTION", "MAX_MESH_POINTS",
           "MIN_MESH_DEFLECTION"]

#: angular deflection (rad) of a contact shape's tessellation (about 13 segments round a circle)
MESH_ANGULAR_DEFLECTION = 0.5
#: the finest linear deflection OCCT meshes with (m, its ``Precision::Confusion``)
MIN_MESH_DEFLECTION = 1e-7
#: more tessellation vertices than this in one contact shape is refused (each is a contact point)
MAX_MESH_POINTS = 20000


def face_primitive(face, R, p, point):
    """(kind, numbers in the part frame, m) of an analytic convex face, or None.

    ``face`` is in the assembly frame, the part at pose (R (3, 3), p (3,) m); ``point`` (assembly
    frame, m) is where the plane's primitive is anchored. Numbers: plane ``point``, ``normal``
    (outward, out of the material); sphere ``radius``, ``center``; cylinder ``radius``,
    ``height``, ``center``, ``axis``.
    """
    kind, numbers, convex = _fit(face, R, p, point)
    return (kind, numbers) if kind is not None and convex else None


def _fit(face, R, p, point):
    """(kind or None, numbers, convex) of ``face`` (see :func:`face_primitive`)."""
    kind, numbers, convex = analytic.face_fit(face)
    if kind == "plane":
        return kind, dict(point=R.T @ (np.asarray(point, float) - p), normal=R.T @ numbers["normal"]), convex
    if kind == "sphere":
        return kind, dict(radius=numbers["radius"], center=R.T @ (numbers["center"] - p)), convex
    if kind == "cylinder":
        return kind, dict(radius=numbers["radius"], height=numbers["height"], center=R.T @ (numbers["center"] - p),
                          axis=R.T @ numbers["axis"]), convex
    return kind, numbers, convex


def _pose(part):
    """(R (3, 3), p (3,) m) of the part frame in the assembly frame."""
    from ..kernel.rotations import quat_to_matrix

    return quat_to_matrix(np.asarray(part.orientation, float)), np.asarray(part.position, float)


def primitive_near(part, near):
    """The primitive of ``part``'s face nearest ``near`` (assembly frame, m): (kind, numbers in the
    part frame, m) as :func:`face_primitive` (a hole: a cylinder with ``inside`` True, a bore); a
    CadImportError naming the part when it has no geometry, or the face is a concave sphere or not a
    plane, sphere or cylinder."""
    from .geometry_refs import world_shape

    where = f"part {part.name!r}"
    q = np.asarray(near, float)
    best = distance.nearest_face(world_shape(part), q)
    if best is None:
        raise CadImportError("the part has no faces to take a contact shape from", where=where,
                             hint="give the shape as a primitive (sphere, box, cylinder or plane)")
    index, face, _, foot = best
    R, p = _pose(part)
    kind, numbers, convex = _fit(face, R, p, foot)
    if kind is None:
        name = analytic.surface_kind(face)
        raise CadImportError(f"face {index} nearest {q.tolist()} is a {name}, not a plane, sphere or cylinder",
                             where=where,
                             hint="point at a flat, spherical or cylindrical face, add `mesh = <deflection>` to "
                                  "take the face's tessellation vertices as contact points, or give a primitive")
    if not convex and kind == "cylinder":
        return kind, dict(numbers, inside=True)  # a hole: a bore, for a ball inside it
    if not convex:
        raise CadImportError(f"face {index} nearest {q.tolist()} is a concave {kind} (a socket): contact "
                             f"shapes are convex, or a cylindrical hole (a bore)", where=where,
                             hint="take the shape from the part that goes into it (the ball), add "
                                  "`mesh = <deflection>` to take the face's tessellation vertices, or give a "
                                  "primitive")
    return kind, numbers


def tessellation_points(part, deflection, near=None):
    """The distinct vertices (n, 3) of the tessellation of ``part``'s shape — or of its face nearest
    ``near`` (assembly frame, m) — in the part frame (m), at linear deflection ``deflection`` (m).

    Raises CadImportError naming the part when it has no geometry, the deflection is not > 0 or
    the tessellation has no vertices or more than :data:`MAX_MESH_POINTS`; the deflection is at least
    :data:`MIN_MESH_DEFLECTION`."""
    where = f"part {part.name!r}"
    if part.shape is None:
        raise CadImportError("the part has no geometry to tessellate", where=where,
                             hint="give the shape as a primitive (sphere, box, cylinder or plane)")
    if not (deflection >= MIN_MESH_DEFLECTION):
        raise CadImportError(f"the tessellation's deflection must be at least {MIN_MESH_DEFLECTION:g} m (OCCT's "
                             f"precision), got {deflection!r} m", where=where)
    shape = shapes.copy(part.shape)
    if near is not None:
        R, p = _pose(part)
        found = distance.nearest_face(shape, R.T @ (np.asarray(near, float) - p))
        if found is None:
            raise CadImportError("the part has no faces to take a contact shape from", where=where,
                                 hint="give the shape as a primitive (sphere, box, cylinder or plane)")
        shape = found[1]
    triangulation.mesh(shape, float(deflection), MESH_ANGULAR_DEFLECTION)
    nodes = [tf.nodes for tf in triangulation.triangulated_faces(shape)]
    points = np.unique(np.round(np.concatenate(nodes), 12), axis=0) if nodes else np.zeros((0, 3))
    if len(points) == 0:
        raise CadImportError("the tessellation has no vertices (no faces)", where=where,
                             hint="give the shape as a primitive")
    if len(points) > MAX_MESH_POINTS:
        raise CadImportError(f"a deflection of {deflection:g} m gives {len(points)} contact points (at most "
                             f"{MAX_MESH_POINTS})", where=where,
                             hint="give a larger `mesh` deflection, or one face (`face` with `mesh`)")
    return points
