"""Forward and inverse dynamics against independent references.

References: the peer harness's minimal-coordinate solutions of the slider-crank under
torque (P1) and the double pendulum (P3) (../shared/peers/reference, DOP853 at 1e-13),
Lagrange's equations of the double pendulum in absolute angles (inverse dynamics),
conservation of energy, Newton–Euler balance of every body (reactions), closed-form
statics, and the order of convergence of the fixed-step integrators.
"""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cadmotion.errors import ExpressionError, MechanismError, SolverError
from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import FORMULATIONS, inverse_dynamics, simulate
from cadmotion.kernel.dynamics.energy import energy_balance
from cadmotion.kernel.spec import DriverSpec, InitialVelocitySpec, TimeFunctionSpec

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
# P1 reference (peers/reference/p1.py, full precision from peers/results.json)
P1_T = np.array([0.5, 1.0, 1.5, 2.0])
P1_CRANK = np.array([-3.872357153605962, 0.7267300881231755, -3.7281819084101655, 0.574013634634379])
P3_TIP = np.array([-1.655867425202119, -0.5284454840664549])  # reference's own error ≈ 6e-9 m


def model(name):
    return compile_model(read_model_file(SAMPLES / f"{name}.cadmotion.toml"))


@pytest.fixture(scope="module")
def p1():
    return model("slider_crank_torque")


@pytest.fixture(scope="module")
def four_bar():
    return model("four_bar")


def crank_angle(motion):
    return math.pi / 4 + motion.coordinate("crank_pivot.angle")


# ---------------------------------------------------------------------------- accuracy
def test_p1_slider_crank_under_torque_matches_minimal_coordinate_reference(p1):
    m = simulate(p1, 2.0, 4, rtol=1e-10, atol=1e-10)
    assert m.complete, m.message
    np.testing.assert_allclose(m.time[1:], P1_T)
    assert np.max(np.abs(crank_angle(m)[1:] - P1_CRANK)) < 1e-8
    assert energy_balance(m) < 1e-8  # the torque's work is accounted for
    assert np.max(m.extra["violation.position"]) < 1e-9


FORMULATION_CASES = {
    # name: (options to simulate, tolerance on the crank angle at t = 0.5 s)
    "projection": (dict(rtol=1e-9, atol=1e-9), 1e-7),
    "baumgarte": (dict(rtol=1e-9, atol=1e-9), 1e-7),
    "augmented-lagrangian": (dict(rtol=1e-9, atol=1e-9), 1e-7),
    "partitioning": (dict(rtol=1e-9, atol=1e-9), 1e-7),
    "penalty": (dict(rtol=1e-9, atol=1e-9), 1e-4),  # constraints hold to O(1/α)
    "index3": (dict(dt=5e-4), 2e-4),  # second order: 6e-5 at this step
}


@pytest.mark.parametrize("name", sorted(FORMULATION_CASES))
def test_every_formulation_agrees_with_the_reference(p1, name):
    kwargs, tol = FORMULATION_CASES[name]
    m = simulate(p1, 0.5, 1, formulation=name, **kwargs)
    assert m.complete, m.message
    assert abs(crank_angle(m)[-1] - P1_CRANK[0]) < tol
    # the same reactions at the end, whatever enforced the constraints
    ref = simulate(p1, 0.5, 1, rtol=1e-10, atol=1e-10)
    for c in ("fx", "fy", "tz"):
        a, b = m.extra[f"crank_pin.{c}"][-1], ref.extra[f"crank_pin.{c}"][-1]
        assert abs(a - b) <= 1e3 * tol * (1 + abs(b))


def test_formulation_registry_lists_all_eight():
    assert set(FORMULATIONS) == {"baumgarte", "projection", "penalty", "augmented-lagrangian", "index3",
                                 "partitioning", "semi-recursive", "recursive"}


def test_double_pendulum_tip_and_energy():
    m = simulate(model("double_pendulum"), 10.0, 10, rtol=1e-12, atol=1e-12)
    assert m.complete, m.message
    tip = (m.pose("link2", 10.0) @ np.array([1.0, 0, 0, 1]))[:2]
    assert np.hypot(*(tip - P3_TIP)) < 5e-8
    assert np.max(np.abs(m.extra["energy.total"])) < 1e-9  # E(0) = 0 J


