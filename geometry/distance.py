"""Exact distances and closest points between shapes and points (``BRepExtrema_DistShapeShape``),
and where a point lies with respect to a solid (``BRepClass3d_SolidClassifier``).

Distances are between the boundaries (a point inside a solid is at the distance of the
nearest face); everything is in the shapes' common frame and unit. Points are (3,)
sequences or arrays.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["vertex", "distance", "point_distances", "nearest_face", "closest_points", "ClosestPoint",
           "DistanceFrom", "PointClassifier"]


def vertex(point):
    """An OCCT vertex at ``point`` (3,)."""
    from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
    from OCP.gp import gp_Pnt

    return BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, point))).Vertex()


def distance(a, b) -> float:
    """Exact distance between two shapes (0 when they touch or overlap); infinite when OCCT cannot
    tell."""
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape

    ext = BRepExtrema_DistShapeShape(a, b)
    return float(ext.Value()) if ext.IsDone() else np.inf


def point_distances(point, items):
    """The exact distance from ``point`` to each shape of ``items`` (a list; None where OCCT
    cannot tell)."""
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape

    v = vertex(point)
    out = []
    for item in items:
        dist = BRepExtrema_DistShapeShape(v, item)
        out.append(dist.Value() if dist.IsDone() else None)
    return out


def nearest_face(shape, point):
    """(index, face, distance, foot (3,)) of the face of ``shape`` nearest to ``point`` — index
    1-based as :func:`.shapes.sub_shapes` numbers faces, foot the nearest point of the face — or
    None when ``shape`` has no face. The first face wins a tie."""
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape

    from .shapes import sub_shapes

    v = vertex(point)
    best = None
    for i, face in enumerate(sub_shapes(shape, "face"), start=1):
        dist = BRepExtrema_DistShapeShape(v, face)
        if dist.IsDone() and (best is None or dist.Value() < best[2]):
            best = (i, face, dist.Value(), dist.PointOnShape2(1))
    if best is None:
        return None
    i, face, d, foot = best
    return i, face, d, np.array([foot.X(), foot.Y(), foot.Z()])


class ClosestPoint:
    """One solution of :func:`closest_points`: ``point_a``, ``point_b`` (3,) on each shape and the
    sub-shapes they lie on, ``support_a``, ``support_b`` (a vertex, an edge or a face)."""

    __slots__ = ("point_a", "point_b", "support_a", "support_b")

    def __init__(self, point_a, point_b, support_a, support_b):
        self.point_a, self.point_b = point_a, point_b
        self.support_a, self.support_b = support_a, support_b


def closest_points(a, b):
    """Every pair of closest points of the shapes ``a`` and ``b`` (a list of :class:`ClosestPoint`,
    empty when OCCT finds none)."""
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape

    dss = BRepExtrema_DistShapeShape(a, b)
    if not dss.IsDone():
        return []
    out = []
    for k in range(1, dss.NbSolution() + 1):
        p1, p2 = dss.PointOnShape1(k), dss.PointOnShape2(k)
        out.append(ClosestPoint(np.array([p1.X(), p1.Y(), p1.Z()]), np.array([p2.X(), p2.Y(), p2.Z()]),
                                dss.SupportOnShape1(k), dss.SupportOnShape2(k)))
    return out


def _min_query():
    from OCP.BRepExtrema import BRepExtrema_DistShapeShape
    from OCP.Extrema import Extrema_ExtFlag_MIN

    dss = BRepExtrema_DistShapeShape()
    dss.SetFlag(Extrema_ExtFlag_MIN)
    return dss


class DistanceFrom:
    """Repeated exact distances from one shape, loaded once (OCCT keeps its bounding boxes).

    Give it a compound rather than a solid: for a solid OCCT first tests every vertex of the
    other shape for being inside, which is costly and not wanted here (boundary distances).
    """

    def __init__(self, shape):
        self._dss = _min_query()
        self._dss.LoadS1(shape)

    def _perform(self, other):
        self._dss.LoadS2(other)
        self._dss.Perform()
        return self._dss

    def to(self, other) -> float:
        """Exact distance to the shape ``other`` (same frame), infinite when OCCT cannot tell."""
        dss = self._perform(other)
        return float(dss.Value()) if dss.IsDone() else math.inf

    def to_point(self, q) -> float:
        """Exact distance to the point ``q`` (3,), infinite when OCCT cannot tell."""
        return self.to(vertex(q))

    def nearest_point(self, q):
        """The point (3,) of the shape nearest to ``q`` (3,), or None."""
        dss = self._perform(vertex(q))
        if not dss.IsDone() or dss.NbSolution() == 0:
            return None
        return np.array(dss.PointOnShape1(1).Coord())

    @staticmethod
    def between(a, b) -> float:
        """Exact distance between ``a`` and ``b``, loaded for this one query; infinite when OCCT
        cannot tell."""
        dss = _min_query()
        dss.LoadS1(a)
        dss.LoadS2(b)
        dss.Perform()
        return float(dss.Value()) if dss.IsDone() else math.inf


class PointClassifier:
    """Where points lie with respect to the solid(s) of a shape (OCCT's solid classifier, built once)."""

    def __init__(self, shape):
        from OCP.BRepClass3d import BRepClass3d_SolidClassifier

        self._classifier = BRepClass3d_SolidClassifier(shape)

    def classify(self, points, tol):
        """``"in"``, ``"on"`` or ``"out"`` for each point of ``points`` ((n, 3), the shape's frame),
        ``tol`` the distance (the shape's unit) within which a point is on the boundary."""
        from OCP.gp import gp_Pnt
        from OCP.TopAbs import TopAbs_IN, TopAbs_ON

        cls = self._classifier
        out = []
        for q in points:
            cls.Perform(gp_Pnt(float(q[0]), float(q[1]), float(q[2])), tol)
            state = cls.State()
            out.append("in" if state == TopAbs_IN else "on" if state == TopAbs_ON else "out")
        return out
