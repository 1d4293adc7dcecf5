"""Applied forces: gravity and force elements, vectorised per element type.

Every element is compiled once from its :class:`~cadmotion.kernel.spec.ForceSpec`
(points given in the assembly frame at the initial pose become body-frame points) and
evaluated as a resultant force F_b (N, world) and moment about the centre of mass
n_b (N m, world) per body. Sign conventions and equations (u: unit vector from the
point on the first part to the point on the second, l its length, l̇ = u·(v_Pb − v_Pa)):

``gravity``                 F_b = m_b g,  V = −Σ m_b g·r_c
``spring-damper``           on the second part's point f u, on the first's −f u, with
                            f = −k (l − l0) − c l̇ + F0    (f > 0 pushes the points apart)
                            params: stiffness k (N/m), damping c (N s/m), free_length l0
                            (m, default: the initial distance), preload F0 (N, the force at
                            l = l0). V = ½ k (l − l0)² − F0 (l − l0); damper power −c l̇².
``rotational-spring-damper`` on a joint. Joints with an axis (revolute, cylindrical, screw,
                            planar): torque on the second part τ z_i, on the first −τ z_i,
                            τ = −k θ − c θ̇ + τ0, θ the joint angle (continuous over turns,
                            zero at the initial pose), V = ½ k θ² − τ0 θ. Other joints
                            (spherical, universal, ...): 3-D, torque −k φ − c (ω_j − ω_i)
                            with φ the rotation vector of the second part relative to the first
                            joint frame, zero at the initial pose (world axes), V = ½ k |φ|²
                            (exactly conservative); no preload (no axis to wind it about).
``torque``                  τ(t, q, qd) about a joint's axis (revolute, cylindrical, screw,
                            planar): τ z_i on the second part, −τ z_i on the first.
``force``                   F(t, q, qd) along a joint's axis (prismatic, cylindrical, screw,
                            point-on-line): F z_i on the second part at its marker, −F z_i on
                            the first part at the same point.
``bushing``                 6-D linear spring-damper between two frames with the assembly
                            axes at the initial pose, fixed in each part, origin ``points[0]``
                            (and ``points[1]`` on the second part if given). In the first
                            frame's axes: F = −K d − C ḋ, T = −J_l(φ)⁻ᵀ K_r φ − C_r ω_rel
                            (φ the rotation vector of the second frame relative to the
                            first; J_l⁻ᵀ K_r φ ≈ K_r φ for small φ, and exactly the gradient of
                            V = ½ dᵀ K d + ½ φᵀ K_r φ, so an anisotropic K_r conserves energy
                            at large rotations too); params ``stiffness``, ``damping``,
                            ``rotational_stiffness``, ``rotational_damping`` (scalars or 3 values).

``tyre``                    a wheel on the road (:mod:`.tyres`): point-follower contact with a
                            vertical spring-damper, Pacejka's magic formula for the slip
                            forces, rolling resistance; V = ½ k δ² while in contact.

Declared contacts (``[[contacts]]``, :mod:`.contacts`) are evaluated with the elements: their
force acts only while the shapes touch, their elastic energy is potential energy, their
damping and friction non-conservative work; their tangent is differenced
(:meth:`.contacts.Contacts.tangent_blocks`).
Joint limits act as stops (:mod:`.stops`) the same way: a torque about / force along the joint
axis past a limit, elastic energy in the potential, damping in the non-conservative work; their
state follows the contacts' in ``refs``; they are not in :meth:`ForceElements.tangent_blocks`.

``torque``/``force`` expressions are whitelisted text (:func:`~cadmotion.kernel.expressions.parse_expression`)
in ``t`` (s), ``q`` (the joint's angle in rad or displacement in m, zero at the initial
pose) and ``qd`` (its rate). Their work, the dampers' and the drivers' is the
non-conservative work; springs and gravity are in the potential energy.

Parameters are checked when the elements are compiled: stiffness, damping and free length
must be finite and ≥ 0, every number finite, only the numbers a type takes (a misspelt key
is an error, not a default), a spring's two points distinct — each a MechanismError naming
the element. :meth:`ForceElements.tangent` gives the elements' exact stiffness −∂f/∂x and
damping −∂f/∂v (:mod:`.force_jacobians`) for implicit integrators and the stiffness
estimate of :mod:`.stiffness`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...errors import ExpressionError, MechanismError
from ..expressions import parse_expression
from ..model import frame_matrix
from ..symbolic.lazy import lazy
from .mass import rotation, rotation_vector
from .tyres import TYRE_PARAMS, Tyres, parse_tyre

__all__ = ["ForceElements", "FORCE_TYPES"]

FORCE_TYPES = ("spring-damper", "rotational-spring-damper", "torque", "force", "bushing", "tyre")
_AXIS_TORQUE_JOINTS = ("revolute", "cylindrical", "screw", "planar")
_AXIS_FORCE_JOINTS = ("prismatic", "cylindrical", "screw", "point-on-line")
_TWO_PI = 2.0 * math.pi
sp = lazy("sympy")  # imported for force expressions only: a model without them does not load it (≈ 0.3 s)
#: the numbers each force type takes (anything else is an error, not silently ignored)
_PARAMS = {
    "spring-damper": ("stiffness", "damping", "free_length", "preload"),
    "rotational-spring-damper": ("stiffness", "damping", "preload"),
    "torque": (),
    "force": (),
    "bushing": ("stiffness", "damping", "rotational_stiffness", "rotational_damping"),
    "tyre": TYRE_PARAMS,
}
_PARAM_HINTS = {
    "stiffness": "a stiffness is ≥ 0 (N/m, N m/rad for rotational elements); a negative spring rate makes the "
                 "model unstable — write an active force as a `force`/`torque` expression instead",
    "damping": "a damping coefficient is ≥ 0 (N s/m, N m s/rad); a negative one feeds energy in — write an "
               "active force as a `force`/`torque` expression instead",
    "free_length": "the free (rest) length of a spring is a distance ≥ 0 in the model's length unit; leave it out "
                   "to use the initial distance between the points",
    "preload": "the preload is the force (N) or torque (N m) at the free length, any finite number",
    "rotational_stiffness": "a rotational stiffness is ≥ 0 (N m/rad), one number or three (per axis)",
    "rotational_damping": "a rotational damping is ≥ 0 (N m s/rad), one number or three (per axis)",
}


def _cross(a, b):
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def rotation_gradient(phi, g):
    """J_l(φ)⁻ᵀ g for rotation vectors φ (..., 3) and vectors g (..., 3): the moment conjugate
    to the relative angular velocity (in the first frame's axes) of a potential V(φ) with
    ∂V/∂φ = g, J_l the left Jacobian of SO(3) (ω = J_l(φ) φ̇ for R = exp[φ], Ṙ Rᵀ = [ω]):
    g + ½ φ × g + c(θ) φ × (φ × g), c = 1/θ² − sin θ / (2θ (1 − cos θ)) (θ = |φ| < π)."""
    th = np.linalg.norm(phi, axis=-1)
    small = th < 1e-4
    ts = np.where(small, 1.0, th)
    c = np.where(small, 1.0 / 12.0 + th ** 2 / 720.0, 1.0 / ts ** 2 - np.sin(ts) / (2.0 * ts * (1.0 - np.cos(ts))))
    pxg = np.cross(phi, g)
    return g + 0.5 * pxg + c[..., None] * np.cross(phi, pxg)


@functools.lru_cache(maxsize=256)
def _law_function(expr):
    """The parsed law as a Python function of (t, q, qd): sympy's lambdify costs ≈ 0.5 ms, a
    hundredth of a P1 run, so once per law and process (the function keeps no state)."""
    return sp.lambdify(tuple(sp.Symbol(n, real=True) for n in ("t", "q", "qd")), expr, modules="math")


class _Expression:
    """A force/torque law f(t, q, qd) compiled from whitelisted text."""

    def __init__(self, text, where):
        expr = parse_expression(text, variables=("t", "q", "qd"), where=where)
        t, q, qd = (sp.Symbol(n, real=True) for n in ("t", "q", "qd"))
        fn = _law_function(expr)
        try:
            value = float(fn(0.0, 0.0, 0.0))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            value = float("nan")
        if not math.isfinite(value):
            raise ExpressionError(f"force expression {text!r} is not finite at t = 0", where=where)
        self.fn = fn
        self.text = text
        #: the parsed (whitelisted) sympy expression and its arguments (t, q, qd), for the
        #: compiled right-hand side of :mod:`.fast`
        self.expr = expr
        self.args = (t, q, qd)
        self.uses_state = bool(expr.free_symbols & {q, qd})

    def __call__(self, t, q, qd):
        return float(self.fn(t, q, qd))

    def derivatives(self, t, q, qd):
        """(∂f/∂q, ∂f/∂qd) at (t, q, qd): the exact derivatives of the parsed expression
        (sympy, lambdified on first use); a non-finite value (a kink of ``abs``/``sign``) is 0."""
        if self._dfn is None:
            t_, q_, qd_ = self.args
            self._dfn = sp.lambdify(self.args, [sp.diff(self.expr, q_), sp.diff(self.expr, qd_)], modules="math")
        try:
            a, b = (float(v) for v in self._dfn(t, q, qd))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            return 0.0, 0.0
        return (a if math.isfinite(a) else 0.0), (b if math.isfinite(b) else 0.0)

    _dfn = None


class ForceElements:
    """The force elements and gravity of a model.

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`
    mass : :class:`~cadmotion.kernel.dynamics.mass.MassProperties`

    ``evaluate(bs, t, refs)`` returns (F (nb, 3), n (nb, 3), P_nc): resultant forces and
    moments about the com of every body (fixed bodies included, ignored by the caller)
    and the power of the non-conservative elements (W). ``refs`` holds the last accepted
    joint angle of each axis-angle element (continuity over turns), see :meth:`initial_refs`.
    """

    def __init__(self, model, mass):
        self.model = model
        self.mass = mass
        g = np.asarray(model.gravity, float)
        self.gravity = g
        self.gravity_force = mass.body_mass[:, None] * g[None, :]
        self.names = []
        spec = model.spec
        joints = {j.name: j for j in spec.joints}
        parts = set(model.body_names)
        com = mass.body_com_all
        q0f = np.concatenate([model.q0, model.q_fixed]).reshape(model.nb, 7)
        A0 = rotation(q0f[:, 3:] / np.linalg.norm(q0f[:, 3:], axis=1, keepdims=True))
        r0 = q0f[:, :3]

        def where_of(f):
            return f.source or spec.source or None

        def body_point(b, P):
            """Point P (world, initial pose) as an offset from body b's com, body frame."""
            return A0[b].T @ (np.asarray(P, float) - r0[b]) - com[b]

        def need_parts(f, n):
            if len(f.parts) != n:
                raise MechanismError(f"force {f.name!r} ({f.type}) needs parts = [first, second]", where=where_of(f))
            for p in f.parts:
                if p not in parts:
                    raise MechanismError(f"force {f.name!r} refers to unknown part {p!r}", where=where_of(f),
                                         hint=f"known parts: {', '.join(model.body_names)}")
            if f.parts[0] == f.parts[1]:
                raise MechanismError(f"force {f.name!r} acts between part {f.parts[0]!r} and itself", where=where_of(f))
            return [model.body_index(p) for p in f.parts]

        def need_joint(f, allowed=None):
            if not f.joint:
                raise MechanismError(f"force {f.name!r} ({f.type}) needs `joint = \"...\"`", where=where_of(f))
            if f.joint not in joints:
                raise MechanismError(f"force {f.name!r} refers to unknown joint {f.joint!r}", where=where_of(f),
                                     hint=f"known joints: {', '.join(joints) or '(none)'}")
            j = joints[f.joint]
            if allowed is not None and j.type not in allowed:
                raise MechanismError(
                    f"force {f.name!r} ({f.type}) needs a joint with an axis ({', '.join(allowed)}); "
                    f"joint {j.name!r} is {j.type}", where=where_of(f))
            if len(j.parts) != 2 or len(j.markers) != 2:
                raise MechanismError(f"force {f.name!r}: joint {j.name!r} has no two parts/markers", where=where_of(f))
            b = [model.body_index(p) for p in j.parts]
            (si, Ri), (sj, Rj) = frame_matrix(j.markers[0]), frame_matrix(j.markers[1])
            return j, b, (si - com[b[0]], Ri), (sj - com[b[1]], Rj)

        def number(f, key, default=None, positive=False, nonneg=False, n=None):
            params = dict(f.params)
            value = params.get(key, default)
            if value is None:
                raise MechanismError(f"force {f.name!r} ({f.type}) needs `{key}`", where=where_of(f))
            items = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
            if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating))
                   for v in np.ravel(np.asarray(items, dtype=object))):
                raise MechanismError(f"force {f.name!r} ({f.type}): `{key}` must be a number"
                                     + (f" or {n} numbers" if n else "") + f", got {value!r}", where=where_of(f),
                                     hint=_PARAM_HINTS.get(key))
            arr = np.asarray(value, float)
            if n is not None:
                arr = np.broadcast_to(arr, (n,)).astype(float) if arr.size in (1, n) and arr.ndim <= 1 else None
                if arr is None:
                    raise MechanismError(f"force {f.name!r} ({f.type}): `{key}` must be a number or {n} numbers, "
                                         f"got {value!r}", where=where_of(f), hint=_PARAM_HINTS.get(key))
            elif arr.ndim != 0:
                raise MechanismError(f"force {f.name!r} ({f.type}): `{key}` must be one number, got {value!r}",
                                     where=where_of(f), hint=_PARAM_HINTS.get(key))
            if not np.all(np.isfinite(arr)):
                raise MechanismError(f"force {f.name!r} ({f.type}): `{key}` must be finite, got {value!r}",
                                     where=where_of(f), hint=_PARAM_HINTS.get(key))
            if nonneg and np.any(arr < 0):
                raise MechanismError(f"force {f.name!r} ({f.type}): `{key}` must not be negative, got {value!r}",
                                     where=where_of(f), hint=_PARAM_HINTS.get(key))
            return arr if n is not None else float(arr)

        def known_params(f):
            allowed = _PARAMS[f.type]
            unknown = sorted(k for k, _ in f.params if k not in allowed)
            if unknown:
                raise MechanismError(
                    f"force {f.name!r} ({f.type}) has no parameter(s) {', '.join(map(repr, unknown))}",
                    where=where_of(f), hint=f"{f.type} takes {', '.join(allowed) or 'no numbers'}")
            for k, p in enumerate(f.points):
                if len(p) != 3 or not all(isinstance(x, (int, float, np.integer, np.floating)) and math.isfinite(x)
                                          for x in p):
                    raise MechanismError(f"force {f.name!r} ({f.type}): point {k + 1} must be three finite numbers "
                                         f"(m, assembly frame), got {p!r}", where=where_of(f))

        springs, axis_rot, ball_rot, axis_expr, line_expr, bushings, tyres = [], [], [], [], [], [], []
        seen = set()
        for f in spec.forces:
            if f.name in seen:
                raise MechanismError(f"force names must be unique; repeated: {f.name!r}", where=where_of(f))
            seen.add(f.name)
            if f.type in _PARAMS:
                known_params(f)
            if f.type == "spring-damper":
                b = need_parts(f, 2)
                if len(f.points) != 2:
                    raise MechanismError(f"force {f.name!r} needs points = [[x, y, z], [x, y, z]] "
                                         "(first part, second part)", where=where_of(f))
                k = number(f, "stiffness", 0.0, nonneg=True)
                c = number(f, "damping", 0.0, nonneg=True)
                l_init = float(np.linalg.norm(np.subtract(f.points[1], f.points[0])))
                if l_init == 0.0:
                    raise MechanismError(f"force {f.name!r} (spring-damper): its two points coincide, so the direction "
                                         "of its force is undefined", where=where_of(f),
                                         hint="attach the ends at distinct points; for a spring that holds two points "
                                              "together use a `bushing`")
                l0 = number(f, "free_length", l_init, nonneg=True)
                F0 = number(f, "preload", 0.0)
                springs.append((f.name, b[0], b[1], body_point(b[0], f.points[0]), body_point(b[1], f.points[1]),
                                k, c, l0, F0))
            elif f.type == "rotational-spring-damper":
                j, b, mi, mj = need_joint(f)
                k = number(f, "stiffness", 0.0, nonneg=True)
                c = number(f, "damping", 0.0, nonneg=True)
                tau0 = number(f, "preload", 0.0)
                if j.type in _AXIS_TORQUE_JOINTS:
                    axis_rot.append((f.name, b[0], b[1], mi, mj, k, c, tau0))
                else:
                    if tau0 != 0.0:
                        raise MechanismError(
                            f"force {f.name!r} (rotational-spring-damper) on the {j.type} joint {j.name!r} has a "
                            f"preload of {tau0:g} N m, but a 3-D rotational spring has no axis to wind a preload "
                            "about", where=where_of(f),
                            hint="leave `preload` out, or put the spring on a joint with an axis (revolute, "
                                 "cylindrical, screw, planar), or apply the preload as a `torque` expression on "
                                 "such a joint")
                    # zero at the initial pose: the second part's axes that coincide with the first joint
                    # frame there (a universal joint's two frames differ by its cross axis, up to π)
                    Rj0 = A0[b[1]].T @ A0[b[0]] @ mi[1]
                    ball_rot.append((f.name, b[0], b[1], mi[1], Rj0, k, c))
            elif f.type in ("torque", "force"):
                allowed = _AXIS_TORQUE_JOINTS if f.type == "torque" else _AXIS_FORCE_JOINTS
                j, b, mi, mj = need_joint(f, allowed)
                if not f.expression:
                    raise MechanismError(f"force {f.name!r} ({f.type}) needs `expression = \"...\"`", where=where_of(f))
                where = f"{where_of(f)}: force {f.name!r}" if where_of(f) else f"force {f.name!r}"
                fn = _Expression(f.expression, where)
                (axis_expr if f.type == "torque" else line_expr).append((f.name, b[0], b[1], mi, mj, fn))
            elif f.type == "bushing":
                b = need_parts(f, 2)
                if len(f.points) not in (1, 2):
                    raise MechanismError(f"bushing {f.name!r} needs points = [[x, y, z]] (its origin)",
                                         where=where_of(f))
                Pa = f.points[0]
                Pb = f.points[1] if len(f.points) == 2 else f.points[0]
                Ra = A0[b[0]].T  # world axes at the initial pose, in part a
                Rb = A0[b[1]].T
                Kt = number(f, "stiffness", 0.0, nonneg=True, n=3)
                Ct = number(f, "damping", 0.0, nonneg=True, n=3)
                Kr = number(f, "rotational_stiffness", 0.0, nonneg=True, n=3)
                Cr = number(f, "rotational_damping", 0.0, nonneg=True, n=3)
                bushings.append((f.name, b[0], b[1], body_point(b[0], Pa), body_point(b[1], Pb), Ra, Rb,
                                 Kt, Ct, Kr, Cr))
            elif f.type == "tyre":
                tyres.append(parse_tyre(f, number, where_of(f), model, mass.nmov, A0, r0, com, g))
            else:
                raise MechanismError(f"force {f.name!r} has unknown type {f.type!r}", where=where_of(f),
                                     hint=f"known types: {', '.join(FORCE_TYPES)}")
            self.names.append(f.name)

        def arr(items, k, shape=None):
            a = np.array([it[k] for it in items],
                         dtype=float if not isinstance(items[0][k], (int, np.integer)) else np.int64)
            return a

        self.springs = None
        if springs:
            self.springs = dict(
                names=[s[0] for s in springs], ia=np.array([s[1] for s in springs]),
                ib=np.array([s[2] for s in springs]),
                da=np.array([s[3] for s in springs]), db=np.array([s[4] for s in springs]),
                k=np.array([s[5] for s in springs]), c=np.array([s[6] for s in springs]),
                l0=np.array([s[7] for s in springs]), F0=np.array([s[8] for s in springs]),
            )
        # axis-angle elements (rotational springs on axis joints, torques): one vectorised angle block
        ang = [(s[1], s[2], s[3], s[4]) for s in axis_rot] + [(s[1], s[2], s[3], s[4]) for s in axis_expr]
        self.n_axis_rot = len(axis_rot)
        self.angle = None
        if ang:
            self.angle = dict(
                ia=np.array([a[0] for a in ang]), ib=np.array([a[1] for a in ang]),
                Ri=np.array([a[2][1] for a in ang]), Rj=np.array([a[3][1] for a in ang]),
            )
            self.axis_rot = dict(names=[s[0] for s in axis_rot], k=np.array([s[5] for s in axis_rot], float),
                                 c=np.array([s[6] for s in axis_rot], float),
                                 tau0=np.array([s[7] for s in axis_rot], float))
            self.axis_expr = [(s[0], s[5]) for s in axis_expr]
        self.ball = None
        if ball_rot:
            self.ball = dict(names=[s[0] for s in ball_rot], ia=np.array([s[1] for s in ball_rot]),
                             ib=np.array([s[2] for s in ball_rot]), Ri=np.array([s[3] for s in ball_rot]),
                             Rj=np.array([s[4] for s in ball_rot]), k=np.array([s[5] for s in ball_rot]),
                             c=np.array([s[6] for s in ball_rot]))
        self.line = None
        if line_expr:
            self.line = dict(names=[s[0] for s in line_expr], ia=np.array([s[1] for s in line_expr]),
                             ib=np.array([s[2] for s in line_expr]), di=np.array([s[3][0] for s in line_expr]),
                             Ri=np.array([s[3][1] for s in line_expr]), dj=np.array([s[4][0] for s in line_expr]),
                             fns=[s[5] for s in line_expr])
        self.bushing = None
        if bushings:
            self.bushing = dict(names=[s[0] for s in bushings], ia=np.array([s[1] for s in bushings]),
                                ib=np.array([s[2] for s in bushings]), da=np.array([s[3] for s in bushings]),
                                db=np.array([s[4] for s in bushings]), Ra=np.array([s[5] for s in bushings]),
                                Rb=np.array([s[6] for s in bushings]), Kt=np.array([s[7] for s in bushings]),
                                Ct=np.array([s[8] for s in bushings]), Kr=np.array([s[9] for s in bushings]),
                                Cr=np.array([s[10] for s in bushings]))
        #: tyres on the road (:mod:`.tyres`), None without
        self.tyres = Tyres(tyres) if tyres else None
        self.empty = not (springs or ang or ball_rot or line_expr or bushings or tyres)
        #: whether the axis-angle references must follow the motion (angle-dependent elements)
        self.needs_refs = bool(axis_rot) or any(fn.uses_state for *_, fn in axis_expr)
        self.time_dependent = bool(axis_expr or line_expr)
        #: declared contacts (:mod:`.contacts`), None without; their state (impact speeds) follows
        #: the angle references in ``refs``
        self.contacts = None
        self.n_angle_refs = len(self.angle["ia"]) if self.angle is not None else 0
        if any(c.method != "unilateral" for c in getattr(spec, "contacts", ())):
            from .contacts import Contacts

            self.contacts = Contacts(model, mass)
            self.empty = False
            self.needs_refs = self.needs_refs or self.contacts.stateful
        #: unilateral contacts (:mod:`.unilateral`: constraints while touching, impacts), None without; their
        #: state (each point's mode and slip direction) follows the stops' in ``refs``
        self.contact_constraints = None
        #: joint limits acting as stops (:mod:`.stops`), None without; their state follows the contacts'
        self.stops = None
        if any(j.limits for j in spec.joints):
            from .stops import JointStops

            stops = JointStops(model, mass)
            if stops.n:
                self.stops = stops
                self.empty = False
                self.needs_refs = True
        if any(c.method == "unilateral" for c in getattr(spec, "contacts", ())) or \
                any(dict(j.stop).get("limit_method") == "unilateral" for j in spec.joints if j.limits):
            from .unilateral import UnilateralContacts

            self.contact_constraints = UnilateralContacts(model, mass)
            self.empty = False

    @property
    def unilateral(self):
        """Whether the model has contacts or stops (forces that switch on and off: numpy right-hand
        side, steps limited by :meth:`step_limit`)."""
        return self.contacts is not None or self.stops is not None or self.contact_constraints is not None

    def contact_state(self, refs):
        """The contacts' part of ``refs`` (a view)."""
        na = self.n_angle_refs
        return refs[na: na + (self.contacts.n if self.contacts is not None else 0)]

    def stop_state(self, refs):
        """The stops' part of ``refs`` (a view, after the contacts')."""
        start = self.n_angle_refs + (self.contacts.n if self.contacts is not None else 0)
        return refs[start: start + (2 * self.stops.n if self.stops is not None else 0)]

    def contact_modes(self, refs):
        """The unilateral contacts' part of ``refs`` (a view, after the stops'; :mod:`.unilateral`)."""
        start = self.n_angle_refs + (self.contacts.n if self.contacts is not None else 0) \
            + (2 * self.stops.n if self.stops is not None else 0)
        return refs[start:]

    def step_limit(self, bs, refs):
        """The largest step (s) that strides over no contact and no stop (inf without)."""
        limit = np.inf
        if self.contacts is not None:
            limit = min(limit, self.contacts.step_limit(bs, self.contact_state(refs)))
        if self.stops is not None:
            limit = min(limit, self.stops.step_limit(bs, self.stop_state(refs)))
        return limit

    # ------------------------------------------------------------------ angles
    def _raw_angles(self, bs):
        a = self.angle
        Wi = bs.A[a["ia"]] @ a["Ri"]  # marker frames, world (n, 3, 3)
        Wj = bs.A[a["ib"]] @ a["Rj"]
        X_i, Y_i, Z_i, X_j = Wi[:, :, 0], Wi[:, :, 1], Wi[:, :, 2], Wj[:, :, 0]
        raw = np.arctan2(np.sum(Y_i * X_j, 1), np.sum(X_i * X_j, 1))
        return raw, Z_i

    def compiled_arrays(self):
        """The force elements as arrays of the compiled library's layout (``_kernels.COMMON``: ``sp_*``
        springs and dampers, ``ax_*`` axis torques — constant laws first, then expressions, whose
        programs the compiled right-hand side adds —, ``bl_*`` ball-joint springs, ``ln_*`` forces along
        lines, ``bu_*`` bushings, ``ty_*`` tyres), for the element types the model has; the compiled
        right-hand side gives every other name of the layout an empty array."""
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        out = {}
        s = self.springs
        if s is not None:
            out.update(sp_ia=i64(s["ia"]), sp_ib=i64(s["ib"]), sp_da=f64(s["da"]), sp_db=f64(s["db"]), sp_k=f64(s["k"]),
                       sp_c=f64(s["c"]), sp_l0=f64(s["l0"]), sp_F0=f64(s["F0"]))
        a = self.angle
        if a is not None:
            n, nr = len(a["ia"]), self.n_axis_rot
            k, c, tau0 = np.zeros(n), np.zeros(n), np.zeros(n)
            k[:nr], c[:nr], tau0[:nr] = self.axis_rot["k"], self.axis_rot["c"], self.axis_rot["tau0"]
            out.update(ax_ia=i64(a["ia"]), ax_ib=i64(a["ib"]), ax_Ri=f64(a["Ri"]), ax_Rj=f64(a["Rj"]), ax_k=k, ax_c=c,
                       ax_tau0=tau0, ax_expr=i64(np.arange(n) >= nr), ax_ref=np.zeros(n), tau=np.zeros(n))
        b = self.ball
        if b is not None:
            out.update(bl_ia=i64(b["ia"]), bl_ib=i64(b["ib"]), bl_Ri=f64(b["Ri"]), bl_Rj=f64(b["Rj"]), bl_k=f64(b["k"]),
                       bl_c=f64(b["c"]))
        ln = self.line
        if ln is not None:
            out.update(ln_ia=i64(ln["ia"]), ln_ib=i64(ln["ib"]), ln_di=f64(ln["di"]), ln_Ri=f64(ln["Ri"]),
                       ln_dj=f64(ln["dj"]), ln_F=np.zeros(len(ln["ia"])))
        bu = self.bushing
        if bu is not None:
            n = len(bu["ia"])
            out.update(bu_ia=i64(bu["ia"]), bu_ib=i64(bu["ib"]), bu_da=f64(bu["da"]), bu_db=f64(bu["db"]),
                       bu_Ra=f64(bu["Ra"]), bu_Rb=f64(bu["Rb"]),
                       **{f"bu_{key}": f64(np.broadcast_to(bu[key], (n, 3))) for key in ("Kt", "Ct", "Kr", "Cr")})
        if self.tyres is not None:
            from .tyres import TYRE_OUTPUTS

            out.update(zip(("ty_b", "ty_dc", "ty_ax", "ty_par", "ty_bump", "ty_nb"), self.tyres.arrays()))
            out["ty_out"] = np.zeros((self.tyres.n, len(TYRE_OUTPUTS)))
        return out

    def initial_refs(self, bs):
        """Reference angles (continuity state) at the initial configuration, then the contacts'
        state (:meth:`.contacts.Contacts.initial_state`: an error if shapes start interpenetrating)."""
        angles = self._raw_angles(bs)[0] if self.angle is not None else np.zeros(0)
        parts = [angles]
        if self.contacts is not None:
            parts.append(self.contacts.initial_state(bs))
        if self.stops is not None:
            parts.append(self.stops.initial_state(bs))
        if self.contact_constraints is not None:
            parts.append(self.contact_constraints.initial_state(bs))
        return np.concatenate(parts)

    def accept(self, bs, refs, velocities=False):
        """Update ``refs`` in place to the continuous angles at an accepted configuration (and,
        when ``bs`` holds the accepted velocities, the contacts' impact speeds)."""
        if self.contacts is not None and velocities:
            self.contacts.accept(bs, self.contact_state(refs))
        if self.stops is not None:
            self.stops.accept(bs, self.stop_state(refs), velocities=velocities)
        if self.angle is None:
            return
        raw, _ = self._raw_angles(bs)
        na = self.n_angle_refs
        refs[:na] = raw + _TWO_PI * np.round((refs[:na] - raw) / _TWO_PI)

    def _angles(self, bs, refs):
        raw, Z = self._raw_angles(bs)
        refs = refs[: self.n_angle_refs]
        theta = raw + _TWO_PI * np.round((refs - raw) / _TWO_PI)
        a = self.angle
        rate = np.sum(Z * (bs.w[a["ib"]] - bs.w[a["ia"]]), 1)
        return theta, rate, Z

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, bs, t, refs, F=None, N=None):
        """Forces F (nb, 3), moments about the com N (nb, 3) and non-conservative power (W).

        Gravity is not included (the caller adds the constant m g); ``F``/``N`` are
        accumulated into when given.
        """
        nb = bs.A.shape[0]
        if F is None:
            F = np.zeros((nb, 3))
        if N is None:
            N = np.zeros((nb, 3))
        power = 0.0
        if self.empty:
            return F, N, power
        s = self.springs
        if s is not None:
            Pa_off = np.einsum("nij,nj->ni", bs.A[s["ia"]], s["da"])
            Pb_off = np.einsum("nij,nj->ni", bs.A[s["ib"]], s["db"])
            d = bs.rc[s["ib"]] + Pb_off - bs.rc[s["ia"]] - Pa_off
            l = np.linalg.norm(d, axis=1)
            u = d / np.where(l > 0, l, 1.0)[:, None]
            vrel = bs.vc[s["ib"]] + _cross(bs.w[s["ib"]], Pb_off) - bs.vc[s["ia"]] - _cross(bs.w[s["ia"]], Pa_off)
            ld = np.sum(u * vrel, 1)
            f = -s["k"] * (l - s["l0"]) - s["c"] * ld + s["F0"]
            Fb = f[:, None] * u
            np.add.at(F, s["ib"], Fb)
            np.add.at(F, s["ia"], -Fb)
            np.add.at(N, s["ib"], _cross(Pb_off, Fb))
            np.add.at(N, s["ia"], -_cross(Pa_off, Fb))
            power -= float(np.sum(s["c"] * ld * ld))
        if self.angle is not None:
            theta, rate, Z = self._angles(bs, refs)
            a = self.angle
            tau = np.zeros(len(theta))
            nr = self.n_axis_rot
            if nr:
                r = self.axis_rot
                tau[:nr] = -r["k"] * theta[:nr] - r["c"] * rate[:nr] + r["tau0"]
                power -= float(np.sum(r["c"] * rate[:nr] ** 2))
            for k, (_, fn) in enumerate(self.axis_expr):
                value = fn(t, theta[nr + k], rate[nr + k])
                tau[nr + k] = value
                power += value * rate[nr + k]
            T = tau[:, None] * Z
            np.add.at(N, a["ib"], T)
            np.add.at(N, a["ia"], -T)
        b = self.ball
        if b is not None:
            Wi = bs.A[b["ia"]] @ b["Ri"]
            Wj = bs.A[b["ib"]] @ b["Rj"]
            phi = rotation_vector(Wi.transpose(0, 2, 1) @ Wj)
            phi_w = np.einsum("nij,nj->ni", Wi, phi)
            wrel = bs.w[b["ib"]] - bs.w[b["ia"]]
            T = -b["k"][:, None] * phi_w - b["c"][:, None] * wrel
            np.add.at(N, b["ib"], T)
            np.add.at(N, b["ia"], -T)
            power -= float(np.sum(b["c"] * np.sum(wrel * wrel, 1)))
        ln = self.line
        if ln is not None:
            Ai, Aj = bs.A[ln["ia"]], bs.A[ln["ib"]]
            Pi_off = np.einsum("nij,nj->ni", Ai, ln["di"])
            Pj_off = np.einsum("nij,nj->ni", Aj, ln["dj"])
            Z = np.einsum("nij,nj->ni", Ai, ln["Ri"][:, :, 2])
            Pj = bs.rc[ln["ib"]] + Pj_off
            Pi = bs.rc[ln["ia"]] + Pi_off
            disp = np.sum((Pj - Pi) * Z, 1)
            off_i = Pj - bs.rc[ln["ia"]]  # the point of application, from body i's com
            vrel = bs.vc[ln["ib"]] + _cross(bs.w[ln["ib"]], Pj_off) - bs.vc[ln["ia"]] - _cross(bs.w[ln["ia"]], off_i)
            rate = np.sum(vrel * Z, 1)
            # d/dt (d·Z) = (vPj − vPi)·Z + d·(ω_i × Z)
            drate = np.sum((bs.vc[ln["ib"]] + _cross(bs.w[ln["ib"]], Pj_off)
                            - bs.vc[ln["ia"]] - _cross(bs.w[ln["ia"]], Pi_off)) * Z, 1) \
                + np.sum((Pj - Pi) * _cross(bs.w[ln["ia"]], Z), 1)
            mag = np.array([fn(t, disp[k], drate[k]) for k, fn in enumerate(ln["fns"])])
            Fj = mag[:, None] * Z
            np.add.at(F, ln["ib"], Fj)
            np.add.at(F, ln["ia"], -Fj)
            np.add.at(N, ln["ib"], _cross(Pj_off, Fj))
            np.add.at(N, ln["ia"], -_cross(off_i, Fj))
            power += float(np.sum(mag * rate))
        bu = self.bushing
        if bu is not None:
            F_b, T_b, Pa_off, Pb_off, Wa, power_b = self._bushing(bs)
            np.add.at(F, bu["ib"], F_b)
            np.add.at(F, bu["ia"], -F_b)
            Pb = bs.rc[bu["ib"]] + Pb_off
            np.add.at(N, bu["ib"], _cross(Pb_off, F_b) + T_b)
            np.add.at(N, bu["ia"], -_cross(Pb - bs.rc[bu["ia"]], F_b) - T_b)
            power += power_b
        if self.tyres is not None:
            power += self.tyres.evaluate(bs, F, N)
        if self.contacts is not None:
            power += self.contacts.evaluate(bs, self.contact_state(refs), F, N)
        if self.stops is not None:
            power += self.stops.evaluate(bs, self.stop_state(refs), F, N)
        return F, N, power

    def expression_values(self, bs, t, refs):
        """The current values of the expression elements, for compiled force kernels:
        (τ (n_torque,) N m of the ``torque`` elements, F (n_force,) N of the ``force``
        elements), each evaluated at its joint coordinate and rate as :meth:`evaluate` does."""
        tau = np.zeros(len(self.axis_expr) if self.angle is not None else 0)
        if len(tau):
            theta, rate, _ = self._angles(bs, refs)
            nr = self.n_axis_rot
            for k, (_, fn) in enumerate(self.axis_expr):
                tau[k] = fn(t, theta[nr + k], rate[nr + k])
        ln = self.line
        if ln is None:
            return tau, np.zeros(0)
        Ai, Aj = bs.A[ln["ia"]], bs.A[ln["ib"]]
        Pi_off = np.einsum("nij,nj->ni", Ai, ln["di"])
        Pj_off = np.einsum("nij,nj->ni", Aj, ln["dj"])
        Z = np.einsum("nij,nj->ni", Ai, ln["Ri"][:, :, 2])
        d = bs.rc[ln["ib"]] + Pj_off - bs.rc[ln["ia"]] - Pi_off
        disp = np.sum(d * Z, 1)
        drate = np.sum((bs.vc[ln["ib"]] + _cross(bs.w[ln["ib"]], Pj_off) - bs.vc[ln["ia"]]
                        - _cross(bs.w[ln["ia"]], Pi_off)) * Z, 1) + np.sum(d * _cross(bs.w[ln["ia"]], Z), 1)
        return tau, np.array([fn(t, disp[k], drate[k]) for k, fn in enumerate(ln["fns"])])

    # ------------------------------------------------------------------ tangent
    def axis_law(self, bs, t, refs):
        """(τ, k, c) of every axis element (rotational springs on axis joints, then torque
        expressions): the torque about Z_i (N m), k = −∂τ/∂θ (N m/rad) and c = −∂τ/∂θ̇
        (N m s/rad) at the current state; None without axis elements."""
        if self.angle is None:
            return None
        theta, rate, _ = self._angles(bs, refs)
        n = len(theta)
        tau, k, c = np.zeros(n), np.zeros(n), np.zeros(n)
        nr = self.n_axis_rot
        if nr:
            r = self.axis_rot
            tau[:nr] = -r["k"] * theta[:nr] - r["c"] * rate[:nr] + r["tau0"]
            k[:nr], c[:nr] = r["k"], r["c"]
        for j, (_, fn) in enumerate(self.axis_expr):
            tau[nr + j] = fn(t, theta[nr + j], rate[nr + j])
            dq, dqd = fn.derivatives(t, theta[nr + j], rate[nr + j])
            k[nr + j], c[nr + j] = -dq, -dqd
        return tau, k, c

    def tangent_blocks(self, bs, t, refs, kernels=None):
        """The elements' stiffness K = −∂f/∂x and damping D = −∂f/∂v (:mod:`.force_jacobians`).

        Returns a list of (ia, ib, Kb, Db), one item per element kind present: body indices
        (n,) of the first and second part, and blocks (n, 2, 2, 6, 6) — [element, body row
        (0: first part), body column, 6 × 6] over each body's [com displacement (m), rotation
        (rad)] and [com velocity (m/s), angular velocity (rad/s)], world axes. Forces along a
        joint axis from expressions are not included. ``kernels``: the compiled kernels or their
        numpy twins (:mod:`.stiff_kernels`; None: :func:`.stiff_kernels.choose`).
        """
        from . import stiff_kernels

        kernels = kernels or stiff_kernels.choose()
        A, rc, w, vc = bs.A, bs.rc, bs.w, bs.vc
        out = []

        def blocks(n):
            return np.zeros((n, 2, 2, 6, 6)), np.zeros((n, 2, 2, 6, 6))

        s = self.springs
        if s is not None:
            Kb, Db = blocks(len(s["ia"]))
            kernels.spring_tangent(A, rc, w, vc, s["ia"], s["ib"], s["da"], s["db"], s["k"], s["c"], s["l0"], s["F0"],
                                   Kb, Db)
            out.append((s["ia"], s["ib"], Kb, Db))
        law = self.axis_law(bs, t, refs)
        if law is not None:
            a = self.angle
            Kb, Db = blocks(len(a["ia"]))
            kernels.axis_tangent(A, w, a["ia"], a["ib"], a["Ri"], a["Rj"], law[0], law[1], law[2], Kb, Db)
            out.append((a["ia"], a["ib"], Kb, Db))
        b = self.ball
        if b is not None:
            Kb, Db = blocks(len(b["ia"]))
            kernels.ball_tangent(A, b["ia"], b["ib"], b["Ri"], b["Rj"], b["k"], b["c"], Kb, Db)
            out.append((b["ia"], b["ib"], Kb, Db))
        bu = self.bushing
        if bu is not None:
            Kb, Db = blocks(len(bu["ia"]))
            kernels.bushing_tangent(A, rc, w, vc, bu["ia"], bu["ib"], bu["da"], bu["db"], bu["Ra"], bu["Rb"],
                                    bu["Kt"], bu["Ct"], bu["Kr"], bu["Cr"], Kb, Db)
            out.append((bu["ia"], bu["ib"], Kb, Db))
        if self.tyres is not None:
            out.append(self.tyres.tangent_blocks(bs))
        if self.contacts is not None:
            out.append(self.contacts.tangent_blocks(bs, self.contact_state(refs)))
        return out

    def tangent(self, bs, t, refs):
        """K = −∂f/∂x and D = −∂f/∂v of the force elements as dense arrays (6 nmov, 6 nmov).

        f = [F_b; n_b] per moving body (force at the com, moment about it; N, N m, world),
        x_b = [δr_c, δθ] (m, rad; A → exp([δθ]) A), v_b = [v_c, ω] (m/s, rad/s), as
        :meth:`tangent_blocks`; rows and columns of fixed bodies are left out. Gravity adds
        nothing (constant). For models small enough for dense matrices (tests, the stiffness
        estimate of :mod:`.stiffness`).
        """
        nmov = self.mass.nmov
        K = np.zeros((6 * nmov, 6 * nmov))
        D = np.zeros((6 * nmov, 6 * nmov))
        for ia, ib, Kb, Db in self.tangent_blocks(bs, t, refs):
            bodies = (ia, ib)
            for j in range(2):
                for k in range(2):
                    for e in range(len(ia)):
                        bj, bk = bodies[j][e], bodies[k][e]
                        if bj < nmov and bk < nmov:
                            K[6 * bj: 6 * bj + 6, 6 * bk: 6 * bk + 6] += Kb[e, j, k]
                            D[6 * bj: 6 * bj + 6, 6 * bk: 6 * bk + 6] += Db[e, j, k]
        return K, D

    def _bushing(self, bs, potential=False):
        bu = self.bushing
        Wa = bs.A[bu["ia"]] @ bu["Ra"]
        Wb = bs.A[bu["ib"]] @ bu["Rb"]
        Pa_off = np.einsum("nij,nj->ni", bs.A[bu["ia"]], bu["da"])
        Pb_off = np.einsum("nij,nj->ni", bs.A[bu["ib"]], bu["db"])
        dw = bs.rc[bu["ib"]] + Pb_off - bs.rc[bu["ia"]] - Pa_off
        d = np.einsum("nji,nj->ni", Wa, dw)
        phi = rotation_vector(Wa.transpose(0, 2, 1) @ Wb)
        if potential:
            return 0.5 * float(np.sum(bu["Kt"] * d * d) + np.sum(bu["Kr"] * phi * phi))
        wa = bs.w[bu["ia"]]
        vrel_w = (bs.vc[bu["ib"]] + _cross(bs.w[bu["ib"]], Pb_off)
                  - bs.vc[bu["ia"]] - _cross(wa, Pa_off) - _cross(wa, dw))
        dd = np.einsum("nji,nj->ni", Wa, vrel_w)
        wrel = np.einsum("nji,nj->ni", Wa, bs.w[bu["ib"]] - wa)
        F_loc = -bu["Kt"] * d - bu["Ct"] * dd
        T_loc = -rotation_gradient(phi, bu["Kr"] * phi) - bu["Cr"] * wrel
        F_w = np.einsum("nij,nj->ni", Wa, F_loc)
        T_w = np.einsum("nij,nj->ni", Wa, T_loc)
        power = -float(np.sum(bu["Ct"] * dd * dd) + np.sum(bu["Cr"] * wrel * wrel))
        return F_w, T_w, Pa_off, Pb_off, Wa, power

    def potential(self, bs, refs):
        """Potential energy of gravity, the springs and the contacts' elastic energy (J)."""
        nmov = self.mass.nmov
        V = -float(np.sum(self.mass.body_mass * (bs.rc[:nmov] @ self.gravity)))
        s = self.springs
        if s is not None:
            Pa = bs.rc[s["ia"]] + np.einsum("nij,nj->ni", bs.A[s["ia"]], s["da"])
            Pb = bs.rc[s["ib"]] + np.einsum("nij,nj->ni", bs.A[s["ib"]], s["db"])
            dl = np.linalg.norm(Pb - Pa, axis=1) - s["l0"]
            V += float(np.sum(0.5 * s["k"] * dl * dl - s["F0"] * dl))
        if self.angle is not None and self.n_axis_rot:
            theta, _, _ = self._angles(bs, refs)
            th = theta[: self.n_axis_rot]
            r = self.axis_rot
            V += float(np.sum(0.5 * r["k"] * th * th - r["tau0"] * th))
        b = self.ball
        if b is not None:
            Wi = bs.A[b["ia"]] @ b["Ri"]
            Wj = bs.A[b["ib"]] @ b["Rj"]
            phi = rotation_vector(Wi.transpose(0, 2, 1) @ Wj)
            V += float(np.sum(0.5 * b["k"] * np.sum(phi * phi, 1)))
        if self.bushing is not None:
            V += self._bushing(bs, potential=True)
        if self.tyres is not None:
            V += self.tyres.potential(bs)
        if self.contacts is not None:
            V += self.contacts.potential(bs)
        if self.stops is not None:
            V += self.stops.potential(bs, self.stop_state(refs))
        return V