def test_conservative_four_bar_keeps_its_energy_over_10_s(four_bar):
    m = simulate(four_bar, 10.0, 100, rtol=1e-10, atol=1e-10)
    assert m.complete, m.message
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) / abs(E[0]) < 1e-8
    assert np.max(m.extra["energy.kinetic"]) > 1.0  # it does swing
    assert np.all(m.extra["work.nonconservative"] == 0.0)


# ---------------------------------------------------------------------------- integrators
def _errors(p1, reference, steps=(4e-3, 2e-3, 1e-3), **kwargs):
    out = []
    for dt in steps:
        m = simulate(p1, 0.25, 1, dt=dt, **kwargs)
        out.append(abs(m.coordinate("crank_pivot.angle")[-1] - reference))
    return np.array(out)


def test_fixed_step_rk4_is_fourth_order(p1):
    ref = simulate(p1, 0.25, 1, rtol=1e-13, atol=1e-13).coordinate("crank_pivot.angle")[-1]
    e = _errors(p1, ref, steps=(8e-3, 4e-3, 2e-3), integrator="RK4")
    ratios = e[:-1] / e[1:]
    assert np.all((ratios > 13) & (ratios < 21)), (e, ratios)  # 2^4 = 16


def test_generalized_alpha_is_second_order(p1):
    ref = simulate(p1, 0.25, 1, rtol=1e-12, atol=1e-12).coordinate("crank_pivot.angle")[-1]
    e = _errors(p1, ref, formulation="index3", atol=1e-12)
    ratios = e[:-1] / e[1:]
    assert np.all((ratios > 3.5) & (ratios < 4.5)), (e, ratios)


def test_constraint_drift_stays_bounded(four_bar):
    base = simulate(four_bar, 2.0, 40, formulation="baumgarte", rtol=1e-8, atol=1e-8)
    assert np.max(base.extra["violation.position"]) < 1e-6
    proj = simulate(four_bar, 2.0, 40, formulation="projection", rtol=1e-8, atol=1e-8)
    assert np.max(proj.extra["violation.position"]) < 1e-7
    assert np.max(proj.extra["violation.velocity"]) < 1e-7
    i3 = simulate(four_bar, 0.5, 10, formulation="index3", dt=2e-3)
    assert np.max(i3.extra["violation.position"]) < 1e-9
    assert np.max(i3.extra["violation.velocity"]) < 1e-9


# ---------------------------------------------------------------------------- reactions
def _wrench_balance(motion, mdl, k):
    """Residual of m a_c = F and d(Jω)/dt = N about each com, from the reported reactions."""
    spec = mdl.spec
    parts = {p.name: p for p in spec.parts}
    g = np.asarray(spec.gravity)
    res = []
    for name, part in parts.items():
        if part.fixed:
            continue
        b = motion.part_index(name)
        X = motion.pose(name, motion.time[k])
        R, r = X[:3, :3], X[:3, 3]
        rc = r + R @ np.asarray(part.com)
        w, al = motion.angular_velocity[k, b], motion.angular_acceleration[k, b]
        ac = motion.acceleration[k, b] + np.cross(al, R @ part.com) + np.cross(w, np.cross(w, R @ part.com))
        F = part.mass * g
        N = np.zeros(3)
        for j in spec.joints:
            if name not in j.parts:
                continue
            pi = parts[j.parts[0]]
            Xi = motion.pose(pi.name, motion.time[k])
            P = Xi[:3, 3] + Xi[:3, :3] @ np.asarray(j.markers[0].origin)
            f = np.array([motion.extra[f"{j.name}.f{c}"][k] for c in "xyz"])
            t = np.array([motion.extra[f"{j.name}.t{c}"][k] for c in "xyz"])
            sign = 1.0 if j.parts[1] == name else -1.0
            F += sign * f
            N += sign * (t + np.cross(P - rc, f))
        J = R @ np.asarray(part.inertia) @ R.T
        res.append(np.concatenate([part.mass * ac - F, J @ al + np.cross(w, J @ w) - N]))
    return np.abs(np.array(res)).max()


