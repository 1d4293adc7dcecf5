"""The relative-coordinate formulations beyond their samples (issue 17): ``semi-recursive`` and ``recursive``, with
``projection`` alongside as the control, over the integrators and their tolerances, on cases chosen to stress what
the formulations assume (spherical and universal tree joints, a free base, loops with redundant rows and a cut joint
chosen by the user, singular configurations, a stiff spring in the loop, a long run). Every run is checked against a
reference computed here from the output frames (poses and velocities) and the model's data — a conservation law, a
closed form or a 1-DOF reduction solved by scipy —, never from cadmotion's own energy or violation outputs; and
whether the run's own checks (``result.invariants``) flagged it.

Energy from the frames: T = Σ ½ m |v_c|² + ½ ωᵀ (R J Rᵀ) ω (v_c = v_O + ω × R c), V = −Σ m g · r_c + Σ ½ k (ℓ − ℓ0)²
(the springs' ends carried with their parts from the initial poses). Joint gaps from the frames: the distance between
a revolute, spherical or universal joint's origin carried by each of its two parts (the same world point in the
initial pose), and a prismatic joint's slider origin off its rail's line.

Cases (E_s = max_t (T + |V − V(0)|), the energy's scale; L the mechanism's size):

* ``spherical``: a spatial double pendulum on two spherical joints (links 0.6 m / 1 kg and 0.5 m / 0.8 kg, gravity
  −z), started spinning, 3 s. Energy constant (error max |E − E(0)| / E_s); the angular momentum about the vertical
  through the fixed pivot L_z = Σ (r_c × m v_c + R J Rᵀ ω)_z constant (gravity and the pivot's reaction have no
  moment about it; error over max |L|).
* ``universal``: a pendulum (0.5 m com offset, 1.2 kg) on a universal joint (cross axes x on the ground, y on the arm),
  started at 2 and 3 rad/s about them, 3 s: energy constant.
* ``dzhanibekov``: a free box (no gravity, J = 0.01, 0.02, 0.03 kg m², com offset) spinning at 5 rad/s about its
  intermediate axis plus a 0.01 rad/s perturbation, 4 s (it flips): energy, the angular momentum about the world
  origin and the linear momentum constant, the centre of mass on the straight line of its initial velocity.
* ``fourbar``: the four-bar sample (gravity, spring; 3 redundant joint rows of the loop built in 3-D), 2 s; and
  ``fourbar-cut``: the same with ``[formulation] cut = ["B"]`` (the user's cut, not the tree's choice D): energy
  constant and the cut joints' gaps (over L = 0.4 m).
* ``slider-crank``: the slider-crank sample without gravity or torque, the crank started at 20 rad/s: it passes a
  dead centre every ≈ 0.16 s driven by inertia alone (≈ 12 in 1 s): energy constant, the joints' gaps (L = 0.3 m).
* ``slider-crank-cut``: the same with ``cut = ["crank_pin"]`` (the prismatic joint in the tree, a revolute cut).
* ``rssr``: a spatial four-bar R-S-S-R (a spherical joint cut, 3 closure rows; 2 DOF: the crank and the coupler's
  spin about its own axis), gravity, the crank started at 5 rad/s, 2 s: energy constant, the joints' gaps.
* ``distance``: a ball on a 0.5 m distance joint to the ground (a free base closed by one row), spinning and swinging,
  3 s: energy, L_z about the pivot's vertical, the ball's spin (no torque about its centre: ω constant) and the
  rod's length from the frames.
* ``nfourbar``: the IFToMM N-four-bar (A02, N = 2; 6 redundant rows, a flat singular configuration every half turn),
  3 s: the rod angle against the 1-DOF reduction 3 θ̈ + 34.335 cos θ = 0 (scipy DOP853 at 1e-13; error |Δ(cos θ,
  sin θ)|, the position of B0 in m over L = 1 m), energy 35.835 J from the frames (over E_s).
* ``stiff``: the four-bar with a 1e7 N/m spring from the coupler's midpoint to the ground at its free length (≈ 2000
  rad/s against the loop's ≈ 10 rad/s), 0.3 s: energy constant (spring included) and the gaps.
* ``long``: the four-bar over 30 s (≈ 30 swings; ``--quick``: 15 s) at 0.1 s frames: energy drift and the gap of the
  cut joint, which under Baumgarte (``recursive``) is never projected.

Allowed (``_allow``): adaptive 100 rtol · max(1, ω t_end / 2π) of the quantity's scale (an error-controlled run's
global error on a motion of rate ω grows at most linearly with the number of its periods), plus a round-off floor of
1e-11; a fixed-step integrator of order p at step h (:data:`FIXED_STEP`: RK4 p = 4; the index-3 formulation's
generalised-α and HHT p = 2): 10 (h ω)^p · max(1, ω t_end), ω the case's fastest rate (stated per case; the global
error is O(h^p) per unit of ω t), and the observed order between the case's two steps is printed. A run is "off"
when an error is above its allowance, "flagged" when its own checks broke; both lists are printed.

Bad input (``bad``): a cut override naming a joint outside every loop, a non-tree joint, two joints of one loop
(leaving the chain without a path to ground), a joint that does not exist, the same joint twice; each must be a
MechanismError that names the joint and the part.

    python benchmarks/relative_sweep.py [case ...] [--quick] [--forms=semi-recursive,recursive,projection]
    python benchmarks/relative_sweep.py [case ...] --rtol=1e-4,1e-8 --integrators=DOP853,BDF,RK4 \
        --forms=semi-recursive:numpy,semi-recursive:sparse,recursive:numpy
    python benchmarks/relative_sweep.py [case ...] --forms=index3 --integrators=generalized-alpha,HHT
    python benchmarks/relative_sweep.py [case ...] --forms=partitioning

(``:numpy`` the numpy evaluation FreeCAD runs (dense or sparse by size), ``:dense`` and ``:sparse`` semi-recursive's
dense and sparse numpy linear algebra forced.)
"""
import math
import os
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from cadmotion.errors import CadmotionError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "dynamics"
INTEGRATORS = ("DOP853", "RK45", "Radau", "BDF", "LSODA")
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
FORMS = ("semi-recursive", "recursive", "projection")
#: the other paths of the relative formulations (``--forms semi-recursive:numpy,...``): FreeCAD's numpy evaluation
#: (no numba), and the sparse linear algebra of ``semi-recursive`` (chosen by size beyond 300 coordinates)
#: the fixed-step integrators (run at the case's steps dt, not at tolerances) and their order of accuracy
FIXED_STEP = {"RK4": 4, "generalized-alpha": 2, "HHT": 2}
PATHS = {"numpy": {"fast": False}, "dense": {"fast": False, "sparse": False},
         "sparse": {"fast": False, "sparse": True}}


