"""One distinct part shape prepared for the interference check, in its part frame (m):
exact box, triangulation with chord errors, BVH, solid classifier and exact distance (OCCT)."""

from __future__ import annotations

import math

import numpy as np

from ..writers.step_frames import as_compound
from .mesh import bvh_build, node_delta

#: factor on the chord error BRepMesh reports for a face, to bound the mesh-to-surface distance
DEFLECTION_SAFETY = 1.5
#: surface nodes classified per part when looking for a contact witness
WITNESS_NODES = 16
#: deepest candidate nodes whose depth is measured exactly
DEPTH_NODES = 3
#: levels of interval halving used to prove that no contact was skipped between two samples
GUARD_LEVELS = 4


class NoGeometry(Exception):
    """A part without usable geometry (no shape, an empty box or no triangles): its pairs are skipped."""


def trsf(R, p):
    """An OCCT ``gp_Trsf`` of the rigid motion x -> R x + p (R (3, 3), p (3,) in metres)."""
    from OCP.gp import gp_Trsf

    T = gp_Trsf()
    T.SetValues(R[0, 0], R[0, 1], R[0, 2], p[0],
                R[1, 0], R[1, 1], R[1, 2], p[1],
                R[2, 0], R[2, 1], R[2, 2], p[2])
    return T


