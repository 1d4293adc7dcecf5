"""What a face or an edge is exactly: its kind (plane, cylinder, cone, sphere, torus, ...;
line, circle, ...) and the numbers of that kind — axis, radius, plane, centre.

Kinds are lower-case names (:data:`SURFACE_KINDS`, :data:`CURVE_KINDS`) read from OCCT's
adaptors (``BRepAdaptor_Surface``/``BRepAdaptor_Curve``). Points and directions are numpy
arrays in the frame and unit of the face or edge (its location applied), directions unit
vectors; radii in the same unit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SURFACE_KINDS", "CURVE_KINDS", "surface_kind", "curve_kind", "radius", "axis_of", "face_fit",
           "face_plane", "outer_boundary_points"]

#: every surface kind :func:`surface_kind` reports
SURFACE_KINDS = ("plane", "cylinder", "cone", "sphere", "torus", "bezier", "bspline", "revolution", "extrusion",
                 "offset", "other")
#: every curve kind :func:`curve_kind` reports
CURVE_KINDS = ("line", "circle", "ellipse", "hyperbola", "parabola", "bezier", "bspline", "offset", "other")

_SURFACE_TYPES = ("GeomAbs_Plane", "GeomAbs_Cylinder", "GeomAbs_Cone", "GeomAbs_Sphere", "GeomAbs_Torus",
                  "GeomAbs_BezierSurface", "GeomAbs_BSplineSurface", "GeomAbs_SurfaceOfRevolution",
                  "GeomAbs_SurfaceOfExtrusion", "GeomAbs_OffsetSurface", "GeomAbs_OtherSurface")
_CURVE_TYPES = ("GeomAbs_Line", "GeomAbs_Circle", "GeomAbs_Ellipse", "GeomAbs_Hyperbola", "GeomAbs_Parabola",
                "GeomAbs_BezierCurve", "GeomAbs_BSplineCurve", "GeomAbs_OffsetCurve", "GeomAbs_OtherCurve")
_NAMES = {}


def _kind_names():
    """{GeomAbs enum value: kind name}, for surfaces and curves (built on first use)."""
    if not _NAMES:
        import OCP.GeomAbs as GeomAbs

        _NAMES["surface"] = {getattr(GeomAbs, t): k for t, k in zip(_SURFACE_TYPES, SURFACE_KINDS)}
        _NAMES["curve"] = {getattr(GeomAbs, t): k for t, k in zip(_CURVE_TYPES, CURVE_KINDS)}
    return _NAMES


def surface_kind(face) -> str:
    """The kind of the surface under ``face``, one of :data:`SURFACE_KINDS`."""
    from OCP.BRepAdaptor import BRepAdaptor_Surface

    return _kind_names()["surface"].get(BRepAdaptor_Surface(face).GetType(), "other")


def curve_kind(edge) -> str:
    """The kind of the curve under ``edge``, one of :data:`CURVE_KINDS`."""
    from OCP.BRepAdaptor import BRepAdaptor_Curve

    return _kind_names()["curve"].get(BRepAdaptor_Curve(edge).GetType(), "other")


def radius(item, kind):
    """The radius of a ``"circle"`` edge, a ``"cylinder"`` or ``"sphere"`` face, the major radius of
    a ``"torus"`` face (``kind`` as :func:`surface_kind`/:func:`curve_kind` says); None for other kinds."""
    from OCP.BRepAdaptor import BRepAdaptor_Curve, BRepAdaptor_Surface

    if kind == "circle":
        return BRepAdaptor_Curve(item).Circle().Radius()
    if kind == "cylinder":
        return BRepAdaptor_Surface(item).Cylinder().Radius()
    if kind == "sphere":
        return BRepAdaptor_Surface(item).Sphere().Radius()
    if kind == "torus":
        return BRepAdaptor_Surface(item).Torus().MajorRadius()
    return None


def _xyz(v) -> np.ndarray:
    return np.array([v.X(), v.Y(), v.Z()], dtype=float)


def _foot_on_line(p0, d, q):
    return p0 + np.dot(q - p0, d) * d


def axis_of(kind, item, q):
    """(point (3,), direction (3,), radius or None) of the face or edge ``item`` of ``kind``.

    ``kind`` is ``"circle"`` or ``"line"`` (edges), ``"plane"``, ``"cylinder"``, ``"cone"``,
    ``"revolution"``, ``"torus"`` or ``"sphere"`` (faces); ``q`` (3,) a point near it. The point
    is the foot of ``q`` on the axis (cylinder, cone, revolution, line) or on the plane, the
    centre of a circle, torus or sphere. The direction is the axis as stored in the CAD geometry
    (a sphere's own z axis), a plane face's outward normal; not normalised. The radius is a
    circle's, cylinder's or sphere's, a torus's major radius.
    """
    from OCP.BRepAdaptor import BRepAdaptor_Curve, BRepAdaptor_Surface
    from OCP.TopAbs import TopAbs_REVERSED

    if kind in ("circle", "line"):
        curve = BRepAdaptor_Curve(item)
        if kind == "circle":
            circ = curve.Circle()
            ax = circ.Axis()
            return _xyz(ax.Location()), _xyz(ax.Direction()), circ.Radius()
        line = curve.Line()
        p0, d = _xyz(line.Location()), _xyz(line.Direction())
        return _foot_on_line(p0, d, q), d, None
    surf = BRepAdaptor_Surface(item)
    if kind == "plane":
        ax = surf.Plane().Axis()
        p0, n = _xyz(ax.Location()), _xyz(ax.Direction())
        if item.Orientation() == TopAbs_REVERSED:
            n = -n
        return q - np.dot(q - p0, n) * n, n, None
    if kind == "cylinder":
        cyl = surf.Cylinder()
        ax = cyl.Axis()
        p0, d = _xyz(ax.Location()), _xyz(ax.Direction())
        return _foot_on_line(p0, d, q), d, cyl.Radius()
    if kind == "cone":
        ax = surf.Cone().Axis()
        p0, d = _xyz(ax.Location()), _xyz(ax.Direction())
        return _foot_on_line(p0, d, q), d, None
    if kind == "revolution":
        ax = surf.AxeOfRevolution()
        p0, d = _xyz(ax.Location()), _xyz(ax.Direction())
        return _foot_on_line(p0, d, q), d, None
    if kind == "torus":
        tor = surf.Torus()
        ax = tor.Axis()
        return _xyz(ax.Location()), _xyz(ax.Direction()), tor.MajorRadius()
    sph = surf.Sphere()  # "sphere"
    pos = sph.Position()
    return _xyz(pos.Location()), _xyz(pos.Direction()), sph.Radius()


def face_fit(face):
    """(kind or None, numbers, convex): the plane, sphere or cylinder ``face`` is, in its own frame.

    Numbers: plane ``normal`` (outward, out of the material, at the middle of the face's
    parameter range); sphere ``radius``, ``center``; cylinder ``radius``, ``height`` (the face's
    extent along the axis), ``center`` (the axis point at mid-height), ``axis``. ``convex`` is
    True for a plane, and for a sphere or cylinder whose material is inside (a ball, a pin;
    False for a socket or a hole). Other kinds: ``(None, {}, False)``.
    """
    from OCP.BRepAdaptor import BRepAdaptor_Surface
    from OCP.BRepLProp import BRepLProp_SLProps
    from OCP.BRepTools import BRepTools
    from OCP.GeomAbs import GeomAbs_Cylinder, GeomAbs_Plane, GeomAbs_Sphere
    from OCP.TopAbs import TopAbs_REVERSED

    surf = BRepAdaptor_Surface(face)
    kind = surf.GetType()
    # a sphere's or cylinder's natural normal points away from its centre or axis: the face is
    # convex (material inside) unless the face is reversed (a socket, a hole)
    outward = face.Orientation() != TopAbs_REVERSED
    if kind == GeomAbs_Plane:
        u0, u1, v0, v1 = BRepTools.UVBounds_s(face)
        n = BRepLProp_SLProps(surf, 0.5 * (u0 + u1), 0.5 * (v0 + v1), 1, 1e-9).Normal()
        normal = np.array([n.X(), n.Y(), n.Z()]) * (1.0 if outward else -1.0)
        return "plane", dict(normal=normal), True
    if kind == GeomAbs_Sphere:
        c = surf.Sphere().Location()
        return "sphere", dict(radius=surf.Sphere().Radius(), center=np.array([c.X(), c.Y(), c.Z()])), outward
    if kind == GeomAbs_Cylinder:
        ax = surf.Cylinder().Axis()
        o, d = ax.Location(), ax.Direction()
        axis = np.array([d.X(), d.Y(), d.Z()])
        _, _, v0, v1 = BRepTools.UVBounds_s(face)
        centre = np.array([o.X(), o.Y(), o.Z()]) + 0.5 * (v0 + v1) * axis
        return "cylinder", dict(radius=surf.Cylinder().Radius(), height=abs(v1 - v0), center=centre,
                                axis=axis), outward
    return None, {}, False


def face_plane(face):
    """(normal (3,), point (3,)) of the plane under a ``"plane"`` face: the plane's own axis and
    origin, whatever the face's orientation."""
    from OCP.BRepAdaptor import BRepAdaptor_Surface

    plane = BRepAdaptor_Surface(face).Plane()
    return np.array(plane.Axis().Direction().Coord()), np.array(plane.Location().Coord())


def outer_boundary_points(face, samples):
    """Points (samples, 3) evenly spaced by arc length once around the outer boundary (wire) of
    ``face``, without repeating the first; None when OCCT cannot sample it."""
    from OCP.BRepAdaptor import BRepAdaptor_CompCurve
    from OCP.BRepTools import BRepTools
    from OCP.GCPnts import GCPnts_UniformAbscissa

    curve = BRepAdaptor_CompCurve(BRepTools.OuterWire_s(face))
    spacing = GCPnts_UniformAbscissa(curve, int(samples) + 1)
    if not spacing.IsDone():
        return None
    pts = []
    for i in range(1, spacing.NbPoints()):  # the last point closes the loop onto the first
        p = curve.Value(spacing.Parameter(i))
        pts.append((p.X(), p.Y(), p.Z()))
    return np.array(pts)