# ---------------------------------------------------------------------------- references from the frames
def _rotmat(q):
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def _pose0(data, name):
    """(R (3, 3), r (3,)) of a part's frame in the model file (identity for a fixed part without a pose)."""
    p = data["parts"][name]
    q = np.array(p.get("orientation", [1.0, 0, 0, 0]), float)
    return _rotmat(q / np.linalg.norm(q)), np.array(p.get("position", [0.0, 0, 0]), float)


def _frames(data, motion, name):
    """(R (nt, 3, 3), r (nt, 3)) of a part at every frame (its fixed pose for a fixed part)."""
    if data["parts"][name].get("fixed"):
        R, r = _pose0(data, name)
        return np.broadcast_to(R, (motion.nt, 3, 3)), np.broadcast_to(r, (motion.nt, 3))
    b = motion.parts.index(name)
    return _rotmat(motion.quaternion[:, b]), motion.position[:, b]


def _carried(data, motion, name, point):
    """A world point of the initial pose carried with a part, at every frame (nt, 3)."""
    R0, r0 = _pose0(data, name)
    local = R0.T @ (np.asarray(point, float) - r0)
    R, r = _frames(data, motion, name)
    return r + np.einsum("nij,j->ni", R, local)


def _inertia(part):
    J = np.asarray(part.get("inertia", [0, 0, 0]), float)
    return J if J.shape == (3, 3) else np.diag(J)


def mechanics(data, motion):
    """(T, V, L (nt, 3) about the world origin, P (nt, 3), com (nt, 3) of all moving parts) from the frames."""
    g = np.array(data.get("gravity", [0, 0, 0]), float)
    T, V = np.zeros(motion.nt), np.zeros(motion.nt)
    L, P, mc = np.zeros((motion.nt, 3)), np.zeros((motion.nt, 3)), np.zeros((motion.nt, 3))
    mass = 0.0
    for name, part in data["parts"].items():
        if part.get("fixed"):
            continue
        b = motion.parts.index(name)
        R, r = _frames(data, motion, name)
        c = np.einsum("nij,j->ni", R, np.array(part.get("com", [0, 0, 0]), float))
        rc = r + c
        w = motion.angular_velocity[:, b]
        vc = motion.velocity[:, b] + np.cross(w, c)
        Jw = np.einsum("nij,jk,nlk,nl->ni", R, _inertia(part), R, w)
        m = part["mass"]
        T += 0.5 * m * np.sum(vc * vc, 1) + 0.5 * np.sum(w * Jw, 1)
        V -= m * rc @ g
        L += m * np.cross(rc, vc) + Jw
        P += m * vc
        mc += m * rc
        mass += m
    for f in data.get("forces", []):
        if f["type"] != "spring-damper":
            continue
        a = _carried(data, motion, f["parts"][0], f["points"][0])
        b = _carried(data, motion, f["parts"][1], f["points"][1])
        V += 0.5 * f["stiffness"] * (np.linalg.norm(b - a, axis=1) - f["free_length"]) ** 2
    return T, V, L, P, mc / max(mass, 1e-300)


