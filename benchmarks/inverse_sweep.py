"""Inverse dynamics beyond its samples: efforts, reactions, energies and the round trip, against references computed
here (never against cadmotion's own outputs).

Every case is a model written here (TOML text) with closed-form kinematics (sympy, in t): each moving part's frame
origin o(t) and its rotation φ(t) about a fixed axis a, so ω = φ̇ a, α = φ̈ a, r_c = o + R c. The references:

* efforts and reactions: Newton–Euler of every moving part, solved here by least squares for the unknown joint
  wrenches (revolute: 3 forces, 2 moments ⟂ axis; prismatic: 2 forces ⟂ axis, 3 moments; universal: 3 forces, the
  moment along Z_i × Z_j; a driver: its torque about / force along its axis), each a force F on the joint's second
  part at the origin P of its marker on the first part and a moment about P (cadmotion's convention); gravity,
  spring-dampers (f = −k (l − l0) − c l̇ + F0) and rotational dampers applied. A component of a reaction is compared
  only where it is determined (its row orthogonal to the null space of the balance: the 3-D-built planar loops'
  out-of-plane components are a least-squares choice); the efforts must always be determined.
* power at every frame, from the Motion's frames (poses, velocities, accelerations), not its energies:
  Σ effort · ḟ(t) = Σ_b (m v_c·(a_c − g) + ω·(I_W α)) + springs' k (l − l0) l̇ − F0 l̇ + dampers' c l̇², ḟ the
  drivers' rates from their expressions (sympy).
* energies: energy.kinetic against T of the closed form, energy.potential − its first value against V − V(t0), and
  work.nonconservative against Δ(T + V) of the closed form (the work done on the system, exactly).
* round trip (the finest frame count only): the efforts fitted by a Chebyshev series in t (written as an expression
  ``c_k cos(k acos(x))``, x = 2 (t − t0)/(t1 − t0) − 1; its fit residual printed) applied as ``torque``/``force``
  elements to the same mechanism without its drivers, started with the driven motion's velocities: DOP853 at rtol
  1e-10 must follow the driven coordinate to 1e-6 of its range.

Cases: ``slider-crank`` (the sample's geometry, crank 0.1 m, rod 0.3 m, its masses; crank angle t² and
2πt + 0.3 sin 5t; a spring-damper on the slider in the second), ``slider-driven`` (the same loop at 60° driven from
its slider's displacement, 0.05 sin 2πt), ``four-bar`` (the sample's crank-rocker with masses under gravity, crank
driven 2πt + 0.5 sin 3t; 3 redundant rows), ``lift`` (a 5 kg carriage on a vertical prismatic against gravity, a
spring-damper with preload and a rotational damper-free slide; driven by its displacement, by its absolute y
coordinate, and from t_start = 0.7 s), ``ujoint`` (a shaft driving another through a universal joint 30° off,
rotational damper on the output, gravity: 3 redundant rows), ``singular`` (the four-bar driven from its rocker
into its toggle; the slider-crank driven from its slider through top dead centre), ``redundant`` (a crank driven
twice; a crank and its slider both driven, consistently), ``bad`` (a freedom left free; a compliant contact; joint
stops, compliant and unilateral, that the driven motion runs into).

Motions with no closed form (``table``: the slider-crank driven by tables of its crank's angle or its slide's
displacement — uneven rows, a span inside the table, two rows —; ``rsur``: the RSUR sample (spherical and universal
joints) with masses, driven at its crank by an expression or a table, or from its rocker; ``spatial-singular``): the
same Newton–Euler balance on the Motion's own frames (:class:`FrameBody`: each part's pose, velocity and
acceleration), the power with the drivers' rates from the frames (the relative angular or linear velocity along the
joint's axis), and the table's driven rate against its interpolation law (a not-a-knot cubic spline, natural with
two rows: kernel/expressions.py). ``spatial-singular``: the RSUR driven from its rocker through, short of and past its
toggle, at the sample's pose (a toggle from the start) and the RSSR with its coupler's spin free.

Prints per case × frame count one line: runs, off the reference (or a singular-type event in a regular case), worst
relative errors, wall time; then each bad run (off, an exception, or a singular run that said nothing).

    python benchmarks/inverse_sweep.py [CASE ...] [--quick]     (CASE also table, rsur, spatial-singular)
"""
import math
import os
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

from cadmotion.errors import CadmotionError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics import inverse_dynamics  # noqa: E402
from cadmotion.kernel.dynamics.forward import run as forward_run  # noqa: E402
from cadmotion.kernel.spec import ForceSpec, InitialVelocitySpec  # noqa: E402

T = sp.Symbol("t", real=True)
G = 9.81
ZERO3 = sp.Matrix([0, 0, 0])
EZ = (0.0, 0.0, 1.0)
TOL_EFFORT = 1e-6   # relative to the effort's peak over the run
TOL_REACTION = 1e-6  # relative to the largest determined reaction of the run
TOL_POWER = 1e-6    # relative to the largest term of the balance
TOL_ENERGY = 1e-6   # relative to the energies' range
TOL_ROUND = 1e-6    # round trip, relative to the driven coordinate's range


# ---------------------------------------------------------------------------- closed-form kinematics
def rodrigues(axis, phi):
    a = np.asarray(axis, float)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    c, s = np.cos(phi), np.sin(phi)
    return np.eye(3)[None] + s[:, None, None] * K[None] + (1 - c)[:, None, None] * (K @ K)[None]


class Body:
    """A moving part: frame origin o(t) (sympy 3-vector), rotation φ(t) about the fixed unit ``axis`` (the part
    frame's orientation is the assembly's at φ = 0), mass, com ``c`` (part frame), inertia about the com (part axes)."""

    def __init__(self, name, origin, phi, mass, com, inertia, axis=EZ):
        self.name, self.mass = name, float(mass)
        self.com, self.inertia, self.axis = np.asarray(com, float), np.asarray(inertia, float), np.asarray(axis, float)
        self._o = [[sp.lambdify(T, sp.diff(sp.sympify(c), T, k), "numpy") for c in origin] for k in range(3)]
        self._p = [sp.lambdify(T, sp.diff(phi, T, k), "numpy") for k in range(3)]
        self.origin_expr, self.phi_expr = sp.Matrix(origin), phi

    def at(self, t):
        """(o, v_o, a_o, R, ω, α, r_c, v_c, a_c) at times t (n,)."""
        t = np.asarray(t, float)
        o = [np.stack([np.broadcast_to(np.asarray(f(t), float), t.shape) for f in fs], axis=1) for fs in self._o]
        p = [np.broadcast_to(np.asarray(f(t), float), t.shape) for f in self._p]
        R = rodrigues(self.axis, p[0])
        w, al = p[1][:, None] * self.axis, p[2][:, None] * self.axis
        rho = R @ self.com
        rc = o[0] + rho
        vc = o[1] + np.cross(w, rho)
        ac = o[2] + np.cross(al, rho) + np.cross(w, np.cross(w, rho))
        return dict(o=o[0], vo=o[1], ao=o[2], R=R, w=w, al=al, rc=rc, vc=vc, ac=ac)


class Case:
    """A model (TOML dict), its bodies' closed forms, the joints and drivers for the Newton–Euler balance."""

    def __init__(self, name, data, bodies, joints, drivers, springs=(), rdampers=(), span=(0.0, 1.0),
                 round_trip=True, forces=()):
        self.name, self.data, self.span, self.round_trip = name, data, span, round_trip
        self.bodies = {b.name: b for b in bodies}
        self.joints = joints      # name -> (type, first, second, origin (world, t0), axis (world, t0), axis2)
        self.drivers = drivers    # name -> (kind "angle"/"disp"/"point", joint or part, expression, axis)
        self.springs = springs    # (name, part_a, point_a, part_b, point_b, k, c, l0, F0)
        self.rdampers = rdampers  # (joint name, c): −c θ̇ on the second part about the axis
        self.forces = forces
        #: the bodies are FrameBody (their states read from a Motion's frames, :func:`from_frames`)
        self.from_frames = False


def _local(case, part, point, t0=None):
    """A point given in the assembly frame at the model's initial pose (every part's frame there has the
    assembly's axes) in the part's frame (None: ground)."""
    if part not in case.bodies:
        return None
    return np.asarray(point, float) - np.asarray(case.data["parts"][part]["position"], float)


def _world(case, part, local, point, st):
    """A point fixed in ``part`` (``local`` its part-frame coordinates) at the states ``st``; ground: ``point``."""
    if local is None:
        return np.broadcast_to(np.asarray(point, float), (len(next(iter(st.values()))["o"]), 3)), 0.0
    s = st[part]
    P = s["o"] + np.einsum("nij,j->ni", s["R"], local)
    return P, s["vo"] + np.cross(s["w"], P - s["o"])


def _axis(case, part, axis, t0, st, n):
    if part not in case.bodies:
        return np.broadcast_to(np.asarray(axis, float), (n, 3))
    return np.einsum("nij,j->ni", st[part]["R"], np.asarray(axis, float))