class Geometry:
    """One distinct shape, prepared once, in its part frame (metres).

    Attributes: ``lo``/``hi`` exact box; ``centre``, ``half``, ``rho`` (half diagonal),
    ``r0`` (largest distance of the box from the frame origin); ``bvh`` and ``tris``
    (sorted), per-triangle chord error ``tdel`` and face ``fid``, per-node largest chord
    error ``ndel``; per face (``faces``) planarity ``fpl`` and plane ``fn``/``fo``;
    ``nodes`` (mesh nodes, points of the exact surface); ``dmax`` the largest chord error.
    """

    def __init__(self, shape):
        from OCP.Bnd import Bnd_Box
        from OCP.BRepBndLib import BRepBndLib
        from OCP.TopAbs import TopAbs_SOLID
        from OCP.TopExp import TopExp_Explorer

        if shape is None or shape.IsNull():
            raise NoGeometry
        self.shape = shape
        box = Bnd_Box()
        BRepBndLib.AddOptimal_s(shape, box, False, False)
        if box.IsVoid():
            raise NoGeometry
        x0, y0, z0, x1, y1, z1 = box.Get()
        self.lo = np.array([x0, y0, z0])
        self.hi = np.array([x1, y1, z1])
        self.centre = 0.5 * (self.lo + self.hi)
        self.half = 0.5 * (self.hi - self.lo)
        self.rho = float(np.linalg.norm(self.half))
        corners = np.array([[a, b, c] for a in (x0, x1) for b in (y0, y1) for c in (z0, z1)])
        self.r0 = float(np.max(np.linalg.norm(corners, axis=1)))
        self._mesh(float(np.linalg.norm(self.hi - self.lo)))
        if len(self.tris) == 0:
            raise NoGeometry
        self.has_solid = TopExp_Explorer(shape, TopAbs_SOLID).More()
        self.cmp = as_compound(shape)
        self._classifier = None
        self._dss = None

    def _mesh(self, diag):
        from OCP.BRep import BRep_Tool
        from OCP.BRepAdaptor import BRepAdaptor_Curve, BRepAdaptor_Surface
        from OCP.BRepMesh import BRepMesh_IncrementalMesh
        from OCP.GeomAbs import GeomAbs_Line, GeomAbs_Plane
        from OCP.TopAbs import TopAbs_EDGE
        from OCP.TopExp import TopExp_Explorer
        from OCP.TopoDS import TopoDS

        from ..writers.tessellate import ANGULAR_DEFLECTION, LINEAR_DEFLECTION, triangulated_faces

        # the writers' parameters, so the triangulation stored in the shape is shared
        requested = max(LINEAR_DEFLECTION * diag, 1e-9)
        BRepMesh_IncrementalMesh(self.shape, requested, False, ANGULAR_DEFLECTION, True)
        tris, fids, tdels, nodes, faces = [], [], [], [], []
        fpl, fn, fo = [], [], []
        for tf in triangulated_faces(self.shape):
            face, tri, loc, P, ij = tf.face, tf.triangulation, tf.location, tf.nodes, tf.triangles
            nv, nf = len(P), len(ij)
            surface = BRepAdaptor_Surface(face)
            planar = surface.GetType() == GeomAbs_Plane
            # chord errors: of the face (curved faces), of its boundary polygons (per segment)
            seg_keys, seg_del = [], []
            edge_del = 0.0
            unknown = False  # a curved edge without its polygon: fall back to the requested value
            edges = TopExp_Explorer(face, TopAbs_EDGE)
            while edges.More():
                edge = TopoDS.Edge_s(edges.Current())
                edges.Next()
                poly = BRep_Tool.PolygonOnTriangulation_s(edge, tri, loc)
                if poly is None:
                    unknown = unknown or (not BRep_Tool.Degenerated_s(edge)
                                          and BRepAdaptor_Curve(edge).GetType() != GeomAbs_Line)
                    continue
                if poly.Deflection() <= 0.0:
                    continue
                edge_del = max(edge_del, poly.Deflection())
                idx = np.array([poly.Node(i) for i in range(1, poly.NbNodes() + 1)], np.int64) - 1
                lo_, hi_ = np.minimum(idx[:-1], idx[1:]), np.maximum(idx[:-1], idx[1:])
                seg_keys.append(lo_ * nv + hi_)
                seg_del.append(np.full(len(lo_), poly.Deflection()))
            if planar and unknown:
                tdel = np.full(nf, max(requested, edge_del))
            elif planar:
                tdel = np.zeros(nf)
                if seg_keys:
                    keys = np.concatenate(seg_keys)
                    vals = np.concatenate(seg_del)
                    order = np.argsort(keys)
                    keys, vals = keys[order], vals[order]
                    for e0, e1 in ((0, 1), (1, 2), (2, 0)):
                        k = np.minimum(ij[:, e0], ij[:, e1]) * nv + np.maximum(ij[:, e0], ij[:, e1])
                        pos = np.clip(np.searchsorted(keys, k), 0, len(keys) - 1)
                        hit = keys[pos] == k
                        tdel = np.where(hit, np.maximum(tdel, vals[pos]), tdel)
            else:
                face_del = tri.Deflection() if tri.Deflection() > 0.0 else requested
                tdel = np.full(nf, max(face_del, edge_del, requested if unknown else 0.0))
            if planar:
                plane = surface.Plane()
                n = np.array(plane.Axis().Direction().Coord())
                o = float(n @ np.array(plane.Location().Coord()))
            else:
                n, o = np.zeros(3), 0.0
            f = len(faces)
            faces.append(face)
            fpl.append(1 if planar else 0)
            fn.append(n)
            fo.append(o)
            tris.append(P[ij])
            tdels.append(DEFLECTION_SAFETY * tdel)
            fids.append(np.full(len(ij), f, np.int64))
            nodes.append(P)
        self.faces = faces
        self._compounds = {}
        if not tris:
            self.tris = np.zeros((0, 3, 3))
            return
        tris = np.ascontiguousarray(np.concatenate(tris))
        lo, hi, left, right, start, count, order = bvh_build(tris)
        self.tris = np.ascontiguousarray(tris[order])
        self.tdel = np.ascontiguousarray(np.concatenate(tdels)[order])
        self.fid = np.ascontiguousarray(np.concatenate(fids)[order])
        self.bvh = (lo, hi, left, right, start, count)
        self.ndel = node_delta(left, right, start, count, self.tdel)
        self.fpl = np.array(fpl, np.int8)
        self.fn = np.array(fn, float).reshape(-1, 3)
        self.fo = np.array(fo, float)
        self.dmax = float(self.tdel.max())
        self.nodes = np.ascontiguousarray(np.unique(np.concatenate(nodes), axis=0))

    def faces_compound(self, indices):
        """A compound of some faces (indices into :attr:`faces`), cached."""
        key = tuple(sorted(set(int(i) for i in indices)))
        comp = self._compounds.get(key)
        if comp is None:
            from OCP.BRep import BRep_Builder
            from OCP.TopoDS import TopoDS_Compound

            comp = TopoDS_Compound()
            builder = BRep_Builder()
            builder.MakeCompound(comp)
            for i in key:
                builder.Add(comp, self.faces[i])
            if len(self._compounds) < 4096:
                self._compounds[key] = comp
        return comp

    @property
    def samples(self):
        """Points on the mesh (nodes and a grid on every triangle, spacing about 1/16 of the
        box diagonal), for the depth estimate; within the chord error of the exact surface."""
        if getattr(self, "_samples", None) is None:
            spacing = max(np.linalg.norm(self.hi - self.lo) / 16.0, 1e-12)
            T = self.tris
            edge = np.max(np.linalg.norm(T - T[:, [1, 2, 0]], axis=2), axis=1)
            n = np.clip(np.ceil(edge / spacing).astype(np.int64), 1, 12)
            pts = [self.nodes]
            for k in np.unique(n):
                if k < 2:
                    continue
                i, j = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
                keep = (i + j <= k) & ~((i == 0) & (j == 0)) & (i != k) & (j != k)
                u, v = i[keep] / k, j[keep] / k
                Tk = T[n == k]
                P = (Tk[:, None, 0] * (1 - u - v)[None, :, None] + Tk[:, None, 1] * u[None, :, None]
                     + Tk[:, None, 2] * v[None, :, None])
                pts.append(P.reshape(-1, 3))
            self._samples = np.ascontiguousarray(np.concatenate(pts))
        return self._samples

    # -- exact tools (lazy) ---------------------------------------------------------------

    @property
    def classifier(self):
        """OCCT's solid classifier of the shape (None when it has no solid)."""
        if self._classifier is None and self.has_solid:
            from OCP.BRepClass3d import BRepClass3d_SolidClassifier

            self._classifier = BRepClass3d_SolidClassifier(self.shape)
        return self._classifier

    @property
    def dss(self):
        """A BRepExtrema_DistShapeShape with this shape loaded first (its boxes are kept)."""
        if self._dss is None:
            from OCP.BRepExtrema import BRepExtrema_DistShapeShape
            from OCP.Extrema import Extrema_ExtFlag_MIN

            self._dss = BRepExtrema_DistShapeShape()
            self._dss.SetFlag(Extrema_ExtFlag_MIN)
            self._dss.LoadS1(self.cmp)  # a compound: no costly inside test of every vertex
        return self._dss

    def mesh_args(self):
        """The arrays of this shape's BVH and triangles in the argument order of :func:`.mesh.mesh_bounds`."""
        return self.bvh + (self.ndel, self.tris, self.tdel, self.fid, self.fpl, self.fn, self.fo)

    def classify(self, points, tol):
        """OCCT states of points (part frame): 'in', 'on' or 'out'."""
        from OCP.gp import gp_Pnt
        from OCP.TopAbs import TopAbs_IN, TopAbs_ON

        cls = self.classifier
        out = []
        for q in points:
            cls.Perform(gp_Pnt(float(q[0]), float(q[1]), float(q[2])), tol)
            state = cls.State()
            out.append("in" if state == TopAbs_IN else "on" if state == TopAbs_ON else "out")
        return out

    def point_distance(self, q):
        """Exact distance from a point (part frame) to the boundary of the shape."""
        from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
        from OCP.gp import gp_Pnt

        dss = self.dss
        dss.LoadS2(BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, q))).Vertex())
        dss.Perform()
        return float(dss.Value()) if dss.IsDone() else math.inf

    def surface_point(self, q):
        """The point of the exact surface nearest to ``q`` (part frame), or None."""
        from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex
        from OCP.gp import gp_Pnt

        dss = self.dss
        dss.LoadS2(BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, q))).Vertex())
        dss.Perform()
        if not dss.IsDone() or dss.NbSolution() == 0:
            return None
        return np.array(dss.PointOnShape1(1).Coord())