def energy_error(data, motion, E_exact=None):
    """max |E − E(0)| (or |E − E_exact|) over E_s = max (T + |V − V(0)|), from the frames."""
    T, V, *_ = mechanics(data, motion)
    E = T + V
    ref = E[0] if E_exact is None else E_exact
    return float(np.max(np.abs(E - ref))) / float(np.max(T + np.abs(V - V[0])) + 1e-300)


def gaps(data, motion, joints=None):
    """The largest gap (m) of the named (default: all) revolute, spherical, universal and prismatic joints."""
    worst = 0.0
    for j in data["joints"]:
        if joints is not None and j["name"] not in joints:
            continue
        a, b = j["parts"]
        if j["type"] in ("revolute", "spherical", "universal"):
            d = _carried(data, motion, a, j["origin"]) - _carried(data, motion, b, j["origin"])
        elif j["type"] == "prismatic":
            o = _carried(data, motion, a, j["origin"])
            R, _ = _frames(data, motion, a)
            R0, _ = _pose0(data, a)
            u = np.einsum("nij,j->ni", R, R0.T @ np.asarray(j["axis"], float) / np.linalg.norm(j["axis"]))
            d = np.cross(_carried(data, motion, b, j["origin"]) - o, u)
        else:
            continue
        worst = max(worst, float(np.max(np.linalg.norm(d, axis=1))))
    return worst


# ---------------------------------------------------------------------------- models
def _sample(name):
    data = tomllib.loads((SAMPLES / f"{name}.cadmotion.toml").read_text())
    data.pop("simulation", None)
    return data


def spherical_pendulum():
    w1 = np.array([0.0, 1.0, 3.0])
    return {"units": "m", "gravity": [0, 0, -9.81],
            "parts": {"ground": {"fixed": True},
                      "link1": {"position": [0, 0, 0], "mass": 1.0, "com": [0.3, 0, 0],
                                "inertia": [1e-3, 0.03, 0.03]},
                      "link2": {"position": [0.6, 0, 0], "mass": 0.8, "com": [0.25, 0, 0.05],
                                "inertia": [2e-3, 0.017, 0.018]}},
            "joints": [{"name": "shoulder", "type": "spherical", "parts": ["ground", "link1"], "origin": [0, 0, 0]},
                       {"name": "elbow", "type": "spherical", "parts": ["link1", "link2"], "origin": [0.6, 0, 0]}],
            "initial_velocity": {"link1": {"velocity": [0, 0, 0], "angular_velocity": list(w1)},
                                 "link2": {"velocity": list(np.cross(w1, [0.6, 0, 0])),
                                           "angular_velocity": [1.0, 0.0, 3.0]}}}


def universal_pendulum():
    return {"units": "m", "gravity": [0, 0, -9.81],
            "parts": {"ground": {"fixed": True},
                      "arm": {"position": [0, 0, 0], "mass": 1.2, "com": [0.3, 0.2, -0.35],
                              "inertia": [0.02, 0.025, 0.01]}},
            "joints": [{"name": "hooke", "type": "universal", "parts": ["ground", "arm"], "origin": [0, 0, 0],
                        "axis": [1, 0, 0], "axis2": [0, 1, 0]}],
            "initial_velocity": {"arm": {"velocity": [0, 0, 0], "angular_velocity": [2.0, 3.0, 0.0]}}}


def free_box():
    return {"units": "m", "gravity": [0, 0, 0],
            "parts": {"box": {"position": [0.1, 0.2, 0.3], "orientation": [0.9, 0.1, 0.3, 0.2], "mass": 2.0,
                              "com": [0.05, 0, 0], "inertia": [0.01, 0.02, 0.03]}},
            "initial_velocity": {"box": {"velocity": [1.0, 0.0, 2.0], "angular_velocity": [0.01, 5.0, 0.01]}}}