def test_redundant_loop_reports_nonunique_reactions_that_balance_every_body():
    mdl = model("four_bar")
    spec = replace(mdl.spec, forces=())  # the balance below has no spring term
    mdl = compile_model(spec)
    m = simulate(mdl, 0.5, 5, rtol=1e-10, atol=1e-10)
    events = [e for e in m.events if e.kind == "reactions-not-unique"]
    assert events and set(events[0].items) == {"A", "B", "C", "D"}
    for k in range(m.nt):
        assert _wrench_balance(m, mdl, k) < 1e-6


def test_hanging_pendulum_reaction_is_its_weight(build):
    spec = build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "bob": {"position": [0, 0, 0], "mass": 2.0, "com": [0, -1.0, 0], "inertia": [0.1, 0.1, 0.1]}},
        "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "bob"], "origin": [0, 0, 0],
                    "axis": [0, 0, 1]}],
    })
    m = simulate(compile_model(spec), 1.0, 4)
    np.testing.assert_allclose(m.extra["pivot.fy"], 2.0 * 9.81, rtol=1e-10)
    for c in ("fx", "fz", "tx", "ty", "tz"):
        np.testing.assert_allclose(m.extra[f"pivot.{c}"], 0.0, atol=1e-9)
    assert not [e for e in m.events if e.kind == "reactions-not-unique"]


# ---------------------------------------------------------------------------- inverse dynamics
def test_inverse_dynamics_of_driven_double_pendulum_matches_lagrange():
    mdl = model("double_pendulum")
    drivers = (
        DriverSpec("shoulder_motor", TimeFunctionSpec(expression="0.5*sin(2*t)"), joint="shoulder", coordinate="angle"),
        DriverSpec("elbow_motor", TimeFunctionSpec(expression="0.3*t**2"), joint="elbow", coordinate="angle"),
    )
    mdl = compile_model(replace(mdl.spec, drivers=drivers))
    m = inverse_dynamics(mdl, t_end=1.5, steps=15)
    t = m.time
    # absolute rod angles φ1 = θ1, φ2 = θ1 + θ2 and their derivatives
    p1, p1d, p1dd = 0.5 * np.sin(2 * t), np.cos(2 * t), -2 * np.sin(2 * t)
    th2, th2d, th2dd = 0.3 * t**2, 0.6 * t, 0.6 + 0 * t
    p2, p2d, p2dd = p1 + th2, p1d + th2d, p1dd + th2dd
    L, mass, g = 1.0, 1.0, 9.81
    M11, M22, C = 4 / 3 * mass * L * L, mass * L * L / 3, 0.5 * mass * L * L
    c, s = np.cos(p1 - p2), np.sin(p1 - p2)
    r1 = -1.5 * mass * g * L * np.cos(p1) - C * s * p2d**2
    r2 = -0.5 * mass * g * L * np.cos(p2) + C * s * p1d**2
    Q1 = M11 * p1dd + C * c * p2dd - r1  # generalised forces conjugate to φ1, φ2
    Q2 = C * c * p1dd + M22 * p2dd - r2
    tau2 = Q2
    tau1 = Q1 + tau2
    np.testing.assert_allclose(m.extra["elbow_motor.effort"], tau2, atol=1e-7)
    np.testing.assert_allclose(m.extra["shoulder_motor.effort"], tau1, atol=1e-7)
    # the motor work is the energy gained
    E = m.extra["energy.total"]
    assert abs((E[-1] - E[0]) - m.extra["work.nonconservative"][-1]) < 2e-2 * np.ptp(E)


# ---------------------------------------------------------------------------- forces and energy
def _pendulum(build, forces, joint="revolute", extra_parts=None):
    data = {
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "arm": {"position": [0, 0, 0], "orientation": [0.9, 0.2, 0.3, 0.1], "mass": 1.5,
                          "com": [0.3, 0.1, 0.05], "inertia": [0.02, 0.03, 0.04, 0.001, 0.002, 0.0]}},
        "joints": [{"name": "pivot", "type": joint, "parts": ["ground", "arm"], "origin": [0, 0, 0],
                    "axis": [0, 0.3, 1]}],
        "forces": forces,
        "initial_velocity": {"arm": {"angular_velocity": [0.5, 1.0, 3.0]}},
    }
    return compile_model(build(data))


