"""One distinct part shape prepared for the interference check, in its part frame (m):
exact box, triangulation with chord errors, BVH, solid classifier and exact distance (the OCCT
side in :mod:`cadmotion.geometry`)."""

from __future__ import annotations

import numpy as np

from ...geometry import analytic, distance, placements, shapes, triangulation
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


#: an OCCT ``gp_Trsf`` of the rigid motion x -> R x + p (R (3, 3), p (3,) in metres)
trsf = placements.trsf


class Geometry:
    """One distinct shape, prepared once, in its part frame (metres).

    Attributes: ``lo``/``hi`` exact box; ``centre``, ``half``, ``rho`` (half diagonal),
    ``r0`` (largest distance of the box from the frame origin); ``bvh`` and ``tris``
    (sorted), per-triangle chord error ``tdel`` and face ``fid``, per-node largest chord
    error ``ndel``; per face (``faces``) planarity ``fpl`` and plane ``fn``/``fo``;
    ``nodes`` (mesh nodes, points of the exact surface); ``dmax`` the largest chord error;
    ``mesh_faces`` True when some faces are meshes read from files (no surface: no chord error,
    and OCCT's exact distances do not see them).
    """

    def __init__(self, shape):
        if shapes.is_empty(shape):
            raise NoGeometry
        self.shape = shape
        box = shapes.bounding_box(shape)
        if box is None:
            raise NoGeometry
        self.lo, self.hi = box
        (x0, y0, z0), (x1, y1, z1) = box
        self.centre = 0.5 * (self.lo + self.hi)
        self.half = 0.5 * (self.hi - self.lo)
        self.rho = float(np.linalg.norm(self.half))
        corners = np.array([[a, b, c] for a in (x0, x1) for b in (y0, y1) for c in (z0, z1)])
        self.r0 = float(np.max(np.linalg.norm(corners, axis=1)))
        self._mesh(float(np.linalg.norm(self.hi - self.lo)))
        if len(self.tris) == 0:
            raise NoGeometry
        self.has_solid = shapes.has_solid(shape)
        self.cmp = shapes.compound([shape])
        self._classifier = None
        self._dss = None

    def _mesh(self, diag):
        from ..writers.tessellate import ANGULAR_DEFLECTION, LINEAR_DEFLECTION

        # the writers' parameters, so the triangulation stored in the shape is shared
        requested = max(LINEAR_DEFLECTION * diag, 1e-9)
        triangulation.mesh(self.shape, requested, ANGULAR_DEFLECTION)
        self.mesh_faces = False
        tris, fids, tdels, nodes, faces = [], [], [], [], []
        fpl, fn, fo = [], [], []
        for tf in triangulation.triangulated_faces(self.shape):
            face, P, ij = tf.face, tf.nodes, tf.triangles
            nv, nf = len(P), len(ij)
            self.mesh_faces = self.mesh_faces or tf.exact
            planar = not tf.exact and analytic.surface_kind(face) == "plane"
            # chord errors: of the face (curved faces), of its boundary polygons (per segment);
            # unknown: a curved edge without its polygon, fall back to the requested value
            polygons, unknown = triangulation.boundary_polygons(tf)
            seg_keys, seg_del = [], []
            edge_del = 0.0
            for idx, deflection in polygons:
                edge_del = max(edge_del, deflection)
                lo_, hi_ = np.minimum(idx[:-1], idx[1:]), np.maximum(idx[:-1], idx[1:])
                seg_keys.append(lo_ * nv + hi_)
                seg_del.append(np.full(len(lo_), deflection))
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
            elif tf.exact:  # a mesh from a file: its triangles are the geometry
                tdel = np.zeros(nf)
            else:
                face_del = triangulation.face_deflection(tf)
                face_del = face_del if face_del > 0.0 else requested
                tdel = np.full(nf, max(face_del, edge_del, requested if unknown else 0.0))
            if planar:
                n, origin = analytic.face_plane(face)
                o = float(n @ origin)
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
            comp = shapes.compound([self.faces[i] for i in key])
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
        """OCCT's solid classifier of the shape (:class:`~cadmotion.geometry.distance.PointClassifier`;
        None when it has no solid)."""
        if self._classifier is None and self.has_solid:
            self._classifier = distance.PointClassifier(self.shape)
        return self._classifier

    @property
    def dss(self):
        """Exact distances from this shape, loaded once (its boxes are kept):
        a :class:`~cadmotion.geometry.distance.DistanceFrom` of its compound."""
        if self._dss is None:
            self._dss = distance.DistanceFrom(self.cmp)  # a compound: no costly inside test of every vertex
        return self._dss

    def mesh_args(self):
        """The arrays of this shape's BVH and triangles in the argument order of :func:`.mesh.mesh_bounds`."""
        return self.bvh + (self.ndel, self.tris, self.tdel, self.fid, self.fpl, self.fn, self.fo)

    def classify(self, points, tol):
        """OCCT states of points (part frame): 'in', 'on' or 'out'."""
        return self.classifier.classify(points, tol)

    def point_distance(self, q):
        """Exact distance from a point (part frame) to the boundary of the shape."""
        return self.dss.to_point(q)

    def surface_point(self, q):
        """The point of the exact surface nearest to ``q`` (part frame), or None."""
        return self.dss.nearest_point(q)