def four_bar(cut=None, stiff=None):
    data = _sample("four_bar")
    if cut:
        data["formulation"] = {"cut": list(cut)}
    if stiff:
        B = np.array(data["parts"]["coupler"]["position"])
        C = np.array(next(j for j in data["joints"] if j["name"] == "C")["origin"])
        mid, anchor = 0.5 * (B + C), np.array([0.3, -0.2, 0.0])
        data["forces"].append({"name": "stiff", "type": "spring-damper", "parts": ["ground", "coupler"],
                               "points": [list(anchor), list(mid)], "stiffness": stiff, "damping": 0.0,
                               "free_length": float(np.linalg.norm(mid - anchor))})
    return data


def slider_crank():
    data = _sample("slider_crank_torque")
    data["gravity"] = [0, 0, 0]
    data.pop("forces", None)
    data["initial_velocity"] = {"crank": {"angular_velocity": [0, 0, 20.0]}}
    return data


def _quat_x_to(d):
    """The unit quaternion turning +x onto the direction d."""
    d = np.asarray(d, float) / np.linalg.norm(d)
    axis = np.cross([1.0, 0, 0], d)
    s, c = np.linalg.norm(axis), d[0]
    if s < 1e-15:
        return [1.0, 0, 0, 0]
    ang = math.atan2(s, c)
    return [math.cos(ang / 2)] + list(math.sin(ang / 2) * axis / s)


def rssr():
    """A spatial four-bar R-S-S-R: crank 0.1 m about z at the origin, rocker 0.15 m about x at (0.3, 0.2, 0.1) m,
    a 0.29 m coupler on two spherical joints (its spin about its own axis a second, idle degree of freedom);
    gravity −z, the crank started at 5 rad/s."""
    A, piv = np.array([0.1, 0, 0]), np.array([0.3, 0.2, 0.1])
    P = piv + np.array([0, 0, -0.15])
    d = P - A
    return {"units": "m", "gravity": [0, 0, -9.81],
            "parts": {"ground": {"fixed": True},
                      "crank": {"position": [0, 0, 0], "mass": 0.5, "com": [0.05, 0, 0],
                                "inertia": [1e-4, 5e-4, 5e-4]},
                      "coupler": {"position": list(A), "orientation": _quat_x_to(d), "mass": 0.8,
                                  "com": [float(np.linalg.norm(d)) / 2, 0, 0], "inertia": [4e-4, 6e-3, 6e-3]},
                      "rocker": {"position": list(piv), "orientation": _quat_x_to([0, 0, -1]), "mass": 0.6,
                                 "com": [0.075, 0, 0], "inertia": [1e-4, 1.2e-3, 1.2e-3]}},
            "joints": [{"name": "R1", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "S1", "type": "spherical", "parts": ["crank", "coupler"], "origin": list(A)},
                       {"name": "S2", "type": "spherical", "parts": ["coupler", "rocker"], "origin": list(P)},
                       {"name": "R2", "type": "revolute", "parts": ["ground", "rocker"], "origin": list(piv),
                        "axis": [1, 0, 0]}],
            "initial_velocity": {"crank": {"angular_velocity": [0, 0, 5.0]}}}


def distance_pendulum():
    """A ball (1 kg, J = 4e-4 kg m², its com at its frame origin) held 0.5 m from a ground point by a distance
    joint (a closure equation of a free base: the relative formulations give the ball 6 coordinates), spinning at
    [0, 0, 2] rad/s and swinging under gravity −z."""
    return {"units": "m", "gravity": [0, 0, -9.81],
            "parts": {"ground": {"fixed": True},
                      "ball": {"position": [0.5, 0, 0], "mass": 1.0, "inertia": [4e-4, 4e-4, 4e-4]}},
            "joints": [{"name": "rod", "type": "distance", "parts": ["ground", "ball"],
                        "points": [[0, 0, 0], [0.5, 0, 0]]}],
            "initial_velocity": {"ball": {"velocity": [0, 1.5, 0.5], "angular_velocity": [0.3, 0, 2.0]}}}


# ---------------------------------------------------------------------------- the runs
def _allow(integ, rtol, dt, t_end, omega):
    if dt is None:
        return 100.0 * rtol * max(1.0, omega * t_end / (2 * math.pi)) + 1e-11
    return min(10.0 * (dt * omega) ** FIXED_STEP[integ] * max(1.0, omega * t_end), 1.0) + 1e-11


_MODELS = {}


def _model(key, data):
    if key not in _MODELS:
        _MODELS[key] = compile_model(parse_model(data, source=f"{key} (sweep)"))
    return _MODELS[key]


