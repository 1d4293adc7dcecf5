"""Force elements beyond their samples: every element type of ``kernel/dynamics/forces.py`` on a small model with a
closed-form motion computed here, swept over the integrators, their tolerances and step sizes; every run against its
closed form (never cadmotion's own energy outputs), and whether the run's own checks (``result.invariants``) flagged it.

Cases (SI units, no gravity unless said; a block is 2 kg on a prismatic rail along x, a disc 0.05 kg m² isotropic
with its centre of mass on the joint, ω = 10 rad/s unless said):

* ``spring``: block on a spring k = 200 N/m stretched 0.1 m, at rest: x = 0.1 cos ωt, ω = √(k/m); energy
  ½ m v² + ½ k x².
* ``spring damped``: the same with c = 2 ζ √(k m), ζ = 0.1: u = A e^(−ζωt) (cos ω_d t + ζ/√(1 − ζ²) sin ω_d t).
* ``spring preload``: the block at the free length, preload F0 = 10 N: x = F0/k (1 − cos ωt).
* ``spring 3-D``: a free body (no joint) on a spring from the origin along (0.6, 0.8, 0), 0.1 m beyond its free length
  1 m, at rest: its distance 1 + 0.1 cos ωt along that line; energy.
* ``spring gravity``: the block on a vertical rail under g = 9.81, released at the spring's free length:
  z = −(m g / k)(1 − cos ωt).
* ``gravity``: a free body thrown at (1, 0, 2) m/s: r = v0 t + ½ g t².
* ``torsion``: the disc on a revolute with a rotational spring k = 5 N m/rad, spun at 1 rad/s: θ = (w0/ω) sin ωt;
  energy.
* ``torsion damped``: with c = 2 ζ √(k I), ζ = 0.2 (underdamped closed form as above).
* ``torsion preload``: at rest, preload τ0 = 0.5 N m: θ = τ0/k (1 − cos ωt).
* ``torque law``: a ``torque`` expression ``-5*q - 0.1*qd`` on the revolute, spun at 1 rad/s: the damped closed form.
* ``torque``: a constant ``torque`` 0.2 N m: θ = ½ (τ/I) t².
* ``force``: a constant ``force`` 4 N along the rail: x = ½ (F/m) t².
* ``force in time``: ``force`` 3 sin(5t) N: x = F0/(m Ω) (t − sin(Ωt)/Ω).
* ``torsion 3-D spherical``: the disc on a spherical joint, k = 5, spun at 1 rad/s about (1, 2, 2)/3: a rotation about
  that fixed axis by (w0/ω) sin ωt (isotropic inertia: no precession); energy.
* ``torsion 3-D universal``: the disc on a universal joint (axis z, cross axis x), spun at 1 rad/s about z: a rotation
  about z by (w0/ω) sin ωt; and ``... at rest``: not spun, it stays at rest (error: the largest rotation over 0.1 rad).
* ``torsion 3-D preload``: a spherical joint's rotational spring with preload τ0 = 0.5 N m, at rest. Refused
  (the 3-D spring has no axis to wind the preload about): a run that takes it is judged against the axis-joint
  reading, a preload about the joint's z axis, θ = τ0/k (1 − cos ωt) about z.
* ``bushing``: a free body on a bushing at its centre of mass, K = 200 N/m and K_r = 5 N m/rad on every axis, thrown at
  0.5 m/s along x and spun at 0.5 rad/s about z: x = (v0/ω) sin ωt and θ = (w0/ω) sin ωt.
* ``stiff chain``: two 1 kg blocks on rails, the first on a soft spring (100 N/m) to the ground, the second on a
  stiff one (1e6 N/m) to the first, both thrown at 0.5 m/s: the 2-DOF modal solution computed here (the stiff mode
  carries ~1e-9 of the energy: a right run must not be flagged for it, a fixed step need not resolve it).

Each case spans two of its periods T = 2π/ω (the constant-force cases 1 s, T = 1 s). Errors: the largest distance to the
closed form over the frames (100 per period; a fixed-step run: one per step), over the amplitude; and for the
conservative cases the largest change of the energy computed here from the frames, over the energy. Allowed: for the
error-controlled integrators (atol = rtol / 100) the sum of their steps' local errors, max(100, √n N) rtol over N
steps of an n-component state (the step bound of ``kernel/dynamics/invariants.py``: an oscillation's error adds up, it
is not damped away); for the fixed-step ones 10 % (they promise no tolerance: an answer off by a tenth of its
amplitude is wrong by any reading). A run is
*off* beyond its allowance, *flagged* when a check of its own broke, and *wrong-unflagged* — a defect — when off and
not flagged. Integrators: DOP853, RK45, RK23, Radau, BDF, LSODA at rtol 1e-4, 1e-6, 1e-8, 1e-10; RK4, generalized-α,
HHT (index-3 formulation) at dt = T/80, T/20, T/8, T/4, T/2 (``--quick``: DOP853, Radau, BDF at 1e-5, 1e-9; RK4,
generalized-α, HHT at T/40, T/10, T/4). Prints a line per case, integrator and setting, every run off or flagged,
and the summary line.

    python benchmarks/forces_sweep.py [--quick] [case ...]
"""
import math
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

