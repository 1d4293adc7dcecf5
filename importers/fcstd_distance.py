"""FreeCAD Assembly ``Distance`` joints -> joints of cadmotion's library.

FreeCAD 1.x turns one ``Distance`` joint into a different OndselSolver joint depending on
the kinds of the two referenced elements (``getDistanceType`` / ``makeMbdJointDistance``
in ``src/Mod/Assembly/App``).  It first orders the pair so that the element ranked higher
becomes side 1 (marker I) and adds the radii of circles, cylinders and spheres to the
joint's ``Distance``.  This module repeats that decision on element kinds and radii alone
(no FreeCAD, no OCP), so it is testable by itself.

Element kinds (as :func:`cadmotion.importers.fcstd_shapes.element_geometry` names them): vertices
``Point``; edges ``Line``, ``Circle``, ``Curve``; faces ``Plane``, ``Cylinder``,
``Sphere``, ``Torus``, ``Cone``, ``Surface``.

Mapping (d: the joint's ``Distance``; r1, r2: radii of sides 1 and 2 after ordering, 0
for a torus as in FreeCAD; OndselSolver joint in brackets):

====================  =========================  =================================
pair (side 1, 2)      cadmotion joint            parameter
====================  =========================  =================================
Point, Point          distance [SphSph]          length = d  (spherical when d = 0)
Line, Line            line-line-distance [RevCyl] length = d
Line, Circle          line-line-distance          length = d + r2
Circle, Circle        line-line-distance          length = d + r1 + r2
Plane, Plane/Torus    planar [Planar]            offset = d
Plane, Cylinder       line-in-plane [LineInPlane] offset = d + r2
Plane, Sphere         point-on-plane [PointInPlane] offset = d + r2
Cylinder, Cylinder    line-line-distance          length = d + r1 + r2
Cylinder, Sphere      point-line-distance [CylSph] length = d + r1 + r2
Cylinder, Torus       line-line-distance          length = d + r1
Torus, Torus          planar                     offset = d
Torus, Sphere         point-line-distance         length = d + r2
Sphere, Sphere        distance                   length = d + r1 + r2
Plane, Point          point-on-plane             offset = d
Cylinder, Point       point-line-distance         length = d + r1
Sphere, Point         distance                   length = d + r1
Plane, Line           line-in-plane              offset = d
Line, Point           point-line-distance         length = d  (point-on-line when 0)
Circle/Curve, Point   point-on-plane             offset = d  (plane of the curve's JCS)
====================  =========================  =================================

A length that comes out 0 is expressed by the exact joint (spherical, point-on-line,
cylindrical) rather than by the squared distance equations, whose Jacobian vanishes
there.  The distance joints square their length, so a negative sum acts like its
absolute value, as in OndselSolver.  Every other pair (cones, a line against a
cylinder or sphere, a curve against a face, whole objects, free-form surfaces) is what
FreeCAD solves as a planar joint between the two JCS "by default"; it is refused, since
that constraint does not follow from the geometry.  An ``offset`` moves marker I along
its own z axis.  Lengths and offsets in metres when d and the radii are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["DistanceMapping", "map_distance_joint", "SUPPORTED_PAIRS"]

#: below this length (m) a distance joint becomes the exact joint (FreeCAD uses 1e-7 mm)
ZERO_LENGTH = 1e-10

_EDGE = ("Line", "Circle", "Curve")
_FACE = ("Plane", "Cylinder", "Sphere", "Torus", "Cone", "Surface")
#: FreeCAD's ranks for ordering two edges / two faces (the first found is side 1)
_EDGE_RANK = ("Line", "Circle")
_FACE_RANK = ("Plane", "Cylinder", "Cone", "Torus", "Sphere")

SUPPORTED_PAIRS = ("point-point", "line-line", "line-circle", "circle-circle", "plane-plane",
                   "plane-cylinder", "plane-sphere", "plane-torus", "cylinder-cylinder",
                   "cylinder-sphere", "cylinder-torus", "torus-torus", "torus-sphere",
                   "sphere-sphere", "point-plane", "point-cylinder", "point-sphere",
                   "line-plane", "point-line", "point-circle/curve")


@dataclass(frozen=True)
class DistanceMapping:
    """The library joint for one FreeCAD Distance joint.

    ``swap``: side 2 of the FreeCAD joint becomes marker I; ``type``: cadmotion joint type;
    ``length`` (m): the ``length`` parameter of the distance joints, else None;
    ``offset`` (m): shift of marker I along its z axis, else 0; ``freecad``: FreeCAD's
    name of the distance type (for messages and sources).
    """
    swap: bool
    type: str
    length: Optional[float]
    offset: float
    freecad: str


def _category(kind):
    if kind == "Point":
        return "Vertex"
    if kind in _EDGE:
        return "Edge"
    if kind in _FACE:
        return "Face"
    return None


def _order(k1, k2, rank):
    """(swap, first, second) putting the higher ranked kind first, as FreeCAD does."""
    for k in rank:
        if k1 == k:
            return False, k1, k2
        if k2 == k:
            return True, k2, k1
    return False, k1, k2


def map_distance_joint(kind1, r1, kind2, r2, distance):
    """FreeCAD's choice of joint for a Distance between elements of kinds ``kind1``, ``kind2``.

    ``r1``, ``r2``: radii (m) of circles, cylinders and spheres on sides 1 and 2 of the
    FreeCAD joint (0 otherwise); ``distance``: the joint's ``Distance`` (m).  Returns a
    :class:`DistanceMapping`, or None when FreeCAD would fall back to its default planar
    joint (the caller refuses the joint).
    """
    c1, c2 = _category(kind1), _category(kind2)
    d = float(distance)
    radius = {False: (r1, r2), True: (r2, r1)}

    def dist(swap, name, typ, extra):
        length = abs(d + extra)
        if length < ZERO_LENGTH:
            typ = {"distance": "spherical", "point-line-distance": "point-on-line",
                   "line-line-distance": "cylindrical"}[typ]
            return DistanceMapping(swap, typ, None, 0.0, name)
        return DistanceMapping(swap, typ, length, 0.0, name)

    def plane(swap, name, typ, extra=0.0):
        return DistanceMapping(swap, typ, None, d + extra, name)

    if c1 == "Vertex" and c2 == "Vertex":
        return dist(False, "PointPoint", "distance", 0.0)
    if c1 == "Edge" and c2 == "Edge":
        swap, a, b = _order(kind1, kind2, _EDGE_RANK)
        ra, rb = radius[swap]
        if a == "Line" and b == "Line":
            return dist(swap, "LineLine", "line-line-distance", 0.0)
        if a == "Line" and b == "Circle":
            return dist(swap, "LineCircle", "line-line-distance", rb)
        if a == "Circle" and b == "Circle":
            return dist(swap, "CircleCircle", "line-line-distance", ra + rb)
        return None
    if c1 == "Face" and c2 == "Face":
        swap, a, b = _order(kind1, kind2, _FACE_RANK)
        ra, rb = radius[swap]
        table = {
            ("Plane", "Plane"): lambda: plane(swap, "PlanePlane", "planar"),
            ("Plane", "Cylinder"): lambda: plane(swap, "PlaneCylinder", "line-in-plane", rb),
            ("Plane", "Sphere"): lambda: plane(swap, "PlaneSphere", "point-on-plane", rb),
            ("Plane", "Torus"): lambda: plane(swap, "PlaneTorus", "planar"),
            ("Cylinder", "Cylinder"): lambda: dist(swap, "CylinderCylinder", "line-line-distance",
                                                   ra + rb),
            ("Cylinder", "Sphere"): lambda: dist(swap, "CylinderSphere", "point-line-distance",
                                                 ra + rb),
            ("Cylinder", "Torus"): lambda: dist(swap, "CylinderTorus", "line-line-distance", ra),
            ("Torus", "Torus"): lambda: plane(swap, "TorusTorus", "planar"),
            ("Torus", "Sphere"): lambda: dist(swap, "TorusSphere", "point-line-distance", rb),
            ("Sphere", "Sphere"): lambda: dist(swap, "SphereSphere", "distance", ra + rb),
        }
        make = table.get((a, b))
        return make() if make else None
    if {c1, c2} == {"Vertex", "Face"}:
        swap = c1 == "Vertex"
        face = kind2 if swap else kind1
        rf = radius[swap][0]
        if face == "Plane":
            return plane(swap, "PointPlane", "point-on-plane")
        if face == "Cylinder":
            return dist(swap, "PointCylinder", "point-line-distance", rf)
        if face == "Sphere":
            return dist(swap, "PointSphere", "distance", rf)
        return None
    if {c1, c2} == {"Edge", "Face"}:
        swap = c1 == "Edge"
        face, edge = (kind2, kind1) if swap else (kind1, kind2)
        if face == "Plane" and edge == "Line":
            return plane(swap, "LinePlane", "line-in-plane")
        return None
    if {c1, c2} == {"Vertex", "Edge"}:
        swap = c1 == "Vertex"
        edge = kind2 if swap else kind1
        if edge == "Line":
            return dist(swap, "PointLine", "point-line-distance", 0.0)
        return plane(swap, "PointCurve", "point-on-plane")
    return None