def _run(key, data, form, integrator, rtol, dt, times):
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    name, _, path = form.partition(":")
    if path:
        kw["options"] = PATHS[path]
    t0 = time.perf_counter()
    try:
        motion, result = run(_model(key, data), times=times, formulation=name, **kw)
    except CadmotionError as exc:
        return None, str(exc).splitlines()[0], [], time.perf_counter() - t0
    return motion, result, [c.name for c in result.invariants.broken], time.perf_counter() - t0


def _row(case, out, errors, allowed, note=""):
    motion, result, flags, wall = out
    if motion is None:
        return dict(case=case, complete=False, flags=[], wall=wall, errors=[math.inf] * len(allowed), note=result)
    ratio = [e / a for e, a in zip(errors, allowed)]
    return dict(case=case, complete=motion.complete, flags=flags, wall=wall, errors=ratio,
                raw=list(errors), note=(note if motion.complete else motion.message) +
                ("" if not flags else " | " + "; ".join(str(c.message()).splitlines()[0]
                                                        for c in result.invariants.broken)))


def case_spherical(form, integ, rtol, dt, quick):
    data, t_end = spherical_pendulum(), 3.0
    times = np.linspace(0, t_end, 61)
    out = _run("spherical", data, form, integ, rtol, dt, times)
    if out[0] is None:
        return [_row("spherical", out, [], [1, 1])]
    T, V, L, *_ = mechanics(data, out[0])
    a = _allow(integ, rtol, dt, t_end, 12.0)
    eL = float(np.max(np.abs(L[:, 2] - L[0, 2]))) / float(np.max(np.linalg.norm(L, axis=1)))
    return [_row("spherical", out, [energy_error(data, out[0]), eL], [a, a])]


def case_universal(form, integ, rtol, dt, quick):
    data, t_end = universal_pendulum(), 3.0
    out = _run("universal", data, form, integ, rtol, dt, np.linspace(0, t_end, 61))
    if out[0] is None:
        return [_row("universal", out, [], [1])]
    return [_row("universal", out, [energy_error(data, out[0])], [_allow(integ, rtol, dt, t_end, 8.0)])]


def case_dzhanibekov(form, integ, rtol, dt, quick):
    data, t_end = free_box(), 4.0
    times = np.linspace(0, t_end, 81)
    out = _run("dzhanibekov", data, form, integ, rtol, dt, times)
    if out[0] is None:
        return [_row("dzhanibekov", out, [], [1, 1, 1, 1])]
    m = out[0]
    T, V, L, P, c = mechanics(data, m)
    eL = float(np.max(np.linalg.norm(L - L[0], axis=1))) / float(np.linalg.norm(L[0]))
    eP = float(np.max(np.linalg.norm(P - P[0], axis=1))) / float(np.linalg.norm(P[0]))
    line = c[0] + np.outer(m.time, P[0] / data["parts"]["box"]["mass"])
    ec = float(np.max(np.linalg.norm(c - line, axis=1))) / 1.0
    a = _allow(integ, rtol, dt, t_end, 5.0)
    flip = float(np.max(np.abs(m.angular_velocity[:, 0]))) > 0  # noqa: F841 (the flip is checked in the test suite)
    return [_row("dzhanibekov", out, [energy_error(data, m), eL, eP, ec], [a, a, a, a])]


def case_fourbar(form, integ, rtol, dt, quick, cut=None):
    data, t_end = four_bar(cut), 2.0
    key = "fourbar" + ("-cut" if cut else "")
    out = _run(key, data, form, integ, rtol, dt, np.linspace(0, t_end, 101))
    if out[0] is None:
        return [_row(key, out, [], [1, 1])]
    a = _allow(integ, rtol, dt, t_end, 15.0)
    cuts = cut or ["D"]
    return [_row(key, out, [energy_error(data, out[0]), gaps(data, out[0], cuts) / 0.4], [a, a])]


def case_fourbar_cut(form, integ, rtol, dt, quick):
    return case_fourbar(form, integ, rtol, dt, quick, cut=["B"])


def case_slider_crank(form, integ, rtol, dt, quick):
    data, t_end = slider_crank(), 1.0
    out = _run("slider-crank", data, form, integ, rtol, dt, np.linspace(0, t_end, 201))
    if out[0] is None:
        return [_row("slider-crank", out, [], [1, 1])]
    a = _allow(integ, rtol, dt, t_end, 60.0)
    return [_row("slider-crank", out, [energy_error(data, out[0]), gaps(data, out[0]) / 0.3], [a, a])]


_THETA = {}