from cadmotion.errors import CadmotionError, MechanismError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

G = 9.81
M_BLOCK, I_DISC = 2.0, 0.05
K_LIN, K_ROT = 200.0, 5.0
OMEGA = math.sqrt(K_LIN / M_BLOCK)  # = √(K_ROT / I_DISC) = 10 rad/s
ADAPTIVE = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
FIXED = ("RK4", "generalized-alpha", "HHT")
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
STEPS_PER_PERIOD = (80, 20, 8, 4, 2)
FIXED_ALLOWED = 0.1


# ---------------------------------------------------------------------------- models
def _ground():
    return {"ground": {"fixed": True}}


def _block(position=(0, 0, 0)):
    return {"position": list(position), "mass": M_BLOCK, "com": [0, 0, 0], "inertia": [0.01, 0.01, 0.01]}


def _disc():
    return {"position": [0, 0, 0], "mass": 1.0, "com": [0, 0, 0], "inertia": [I_DISC] * 3}


def _model(parts, joints=(), forces=(), gravity=(0, 0, 0), velocity=None):
    data = {"gravity": list(gravity), "parts": {**_ground(), **parts}, "joints": list(joints), "forces": list(forces)}
    if velocity:
        data["initial_velocity"] = velocity
    return data


def _rail(axis=(1, 0, 0), part="block", name="rail", other="ground"):
    return {"name": name, "type": "prismatic", "parts": [other, part], "origin": [0, 0, 0], "axis": list(axis)}


def _hinge(kind="revolute", axis2=None):
    j = {"name": "hinge", "type": kind, "parts": ["ground", "disc"], "origin": [0, 0, 0], "axis": [0, 0, 1]}
    if axis2 is not None:
        j["axis2"] = list(axis2)
    return j


def _underdamped(t, A, omega, zeta, u0_rate=0.0):
    """u(t) of ü + 2ζω u̇ + ω² u = 0 from u(0) = A, u̇(0) = u0_rate."""
    wd = omega * math.sqrt(1 - zeta * zeta)
    B = (u0_rate + zeta * omega * A) / wd
    return np.exp(-zeta * omega * t) * (A * np.cos(wd * t) + B * np.sin(wd * t))


# ---------------------------------------------------------------------------- reading frames
def _x(motion, part="block", axis=0):
    return motion.position[:, motion.parts.index(part), axis]


def _rotvec(motion, part="disc"):
    """Rotation vectors (nt, 3) of a part's orientation, rad (|φ| ≤ π)."""
    q = motion.quaternion[:, motion.parts.index(part)]
    q = q * np.where(q[:, :1] < 0, -1.0, 1.0)
    s = np.linalg.norm(q[:, 1:], axis=1)
    ang = 2.0 * np.arctan2(s, q[:, 0])
    return q[:, 1:] * (ang / np.where(s > 0, s, 1.0))[:, None]


def _angle_z(motion, part="disc"):
    q = motion.quaternion[:, motion.parts.index(part)]
    return np.unwrap(2.0 * np.arctan2(q[:, 3], q[:, 0]))