@pytest.mark.parametrize("joint", ["revolute", "spherical"])
def test_rotational_spring_conserves_energy_and_damper_balances_it(build, joint):
    spring = {"name": "s", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 5.0}
    m = simulate(_pendulum(build, [spring], joint), 1.0, 20, rtol=1e-11, atol=1e-11)
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) < 1e-8 * np.max(m.extra["energy.kinetic"])
    spring["damping"] = 0.3
    m = simulate(_pendulum(build, [spring], joint), 1.0, 20, rtol=1e-11, atol=1e-11)
    assert m.extra["work.nonconservative"][-1] < -1e-3
    assert energy_balance(m) < 1e-8


def test_spring_damper_and_bushing_energy_balance(build):
    forces = [{"name": "k", "type": "spring-damper", "parts": ["ground", "arm"], "points": [[0.5, 0.5, 0], [0.3, 0.1, 0]],
               "stiffness": 80.0, "damping": 0.5, "free_length": 0.2, "preload": 3.0}]
    m = simulate(_pendulum(build, forces, "spherical"), 1.0, 20, rtol=1e-11, atol=1e-11)
    assert m.extra["work.nonconservative"][-1] < 0
    assert energy_balance(m) < 1e-8
    # a free body held by a bushing only
    spec = build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "box": {"position": [0, 0, 0], "mass": 2.0, "com": [0.1, 0, 0], "inertia": [0.01, 0.02, 0.025]}},
        "forces": [{"name": "b", "type": "bushing", "parts": ["ground", "box"], "points": [[0, 0, 0]],
                    "stiffness": 500.0, "damping": 0.0}],
        "initial_velocity": {"box": {"velocity": [0.1, 0.2, 0.0], "angular_velocity": [0.0, 0.0, 1.0]}},
    })
    spec = replace(spec, forces=(replace(spec.forces[0], params=spec.forces[0].params + (("rotational_stiffness", 3.0),)),))
    m = simulate(compile_model(spec), 1.0, 20, rtol=1e-11, atol=1e-11)
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) < 1e-8 * max(1.0, np.max(m.extra["energy.kinetic"]))


def test_initial_velocity_is_made_consistent_with_the_joints(four_bar):
    spec = replace(four_bar.spec, initial_velocities=(InitialVelocitySpec("crank", angular_velocity=(0.0, 0.0, 6.0)),))
    m = simulate(compile_model(spec), 0.1, 2)
    np.testing.assert_allclose(m.angular_velocity[0, m.part_index("crank")], [0, 0, 6.0], atol=1e-9)
    assert m.extra["violation.velocity"][0] < 1e-10
    assert abs(m.angular_velocity[0, m.part_index("rocker"), 2]) > 0.5  # the loop follows


def test_generalized_mass_matrix_gives_the_kinetic_energy(four_bar, rng):
    from cadmotion.kernel.dynamics.equations import Dynamics
    from cadmotion.kernel.dynamics.mass import body_state, generalized_mass_matrix, rates_from_velocities

    dyn = Dynamics(four_bar)
    q = four_bar.q0
    v = rng.normal(size=dyn.nv)
    bs = body_state(four_bar, dyn.mass, q, v)
    qd = rates_from_velocities(bs, v, dyn.nmov)
    Mq = generalized_mass_matrix(four_bar, dyn.mass, q)
    assert abs(0.5 * qd @ Mq @ qd - dyn.kinetic(bs)) < 1e-12 * dyn.kinetic(bs)


# ---------------------------------------------------------------------------- bad input
def _with_part(mdl, name, **kw):
    spec = mdl.spec
    return replace(spec, parts=tuple(replace(p, **kw) if p.name == name else p for p in spec.parts))


@pytest.mark.parametrize("kw, words", [
    (dict(mass=0.0), "positive mass"),
    (dict(mass=-1.0), "positive mass"),
    (dict(mass=None), "no mass"),
    (dict(inertia=((1.0, 0, 0), (0, -1.0, 0), (0, 0, 1.0))), "not positive definite"),
])
def test_bad_mass_properties_name_the_part(p1, kw, words):
    with pytest.raises(MechanismError, match=f"'rod'.*{words}|{words}.*'rod'"):
        simulate(compile_model(_with_part(p1, "rod", **kw)), 0.1, 1)