def _theta_ref(times):
    key = (times[0], times[-1], len(times))
    if key not in _THETA:
        sol = solve_ivp(lambda _, y: [y[1], -34.335 / 3.0 * np.cos(y[0])], (times[0], times[-1]), [np.pi / 2, -1.0],
                        method="DOP853", rtol=1e-13, atol=1e-13, t_eval=times)
        _THETA[key] = sol.y[0]
    return _THETA[key]


def case_nfourbar(form, integ, rtol, dt, quick):
    data, t_end = _sample("n_four_bar"), 3.0
    times = np.linspace(0, t_end, 31)
    out = _run("nfourbar", data, form, integ, rtol, dt, times)
    if out[0] is None:
        return [_row("nfourbar", out, [], [1, 1])]
    m = out[0]
    q = m.quaternion[:, m.parts.index("rod0")]
    th = np.arctan2(2 * q[:, 0] * q[:, 3], q[:, 0] ** 2 - q[:, 3] ** 2)
    ref = _theta_ref(times)[: m.nt]  # a stopped run: its frames so far
    eb = float(np.max(np.hypot(np.cos(th) - np.cos(ref), np.sin(th) - np.sin(ref))))
    a = _allow(integ, rtol, dt, t_end, 7.0)
    # a singular passage's crossing by index-3 steps (:mod:`.crossing`) is at its own tolerance: 1e-6 at least
    a_x = max(a, 1e-6)
    return [_row("nfourbar", out, [eb, energy_error(data, m, 35.835)], [a_x, a_x],
                 f"{sum(n.startswith('singular configuration crossed') for n in out[1].notes)} crossings")]


def _four_bar_case(label, run_label, data, form, integ, rtol, dt, t_end, frames, omega):
    """The four-bar's energy and the gap of its joint D (over its 0.4 m), each against :func:`_allow` at the
    motion's rate omega (1/s)."""
    out = _run(run_label, data, form, integ, rtol, dt, np.linspace(0, t_end, frames))
    if out[0] is None:
        return [_row(label, out, [], [1, 1])]
    a = _allow(integ, rtol, dt, t_end, omega)
    return [_row(label, out, [energy_error(data, out[0]), gaps(data, out[0], ["D"]) / 0.4], [a, a],
                 f"{out[1].nsteps} steps")]


def case_stiff(form, integ, rtol, dt, quick):
    return _four_bar_case("stiff", "stiff", four_bar(stiff=1e7), form, integ, rtol, dt, 0.3, 31, 2500.0)


def case_long(form, integ, rtol, dt, quick):
    t_end = 15.0 if quick else 30.0
    return _four_bar_case("long", "fourbar", four_bar(), form, integ, rtol, dt, t_end, int(t_end * 10) + 1, 15.0)


def case_rssr(form, integ, rtol, dt, quick):
    data, t_end = rssr(), 2.0
    out = _run("rssr", data, form, integ, rtol, dt, np.linspace(0, t_end, 101))
    if out[0] is None:
        return [_row("rssr", out, [], [1, 1])]
    a = _allow(integ, rtol, dt, t_end, 20.0)
    return [_row("rssr", out, [energy_error(data, out[0]), gaps(data, out[0]) / 0.3], [a, a])]


def case_distance(form, integ, rtol, dt, quick):
    data, t_end = distance_pendulum(), 3.0
    out = _run("distance", data, form, integ, rtol, dt, np.linspace(0, t_end, 61))
    if out[0] is None:
        return [_row("distance", out, [], [1, 1, 1, 1])]
    m = out[0]
    T, V, L, *_ = mechanics(data, m)
    eL = float(np.max(np.abs(L[:, 2] - L[0, 2]))) / float(np.max(np.linalg.norm(L, axis=1)))
    w = m.angular_velocity[:, m.parts.index("ball")]
    ew = float(np.max(np.linalg.norm(w - w[0], axis=1))) / float(np.linalg.norm(w[0]))
    r = m.position[:, m.parts.index("ball")]
    elen = float(np.max(np.abs(np.linalg.norm(r, axis=1) - 0.5))) / 0.5
    a = _allow(integ, rtol, dt, t_end, 8.0)
    return [_row("distance", out, [energy_error(data, m), eL, ew, elen], [a, a, a, a])]


def case_slider_crank_cut(form, integ, rtol, dt, quick):
    data, t_end = slider_crank(), 1.0
    data["formulation"] = {"cut": ["crank_pin"]}
    out = _run("slider-crank-cut", data, form, integ, rtol, dt, np.linspace(0, t_end, 201))
    if out[0] is None:
        return [_row("slider-crank-cut", out, [], [1, 1])]
    a = _allow(integ, rtol, dt, t_end, 60.0)
    return [_row("slider-crank-cut", out, [energy_error(data, out[0]), gaps(data, out[0]) / 0.3], [a, a])]