def _kinetic(motion, part, mass, inertia):
    b = motion.parts.index(part)
    v, w = motion.velocity[:, b], motion.angular_velocity[:, b]
    return 0.5 * mass * np.sum(v * v, 1) + 0.5 * inertia * np.sum(w * w, 1)


def _energy_error(T, V):
    """The largest change of E = T + V over the frames, over the largest T + |V| (J/J)."""
    E = T + V
    return float(np.max(np.abs(E - E[0]))) / float(np.max(T + np.abs(V)))


# ---------------------------------------------------------------------------- cases
def case_spring(kind):
    A = 0.1
    zeta = 0.1 if kind == "damped" else 0.0
    F0 = 10.0 if kind == "preload" else 0.0
    x0 = 0.0 if kind == "preload" else A
    params = {"stiffness": K_LIN, "free_length": 1.0}
    if zeta:
        params["damping"] = 2 * zeta * math.sqrt(K_LIN * M_BLOCK)
    if F0:
        params["preload"] = F0
    data = _model({"block": _block((x0, 0, 0))}, [_rail()],
                  [{"name": "s", "type": "spring-damper", "parts": ["ground", "block"],
                    "points": [[-1, 0, 0], [x0, 0, 0]], **params}])

    def check(motion):
        t, x = motion.time, _x(motion)
        if F0:
            ref, amp = F0 / K_LIN * (1 - np.cos(OMEGA * t)), F0 / K_LIN
        else:
            ref, amp = _underdamped(t, A, OMEGA, zeta), A
        errors = [float(np.max(np.abs(x - ref))) / amp]
        if not zeta:
            T = _kinetic(motion, "block", M_BLOCK, 0.01)
            errors.append(_energy_error(T, 0.5 * K_LIN * x * x - F0 * x))  # the stretch l − l0 = x
        return errors
    return data, 2 * math.pi / OMEGA, check


def case_spring_3d():
    e = np.array([0.6, 0.8, 0.0])
    P0 = 1.1 * e
    data = _model({"body": {"position": P0.tolist(), "mass": M_BLOCK, "com": [0, 0, 0], "inertia": [0.01] * 3}}, [],
                  [{"name": "s", "type": "spring-damper", "parts": ["ground", "body"],
                    "points": [[0, 0, 0], P0.tolist()], "stiffness": K_LIN, "free_length": 1.0}])

    def check(motion):
        t = motion.time
        r = motion.position[:, motion.parts.index("body")]
        ref = (1.0 + 0.1 * np.cos(OMEGA * t))[:, None] * e
        u = np.linalg.norm(r, axis=1) - 1.0
        errors = [float(np.max(np.linalg.norm(r - ref, axis=1))) / 0.1]
        return errors + [_energy_error(_kinetic(motion, "body", M_BLOCK, 0.01), 0.5 * K_LIN * u * u)]
    return data, 2 * math.pi / OMEGA, check


def case_spring_gravity():
    data = _model({"block": _block()}, [_rail((0, 0, 1))],
                  [{"name": "s", "type": "spring-damper", "parts": ["ground", "block"],
                    "points": [[0, 0, 1], [0, 0, 0]], "stiffness": K_LIN}], gravity=(0, 0, -G))
    amp = M_BLOCK * G / K_LIN

    def check(motion):
        z = _x(motion, axis=2)
        return [float(np.max(np.abs(z + amp * (1 - np.cos(OMEGA * motion.time))))) / amp]
    return data, 2 * math.pi / OMEGA, check


def case_gravity():
    v0 = np.array([1.0, 0.0, 2.0])
    data = _model({"body": {"position": [0, 0, 0], "mass": 1.0, "com": [0, 0, 0], "inertia": [0.01] * 3}},
                  gravity=(0, 0, -G), velocity={"body": {"velocity": v0.tolist()}})

    def check(motion):
        t = motion.time[:, None]
        ref = v0 * t + 0.5 * np.array([0, 0, -G]) * t * t
        r = motion.position[:, motion.parts.index("body")]
        return [float(np.max(np.linalg.norm(r - ref, axis=1))) / float(np.max(np.linalg.norm(ref, axis=1)))]
    return data, 0.5, check