def _perp(a):
    a = a / np.linalg.norm(a)
    e = np.array([1.0, 0, 0]) if abs(a[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(a, e)
    u /= np.linalg.norm(u)
    return u, np.cross(a, u)


def spring_state(case, st, t0):
    """Per spring: (force on b along u (N), length, rate, its points and u) at the frames."""
    out = []
    for (name, pa, xa, pb, xb, k, c, l0, F0) in case.springs:
        Pa, Va = _world(case, pa, _local(case, pa, xa, t0), xa, st)
        Pb, Vb = _world(case, pb, _local(case, pb, xb, t0), xb, st)
        d = Pb - Pa
        ln = np.linalg.norm(d, axis=1)
        u = d / ln[:, None]
        ld = np.einsum("ni,ni->n", u, Vb - Va)
        l0v = np.linalg.norm(np.asarray(xb, float) - np.asarray(xa, float)) if l0 is None else l0
        f = -k * (ln - l0v) - c * ld + F0
        out.append(dict(name=name, pa=pa, pb=pb, Pa=Pa, Pb=Pb, u=u, f=f, l=ln, ld=ld, l0=l0v, k=k, c=c, F0=F0))
    return out


def reference(case, t):
    """Newton–Euler of every moving part at times t: efforts {driver: (n,)}, reactions {joint: (n, 6)} and
    determined {joint: (n, 6) bool}; energies T, V (n,)."""
    t = np.asarray(t, float)
    n, t0 = len(t), case.span[0]
    st = {b: body.at(t) for b, body in case.bodies.items()}
    names = list(case.bodies)
    unknowns = []   # (kind, name, basis (n, 3) world, force?: True/False, joint)
    for jn, (jt, a, b, origin, axis, axis2) in case.joints.items():
        ax = _axis(case, a, axis, t0, st, n)
        ex = np.broadcast_to(np.eye(3), (n, 3, 3))
        if jt in ("revolute", "prismatic", "universal", "spherical"):
            if jt == "prismatic":
                fb = [np.stack([_perp(x)[0] for x in ax]), np.stack([_perp(x)[1] for x in ax])]
                mb = [ex[:, 0], ex[:, 1], ex[:, 2]]
            else:
                fb = [ex[:, 0], ex[:, 1], ex[:, 2]]
                if jt == "revolute":
                    mb = [np.stack([_perp(x)[0] for x in ax]), np.stack([_perp(x)[1] for x in ax])]
                elif jt == "universal":
                    a2 = _axis(case, b, axis2, t0, st, n)
                    m = np.cross(ax, a2)
                    mb = [m / np.linalg.norm(m, axis=1)[:, None]]
                else:
                    mb = []
            for v in fb:
                unknowns.append(("joint", jn, v, True))
            for v in mb:
                unknowns.append(("joint", jn, v, False))
        else:
            raise ValueError(jt)
    for dn, (kind, target, expr, axis) in case.drivers.items():
        if kind == "point":
            unknowns.append(("driver", dn, np.broadcast_to(np.asarray(axis, float), (n, 3)), True))
        else:
            jt, a, b, origin, jax, _ = case.joints[target]
            ax = _axis(case, a, jax, t0, st, n)
            unknowns.append(("driver", dn, ax, kind == "disp"))
    # points and parts of each unknown
    where = {}
    for jn, (jt, a, b, origin, axis, axis2) in case.joints.items():
        P, _ = _world(case, a, _local(case, a, origin, t0), origin, st)
        where[jn] = (a, b, P)
    for dn, (kind, target, expr, axis) in case.drivers.items():
        if kind == "point":
            where[dn] = (None, target, st[target]["o"])
        else:
            where[dn] = where[target]
    nb, nu = len(names), len(unknowns)
    A = np.zeros((n, 6 * nb, nu))
    rhs = np.zeros((n, 6 * nb))
    for k, (kind, name, v, is_force) in enumerate(unknowns):
        a, b, P = where[name]
        for part, sign in ((b, 1.0), (a, -1.0)):
            if part not in st:
                continue
            i = names.index(part)
            rc = st[part]["rc"]
            if is_force:
                A[:, 6 * i: 6 * i + 3, k] += sign * v
                A[:, 6 * i + 3: 6 * i + 6, k] += sign * np.cross(P - rc, v)
            else:
                A[:, 6 * i + 3: 6 * i + 6, k] += sign * v
    g = np.array(case.data.get("gravity", [0, 0, 0]), float)
    Tk = np.zeros(n)
    V = np.zeros(n)
    for i, bname in enumerate(names):
        body, s = case.bodies[bname], st[bname]
        IW = np.einsum("nij,jk,nlk->nil", s["R"], np.diag(body.inertia) if body.inertia.ndim == 1 else body.inertia,
                       s["R"])
        Iw = np.einsum("nij,nj->ni", IW, s["w"])
        rhs[:, 6 * i: 6 * i + 3] = body.mass * (s["ac"] - g)
        rhs[:, 6 * i + 3: 6 * i + 6] = np.einsum("nij,nj->ni", IW, s["al"]) + np.cross(s["w"], Iw)
        Tk += 0.5 * body.mass * np.einsum("ni,ni->n", s["vc"], s["vc"]) + 0.5 * np.einsum("ni,ni->n", s["w"], Iw)
        V -= body.mass * s["rc"] @ g
    for sd in spring_state(case, st, t0):
        for part, P, sign in ((sd["pb"], sd["Pb"], 1.0), (sd["pa"], sd["Pa"], -1.0)):
            if part in st:
                i = names.index(part)
                F = sign * sd["f"][:, None] * sd["u"]
                rhs[:, 6 * i: 6 * i + 3] -= F
                rhs[:, 6 * i + 3: 6 * i + 6] -= np.cross(P - st[part]["rc"], F)
        V += 0.5 * sd["k"] * (sd["l"] - sd["l0"]) ** 2 - sd["F0"] * (sd["l"] - sd["l0"])
    for jn, c in case.rdampers:
        jt, a, b, origin, axis, _ = case.joints[jn]
        ax = _axis(case, a, axis, t0, st, n)
        wa = st[a]["w"] if a in st else 0.0
        wb = st[b]["w"] if b in st else 0.0
        rate = np.einsum("ni,ni->n", ax, wb - wa)
        for part, sign in ((b, 1.0), (a, -1.0)):
            if part in st:
                i = names.index(part)
                rhs[:, 6 * i + 3: 6 * i + 6] -= sign * (-c * rate)[:, None] * ax
    efforts, reactions, determined = {}, {}, {}
    x = np.zeros((n, nu))
    resid = np.zeros(n)
    free = [[] for _ in range(n)]
    for f in range(n):
        x[f], *_ = np.linalg.lstsq(A[f], rhs[f], rcond=1e-12)
        resid[f] = np.linalg.norm(A[f] @ x[f] - rhs[f]) / max(1.0, np.linalg.norm(rhs[f]))
        s = np.linalg.svd(A[f], compute_uv=False)
        _, _, Vt = np.linalg.svd(A[f])
        rank = int(np.sum(s > 1e-9 * s[0]))
        free[f] = Vt[rank:].T  # (nu, nnull)
    for k, (kind, name, v, is_force) in enumerate(unknowns):
        if kind == "driver":
            efforts[name] = x[:, k]
    for jn in case.joints:
        R = np.zeros((n, 6))
        Nrows = [np.zeros((6, free[f].shape[1])) for f in range(n)]
        for k, (kind, name, v, is_force) in enumerate(unknowns):
            if kind != "joint" or name != jn:
                continue
            sl = slice(0, 3) if is_force else slice(3, 6)
            R[:, sl] += x[:, k, None] * v
            for f in range(n):
                Nrows[f][sl] += np.outer(v[f], free[f][k])
        reactions[jn] = R
        determined[jn] = np.array([[np.linalg.norm(Nr[c]) < 1e-7 for c in range(6)] for Nr in Nrows])
    undetermined_efforts = [name for k, (kind, name, v, _) in enumerate(unknowns)
                            if kind == "driver" and any(np.linalg.norm(free[f][k]) > 1e-7 for f in range(n))]
    return dict(efforts=efforts, reactions=reactions, determined=determined, T=Tk, V=V, resid=resid,
                undetermined_efforts=undetermined_efforts, st=st)


def driver_rates(case, t):
    out = {}
    for dn, (kind, target, expr, axis) in case.drivers.items():
        rate = sp.lambdify(T, sp.diff(sp.sympify(expr, locals={"t": T}), T), "numpy")
        out[dn] = np.broadcast_to(np.asarray(rate(t), float), np.shape(t))
    return out


def frame_power(case, motion, efforts, rates=None):
    """(input power Σ effort ḟ, d(T+V)/dt + dissipated) at the frames, from the Motion's frames alone; ``rates`` the
    drivers' rates {driver: (nt,)} (default: the derivatives of their expressions)."""
    t = motion.time
    g = np.array(case.data.get("gravity", [0, 0, 0]), float)
    rates = driver_rates(case, t) if rates is None else rates
    P_in = sum(efforts[d] * rates[d] for d in case.drivers)
    rhs = np.zeros(len(t))
    st = {}
    terms = []
    for bname, body in case.bodies.items():
        k = motion.part_index(bname)
        q = motion.quaternion[:, k]
        R = quat_matrix(q)
        w, al = motion.angular_velocity[:, k], motion.angular_acceleration[:, k]
        rho = np.einsum("nij,j->ni", R, body.com)
        vc = motion.velocity[:, k] + np.cross(w, rho)
        ac = motion.acceleration[:, k] + np.cross(al, rho) + np.cross(w, np.cross(w, rho))
        I = np.diag(body.inertia) if body.inertia.ndim == 1 else body.inertia
        IW = np.einsum("nij,jk,nlk->nil", R, I, R)
        term = body.mass * np.einsum("ni,ni->n", vc, ac - g) + np.einsum("ni,nij,nj->n", w, IW, al)
        rhs += term
        terms.append(np.abs(term))
        st[bname] = dict(o=motion.position[:, k], vo=motion.velocity[:, k], R=R, w=w)
    for sd in spring_state(case, st, case.span[0]):
        p = -(sd["f"] - sd["F0"]) * sd["ld"] - sd["F0"] * sd["ld"]   # k (l − l0) l̇ + c l̇² − F0 l̇ = −f l̇
        rhs += p
        terms.append(np.abs(p))
    for jn, c in case.rdampers:
        jt, a, b, origin, axis, _ = case.joints[jn]
        ax = _axis(case, a, axis, case.span[0], st, len(t))
        wa = st[a]["w"] if a in st else 0.0
        rate = np.einsum("ni,ni->n", ax, st[b]["w"] - wa)
        rhs += c * rate ** 2
        terms.append(c * rate ** 2)
    scale = max(float(np.max(np.abs(P_in))), max(float(np.max(x)) for x in terms), 1e-12)
    return P_in, rhs, scale


def quat_matrix(q):
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


# ---------------------------------------------------------------------------- models
def _part(position, mass=None, com=None, inertia=None, fixed=False):
    p = {"position": list(map(float, position))}
    if fixed:
        p["fixed"] = True
        return p
    p.update(mass=float(mass), com=list(map(float, com)), inertia=list(map(float, inertia)))
    return p


def _joint(name, jtype, parts, origin, axis, **kw):
    j = dict(name=name, type=jtype, parts=list(parts), origin=list(map(float, origin)), axis=list(map(float, axis)))
    j.update(kw)
    return j


def slider_crank(name, expr, theta0=0.0, driven="crank", spring=False, span=(0.0, 2.0), scale=1.0):
    """Planar slider-crank, crank r = 0.1 m, rod l = 0.3 m (lengths times ``scale``, inertias times its square), crank
    at θ0 at the start; ``driven``: "crank" (angle), "slider" (disp of the slide), "slider-x" (the slider's absolute
    x, a part coordinate)."""
    r, ln = 0.1 * scale, 0.3 * scale
    c0, s0 = math.cos(theta0), math.sin(theta0)
    B0 = np.array([r * c0, r * s0, 0.0])
    x0 = r * c0 + math.sqrt(ln * ln - (r * s0) ** 2)
    S0 = np.array([x0, 0.0, 0.0])
    mc, mr, ms = 1.0, 2.0, 1.0
    Ic, Ir, Is = 8.3e-4 * scale ** 2, 0.015 * scale ** 2, 2e-4 * scale ** 2
    data = {"units": "m", "gravity": [0, -G, 0], "parts": {
        "ground": _part([0, 0, 0], fixed=True),
        "crank": _part([0, 0, 0], mc, B0 / 2, [1e-5 * scale ** 2, Ic, Ic]),
        "rod": _part(B0, mr, (S0 - B0) / 2, [2e-5 * scale ** 2, Ir, Ir]),
        "slider": _part(S0, ms, [0, 0, 0], [Is, Is, Is])},
        "joints": [_joint("crank_pivot", "revolute", ["ground", "crank"], [0, 0, 0], EZ),
                   _joint("crank_pin", "revolute", ["crank", "rod"], B0, EZ),
                   _joint("wrist_pin", "revolute", ["rod", "slider"], S0, EZ),
                   _joint("slide", "prismatic", ["ground", "slider"], S0, [1, 0, 0])]}
    f = sp.sympify(expr, locals={"t": T})
    if driven == "crank":
        th = theta0 + f
        x = r * sp.cos(th) + sp.sqrt(ln ** 2 - (r * sp.sin(th)) ** 2)
        drivers = {"crank_pivot.driver": ("angle", "crank_pivot", expr, None)}
        data["drivers"] = [{"joint": "crank_pivot", "expression": expr}]
    else:
        x = x0 + f if driven == "slider" else f
        th = sp.acos((x ** 2 + r * r - ln * ln) / (2 * r * x))   # the upper branch (θ0 > 0)
        if driven == "slider":
            drivers = {"slide.driver": ("disp", "slide", expr, None)}
            data["drivers"] = [{"joint": "slide", "expression": expr}]
        else:
            drivers = {"slider.x.driver": ("point", "slider", expr, (1.0, 0.0, 0.0))}
            data["drivers"] = [{"part": "slider", "coordinate": "x", "expression": expr}]
    B = sp.Matrix([r * sp.cos(th), r * sp.sin(th), 0])
    rod_dir0 = math.atan2(-B0[1], S0[0] - B0[0])
    phi_rod = sp.atan2(-B[1], x - B[0]) - rod_dir0
    bodies = [Body("crank", ZERO3, th - theta0, mc, B0 / 2, [1e-5 * scale ** 2, Ic, Ic]),
              Body("rod", B, phi_rod, mr, (S0 - B0) / 2, [2e-5 * scale ** 2, Ir, Ir]),
              Body("slider", sp.Matrix([x, 0, 0]), sp.Integer(0), ms, [0, 0, 0], [Is, Is, Is])]
    joints = {"crank_pivot": ("revolute", "ground", "crank", [0, 0, 0], EZ, None),
              "crank_pin": ("revolute", "crank", "rod", B0, EZ, None),
              "wrist_pin": ("revolute", "rod", "slider", S0, EZ, None),
              "slide": ("prismatic", "ground", "slider", S0, (1.0, 0.0, 0.0), None)}
    springs = ()
    if spring:
        anchor = [x0 + 0.5, 0.05, 0.0]
        springs = (("slider_spring", "ground", anchor, "slider", list(S0), 400.0, 3.0, 0.45, 20.0),)
        data["forces"] = [{"name": "slider_spring", "type": "spring-damper", "parts": ["ground", "slider"],
                           "points": [anchor, list(S0)], "stiffness": 400.0, "damping": 3.0, "free_length": 0.45,
                           "preload": 20.0}]
    return Case(name, data, bodies, joints, drivers, springs=springs, span=span)


def four_bar(name, expr, driven="crank", span=(0.0, 1.0), gravity=True):
    """The sample's crank-rocker (ground 0.3, crank 0.1, coupler 0.3, rocker 0.25 m) with masses; ``driven``
    "crank" (joint A's angle) or "rocker" (joint D's angle: D's first part is the rocker)."""
    r, lc, lr, d = 0.1, 0.3, 0.25, 0.3
    A, D = np.zeros(3), np.array([d, 0, 0])
    B0 = np.array([0.0, r, 0])
    C0 = np.array([0.261506227481982, 0.24701868244594594, 0])
    m = (1.0, 2.0, 1.5)
    I = (1e-3, 0.016, 8e-3)
    inertia = [[i / 2, i / 2, i] for i in I]
    data = {"units": "m", "gravity": [0, -G if gravity else 0.0, 0], "parts": {
        "ground": _part([0, 0, 0], fixed=True),
        "crank": _part(A, m[0], B0 / 2, inertia[0]),
        "coupler": _part(B0, m[1], (C0 - B0) / 2, inertia[1]),
        "rocker": _part(D, m[2], (C0 - D) / 2, inertia[2])},
        "joints": [_joint("A", "revolute", ["ground", "crank"], A, EZ),
                   _joint("B", "revolute", ["crank", "coupler"], B0, EZ),
                   _joint("C", "revolute", ["coupler", "rocker"], C0, EZ),
                   _joint("D", "revolute", ["rocker", "ground"], D, EZ)]}
    f = sp.sympify(expr, locals={"t": T})
    th0 = math.pi / 2
    ps0 = math.atan2(C0[1], C0[0] - d)
    if driven == "crank":
        th = th0 + f
        B = sp.Matrix([r * sp.cos(th), r * sp.sin(th), 0])
        # C: |C − B| = lc, |C − D| = lr, the branch above the line BD
        e = sp.Matrix([d, 0, 0]) - B
        L2 = e.dot(e)
        a = (lc ** 2 - lr ** 2 + L2) / (2 * L2)
        h = sp.sqrt(lc ** 2 / L2 - a ** 2)
        C = B + a * e + h * sp.Matrix([-e[1], e[0], 0])
        drivers = {"A.driver": ("angle", "A", expr, None)}
        data["drivers"] = [{"joint": "A", "expression": expr}]
    else:
        # D's angle: the ground relative to the rocker, so the rocker turns by −f
        ps = ps0 - f
        C = sp.Matrix([d + lr * sp.cos(ps), lr * sp.sin(ps), 0])
        e = C - sp.Matrix([0, 0, 0])
        L2 = e.dot(e)
        a = (r ** 2 - lc ** 2 + L2) / (2 * L2)
        h = sp.sqrt(r ** 2 / L2 - a ** 2)
        B = a * e + h * sp.Matrix([-e[1], e[0], 0])   # the branch left of AC (B0 above A)
        th = sp.atan2(B[1], B[0])
        drivers = {"D.driver": ("angle", "D", expr, None)}
        data["drivers"] = [{"joint": "D", "expression": expr}]
    cp0 = math.atan2(C0[1] - B0[1], C0[0] - B0[0])
    phi_c = sp.atan2(C[1] - B[1], C[0] - B[0]) - cp0
    phi_r = sp.atan2(C[1], C[0] - d) - ps0
    bodies = [Body("crank", ZERO3, th - th0, m[0], B0 / 2, inertia[0]),
              Body("coupler", B, phi_c, m[1], (C0 - B0) / 2, inertia[1]),
              Body("rocker", sp.Matrix(list(D)), phi_r, m[2], (C0 - D) / 2, inertia[2])]
    joints = {"A": ("revolute", "ground", "crank", A, EZ, None), "B": ("revolute", "crank", "coupler", B0, EZ, None),
              "C": ("revolute", "coupler", "rocker", C0, EZ, None), "D": ("revolute", "rocker", "ground", D, EZ, None)}
    return Case(name, data, bodies, joints, drivers, span=span)


def lift(name, expr, driven="disp", span=(0.0, 1.5), extra_joint=None):
    """A 5 kg carriage on a vertical prismatic (y up) against gravity, a preloaded spring-damper from a point above."""
    mass, I = 5.0, [0.02, 0.03, 0.04]
    com = [0.05, 0.02, 0.01]
    anchor, pt = [0.1, 1.0, 0.0], [0.0, 0.2, 0.0]
    data = {"units": "m", "gravity": [0, -G, 0], "parts": {
        "ground": _part([0, 0, 0], fixed=True),
        "carriage": _part([0, 0, 0], mass, com, I)},
        "joints": [_joint("rail", "prismatic", ["ground", "carriage"], [0, 0, 0], [0, 1, 0])],
        "forces": [{"name": "spring", "type": "spring-damper", "parts": ["ground", "carriage"], "points": [anchor, pt],
                    "stiffness": 800.0, "damping": 25.0, "free_length": 0.6, "preload": 15.0}]}
    if extra_joint:
        data["joints"][0].update(extra_joint)
    f = sp.sympify(expr, locals={"t": T})
    if driven == "disp":
        y = f
        drivers = {"rail.driver": ("disp", "rail", expr, None)}
        data["drivers"] = [{"joint": "rail", "expression": expr}]
    else:
        y = f
        drivers = {"carriage.y.driver": ("point", "carriage", expr, (0.0, 1.0, 0.0))}
        data["drivers"] = [{"part": "carriage", "coordinate": "y", "expression": expr}]
    bodies = [Body("carriage", sp.Matrix([0, y, 0]), sp.Integer(0), mass, com, I)]
    joints = {"rail": ("prismatic", "ground", "carriage", [0, 0, 0], (0.0, 1.0, 0.0), None)}
    springs = (("spring", "ground", anchor, "carriage", pt, 800.0, 25.0, 0.6, 15.0),)
    return Case(name, data, bodies, joints, drivers, springs=springs, span=span)


def ujoint(name, expr, beta=math.radians(30), span=(0.0, 1.0)):
    """Shaft 1 along x (revolute at (−0.2, 0, 0)) drives shaft 2 along (cos β, sin β, 0) (revolute 0.2 m along it)
    through a universal joint at the origin (cross axis z on shaft 1, (−sin β, cos β, 0) on shaft 2); a rotational
    damper c = 0.05 N m s on shaft 2's bearing; gravity −y; the coms off their axes' points but on the axes."""
    cb, sb = math.cos(beta), math.sin(beta)
    d2 = np.array([cb, sb, 0.0])
    a2 = [-sb, cb, 0.0]
    m1, m2 = 1.2, 0.8
    c1 = [-0.1, 0, 0]
    c2 = list(0.1 * d2)
    I1, I2 = [0.004, 0.02, 0.02], [0.003, 0.01, 0.012]
    data = {"units": "m", "gravity": [0, -G, 0], "parts": {
        "ground": _part([0, 0, 0], fixed=True),
        "shaft1": _part([0, 0, 0], m1, c1, I1),
        "shaft2": _part([0, 0, 0], m2, c2, I2)},
        "joints": [_joint("bearing1", "revolute", ["ground", "shaft1"], [-0.2, 0, 0], [1, 0, 0]),
                   _joint("cross", "universal", ["shaft1", "shaft2"], [0, 0, 0], EZ, axis2=a2),
                   _joint("bearing2", "revolute", ["ground", "shaft2"], list(0.2 * d2), list(d2))],
        "forces": [{"name": "load", "type": "rotational-spring-damper", "joint": "bearing2", "damping": 0.05}],
        "drivers": [{"joint": "bearing1", "expression": expr}]}
    f = sp.sympify(expr, locals={"t": T})
    phi2 = sp.atan2(cb * sp.sin(f), sp.cos(f))
    bodies = [Body("shaft1", ZERO3, f, m1, c1, I1, axis=(1.0, 0, 0)),
              Body("shaft2", ZERO3, phi2, m2, c2, I2, axis=tuple(d2))]
    joints = {"bearing1": ("revolute", "ground", "shaft1", [-0.2, 0, 0], (1.0, 0, 0), None),
              "cross": ("universal", "shaft1", "shaft2", [0, 0, 0], EZ, a2),
              "bearing2": ("revolute", "ground", "shaft2", list(0.2 * d2), tuple(d2), None)}
    return Case(name, data, bodies, joints, {"bearing1.driver": ("angle", "bearing1", expr, None)},
                rdampers=(("bearing2", 0.05),), span=span)


def cases(quick):
    return {
        "slider-crank": [slider_crank("crank t^2 (sample)", "t**2"),
                         slider_crank("crank 2πt+0.3sin5t, spring", "2*pi*t + 0.3*sin(5*t)", spring=True),
                         slider_crank("crank 2πt, 1/100 scale", "2*pi*t", scale=0.01)],
        "slider-driven": [slider_crank("slider disp 0.05 sin 2πt", "0.05*sin(2*pi*t)", theta0=math.pi / 3,
                                       driven="slider", span=(0.0, 1.0)),
                          slider_crank("slider x (point driver)", f"{0.05 + math.sqrt(0.09 - 0.0075)!r}"
                                       "+ 0.04*sin(2*pi*t)", theta0=math.pi / 3, driven="slider-x",
                                       span=(0.0, 1.0))],
        "four-bar": [four_bar("crank 2πt+0.5sin3t", "2*pi*t + 0.5*sin(3*t)")],
        "lift": [lift("disp", "0.1*sin(3*t) + 0.05*t"),
                 lift("y coordinate", "0.1*sin(3*t) + 0.05*t", driven="point"),
                 lift("disp from t_start 0.7", "0.1*sin(3*t)", span=(0.7, 2.2))],
        "ujoint": [ujoint("universal 30°, 2πt+0.4sin4t", "2*pi*t + 0.4*sin(4*t)")],
    }


FRAMES_QUICK = (4, 20, 200)
FRAMES = (2, 4, 20, 200, 2000)


# ---------------------------------------------------------------------------- checks
def compare(case, motion):
    """Worst relative errors of one inverse run: effort, reaction, power, energy; and notes."""
    t = motion.time
    ref = reference(case, t)
    notes = []
    eff = 0.0
    for dn in case.drivers:
        col = f"{dn}.effort"
        if col not in motion.extra:
            notes.append(f"no column {col}")
            eff = math.inf
            continue
        r = ref["efforts"][dn]
        eff = max(eff, float(np.max(np.abs(motion.extra[col] - r)) / max(np.max(np.abs(r)), 1e-9)))
    if ref["undetermined_efforts"]:
        notes.append("reference: efforts not determined: " + ", ".join(ref["undetermined_efforts"]))
    rea, n_det, n_all = 0.0, 0, 0
    scale = max([float(np.max(np.abs(np.where(ref["determined"][j], ref["reactions"][j], 0.0))))
                 for j in case.joints] + [1e-9])
    for jn in case.joints:
        cols = [f"{jn}.{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
        got = np.stack([motion.extra[c] for c in cols], axis=1)
        det = ref["determined"][jn]
        n_det += int(det.sum())
        n_all += det.size
        err = np.where(det, np.abs(got - ref["reactions"][jn]), 0.0)
        rea = max(rea, float(np.max(err)) / scale)
    P_in, P_out, pscale = frame_power(case, motion, {dn: motion.extra[f"{dn}.effort"] for dn in case.drivers},
                                      rates=frame_rates(case, motion) if case.from_frames else None)
    pw = float(np.max(np.abs(P_in - P_out))) / pscale
    E = ref["T"] + ref["V"]
    escale = max(float(np.ptp(ref["T"])), float(np.ptp(ref["V"])), float(np.max(np.abs(ref["T"]))), 1e-9)
    en = max(float(np.max(np.abs(motion.extra["energy.kinetic"] - ref["T"]))),
             float(np.max(np.abs(motion.extra["energy.potential"] - motion.extra["energy.potential"][0]
                                 - (ref["V"] - ref["V"][0]))))) / escale
    wk = float(np.max(np.abs(motion.extra["work.nonconservative"] - (E - E[0])))) / escale
    return dict(effort=eff, reaction=rea, power=pw, energy=en, work=wk, notes=notes, determined=(n_det, n_all),
                resid=float(np.max(ref["resid"])))


def cheb_expression(t, y, t0, t1, deg):
    """A Chebyshev fit of y(t) on [t0, t1] as an expression text; (text, max residual at the samples)."""
    x = 2 * (t - t0) / (t1 - t0) - 1
    c = np.polynomial.chebyshev.chebfit(x, y, deg)
    res = float(np.max(np.abs(np.polynomial.chebyshev.chebval(x, c) - y)))
    a = float(2 / (t1 - t0))
    xs = f"max(-1,min(1,{a!r}*t-{float(a * t0 + 1)!r}))"
    terms = [f"{float(c[0])!r}"] + [f"{ck:+.17g}*cos({k}*acos({xs}))" for k, ck in enumerate(c) if k]
    return "".join(terms), res


def _moved(case, motion):
    """The model's data with every part at the motion's first pose (joints' origins and axes and springs' points
    carried with their parts), for a forward run that starts where the driven motion starts."""
    from cadmotion.kernel.rotations import unit_quat_to_matrix

    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in case.data.items()}
    parts = {k: dict(v) for k, v in case.data["parts"].items()}
    pose = {}
    for name, p in parts.items():
        if p.get("fixed"):
            continue
        k = motion.part_index(name)
        R = unit_quat_to_matrix(motion.quaternion[0, k])
        pose[name] = (np.asarray(p["position"], float), R, motion.position[0, k])
        p["position"] = list(map(float, motion.position[0, k]))
        p["orientation"] = list(map(float, motion.quaternion[0, k]))
    data["parts"] = parts

    def point(part, x):
        if part not in pose:
            return list(map(float, x))
        o0, R, o1 = pose[part]
        return list(map(float, o1 + R @ (np.asarray(x, float) - o0)))

    def direction(part, x):
        return list(map(float, pose[part][1] @ np.asarray(x, float))) if part in pose else list(x)

    joints = []
    for j in case.data["joints"]:
        j = dict(j)
        first, second = j["parts"]
        j["origin"], j["axis"] = point(first, j["origin"]), direction(first, j["axis"])
        if "axis2" in j:
            j["axis2"] = direction(second, j["axis2"])
        joints.append(j)
    data["joints"] = joints
    forces = []
    for f in case.data.get("forces", ()):
        f = dict(f)
        if "points" in f:
            f["points"] = [point(part, x) for part, x in zip(f["parts"], f["points"])]
        forces.append(f)
    data["forces"] = forces
    data.pop("drivers", None)
    return data


def round_trip(case, motion, efforts=None):
    """Forward run of the mechanism without drivers, from the driven motion's first pose and velocities, the
    efforts applied as laws fitted piecewise (Chebyshev series over at most 10 pieces of at least 40 frames, each a
    ``torque`` or ``force`` element active on its piece). Returns ((error relative to the parts' path ranges, fit
    residual relative to the effort's peak, wall s), "") or (None, message). ``efforts`` ({driver: (nt,)}): apply these
    instead of the run's (the reference's, for the open-loop motion's own sensitivity to the fit)."""
    t = motion.time
    t0, t1 = case.span
    spec = compile_model(parse_model(_moved(case, motion), source=case.name + ".toml")).spec
    forces = list(spec.forces)
    fit = 0.0
    for dn, (kind, target, expr, axis) in case.drivers.items():
        e = motion.extra[f"{dn}.effort"] if efforts is None else efforts[dn]
        joint = target
        if kind == "point":
            joint = next((jn for jn, (jt, a, b, o, ax, _) in case.joints.items()
                          if jt == "prismatic" and b == target and abs(np.dot(ax, axis)) > 1 - 1e-12), None)
            if joint is None:
                return None, "round trip: a part-coordinate driver with no slide along it (skipped)"
        pieces = max(1, min(10, (len(t) - 1) // 40))
        edges = np.linspace(t0, t1, pieces + 1)
        for p in range(pieces):
            a, b = float(edges[p]), float(edges[p + 1])
            sel = (t >= a - 1e-12) & (t <= b + 1e-12)
            deg = int(min(20, sel.sum() // 2))
            text, res = cheb_expression(t[sel], e[sel], a, b, deg)
            fit = max(fit, res / max(np.max(np.abs(e)), 1e-9))
            if pieces > 1:
                lo = "1" if p == 0 else f"(1+sign(t-{a!r}))/2"
                hi = "1" if p == pieces - 1 else f"(1-sign(t-{b!r}))/2"
                text = f"{lo}*{hi}*({text})"
            forces.append(ForceSpec(name=f"{dn}.law{p}", type="torque" if kind == "angle" else "force", joint=joint,
                                    expression=text))
    init = []
    for bname in case.bodies:
        k = motion.part_index(bname)
        init.append(InitialVelocitySpec(bname, tuple(map(float, motion.velocity[0, k])),
                                        tuple(map(float, motion.angular_velocity[0, k]))))
    model = compile_model(replace(spec, drivers=(), forces=tuple(forces), initial_velocities=tuple(init)))
    w0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fwd, result = forward_run(model, t_end=t1, steps=len(t) - 1, t_start=t0, formulation="projection",
                                  integrator="DOP853", rtol=1e-10, atol=1e-12)
    wall = time.perf_counter() - w0
    if not fwd.complete:
        return None, f"round trip: forward run stopped: {fwd.message}"
    err = 0.0
    for bname in case.bodies:
        a, b = motion.part_index(bname), fwd.part_index(bname)
        scale = max(float(np.max(np.ptp(motion.position[:, a], axis=0))), 1e-3)
        err = max(err, float(np.max(np.abs(fwd.position[:, b] - motion.position[:, a]))) / scale)
        dq = np.abs(np.einsum("ni,ni->n", fwd.quaternion[:, b], motion.quaternion[:, a]))
        err = max(err, float(np.max(2 * np.arccos(np.clip(dq, -1, 1)))) / max(
            float(np.max(np.abs(case.bodies[bname].at(t)["w"]))) * (t1 - t0), 1e-3))
    return (err, fit, wall), ""


def run_inverse(case, steps):
    """(motion or None, message, wall, caught warnings)."""
    w0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = compile_model(parse_model(case.data, source=case.name + ".toml"))
            motion = inverse_dynamics(model, t_end=case.span[1], steps=steps, t_start=case.span[0])
        except CadmotionError as exc:
            return None, f"{type(exc).__name__}: {exc}", time.perf_counter() - w0, caught
    return motion, "", time.perf_counter() - w0, [w for w in caught if "no inertia" not in str(w.message)]


def sweep_accuracy(groups, frames, bad):
    print(f"{'case':44s} {'frames':>6s} {'runs':>4s} {'off':>3s}  {'effort':>8s} {'reaction':>8s} {'power':>8s} "
          f"{'energy':>8s} {'work':>8s} {'round':>8s} {'rnd ref':>8s} {'fit':>8s}  det/all  wall s")
    counts = [0, 0]
    for group, items in groups.items():
        for case in items:
            for steps in frames:
                motion, msg, wall, caught = run_inverse(case, steps)
                counts[0] += 1
                label = f"{group}: {case.name}"
                if motion is None or not motion.complete:
                    counts[1] += 1
                    bad.append(f"{label} @ {steps}: {msg or motion.message}")
                    print(f"{label:44s} {steps:6d} {1:4d} {1:3d}  {msg or motion.message}")
                    continue
                c = compare(case, motion)
                rt, rt_ref = (math.nan, math.nan, 0.0), (math.nan, math.nan, 0.0)
                if case.round_trip and steps == frames[-1]:
                    got, note = round_trip(case, motion)
                    if got is None:
                        c["notes"].append(note)
                    else:
                        rt = got
                        # the same round trip with the reference's efforts: what the open-loop motion's
                        # sensitivity makes of a fit as good (a free slider-crank near its dead centres
                        # amplifies 1e-9 of initial speed to 4e-6 m)
                        rt_ref = round_trip(case, motion, efforts=reference(case, motion.time)["efforts"])[0] \
                            or (math.nan, math.nan, 0.0)
                # a regular case's run must not cry wolf: a singular-type event there is a false alarm
                alarms = [e.kind for e in motion.events if e.kind in ("singular", "near-singular", "effort-unbounded")]
                off = (bool(alarms) or c["effort"] > TOL_EFFORT or c["reaction"] > TOL_REACTION
                       or c["power"] > TOL_POWER or c["energy"] > TOL_ENERGY or c["work"] > TOL_ENERGY
                       or rt[0] > TOL_ROUND + 100 * rt[1] + 2 * np.nan_to_num(rt_ref[0]))
                counts[1] += bool(off)
                flagged = [e.kind for e in motion.events if e.kind not in ("reactions-not-unique",)]
                print(f"{label:44s} {steps:6d} {1:4d} {int(off):3d}  {c['effort']:8.1e} {c['reaction']:8.1e} "
                      f"{c['power']:8.1e} {c['energy']:8.1e} {c['work']:8.1e} {rt[0]:8.1e} {rt_ref[0]:8.1e} "
                      f"{rt[1]:8.1e}  "
                      f"{c['determined'][0]}/{c['determined'][1]}  {wall + rt[2]:.2f}"
                      + (f"  events {flagged}" if flagged else "") + (f"  {'; '.join(c['notes'])}" if c["notes"]
                                                                     else ""))
                if off:
                    bad.append(f"{label} @ {steps}: events {alarms} effort {c['effort']:.2e} reaction "
                               f"{c['reaction']:.2e} power {c['power']:.2e} energy {c['energy']:.2e} work "
                               f"{c['work']:.2e} round {rt[0]:.2e} (reference's {rt_ref[0]:.2e})")
                if c["resid"] > 1e-8:
                    bad.append(f"{label} @ {steps}: the reference's balance residual {c['resid']:.1e} (script)")
    return counts


# ---------------------------------------------------------------------------- singular, redundant, bad input
def sweep_singular(frames, bad):
    """A run near or at a singular configuration must say so: an event naming the time and the driver."""
    counts = [0, 0]
    runs = []
    # the four-bar driven from its rocker into its toggle (crank and coupler aligned, |AC| = r + lc = 0.4 m)
    d, lr = 0.3, 0.25
    C0 = np.array([0.261506227481982, 0.24701868244594594])
    ps0 = math.atan2(C0[1], C0[0] - d)
    # C on |C| = 0.4 and |C − D| = 0.25: the rocker's extreme angle
    x = (0.4 ** 2 - lr ** 2 + d * d) / (2 * d)
    ps_ext = math.atan2(math.sqrt(0.4 ** 2 - x * x), x - d)
    tt = 1.0
    # D's angle is the ground's relative to the rocker: f = ps0 − ψ(t), ψ reaching ps_ext at t = tt
    expr = f"{(ps0 - ps_ext)!r}*t/{tt!r}"
    runs.append(("four-bar rocker into toggle", four_bar("rocker to toggle", expr, driven="rocker", span=(0.0, 1.2)),
                 "D.driver", tt))
    # the slider-crank driven from its slider through top dead centre at t = 1
    r, ln = 0.1, 0.3
    x0 = 0.05 + math.sqrt(0.09 - 0.0075)
    expr = f"{(r + ln - x0)!r}*(1 - (1 - t)**2)"
    runs.append(("slider-crank slider through TDC", slider_crank("slider through TDC", expr, theta0=math.pi / 3,
                                                                  driven="slider", span=(0.0, 1.6)),
                 "slide.driver", 1.0))
    # the IFToMM A02 N-four-bar (a parallelogram chain, samples/dynamics/n_four_bar) driven by its first rod through
    # the flat configuration (rods along the ground line) at t = π/3: the rod's effort stays bounded (the 1-DOF
    # reduction's 3 θ̈ + 34.335 cos θ), the pins' forces grow as 1/θ; the run must say where
    runs.append(("N-four-bar through its flat configuration", None, None, math.pi / 3))
    for label, case, driver, ts in runs:
        if case is None:
            counts_nfb = _n_four_bar(frames, ts, bad)
            counts[0] += counts_nfb[0]
            counts[1] += counts_nfb[1]
            continue
        for steps in frames:
            motion, msg, wall, caught = run_inverse(case, steps)
            counts[0] += 1
            if motion is None:
                said = msg
                eff = math.nan
                worst = ""
            else:
                said = "; ".join(f"{e.kind} t={e.time:.4g}: {e.message[:90]}" for e in motion.events
                                 if e.kind != "reactions-not-unique")
                said += "".join(f"; warning: {str(w.message)[:90]}" for w in caught)
                e = motion.extra[f"{driver}.effort"]
                eff = float(np.max(np.abs(e)))
                # accuracy of the frames it returned, against the reference
                ref = reference(case, motion.time)
                r = ref["efforts"][driver]
                rel = np.abs(e - r) / np.maximum(np.abs(r), 1e-9)
                k = int(np.argmax(rel))
                worst = f"worst effort error {rel[k]:.1e} at t={motion.time[k]:.6g} (|ref| {abs(r[k]):.3g})"
            names_time = motion is None or any(
                (driver in ev.message or driver in ev.items) and abs(ev.time - ts) < 0.2 for ev in motion.events
                if ev.kind != "reactions-not-unique") or any(driver in str(w.message) for w in caught)
            ok = names_time and (motion is None or not worst or rel[k] < 1e-3 or not math.isfinite(rel[k])
                                 or any(ev.kind != "reactions-not-unique" and ev.time <= motion.time[k] + 1e-12
                                        for ev in motion.events))
            counts[1] += not ok
            print(f"{label:36s} {steps:6d}  max |effort| {eff:10.4g}  {worst}  says: {said or '(nothing)'}")
            if not ok:
                bad.append(f"{label} @ {steps}: max |effort| {eff:.4g}, {worst}; said: {said or 'nothing'}")
    return counts


def _n_four_bar(frames, ts, bad):
    from pathlib import Path

    from cadmotion.importers.modelfile import read_model_file
    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = read_model_file(Path(__file__).resolve().parents[1] / "samples" / "dynamics" / "n_four_bar.cadmotion.toml")
    spec = replace(spec, drivers=(DriverSpec("motor", TimeFunctionSpec("-1.5*t"), joint="A0", coordinate="angle"),),
                   initial_velocities=())
    model = compile_model(spec)
    counts = [0, 0]
    for steps in frames + (21,):
        counts[0] += 1
        w0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = inverse_dynamics(model, t_end=2.0, steps=steps)
        wall = time.perf_counter() - w0
        th = math.pi / 2 - 1.5 * m.time
        # the 1-DOF reduction: τ = 3 θ̈ + 34.335 cos θ (θ̈ = 0), the driver turning the rod by −1.5 t
        ref = 34.335 * np.cos(th)
        err = float(np.max(np.abs(m.extra["motor.effort"] - ref))) / 34.335
        near = [e for e in m.events if e.kind in ("singular", "near-singular", "effort-unbounded")]
        rx = max(float(np.max(np.abs(m.extra[k]))) for k in m.extra if k.endswith((".fx", ".fy")))
        dist = float(np.min(np.abs(m.time - ts)))
        said = "; ".join(f"{e.kind} t={e.time:.4g} ({', '.join(e.items)})" for e in near) or "(nothing)"
        # must say so where a frame comes within 1e-3 · 1.5 rad/s of the flat configuration (σ ratio ~ θ)
        ok = (any(abs(e.time - ts) < 2.0 / steps for e in near) or dist * 1.5 > 1e-3) and err < 1e-6
        counts[1] += not ok
        print(f"{'N-four-bar through flat':36s} {steps:6d}  effort error {err:8.1e}  max pin force {rx:10.4g}  "
              f"closest frame {dist * 1.5:.1e} rad  {wall:.2f} s  says: {said}")
        if not ok:
            bad.append(f"N-four-bar through flat @ {steps}: effort error {err:.2e}, max pin force {rx:.4g}, "
                       f"closest frame {dist * 1.5:.1e} rad from flat; said: {said}")
    return counts


def sweep_redundant(bad):
    counts = [0, 0]
    base = slider_crank("crank", "2*pi*t")
    cases_ = []
    twice = dict(base.data)
    twice["drivers"] = [{"joint": "crank_pivot", "expression": "2*pi*t", "name": "motor1"},
                        {"joint": "crank_pivot", "expression": "2*pi*t", "name": "motor2"}]
    cases_.append(("crank driven twice", twice))
    both = dict(base.data)
    xexpr = "0.1*cos(2*pi*t) + sqrt(0.09 - 0.01*sin(2*pi*t)**2) - 0.4"
    both["drivers"] = [{"joint": "crank_pivot", "expression": "2*pi*t"}, {"joint": "slide", "expression": xexpr}]
    cases_.append(("crank and slider both driven", both))
    for label, data in cases_:
        counts[0] += 1
        w0 = time.perf_counter()
        try:
            m = inverse_dynamics(compile_model(parse_model(data, source="redundant.toml")), t_end=1.0, steps=20)
            msg = "ran: " + ", ".join(f"{k}={float(np.max(np.abs(v))):.4g}" for k, v in m.extra.items()
                                      if k.endswith(".effort"))
            ok = False
        except CadmotionError as exc:
            msg = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            ok = True
        counts[1] += not ok
        print(f"{label:36s} {time.perf_counter() - w0:6.2f} s  {msg}")
        if not ok:
            bad.append(f"redundant: {label}: {msg}")
    return counts


def sweep_bad(bad):
    counts = [0, 0]
    items = []
    fb = four_bar("free", "2*pi*t")
    free = dict(fb.data)
    free.pop("drivers")
    items.append(("four-bar without its driver", free, ("error", "A.angle")))
    spin = lift("spin", "0.1*sin(3*t)").data
    spin["joints"] = [dict(spin["joints"][0], type="cylindrical")]
    spin["drivers"] = [{"joint": "rail", "coordinate": "disp", "expression": "0.1*sin(3*t)"}]
    items.append(("lift on a cylindrical rail (it spins free)", spin, ("error", "rail.angle")))
    items.append(("the same, a free_dof='minimal' motion passed in", spin, ("error", "rail.angle", "minimal")))
    for method in ("compliant", "unilateral"):
        st = lift(f"stop {method}", "0.1*sin(3*t)", extra_joint={"limits": {"disp": [-1.0, 0.05]},
                                                                 "limit_method": method})
        items.append((f"lift driven past its {method} stop", st.data, ("event", "limit")))
    for label, data, expect in items:
        counts[0] += 1
        w0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = compile_model(parse_model(data, source="bad.toml"))
                motion = None
                if "minimal" in expect:
                    from cadmotion.kernel import kinematics

                    motion = kinematics(model, 1.0, 50, free_dof="minimal")
                m = inverse_dynamics(model, motion, t_end=1.0, steps=50)
                said = [f"{e.kind}: {e.message[:120]}" for e in m.events if e.kind != "reactions-not-unique"]
                said += [f"warning: {str(w.message)[:120]}" for w in caught if "no inertia" not in str(w.message)]
                eff = {k: float(np.max(np.abs(v))) for k, v in m.extra.items() if k.endswith(".effort")}
                extra = {k: float(np.max(np.abs(v))) for k, v in m.extra.items()
                         if k.endswith((".normal_force", ".limit_force"))}
                msg = f"ran: efforts {eff}, {extra}; said: {said or 'nothing'}"
                ok = expect[0] == "event" and any(e.startswith(expect[1]) for e in said)
            except CadmotionError as exc:
                text = str(exc)
                msg = f"{type(exc).__name__}: {text[:400]}"
                # an error must name what is free, and not offer what inverse dynamics refuses (free_dof='minimal')
                ok = expect[0] == "error" and expect[1] in text and "minimal" not in text
        counts[1] += not ok
        print(f"{label:44s} {time.perf_counter() - w0:6.2f} s  {msg}")
        if not ok:
            bad.append(f"bad input: {label}: {msg}")
    return counts


def contact_case(extra):
    """The lift (y = −0.1 sin 3t) with a 5 cm sphere on the carriage pressing a floor plane at y = −0.12 m
    (stiffness 1e5 N/m^1.5) from t_touch = asin(0.7)/3."""
    lc = lift("contact", "-0.1*sin(3*t)")
    data = dict(lc.data)
    data["parts"] = dict(data["parts"], floor=_part([0, 0, 0], fixed=True))
    data["contacts"] = [dict({"name": "bump", "parts": ["carriage", "floor"], "method": "compliant", "stiffness": 1e5,
                              "shape": [{"sphere": 0.05}, {"plane": {"point": [0, -0.12, 0], "normal": [0, 1, 0]}}]},
                             **extra)]
    return lc, data


def sweep_contacts(frames, bad):
    """Compliant contacts in inverse dynamics: the effort is the contactless reference minus the normal force, and
    the normal force k δ^1.5 (1 + α δ̇): α = c/k (``damping``) or ξ(e)/δ̇⁻ (``restitution``, δ̇⁻ the penetration rate
    at the touch, here 0.3 cos(3 t_touch) exactly)."""
    from cadmotion.kernel.dynamics.contacts import restitution_factor

    counts = [0, 0]
    t_touch = math.asin(0.7) / 3
    v_minus = 0.3 * math.cos(3 * t_touch)
    for label, extra in (("elastic", {"damping": 0.0}), ("damping 2e4", {"damping": 2e4}),
                         ("restitution 0.5", {"restitution": 0.5})):
        lc, data = contact_case(extra)
        for steps in frames:
            counts[0] += 1
            motion, msg, wall, caught = run_inverse(Case("contact", data, [], {}, {}, span=(0.0, 1.0)), steps)
            if motion is None:
                counts[1] += 1
                bad.append(f"contact {label} @ {steps}: {msg}")
                print(f"contact {label:28s} {steps:6d}  {msg}")
                continue
            t = motion.time
            y = 0.1 * -np.sin(3 * t)
            d = np.maximum(-0.12 - (y - 0.05), 0.0)
            dd = np.where(d > 0, 0.3 * np.cos(3 * t), 0.0)
            alpha = (extra.get("damping", 0.0) / 1e5 if "restitution" not in extra
                     else restitution_factor(extra["restitution"]) / v_minus)
            N = np.where(d > 0, np.maximum(1e5 * d ** 1.5 * (1 + alpha * dd), 0.0), 0.0)
            ref = reference(lc, t)["efforts"]["rail.driver"] - N
            eff = motion.extra["rail.driver.effort"]
            e_n = float(np.max(np.abs(motion.extra["bump.normal_force"] - N))) / max(float(np.max(N)), 1e-9)
            e_e = float(np.max(np.abs(eff - ref))) / float(np.max(np.abs(ref)))
            # restitution: δ̇⁻ comes from the frames either side of the touch (a cubic Hermite interpolant): allowed
            # its order, (ω h)⁴ with ω = 3 rad/s the motion's
            allowed = TOL_EFFORT + ((3.0 * (t[1] - t[0])) ** 4 if "restitution" in extra else 0.0)
            off = e_n > allowed or e_e > allowed
            counts[1] += off
            print(f"contact {label:28s} {steps:6d}  normal force {e_n:8.1e}  effort {e_e:8.1e}  allowed {allowed:8.1e}"
                  f"  (peak N {np.max(N):.4g})  {wall:.2f} s")
            if off:
                bad.append(f"contact {label} @ {steps}: normal force off by {e_n:.2e} of its peak, effort {e_e:.2e}")
    # a compliant stop, driven into: the lift y = 0.1 sin 3t against its limit disp ≤ 0.05 m (k = 1e5 N/m, n = 1,
    # e = 0.5), reached at sin(3 t_touch) = 0.5 at δ̇⁻ = 0.3 cos(3 t_touch); F = k δ (1 + ξ δ̇/δ̇⁻) pushes down
    t_touch = math.asin(0.5) / 3
    v_minus = 0.3 * math.cos(3 * t_touch)
    for e in (1.0, 0.5):
        st = lift("stop", "0.1*sin(3*t)", extra_joint={"limits": {"disp": [-1.0, 0.05]}, "limit_stiffness": 1e5,
                                                       "limit_exponent": 1.0, "limit_restitution": e})
        for steps in frames:
            counts[0] += 1
            motion, msg, wall, caught = run_inverse(st, steps)
            t = motion.time
            y, yd = 0.1 * np.sin(3 * t), 0.3 * np.cos(3 * t)
            d = np.maximum(y - 0.05, 0.0)
            xi = restitution_factor(e) if e < 1 else 0.0
            F = np.where(d > 0, np.maximum(1e5 * d * (1 + xi * yd / v_minus), 0.0), 0.0)
            ref = reference(st, t)["efforts"]["rail.driver"] + F
            e_n = float(np.max(np.abs(motion.extra["rail.limit_force"] - F))) / max(float(np.max(F)), 1e-9)
            e_e = float(np.max(np.abs(motion.extra["rail.driver.effort"] - ref))) / float(np.max(np.abs(ref)))
            allowed = TOL_EFFORT + ((3.0 * (t[1] - t[0])) ** 4 if e < 1 else 0.0)
            off = e_n > allowed or e_e > allowed
            counts[1] += off
            print(f"stop e = {e:<22} {steps:6d}  stop force   {e_n:8.1e}  effort {e_e:8.1e}  allowed {allowed:8.1e}"
                  f"  (peak F {np.max(F):.4g})  {wall:.2f} s")
            if off:
                bad.append(f"stop e = {e} @ {steps}: stop force off by {e_n:.2e} of its peak, effort {e_e:.2e}")
    return counts


# ---------------------------------------------------------------------------- references from the frames
class FrameBody:
    """A moving part whose state is read from a Motion's frames (the :class:`Body` interface of :func:`reference`):
    poses, velocities and accelerations of its frame origin, the com's from ρ = R c. For motions with no closed form
    (a table driver, a spatial loop)."""

    def __init__(self, body, motion):
        self.name, self.mass, self.com, self.inertia = body.name, body.mass, body.com, body.inertia
        self.motion = motion

    def at(self, t):
        m = self.motion
        k, idx = m.part_index(self.name), np.searchsorted(m.time, t)
        R = quat_matrix(m.quaternion[idx, k])
        w, al = m.angular_velocity[idx, k], m.angular_acceleration[idx, k]
        o, vo, ao = m.position[idx, k], m.velocity[idx, k], m.acceleration[idx, k]
        rho = np.einsum("nij,j->ni", R, self.com)
        return dict(o=o, vo=vo, ao=ao, R=R, w=w, al=al, rc=o + rho, vc=vo + np.cross(w, rho),
                    ac=ao + np.cross(al, rho) + np.cross(w, np.cross(w, rho)))


def from_frames(case, motion):
    """The case with its bodies read from ``motion``'s frames (Newton–Euler, power and energies of those frames)."""
    out = Case(case.name, case.data, [FrameBody(b, motion) for b in case.bodies.values()], case.joints, case.drivers,
               springs=case.springs, rdampers=case.rdampers, span=case.span, round_trip=False, forces=case.forces)
    out.from_frames = True
    return out


def frame_rates(case, motion):
    """Each joint driver's rate from the frames: (ω_b − ω_a)·axis (angle) or (v_b − v_a)·axis at the joint's origin
    (disp); a part driver's, its frame origin's velocity along the coordinate."""
    t, n = motion.time, motion.nt
    st = {b: body.at(t) for b, body in case.bodies.items()}
    out = {}
    for dn, (kind, target, expr, axis) in case.drivers.items():
        if kind == "point":
            out[dn] = st[target]["vo"] @ np.asarray(axis, float)
            continue
        jt, a, b, origin, jax, _ = case.joints[target]
        ax = _axis(case, a, jax, case.span[0], st, n)
        if kind == "angle":
            wa = st[a]["w"] if a in st else 0.0
            out[dn] = np.einsum("ni,ni->n", ax, st[b]["w"] - wa)
        else:
            _, Va = _world(case, a, _local(case, a, origin), origin, st)
            _, Vb = _world(case, b, _local(case, b, origin), origin, st)
            out[dn] = np.einsum("ni,ni->n", ax, Vb - Va)
    return out


def table_slider_crank(name, rows, driven="crank", span=(0.0, 2.0)):
    """The slider-crank of :func:`slider_crank` (crank at 60° for ``driven="slider"``) driven by a table
    ``rows`` [[t, value], ...]: the crank's angle or the slide's displacement."""
    theta0 = 0.0 if driven == "crank" else math.pi / 3
    case = slider_crank(name, "t", theta0=theta0, driven=driven, span=span)
    joint = "crank_pivot" if driven == "crank" else "slide"
    case.data = dict(case.data, drivers=[{"joint": joint, "table": [[float(a), float(b)] for a, b in rows]}])
    return case


_RSUR = Path(__file__).resolve().parents[1] / "samples" / "rsur_spatial.cadmotion.toml"


def _rsur_geometry():
    """(ball, cross, rocker pivot (3,) m; coupler length m) of the RSUR sample at its assembly pose."""
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib

    joints = {j["name"]: j for j in tomllib.loads(_RSUR.read_text())["joints"]}
    B, C, D = (np.array(joints[n]["origin"], float) for n in ("ball", "cross", "rocker_pivot"))
    return B, C, D, float(np.linalg.norm(C - B))


def rsur_rocker(theta):
    """The rocker's angle ψ (rad, about +y from the sample's pose) with the crank at θ (rad): |C(ψ) − B(θ)| = the
    coupler's length, on the branch of the sample's assembly (ψ from 0 down to its extreme at θ = π)."""
    from scipy.optimize import brentq

    B0, C0, D, lc = _rsur_geometry()
    B = np.linalg.norm(B0) * np.array([math.cos(theta), math.sin(theta), 0.0])
    f = lambda p: float(np.linalg.norm(D + rodrigues((0, 1, 0), np.array([p]))[0] @ (C0 - D) - B) - lc)  # noqa: E731
    return 0.0 if theta == 0.0 else brentq(f, -1.2, 0.05)  # the other branch: ψ < −1.8 rad


def rsur(name, drive, driven="crank", theta0=0.0, span=(0.0, 1.0)):
    """The RSUR sample (crank about z, a spherical joint, a universal joint, rocker about y) with masses under
    gravity −z, assembled with the crank at θ0 (the sample's pose at 0; the universal joint's first axis ⟂ the
    coupler and y), every part's frame with the assembly's axes; ``drive`` an expression or a table of the crank's
    (``driven="crank"``) or the rocker's angle."""
    B0, C0, D, lc = _rsur_geometry()
    B = np.linalg.norm(B0) * np.array([math.cos(theta0), math.sin(theta0), 0.0])
    C = D + rodrigues((0, 1, 0), np.array([rsur_rocker(theta0)]))[0] @ (C0 - D)
    ax = np.cross(C - B, [0.0, 1.0, 0.0])
    ax /= np.linalg.norm(ax)
    mass = {"crank": 0.4, "coupler": 0.7, "rocker": 0.5}
    inertia = {"crank": [2e-4, 3e-4, 4e-4], "coupler": [2e-3, 2.2e-3, 5e-4], "rocker": [1.5e-3, 1.6e-3, 4e-4]}
    pos = {"crank": np.zeros(3), "coupler": B, "rocker": D}
    com = {"crank": B / 2, "coupler": (C - B) / 2, "rocker": (C - D) / 2}
    data = {"units": "m", "gravity": [0, 0, -G], "parts": {"ground": _part([0, 0, 0], fixed=True)}}
    for n in pos:
        data["parts"][n] = _part(pos[n], mass[n], com[n], inertia[n])
    data["joints"] = [_joint("crank_pivot", "revolute", ["ground", "crank"], [0, 0, 0], EZ),
                      {"name": "ball", "type": "spherical", "parts": ["crank", "coupler"],
                       "origin": list(map(float, B))},
                      _joint("cross", "universal", ["coupler", "rocker"], C, ax, axis2=[0.0, 1.0, 0.0]),
                      _joint("rocker_pivot", "revolute", ["ground", "rocker"], D, [0, 1, 0])]
    joint = "crank_pivot" if driven == "crank" else "rocker_pivot"
    data["drivers"] = [{"joint": joint, "expression": drive} if isinstance(drive, str) else
                       {"joint": joint, "table": [[float(a), float(b)] for a, b in drive]}]
    bodies = [Body(n, ZERO3, sp.Integer(0), mass[n], com[n], inertia[n]) for n in pos]  # states: from the frames
    joints = {j["name"]: (j["type"], j["parts"][0], j["parts"][1], j["origin"], tuple(j.get("axis", EZ)),
                          j.get("axis2")) for j in data["joints"]}
    return Case(name, data, bodies, joints, {f"{joint}.driver": ("angle", joint, drive, None)}, span=span,
                round_trip=False)


def frame_cases():
    tt = np.array([0.0, 0.2, 0.5, 0.7, 1.0, 1.3, 1.4, 1.8, 2.0])   # uneven rows
    crank = np.column_stack([tt, 2 * np.pi * tt + 0.3 * np.sin(3 * tt)])
    slide = np.column_stack([tt[:6] / 1.3, 0.05 * np.sin(2 * np.pi * tt[:6] / 1.3)])
    rsur_rows = np.column_stack([np.linspace(0, 1, 6), 2 * np.pi * np.linspace(0, 1, 6) ** 1.5])
    return {
        "table": [table_slider_crank("crank table, 9 uneven rows", crank),
                  table_slider_crank("crank table, span 0.3-1.7 s", crank, span=(0.3, 1.7)),
                  table_slider_crank("crank table, 2 rows (linear)", [[0.0, 0.0], [2.0, 9.0]]),
                  table_slider_crank("crank table, 0-2.5 s (past its rows)", crank, span=(0.0, 2.5)),
                  table_slider_crank("slide table, 6 rows", slide, driven="slider", span=(0.0, 1.0))],
        "rsur": [rsur("RSUR crank 2πt+0.3sin5t", "2*pi*t + 0.3*sin(5*t)"),
                 rsur("RSUR crank table, 6 rows", rsur_rows),
                 rsur("RSUR at 90°, rocker 0.1 sin 2πt", "0.1*sin(2*pi*t)", driven="rocker", theta0=math.pi / 2)],
    }


def sweep_frames(groups, frames, bad):
    """Table drivers and the RSUR spatial loop: efforts and reactions against Newton–Euler of the frames (each
    part's pose, velocity and acceleration as the Motion gives them), power against the frames' Σ effort · rate
    (rates from the frames: the relative angular or linear velocity along the joint's axis), the driven coordinate
    against the table's interpolation (a not-a-knot cubic spline; natural with two rows: kernel/expressions.py),
    no singular-type event, and a ``table-extrapolated`` event exactly when frames lie outside a table's rows."""
    from scipy.interpolate import CubicSpline

    counts = [0, 0]
    print(f"{'case':44s} {'frames':>6s} {'runs':>4s} {'off':>3s}  {'effort':>8s} {'reaction':>8s} {'power':>8s} "
          f"{'energy':>8s} {'work':>8s} {'law':>8s}  det/all  wall s")
    for group, items in groups.items():
        for case in items:
            for steps in frames:
                motion, msg, wall, caught = run_inverse(case, steps)
                counts[0] += 1
                label = f"{group}: {case.name}"
                if motion is None or not motion.complete:
                    counts[1] += 1
                    bad.append(f"{label} @ {steps}: {msg or motion.message}")
                    print(f"{label:44s} {steps:6d} {1:4d} {1:3d}  {msg or motion.message}")
                    continue
                fc = from_frames(case, motion)
                c = compare(fc, motion)
                law, told = 0.0, False
                (d,) = case.data["drivers"]
                if "table" in d:
                    rows = np.asarray(d["table"], float)
                    # frames outside the rows (the spline extrapolated) must be said, and only those
                    beyond = bool(np.any((motion.time < rows[0, 0] - 1e-12) | (motion.time > rows[-1, 0] + 1e-12)))
                    told = beyond != any(e.kind == "table-extrapolated" for e in motion.events)
                    spline = CubicSpline(rows[:, 0], rows[:, 1], bc_type="natural" if len(rows) == 2 else "not-a-knot")
                    dn = next(iter(case.drivers))
                    rate = frame_rates(fc, motion)[dn]
                    law = float(np.max(np.abs(rate - spline(motion.time, 1)))) / float(np.max(np.abs(rate)))
                alarms = [e.kind for e in motion.events if e.kind in ("singular", "near-singular", "effort-unbounded")]
                off = (bool(alarms) or c["effort"] > TOL_EFFORT or c["reaction"] > TOL_REACTION
                       or c["power"] > TOL_POWER or c["energy"] > TOL_ENERGY or c["work"] > TOL_ENERGY
                       or law > TOL_EFFORT or c["resid"] > 1e-8 or told)
                counts[1] += bool(off)
                print(f"{label:44s} {steps:6d} {1:4d} {int(off):3d}  {c['effort']:8.1e} {c['reaction']:8.1e} "
                      f"{c['power']:8.1e} {c['energy']:8.1e} {c['work']:8.1e} {law:8.1e}  "
                      f"{c['determined'][0]}/{c['determined'][1]}  {wall:.2f}"
                      + (f"  events {alarms}" if alarms else ""))
                if off:
                    bad.append(f"{label} @ {steps}: events {alarms} effort {c['effort']:.2e} reaction "
                               f"{c['reaction']:.2e} power {c['power']:.2e} energy {c['energy']:.2e} work "
                               f"{c['work']:.2e} law {law:.2e} residual {c['resid']:.1e}"
                               + ("; the table's extrapolation said wrongly or not at all" if told else ""))
    return counts


def sweep_spatial_singular(frames, bad):
    """The RSUR assembled with its crank at 90°, driven from its rocker to its extreme angle ψ_e (the crank and the
    coupler in line, θ = π: a toggle) as ψ_e (1 − (1 − t)²) (reached with zero rate at t = 1; through it, the crank's
    branch is the solver's), just short of it (t ≤ 0.999) and 2 % beyond it (the kinematics locks up): each run
    must say so near t = 1 (through, short) or where it stops (beyond), naming the driver in a stop; the frames it
    returns must match Newton–Euler of the frames. The RSUR at the sample's pose (θ = 0: the rocker's other extreme)
    driven from its rocker: refused as a singular configuration. And the RSSR of relative_sweep (the coupler's spin
    about its own axis free) driven at its crank: refused, naming the coupler."""
    from relative_sweep import rssr

    counts = [0, 0]
    psi0, psi_e = rsur_rocker(math.pi / 2), rsur_rocker(math.pi)
    runs = [("through", 1.0, (0.0, 1.6), ("singular",)), ("short of it", 1.0, (0.0, 0.999), ("near-singular",)),
            ("2 % beyond", 1.02, (0.0, 1.6), ("lockup", "effort-unbounded"))]
    for label, over, span, expect in runs:
        case = rsur(f"RSUR rocker {label}", f"{(psi_e - psi0) * over!r}*(1 - (1 - t)**2)", driven="rocker",
                    theta0=math.pi / 2, span=span)
        for steps in frames:
            counts[0] += 1
            motion, msg, wall, caught = run_inverse(case, steps)
            if motion is None:
                counts[1] += 1
                bad.append(f"RSUR {label} @ {steps}: {msg}")
                print(f"RSUR rocker {label:24s} {steps:6d}  {msg}")
                continue
            c = compare(from_frames(case, motion), motion)
            said = [e for e in motion.events if e.kind in ("singular", "near-singular", "effort-unbounded", "lockup")]
            t_stop = motion.time[-1]
            where = 1.0 if "lockup" not in expect else t_stop
            ok = (any(e.kind in expect and abs(e.time - where) < max(0.2, 2 * span[1] / steps) for e in said)
                  and ("lockup" not in expect or any("rocker_pivot.driver" in e.message for e in said))
                  and c["effort"] < TOL_EFFORT)
            counts[1] += not ok
            text = "; ".join(f"{e.kind} t={e.time:.4g}" for e in said) or "(nothing)"
            print(f"RSUR rocker {label:24s} {steps:6d}  complete {motion.complete}  max |effort| "
                  f"{np.max(np.abs(motion.extra['rocker_pivot.driver.effort'])):9.4g}  effort error {c['effort']:8.1e}"
                  f"  {wall:.2f} s  says: {text}")
            if not ok:
                bad.append(f"RSUR rocker {label} @ {steps}: effort error {c['effort']:.2e}; said {text}")
    # the RSUR assembled at θ = 0 (the sample's pose: the rocker at its other extreme) driven from its rocker: the
    # initial pose is a toggle; refused as a singular configuration (not as a freedom left free), naming the crank
    counts[0] += 1
    motion, msg, wall, caught = run_inverse(rsur("RSUR sample from its rocker", "0.1*t", driven="rocker"), 20)
    ok = motion is None and "singular configuration" in msg and "crank_pivot.angle" in msg and "leave" not in msg
    counts[1] += not ok
    print(f"{'RSUR sample pose, from its rocker':36s} {20:6d}  {msg.splitlines()[0][:200] if msg else 'ran'}")
    if not ok:
        bad.append(f"RSUR sample pose driven from its rocker: {msg or 'ran'}")
    counts[0] += 1
    data = rssr()
    data.pop("initial_velocity")
    data["drivers"] = [{"joint": "R1", "expression": "2*pi*t"}]
    motion, msg, wall, caught = run_inverse(Case("rssr", data, [], {}, {}), 20)
    ok = motion is None and "DrivingError" in msg and "coupler" in msg
    counts[1] += not ok
    print(f"{'RSSR driven at its crank':36s} {20:6d}  {msg.splitlines()[0][:160] if msg else 'ran'}")
    if not ok:
        bad.append(f"RSSR driven at its crank: {msg or 'ran'}")
    return counts


def main(argv):
    quick = "--quick" in argv
    chosen = [a for a in argv if not a.startswith("-")]
    frames = FRAMES_QUICK if quick else FRAMES
    bad = []
    totals = {}
    groups = {k: v for k, v in cases(quick).items() if not chosen or k in chosen}
    if groups:
        totals["accuracy"] = sweep_accuracy(groups, frames, bad)
    if not chosen or "singular" in chosen:
        print()
        totals["singular"] = sweep_singular(frames if quick else (4, 20, 200, 2000), bad)
    if not chosen or "redundant" in chosen:
        print()
        totals["redundant"] = sweep_redundant(bad)
    if not chosen or "contacts" in chosen:
        print()
        totals["contacts"] = sweep_contacts(frames, bad)
    if not chosen or "bad" in chosen:
        print()
        totals["bad"] = sweep_bad(bad)
    fgroups = {k: v for k, v in frame_cases().items() if not chosen or k in chosen}
    if fgroups:
        print()
        totals["frames"] = sweep_frames(fgroups, frames, bad)
    if not chosen or "spatial-singular" in chosen:
        print()
        totals["spatial-singular"] = sweep_spatial_singular(frames if quick else (4, 20, 200, 2000), bad)
    print()
    for k, (n, off) in totals.items():
        print(f"{k}: {n} runs, {off} bad")
    for b in bad:
        print("BAD", b)


if __name__ == "__main__":
    main(sys.argv[1:])