CASES = {
    "spherical": ("energy / L_z", case_spherical, (1e-3, 4e-3)),
    "universal": ("energy", case_universal, (1e-3, 4e-3)),
    "dzhanibekov": ("energy / L / P / com line", case_dzhanibekov, (1e-3, 1e-2)),
    "fourbar": ("energy / gap of D", case_fourbar, (1e-3, 4e-3)),
    "fourbar-cut": ("energy / gap of B (cut by the user)", case_fourbar_cut, (1e-3, 4e-3)),
    "slider-crank": ("energy / joint gaps", case_slider_crank, (5e-4, 2e-3)),
    "slider-crank-cut": ("energy / joint gaps (crank_pin cut by the user)", case_slider_crank_cut, (5e-4, 2e-3)),
    "rssr": ("energy / joint gaps", case_rssr, (1e-3, 4e-3)),
    "distance": ("energy / L_z / the ball's spin / the rod's length", case_distance, (1e-3, 4e-3)),
    "nfourbar": ("B0 position against the 1-DOF reduction / energy 35.835 J", case_nfourbar, (1e-3, 4e-3)),
    "stiff": ("energy / gap of D", case_stiff, (2e-5, 1e-4)),
    "long": ("energy drift / gap of D", case_long, (2e-3, 5e-3)),
}