def case_torsion(kind):
    w0 = 0.0 if kind == "preload" else 1.0
    zeta = {"damped": 0.2, "law": 0.1}.get(kind, 0.0)
    tau0 = 0.5 if kind == "preload" else 0.0
    if kind == "law":
        force = {"name": "s", "type": "torque", "joint": "hinge",
                 "expression": f"-{K_ROT:g}*q - {2 * zeta * math.sqrt(K_ROT * I_DISC):g}*qd"}
    else:
        force = {"name": "s", "type": "rotational-spring-damper", "joint": "hinge", "stiffness": K_ROT}
        if zeta:
            force["damping"] = 2 * zeta * math.sqrt(K_ROT * I_DISC)
        if tau0:
            force["preload"] = tau0
    data = _model({"disc": _disc()}, [_hinge()], [force],
                  velocity={"disc": {"angular_velocity": [0, 0, w0]}} if w0 else None)

    def check(motion):
        t, th = motion.time, _angle_z(motion)
        if tau0:
            ref, amp = tau0 / K_ROT * (1 - np.cos(OMEGA * t)), tau0 / K_ROT
        else:
            ref, amp = _underdamped(t, 0.0, OMEGA, zeta, w0), w0 / OMEGA
        errors = [float(np.max(np.abs(th - ref))) / amp]
        if not zeta:
            errors.append(_energy_error(_kinetic(motion, "disc", 1.0, I_DISC), 0.5 * K_ROT * th * th - tau0 * th))
        return errors
    return data, 2 * math.pi / OMEGA, check


def case_constant(kind):
    if kind == "torque":
        data = _model({"disc": _disc()}, [_hinge()], [{"name": "f", "type": "torque", "joint": "hinge",
                                                        "expression": "0.2"}])

        def check(motion):
            ref = 0.5 * 0.2 / I_DISC * motion.time ** 2
            return [float(np.max(np.abs(_angle_z(motion) - ref))) / float(ref[-1])]
    elif kind == "force":
        data = _model({"block": _block()}, [_rail()], [{"name": "f", "type": "force", "joint": "rail",
                                                         "expression": "4"}])

        def check(motion):
            ref = 0.5 * 4.0 / M_BLOCK * motion.time ** 2
            return [float(np.max(np.abs(_x(motion) - ref))) / float(ref[-1])]
    else:  # a force in time: F0 sin(Ωt)
        F0, W = 3.0, 5.0
        data = _model({"block": _block()}, [_rail()], [{"name": "f", "type": "force", "joint": "rail",
                                                         "expression": f"{F0:g}*sin({W:g}*t)"}])

        def check(motion):
            t = motion.time
            ref = F0 / (M_BLOCK * W) * (t - np.sin(W * t) / W)
            return [float(np.max(np.abs(_x(motion) - ref))) / float(np.max(np.abs(ref)))]
    return data, 1.0, check


def case_torsion_3d(joint, at_rest=False, preload=False):
    n = np.array([0.0, 0.0, 1.0]) if joint == "universal" or preload else np.array([1.0, 2.0, 2.0]) / 3.0
    w0 = 0.0 if at_rest or preload else 1.0
    force = {"name": "s", "type": "rotational-spring-damper", "joint": "hinge", "stiffness": K_ROT}
    if preload:
        force["preload"] = 0.5
    data = _model({"disc": _disc()}, [_hinge(joint, axis2=(1, 0, 0) if joint == "universal" else None)], [force],
                  velocity={"disc": {"angular_velocity": (w0 * n).tolist()}} if w0 else None)

    def check(motion):
        t, phi = motion.time, _rotvec(motion)
        if preload:
            ref, amp = 0.5 / K_ROT * (1 - np.cos(OMEGA * t)), 0.5 / K_ROT
        else:
            ref, amp = w0 / OMEGA * np.sin(OMEGA * t), (w0 / OMEGA if w0 else 0.1)
        errors = [float(np.max(np.linalg.norm(phi - ref[:, None] * n, axis=1))) / amp]
        if not at_rest and not preload:
            th = np.linalg.norm(phi, axis=1)
            errors.append(_energy_error(_kinetic(motion, "disc", 1.0, I_DISC), 0.5 * K_ROT * th * th))
        return errors
    return data, 2 * math.pi / OMEGA, check