def test_an_inertia_no_rigid_body_has_is_simulated_as_given_with_a_warning_naming_the_part(p1):
    # I1 + I2 < I3 but positive definite: the equations are well posed (URDF files of real robots carry such
    # tensors, and Pinocchio simulates them); the run goes on and says so
    with pytest.warns(UserWarning, match="part 'rod'.*triangle inequality"):
        motion = simulate(compile_model(_with_part(p1, "rod", inertia=((0.1, 0, 0), (0, 0.1, 0), (0, 0, 1.0)))),
                          0.1, 1)
    assert motion.complete


def test_bad_force_and_options_are_reported(p1):
    motor = p1.spec.forces[0]
    with pytest.raises(MechanismError, match="unknown joint 'nope'"):
        simulate(compile_model(replace(p1.spec, forces=(replace(motor, joint="nope"),))), 0.1, 1)
    with pytest.raises(ExpressionError):
        simulate(compile_model(replace(p1.spec, forces=(replace(motor, expression="__import__('os')"),))), 0.1, 1)
    with pytest.raises(SolverError, match="unknown formulation"):
        simulate(p1, 0.1, 1, formulation="magic")
    with pytest.raises(SolverError, match="unknown integrator"):
        simulate(p1, 0.1, 1, integrator="Euler")
    with pytest.raises(SolverError, match="no option"):
        simulate(p1, 0.1, 1, formulation="baumgarte", options={"gamma": 1})


def test_a_blow_up_keeps_the_frames_computed_so_far(build):
    spec = build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "bob": {"position": [1, 0, 0], "mass": 1.0, "inertia": [0.01, 0.01, 0.01]}},
        "joints": [{"name": "pivot", "type": "spherical", "parts": ["ground", "bob"], "origin": [0, 0, 0]}],
        "forces": [{"name": "k", "type": "spring-damper", "parts": ["ground", "bob"], "points": [[1, 1, 0], [1, 0, 0]],
                    "stiffness": 1e9, "free_length": 0.5}],
    })
    m = simulate(compile_model(spec), 1.0, 100, formulation="projection", integrator="RK4", dt=1e-2)
    assert not m.complete
    assert "t = " in m.message
    assert 1 <= m.nt < 101
    assert np.all(np.isfinite(m.position))
    assert [e for e in m.events if e.kind == "failed"]


# ---------------------------------------------------------------------------- compiled path
def _rhs_pair(mdl, rng, baumgarte=False):
    """ẏ from the compiled path and from the numpy reference path at a random (inconsistent) state."""
    from cadmotion.kernel.dynamics import fast
    from cadmotion.kernel.dynamics.forward import prepare

    if not fast.available():
        pytest.skip("numba is not available")
    name = "baumgarte" if baumgarte else "projection"
    out = []
    for use_fast in (True, False):
        dyn, q0, v0, angles, refs = prepare(mdl)
        form = FORMULATIONS[name](dyn, angles=angles, refs=refs, fast=use_fast)
        assert (form._fast is not None) == use_fast
        form.atol = 1e-10
        y = form.initial_state(0.0, q0, v0)
        r = np.random.default_rng(7)
        v = r.normal(size=form.nv)
        if len(dyn.redundant):
            # redundant rows agree with the others only on the joints: a consistent state
            ev = dyn.evaluate(q0, v, 0.37, refs)
            v = dyn.project_velocities(ev, v)
        else:
            y[:form.nq] += 1e-3 * r.normal(size=form.nq)  # off the joints: the Baumgarte terms act
        y[form.nq:form.nq + form.nv] = v
        out.append(form.rhs(0.37, y))
    return out


