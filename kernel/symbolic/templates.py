"""The constraint library: one symbolic template per joint, coupler and driver type.

A template is data: how many body slots it spans, the names of its scalar parameters,
which joint angles it needs, and a small function that writes its scalar equations
Φ = 0 in terms of *marker frames*. Slot k carries one marker fixed in its body: origin
s_k and axes (columns of R_k) in body coordinates, so in the world frame

    P_k = r_k + A(p_k) s_k,   X_k, Y_k, Z_k = A(p_k) R_k[:, 0..2].

Notation used in the equations below: d = P_j − P_i (slot i = 0, j = 1), the joint axis
is Z_i, and the joint angle θ = atan2(Y_i·X_j, X_i·X_j) + w (w = 2πn keeps θ continuous,
see :mod:`cadmotion.kernel.state`); the joint displacement is s = d·Z_i.

=====================  =====  ==============================================================
type                   eqs    Φ
=====================  =====  ==============================================================
spherical              3      d
revolute               5      d, Z_i·X_j, Z_i·Y_j
cylindrical            4      X_i·d, Y_i·d, Z_i·X_j, Z_i·Y_j
prismatic              5      cylindrical + X_i·Y_j (no twist; X_i·Y_j = −sin θ)
fixed                  6      revolute + X_i·Y_j
universal              4      d, Z_i·Z_j   (Z_i: cross axis in body i, Z_j: in body j)
planar                 3      Z_i·d, Z_i·X_j, Z_i·Y_j
distance               1      d·d − L²
point-line-distance    1      (X_i·d)² + (Y_i·d)² − L²   (P_j at L from the z line of i)
line-line-distance     3      point-line-distance + Z_i·X_j, Z_i·Y_j  (parallel lines L apart)
rev-rev-distance       4      line-line-distance + Z_i·d  (P_j in the plane z_i = 0 as well)
line-in-plane          2      Z_i·d, Z_i·Z_j            (line z_j lies in the plane z_i = 0)
point-on-line          2      X_i·d, Y_i·d
point-on-plane         1      Z_i·d
parallel               2      Z_i·X_j, Z_i·Y_j
perpendicular          1      Z_i·Z_j
angle                  1      Z_i·Z_j − cos α
screw                  5      cylindrical + s − (pitch/2π) θ
constant-velocity      4      d, X_i·Y_j − Y_i·X_j  (relative rotation axis ⟂ Z: homokinetic)
gear, belt             1      θ_b − ratio θ_a       (slots 0,1: joint a; slots 2,3: joint b)
rack-and-pinion        1      s_b − radius θ_a      (a: the pinion's revolute, b: the rack's prismatic)
cam-disp, cam-angle    1      m_b − L(θ_a)          (a: the cam's revolute; b: the follower's prismatic
                                                    or revolute; L the lift law, :mod:`..cams`)
drive-angle            1      θ − f(t)
drive-disp             1      s − f(t)
drive-point            1      u·P_0 − f(t)          (u: a unit world direction)
normalize              1      pᵀp − 1               (Euler parameters only)
=====================  =====  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Tuple

from .lazy import lazy

sp = lazy("sympy")  # the templates are sympy, imported when one is derived

__all__ = ["Template", "TEMPLATES", "JOINT_TYPES", "COUPLER_TYPES", "DRIVER_TYPES", "HIGHER_PAIR_TYPES", "MEASURES"]


@dataclass(frozen=True)
class Template:
    """One constraint type.

    Attributes
    ----------
    name : type name as users write it.
    n_slots : bodies the constraint spans (1, 2 or 4).
    params : names of its scalar parameters (per instance numbers).
    angle_terms : marker-slot pairs (i, j) whose angle θ the equations use.
    timed : True for drivers: Φ depends on t through f(t), f'(t), f''(t).
    build : ``build(ctx) -> list of sympy expressions`` (the equations Φ).
    measures : the joint coordinates a joint type reports (``angle``, ``disp``).
    numeric : no symbolic equations (``build`` None): the model builds the code per
        instance (cam pairs, whose lift laws are data).
    row_variants : subsets of the equations (indices into Φ) that the compiled dynamics can
        evaluate alone, each generated as its own functions: the rows a joint keeps when it
        holds a mechanism in a plane normal to a world axis (:mod:`..dynamics.planar`).
    """

    name: str
    n_slots: int
    build: Callable
    params: Tuple[str, ...] = ()
    angle_terms: Tuple[Tuple[int, int], ...] = ()
    timed: bool = False
    measures: Tuple[str, ...] = ()
    body_params: bool = False  # the equations read raw orientation parameters (normalize)
    numeric: bool = False  # no sympy equations: the model builds its code (cams, :mod:`..cams`)
    row_variants: Tuple[Tuple[int, ...], ...] = ()


class Context:
    """Symbolic marker frames of the slots of one template instance (see module docstring)."""

    def __init__(self, P, X, Y, Z, p, params, f, w):
        self.P, self.X, self.Y, self.Z, self.p = P, X, Y, Z, p
        self.params = params  # name -> symbol
        self.f = f  # driver value f(t) (a symbol; derivatives handled by codegen)
        self.w = w  # winding offsets, one per angle term

    def d(self, i=0, j=1):
        """d = P_j − P_i, world frame (m)."""
        return self.P[j] - self.P[i]

    def angle(self, k, i=0, j=1):
        """θ of angle term k between slots i and j (winding included)."""
        return sp.atan2(self.Y[i].dot(self.X[j]), self.X[i].dot(self.X[j])) + self.w[k]

    def disp(self, i=0, j=1):
        """Joint displacement s = d·Z_i (m)."""
        return self.d(i, j).dot(self.Z[i])


def _spherical(c):
    return list(c.d())


def _parallel(c):
    return [c.Z[0].dot(c.X[1]), c.Z[0].dot(c.Y[1])]


def _revolute(c):
    return _spherical(c) + _parallel(c)


def _point_on_line(c):
    d = c.d()
    return [c.X[0].dot(d), c.Y[0].dot(d)]


def _cylindrical(c):
    return _point_on_line(c) + _parallel(c)


def _prismatic(c):
    return _cylindrical(c) + [c.X[0].dot(c.Y[1])]


def _fixed(c):
    return _revolute(c) + [c.X[0].dot(c.Y[1])]


def _universal(c):
    return _spherical(c) + [c.Z[0].dot(c.Z[1])]


def _planar(c):
    return [c.Z[0].dot(c.d())] + _parallel(c)


def _distance(c):
    d = c.d()
    return [d.dot(d) - c.params["length"] ** 2]


def _point_line_distance(c):
    # squared like OndselSolver's DistancexyConstraintIJ: smooth where P_j crosses the line
    d = c.d()
    return [c.X[0].dot(d) ** 2 + c.Y[0].dot(d) ** 2 - c.params["length"] ** 2]


def _line_line_distance(c):
    return _point_line_distance(c) + _parallel(c)


def _rev_rev_distance(c):
    return _line_line_distance(c) + [c.Z[0].dot(c.d())]


def _line_in_plane(c):
    return [c.Z[0].dot(c.d()), c.Z[0].dot(c.Z[1])]


def _point_on_plane(c):
    return [c.Z[0].dot(c.d())]


def _perpendicular(c):
    return [c.Z[0].dot(c.Z[1])]


def _angle(c):
    return [c.Z[0].dot(c.Z[1]) - sp.cos(c.params["angle"])]


def _screw(c):
    return _cylindrical(c) + [c.disp() - c.params["pitch"] / (2 * sp.pi) * c.angle(0)]


def _constant_velocity(c):
    return _spherical(c) + [c.X[0].dot(c.Y[1]) - c.Y[0].dot(c.X[1])]


def _gear(c):
    return [c.angle(1, 2, 3) - c.params["ratio"] * c.angle(0, 0, 1)]


def _rack_and_pinion(c):
    return [c.disp(2, 3) - c.params["radius"] * c.angle(0, 0, 1)]


def _drive_angle(c):
    return [c.angle(0) - c.f]


def _drive_disp(c):
    return [c.disp() - c.f]


def _drive_point(c):
    u = sp.Matrix([c.params["ux"], c.params["uy"], c.params["uz"]])
    return [u.dot(c.P[0]) - c.f]


def _normalize(c):
    p = c.p[0]
    return [sum(x**2 for x in p) - 1]


_JOINTS = [
    Template("fixed", 2, _fixed),
    # in a plane normal to world axis x, y or z a revolute keeps the two in-plane components of d;
    # a prismatic sliding in the plane keeps its transverse row in the plane and the alignment about
    # the normal (n = X_i: Y_i·d, Z_i·Y_j; n = Y_i: X_i·d, Z_i·X_j)
    Template("revolute", 2, _revolute, measures=("angle",), row_variants=((1, 2), (0, 2), (0, 1))),
    Template("prismatic", 2, _prismatic, measures=("disp",), row_variants=((1, 3), (0, 2))),
    Template("cylindrical", 2, _cylindrical, measures=("angle", "disp")),
    Template("spherical", 2, _spherical),
    Template("universal", 2, _universal),
    Template("planar", 2, _planar, measures=("angle",)),
    Template("distance", 2, _distance, params=("length",)),
    Template("point-line-distance", 2, _point_line_distance, params=("length",)),
    Template("line-line-distance", 2, _line_line_distance, params=("length",)),
    Template("rev-rev-distance", 2, _rev_rev_distance, params=("length",)),
    Template("line-in-plane", 2, _line_in_plane),
    Template("point-on-line", 2, _point_on_line, measures=("disp",)),
    Template("point-on-plane", 2, _point_on_plane),
    Template("parallel", 2, _parallel),
    Template("perpendicular", 2, _perpendicular),
    Template("angle", 2, _angle, params=("angle",)),
    Template("screw", 2, _screw, params=("pitch",), angle_terms=((0, 1),), measures=("angle", "disp")),
    Template("constant-velocity", 2, _constant_velocity),
]
_COUPLERS = [
    Template("gear", 4, _gear, params=("ratio",), angle_terms=((0, 1), (2, 3))),
    Template("belt", 4, _gear, params=("ratio",), angle_terms=((0, 1), (2, 3))),
    Template("rack-and-pinion", 4, _rack_and_pinion, params=("radius",), angle_terms=((0, 1),)),
]
_DRIVERS = [
    Template("drive-angle", 2, _drive_angle, angle_terms=((0, 1),), timed=True),
    Template("drive-disp", 2, _drive_disp, timed=True),
    Template("drive-point", 1, _drive_point, params=("ux", "uy", "uz"), timed=True),
]
_INTERNAL = [Template("normalize", 1, _normalize, body_params=True)]
#: cam pairs (:mod:`cadmotion.kernel.cams`): a joint type "cam" becomes one of these by its follower's joint
_HIGHER = [
    Template("cam-disp", 4, None, params=("law",), angle_terms=((0, 1),), numeric=True),
    Template("cam-angle", 4, None, params=("law",), angle_terms=((0, 1), (2, 3)), numeric=True),
]

TEMPLATES = {t.name: t for t in _JOINTS + _COUPLERS + _DRIVERS + _INTERNAL + _HIGHER}
JOINT_TYPES = tuple(t.name for t in _JOINTS)
COUPLER_TYPES = tuple(t.name for t in _COUPLERS)
DRIVER_TYPES = tuple(t.name for t in _DRIVERS)
#: joint types between two joints that are not couplers of a fixed ratio (the cam's law)
HIGHER_PAIR_TYPES = ("cam",)
#: joint coordinate name -> the driver template that drives it
MEASURES = {"angle": "drive-angle", "disp": "drive-disp"}
