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
"""

from __future__ import annotations

import numpy as np

from ..errors import CadImportError

__all__ = ["face_primitive", "primitive_near"]


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
    from OCP.BRepAdaptor import BRepAdaptor_Surface
    from OCP.BRepLProp import BRepLProp_SLProps
    from OCP.BRepTools import BRepTools
    from OCP.GeomAbs import GeomAbs_Cylinder, GeomAbs_Plane, GeomAbs_Sphere
    from OCP.TopAbs import TopAbs_REVERSED

    def local(x):
        return R.T @ (np.asarray(x, float) - p)

    surf = BRepAdaptor_Surface(face)
    kind = surf.GetType()
    # a sphere's or cylinder's natural normal points away from its centre or axis: the face is
    # convex (material inside) unless the face is reversed (a socket, a hole)
    outward = face.Orientation() != TopAbs_REVERSED
    if kind == GeomAbs_Plane:
        u0, u1, v0, v1 = BRepTools.UVBounds_s(face)
        n = BRepLProp_SLProps(surf, 0.5 * (u0 + u1), 0.5 * (v0 + v1), 1, 1e-9).Normal()
        normal = np.array([n.X(), n.Y(), n.Z()]) * (1.0 if outward else -1.0)
        return "plane", dict(point=local(point), normal=R.T @ normal), True
    if kind == GeomAbs_Sphere:
        c = surf.Sphere().Location()
        return "sphere", dict(radius=surf.Sphere().Radius(), center=local((c.X(), c.Y(), c.Z()))), outward
    if kind == GeomAbs_Cylinder:
        ax = surf.Cylinder().Axis()
        o, d = ax.Location(), ax.Direction()
        axis = np.array([d.X(), d.Y(), d.Z()])
        _, _, v0, v1 = BRepTools.UVBounds_s(face)
        centre = np.array([o.X(), o.Y(), o.Z()]) + 0.5 * (v0 + v1) * axis
        return "cylinder", dict(radius=surf.Cylinder().Radius(), height=abs(v1 - v0), center=local(centre),
                                axis=R.T @ axis), outward
    return None, {}, False


def _pose(part):
    """(R (3, 3), p (3,) m) of the part frame in the assembly frame."""
    from ..kernel.rotations import quat_to_matrix

    return quat_to_matrix(np.asarray(part.orientation, float)), np.asarray(part.position, float)


def primitive_near(part, near):
    """The primitive of ``part``'s face nearest ``near`` (assembly frame, m): (kind, numbers in the
    part frame, m) as :func:`face_primitive` (a hole: a cylinder with ``inside`` True, a bore); a
    CadImportError naming the part when it has no geometry, or the face is a concave sphere or not a
    plane, sphere or cylinder."""
    from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape
    from OCP.gp import gp_Pnt
    from OCP.TopAbs import TopAbs_FACE
    from OCP.TopExp import TopExp
    from OCP.TopoDS import TopoDS
    from OCP.TopTools import TopTools_IndexedMapOfShape

    from .geometry_refs import world_shape

    where = f"part {part.name!r}"
    shape = world_shape(part)
    faces = TopTools_IndexedMapOfShape()
    TopExp.MapShapes_s(shape, TopAbs_FACE, faces)
    q = np.asarray(near, float)
    vertex = BRepBuilderAPI_MakeVertex(gp_Pnt(*q)).Vertex()
    best = None
    for i in range(1, faces.Extent() + 1):
        face = TopoDS.Face_s(faces.FindKey(i))
        dist = BRepExtrema_DistShapeShape(vertex, face)
        if dist.IsDone() and (best is None or dist.Value() < best[0]):
            best = (dist.Value(), i, face, dist.PointOnShape2(1))
    if best is None:
        raise CadImportError("the part has no faces to take a contact shape from", where=where,
                             hint="give the shape as a primitive (sphere, box, cylinder or plane)")
    _, index, face, foot = best
    R, p = _pose(part)
    kind, numbers, convex = _fit(face, R, p, (foot.X(), foot.Y(), foot.Z()))
    if kind is None:
        from OCP.BRepAdaptor import BRepAdaptor_Surface

        from .geometry_refs import _SURFACE_NAMES

        name = _SURFACE_NAMES.get(BRepAdaptor_Surface(face).GetType(), "free-form")
        raise CadImportError(f"face {index} nearest {q.tolist()} is a {name}, not a plane, sphere or cylinder",
                             where=where, hint="point at a flat, spherical or cylindrical face, or give a primitive")
    if not convex and kind == "cylinder":
        return kind, dict(numbers, inside=True)  # a hole: a bore, for a ball inside it
    if not convex:
        raise CadImportError(f"face {index} nearest {q.tolist()} is a concave {kind} (a socket): contact "
                             f"shapes are convex, or a cylindrical hole (a bore)", where=where,
                             hint="take the shape from the part that goes into it (the ball), or give "
                                  "a primitive")
    return kind, numbers