def case_bushing():
    v0, w0 = 0.5, 0.5
    data = _model({"body": {"position": [0, 0, 0], "mass": M_BLOCK, "com": [0, 0, 0], "inertia": [I_DISC] * 3}},
                  [], [{"name": "b", "type": "bushing", "parts": ["ground", "body"], "points": [[0, 0, 0]],
                        "stiffness": K_LIN, "rotational_stiffness": K_ROT}],
                  velocity={"body": {"velocity": [v0, 0, 0], "angular_velocity": [0, 0, w0]}})

    def check(motion):
        t = motion.time
        b = motion.parts.index("body")
        ref = v0 / OMEGA * np.sin(OMEGA * t)
        ex = float(np.max(np.linalg.norm(motion.position[:, b] - ref[:, None] * [1, 0, 0], axis=1))) / (v0 / OMEGA)
        ref = w0 / OMEGA * np.sin(OMEGA * t)
        er = float(np.max(np.linalg.norm(_rotvec(motion, "body") - ref[:, None] * [0, 0, 1], axis=1))) / (w0 / OMEGA)
        return [ex, er]
    return data, 2 * math.pi / OMEGA, check


def case_stiff_chain():
    m1 = m2 = 1.0
    k1, k2 = 100.0, 1e6
    v0 = np.array([0.5, 0.5])
    data = _model({"a": {"position": [0, 0, 0], "mass": m1, "com": [0, 0, 0], "inertia": [0.01] * 3},
                   "b": {"position": [1, 0, 0], "mass": m2, "com": [0, 0, 0], "inertia": [0.01] * 3}},
                  [_rail(part="a", name="ra"), _rail(part="b", name="rb")],
                  [{"name": "soft", "type": "spring-damper", "parts": ["ground", "a"],
                    "points": [[-1, 0, 0], [0, 0, 0]], "stiffness": k1},
                   {"name": "stiff", "type": "spring-damper", "parts": ["a", "b"], "points": [[0, 0, 0], [1, 0, 0]],
                    "stiffness": k2}],
                  velocity={"a": {"velocity": [0.5, 0, 0]}, "b": {"velocity": [0.5, 0, 0]}})
    K = np.array([[k1 + k2, -k2], [-k2, k2]])
    Mh = np.diag([1 / math.sqrt(m1), 1 / math.sqrt(m2)])
    lam, U = np.linalg.eigh(Mh @ K @ Mh)
    w = np.sqrt(lam)
    eta0 = U.T @ (np.diag([math.sqrt(m1), math.sqrt(m2)]) @ v0)  # modal velocities (mass-normalised)
    slow = 2 * math.pi / w[0]

    def check(motion):
        t = motion.time
        eta = np.sin(np.outer(t, w)) * (eta0 / w)
        ref = (Mh @ U @ eta.T).T
        x = np.column_stack([_x(motion, "a"), _x(motion, "b") - 1.0])
        amp = float(np.max(np.abs(ref)))
        return [float(np.max(np.abs(x - ref))) / amp]
    return data, slow, check


CASES = {
    "spring": lambda: case_spring("plain"),
    "spring damped": lambda: case_spring("damped"),
    "spring preload": lambda: case_spring("preload"),
    "spring 3-D": case_spring_3d,
    "spring gravity": case_spring_gravity,
    "gravity": case_gravity,
    "torsion": lambda: case_torsion("plain"),
    "torsion damped": lambda: case_torsion("damped"),
    "torsion preload": lambda: case_torsion("preload"),
    "torque law": lambda: case_torsion("law"),
    "torque": lambda: case_constant("torque"),
    "force": lambda: case_constant("force"),
    "force in time": lambda: case_constant("time"),
    "torsion 3-D spherical": lambda: case_torsion_3d("spherical"),
    "torsion 3-D universal": lambda: case_torsion_3d("universal"),
    "torsion 3-D universal at rest": lambda: case_torsion_3d("universal", at_rest=True),
    "torsion 3-D preload": lambda: case_torsion_3d("spherical", preload=True),
    "bushing": case_bushing,
    "stiff chain": case_stiff_chain,
}