@pytest.mark.parametrize("case", ["p1", "four_bar", "driven", "springs"])
def test_compiled_rhs_equals_the_numpy_reference(case, build, rng):
    if case == "p1":
        mdl = model("slider_crank_torque")
    elif case == "four_bar":
        mdl = model("four_bar")
    elif case == "driven":  # a driver on the crank: time functions, Φt, the driver's power
        base = model("slider_crank_torque")
        drivers = (DriverSpec("drive", TimeFunctionSpec(expression="0.3*sin(3*t)"), joint="crank_pivot",
                              coordinate="angle"),)
        mdl = compile_model(replace(base.spec, drivers=drivers, forces=()))
    else:
        mdl = _pendulum(build, [{"name": "s", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 5.0,
                                 "damping": 0.2, "preload": 0.1}], "revolute")
    for baumgarte in (False, True):
        a, b = _rhs_pair(mdl, rng, baumgarte)
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-8 * np.max(np.abs(b)))


def _ring(N):
    """P2's closed chain of N 1 m / 1 kg rods hanging below a fixed link, as a MechanismSpec."""
    from cadmotion.kernel.spec import Frame, JointSpec, MechanismSpec, PartSpec

    alpha = -2 * np.pi * np.arange(N) / N
    P = np.vstack([[0.0, 0.0], np.cumsum(np.column_stack([np.cos(alpha), np.sin(alpha)]), axis=0)])
    parts, joints = [], []
    for k in range(N):
        parts.append(PartSpec(f"link{k}", fixed=k == 0, position=(P[k, 0], P[k, 1], 0.0),
                              orientation=(np.cos(alpha[k] / 2), 0.0, 0.0, np.sin(alpha[k] / 2)), mass=1.0,
                              com=(0.5, 0.0, 0.0), inertia=((1e-3, 0, 0), (0, 1 / 12, 0), (0, 0, 1 / 12))))
    for k in range(N):
        frames = []
        for part in ((k - 1) % N, k):
            c, s = np.cos(alpha[part]), np.sin(alpha[part])
            d = P[k] - P[part]
            frames.append(Frame((c * d[0] + s * d[1], -s * d[0] + c * d[1], 0.0), ((c, s, 0.0), (-s, c, 0.0), (0, 0, 1.0))))
        joints.append(JointSpec(f"j{k}", "revolute", (f"link{(k - 1) % N}", f"link{k}"), tuple(frames)))
    return MechanismSpec(parts=tuple(parts), joints=tuple(joints), gravity=(0.0, -9.81, 0.0))


def test_long_loop_sparse_path_agrees_with_the_compiled_band_path():
    from cadmotion.kernel.dynamics import fast
    from cadmotion.kernel.dynamics.equations import DENSE_LIMIT

    mdl = compile_model(_ring(48))  # 47 moving links: 282 velocities, beyond the dense limit
    assert 6 * 47 > DENSE_LIMIT
    ref = simulate(mdl, 0.2, 2, rtol=1e-9, atol=1e-9, options={"fast": False})
    assert ref.complete, ref.message
    ev = [e for e in ref.events if e.kind == "reactions-not-unique"]
    assert ev and len(ev[0].message.split("redundant")[0]) > 0
    assert np.max(ref.extra["violation.position"]) < 1e-8
    if fast.available():
        m = simulate(mdl, 0.2, 2, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(m.position, ref.position, atol=1e-7)
        for k in ("j0.fx", "j24.fy", "energy.total"):
            np.testing.assert_allclose(m.extra[k], ref.extra[k], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("formulation", ["projection", "baumgarte"])
def test_a_fixed_step_beyond_the_models_stability_fails_naming_the_step_and_what_to_do(build, formulation):
    # a rotational spring of 1e7 N m/rad on the pendulum: ω ≈ 7e3 rad/s, so RK4 at dt = 10 ms (ω dt ≈ 70, its
    # stability ends at 2.8) blows up in a few steps, as on the Allegro hand's fingertips (the robot sweep,
    # benchmarks/urdf_peers.py sweep). The run stops with a failed event naming the step and the way out; on the
    # numpy path the blown-up state overflowed the generated code's float loops at the step's end, and the
    # OverflowError escaped the run
    spring = {"name": "s", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 1e7}
    m = simulate(_pendulum(build, [spring]), 0.5, 10, formulation=formulation, integrator="RK4", dt=0.01)
    assert not m.complete
    assert [e.kind for e in m.events].count("failed") == 1
    assert "dt = 0.01 s may be too large" in m.message and "smaller dt" in m.message and "Radau" in m.message