def sweep(name, forms, integrators, tolerances, quick):
    labels, fn, steps = CASES[name]
    print(f"\n{name}: errors over their allowances ({labels}); a run is off above 1\n")
    print("| formulation | integrator | rtol / dt | runs | incomplete | flagged | off | worst errors | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    listed, counts = [], dict(runs=0, incomplete=0, flagged=0, off=0, off_unflagged=0, flagged_accurate=0)
    for form in forms:
        for integ in integrators:
            settings = [(r, None) for r in tolerances] if integ not in FIXED_STEP else [(None, h) for h in steps]
            fixed = []
            for rtol, dt in settings:
                rows = fn(form, integ, rtol, dt, quick)
                worst = np.max([row["errors"] for row in rows], axis=0)
                off = [row for row in rows if not row["complete"] or max(row["errors"]) > 1.0]
                bad = [row for row in rows if not row["complete"] or row["flags"] or row in off]
                setting = f"{rtol:g}" if dt is None else f"dt {dt:g}"
                listed += [(form, integ, setting, row) for row in bad]
                counts["runs"] += len(rows)
                counts["incomplete"] += sum(not row["complete"] for row in rows)
                counts["flagged"] += sum(bool(row["flags"]) for row in rows)
                counts["off"] += len(off)
                counts["off_unflagged"] += sum(not row["flags"] for row in off)
                counts["flagged_accurate"] += sum(bool(row["flags"]) and row not in off for row in rows)
                if dt is not None and all(row["complete"] for row in rows):
                    fixed.append((dt, np.max([row["raw"] for row in rows], axis=0)))
                print(f"| {form} | {integ} | {setting} | {len(rows)} | {sum(not row['complete'] for row in rows)} | "
                      f"{sum(bool(row['flags']) for row in rows)} | {len(off)} | "
                      f"{' / '.join(f'{w:.2g}' for w in worst)} | {sum(row['wall'] for row in rows):.1f} |",
                      flush=True)
            if len(fixed) == 2:
                # the observed order of each error between the two steps (meaningless for an error at round-off)
                (h1, e1), (h2, e2) = fixed
                order = np.log(np.maximum(e2, 1e-300) / np.maximum(e1, 1e-300)) / math.log(h2 / h1)
                print(f"| {form} | {integ} | order, dt {h1:g} → {h2:g} | | | | | "
                      f"{' / '.join(f'{o:.2f}' for o in order)} (raw {' / '.join(f'{e:.2g}' for e in e1)}) | |")
    for form, integ, setting, row in listed:
        raw = " / ".join(f"{w:.3g}" for w in row.get("raw", []))
        print(f"  {form} {integ} {setting}, {row['case']}: complete {row['complete']}, errors/allowed "
              f"{' / '.join(f'{w:.3g}' for w in row['errors'])} (raw {raw}), flagged {row['flags']}; {row['note']}")
    print(f"\n{name} totals: " + ", ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
    return counts


# ---------------------------------------------------------------------------- bad input
def _truss():
    """A triangle of three rods on revolutes, two of its corners pinned to ground: a locked loop (0 DOF)."""
    rod = lambda x, y, ang: {"position": [x, y, 0], "orientation": [math.cos(ang / 2), 0, 0, math.sin(ang / 2)],  # noqa: E731
                             "mass": 1.0, "com": [0.5, 0, 0], "inertia": [1e-6, 0.083, 0.083]}
    h = math.sqrt(3) / 2
    return {"units": "m", "gravity": [0, -9.81, 0],
            "parts": {"ground": {"fixed": True}, "left": rod(0, 0, math.pi / 3), "right": rod(1, 0, 2 * math.pi / 3)},
            "joints": [{"name": "P", "type": "revolute", "parts": ["ground", "left"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "Q", "type": "revolute", "parts": ["ground", "right"], "origin": [1, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "apex", "type": "revolute", "parts": ["left", "right"], "origin": [0.5, h, 0],
                        "axis": [0, 0, 1]}]}


def bad_input():
    """Each bad cut override must raise a MechanismError naming the joint (and the part it strands); the harmless
    ones run (a joint named twice, a joint between two fixed parts), and so does a locked loop (it stays at rest)."""
    fb = _sample("four_bar")
    dp = _sample("double_pendulum")
    weld = _sample("four_bar")
    weld["parts"]["base"] = {"fixed": True, "position": [1, 0, 0]}
    weld["joints"].append({"name": "weld", "type": "fixed", "parts": ["ground", "base"], "origin": [1, 0, 0]})
    trials = [
        ("a joint outside every loop", dp, ["elbow"], ["'elbow'", "not in a loop", "'link2'"]),
        ("two joints of one loop", fb, ["A", "D"], ["'A'", "'D'", "together", "'crank'"]),
        ("a joint that does not exist", fb, ["E"], ["'E'", "not a joint"]),
        ("the same joint twice", fb, ["B", "B"], None),
        ("a joint between two fixed parts", weld, ["weld"], None),
        ("a locked loop (a triangle truss, 0 DOF)", _truss(), None, None),
    ]
    ok = 0
    print("\nbad input: the error each bad cut override raises (None: it must run, at rest for the truss)\n")
    for label, data, cut, words in trials:
        data = dict(data, formulation={"cut": cut}) if cut else data
        for form in ("semi-recursive", "recursive"):
            try:
                model = compile_model(parse_model(data, source="bad (sweep)"))
                motion, result = run(model, 0.1, 2, formulation=form)
                moved = float(np.max(np.abs(motion.position - motion.position[0])))
                msg = f"runs: complete {motion.complete}, moved {moved:.2g} m, flagged " \
                      f"{[c.name for c in result.invariants.broken]}; {motion.message or ''}"
                good = words is None and motion.complete and moved < 1e-6 * (cut is None) + 1.0 * (cut is not None)
            except CadmotionError as exc:
                msg = f"{type(exc).__name__}: {exc}".replace("\n", " | ")
                good = words is not None and all(w in str(exc) for w in words)
            except Exception as exc:  # noqa: BLE001 - an error of the wrong kind is what this looks for
                msg = f"UNEXPECTED {type(exc).__name__}: {exc}"
                good = False
            ok += good
            print(f"  {'ok ' if good else 'BAD'} {form}, {label} (cut {cut}): {msg[:400]}")
    print(f"\nbad input: {ok} of {2 * len(trials)} as expected", flush=True)


def main(args):
    quick = "--quick" in args
    forms = FORMS
    integrators = INTEGRATORS + ("RK4",)
    tolerances = (1e-4, 1e-7, 1e-10) if quick else TOLERANCES
    for a in args:
        if a.startswith("--forms="):
            forms = tuple(a.split("=", 1)[1].split(","))
        if a.startswith("--integrators="):
            integrators = tuple(a.split("=", 1)[1].split(","))
        if a.startswith("--rtol="):
            tolerances = tuple(float(x) for x in a.split("=", 1)[1].split(","))
    which = [a for a in args if not a.startswith("--")] or list(CASES) + ["bad"]
    t0 = time.perf_counter()
    totals = {}
    for name in which:
        if name == "bad":
            bad_input()
            continue
        totals[name] = sweep(name, forms, integrators, tolerances, quick)
    print("\n| case | runs | incomplete | flagged | off | off, unflagged | flagged, accurate |")
    print("|---|---|---|---|---|---|---|")
    for name, c in totals.items():
        print(f"| {name} | {c['runs']} | {c['incomplete']} | {c['flagged']} | {c['off']} | {c['off_unflagged']} | "
              f"{c['flagged_accurate']} |")
    print(f"\nwall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