# ---------------------------------------------------------------------------- the sweep
def one(name, integrator, setting):
    """A run of case ``name``: dict(outcome, errors, allowed, flags, wall, note). ``setting``: rtol (adaptive)
    or steps per period (fixed step)."""
    data, period, check = CASES[name]()
    span = 2.0 * period
    if integrator in FIXED:  # a frame at every step (a fixed step never exceeds the output interval)
        times = np.linspace(0.0, span, 2 * setting + 1)
        kw = dict(integrator=integrator, dt=period / setting)
        if integrator != "RK4":
            kw["formulation"] = "index3"
    else:
        times = np.linspace(0.0, span, 201)
        kw = dict(integrator=integrator, rtol=setting, atol=setting / 100)
    allowed = FIXED_ALLOWED if integrator in FIXED else 100.0 * setting
    t0 = time.perf_counter()
    try:
        motion, result = run(compile_model(parse_model(data, source=f"{name}.toml")), times=times, **kw)
    except MechanismError as exc:
        return dict(outcome="refused", errors=[], allowed=allowed, flags=[], wall=time.perf_counter() - t0,
                    note=str(exc).splitlines()[0])
    except CadmotionError as exc:
        motion, result, note = None, None, str(exc).splitlines()[0]
    wall = time.perf_counter() - t0
    if integrator in FIXED:
        allowed = FIXED_ALLOWED
    elif result is not None:
        allowed = max(100.0, math.sqrt(result.q.shape[1] + result.v.shape[1] + 1) * result.nsteps) * setting
    if motion is None:
        errors, flags = [math.inf], ["raised"]
    else:
        flags = [c.name for c in result.invariants.broken]
        with np.errstate(all="ignore"):
            errors = [e if np.isfinite(e) else math.inf for e in check(motion)]
        note = "" if motion.complete else motion.message.splitlines()[0]
        if not motion.complete:
            flags.append("incomplete")
    off = max(errors) > allowed
    outcome = ("wrong-unflagged" if off and not flags else "off-flagged" if off else
               "over-flagged" if flags else "within")
    return dict(outcome=outcome, errors=errors, allowed=allowed, flags=flags, wall=wall, note=note)


def main(args):
    quick = "--quick" in args
    names = [a for a in args if not a.startswith("--")] or list(CASES)
    adaptive = ("DOP853", "Radau", "BDF") if quick else ADAPTIVE
    tolerances = (1e-5, 1e-9) if quick else TOLERANCES
    per_period = (40, 10, 4) if quick else STEPS_PER_PERIOD
    settings = [(i, r) for i in adaptive for r in tolerances] + [(i, n) for i in FIXED for n in per_period]
    print("| case | integrator | rtol / dt | outcome | errors / allowed | flags | wall s |")
    print("|---|---|---|---|---|---|---|")
    counts, listed, start = {}, [], time.perf_counter()
    for name in names:
        for integrator, setting in settings:
            row = one(name, integrator, setting)
            counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
            label = f"{setting:g}" if integrator not in FIXED else f"T/{setting}"
            errs = " / ".join(f"{e / row['allowed']:.2g}" for e in row["errors"])
            print(f"| {name} | {integrator} | {label} | {row['outcome']} | {errs} | {','.join(row['flags'])} | "
                  f"{row['wall']:.2f} |", flush=True)
            if row["outcome"] not in ("within",):
                listed.append((name, integrator, label, row))
    print()
    for name, integrator, label, row in listed:
        print(f"  {row['outcome']}: {name}, {integrator} {label}: errors "
              f"{' / '.join(f'{e:.3g}' for e in row['errors'])} (allowed {row['allowed']:g}), flags {row['flags']}"
              + (f"; {row['note']}" if row["note"] else ""))
    runs = sum(counts.values()) - counts.get("refused", 0)
    off = counts.get("off-flagged", 0) + counts.get("wrong-unflagged", 0)
    flagged = counts.get("off-flagged", 0) + counts.get("over-flagged", 0)
    print(f"\nruns {runs}, off {off}, flagged {flagged} (of them right: {counts.get('over-flagged', 0)}), "
          f"wrong-unflagged {counts.get('wrong-unflagged', 0)}, refused {counts.get('refused', 0)}; "
          f"wall {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
