"""The compiled DOP853 loop (kernel/dynamics/_dop853.py) against independent references.

References: scipy's DOP853 driving the same compiled right-hand side (the Python loop of
``Formulation._run_scipy``, option ``compiled_loop=False``), the double pendulum's
minimal-coordinate Lagrange equations integrated by scipy at 1e-13, the P3 reference tip,
the closed-form motion of a nut on a screw, conservation of energy, and a toy ODE with a
closed-form solution on which the integrator templates are compiled alone (order of one step
and of the dense output, scipy's solve_ivp step for step, a failed evaluation).
"""

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import compiled_expressions, fast, library
from cadmotion.kernel.dynamics._radau import N_STATS
from cadmotion.kernel.dynamics.forward import run

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
P3_TIP = np.array([-1.655867425202119, -0.5284454840664549])  # peers/reference, its own error ≈ 6e-9 m
COMPILED = "DOP853 in the compiled loop"

pytestmark = pytest.mark.skipif(not fast.available(), reason="numba is not available")
numba = pytest.importorskip("numba")


def model(name):
    return compile_model(read_model_file(SAMPLES / f"{name}.cadmotion.toml"))


def _run(mdl, t_end, steps, tol, compiled=True, formulation="projection"):
    m, res = run(mdl, t_end, steps, formulation=formulation, rtol=tol, atol=tol, options={"compiled_loop": compiled})
    assert m.complete, m.message
    assert (COMPILED in res.notes) == compiled
    return m, res


def _spinning_pendulum(build):
    """A pendulum on a tilted revolute joint with a rotational spring, spun up: several turns
    in 2 s, so the spring's angle reference and the joint coordinate must follow the turns."""
    return compile_model(build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "arm": {"position": [0, 0, 0], "orientation": [0.9, 0.2, 0.3, 0.1], "mass": 1.5,
                          "com": [0.3, 0.1, 0.05], "inertia": [0.02, 0.03, 0.04, 0.001, 0.002, 0.0]}},
        "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "arm"], "origin": [0, 0, 0],
                    "axis": [0, 0.3, 1]}],
        "forces": [{"name": "s", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 0.05}],
        "initial_velocity": {"arm": {"angular_velocity": [0.5, 3.0, 10.0]}},
    }))


#: a torque law of t, q (rad) and qd (rad/s) on the spinning pendulum's joint, beside its spring
TORQUE = "0.2*sin(3*t) - 0.05*q - 0.02*qd*abs(qd)"
#: every function and constant of cadmotion.kernel.expressions, finite over several turns
ALL_FUNCTIONS = ("0.01*(sin(q) + cos(t) + tan(0.05*q) + asin(0.1*sin(q)) + acos(0.1*cos(qd)) + atan(qd)"
                 " + atan2(q, 1 + t*t) + sinh(0.1*q) + cosh(0.1*qd) + tanh(qd) + exp(-t) + log(2 + t)"
                 " + sqrt(1 + q*q) + sign(qd) + 3*sign(q - 100) + min(q, qd, 1) + max(q, 0.5) + pi + e + q^2"
                 " - qd**3 + (1 + t)**(1/3) + 2/3*t)")


def _torque_pendulum(build, expression):
    """The spinning pendulum with a torque element ``expression`` on its joint as well (the
    torque is the second axis element: its index comes after the spring's)."""
    spec = _spinning_pendulum(build).spec
    from dataclasses import replace

    extra = build({"parts": {"ground": {"fixed": True}},
                   "forces": [{"name": "motor", "type": "torque", "joint": "pivot", "expression": expression}]})
    return compile_model(replace(spec, forces=tuple(spec.forces) + tuple(extra.forces)))


CASES = {
    # name: (model, formulation, t_end (s), tolerance)
    "double pendulum": (lambda build: model("double_pendulum"), "projection", 2.0, 1e-10),
    "four-bar (redundant rows)": (lambda build: model("four_bar"), "projection", 2.0, 1e-9),
    "four-bar, baumgarte": (lambda build: model("four_bar"), "baumgarte", 2.0, 1e-9),
    "spinning pendulum with spring": (_spinning_pendulum, "projection", 2.0, 1e-10),
    # torque expressions as programs of the library's interpreter (compiled_expressions.expression_table)
    "slider-crank, torque of t (P1)": (lambda build: model("slider_crank_torque"), "projection", 2.0, 1e-9),
    "spinning pendulum, torque of t, q, qd": (lambda build: _torque_pendulum(build, TORQUE), "projection", 2.0, 1e-10),
    "spinning pendulum, torque of t, q, qd, baumgarte": (lambda build: _torque_pendulum(build, TORQUE), "baumgarte",
                                                         2.0, 1e-10),
    # the penalty formulations' Schur-complement form, redundant rows kept
    "four-bar, penalty": (lambda build: model("four_bar"), "penalty", 2.0, 1e-9),
    "four-bar, augmented-lagrangian": (lambda build: model("four_bar"), "augmented-lagrangian", 2.0, 1e-9),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_loop_takes_the_steps_of_scipys_dop853(case, build):
    make, formulation, t_end, tol = CASES[case]
    mdl = make(build)
    a, ra = _run(mdl, t_end, 20, tol, True, formulation)
    b, rb = _run(mdl, t_end, 20, tol, False, formulation)
    # the same method and step control: the same steps up to round-off
    assert abs(ra.nsteps - rb.nsteps) <= 2, (ra.nsteps, rb.nsteps)
    assert abs(ra.nfev - rb.nfev) <= 30, (ra.nfev, rb.nfev)
    # and the same solution, frames between steps included (dense output), to 100 × tol
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=100 * tol)
    np.testing.assert_allclose(a.velocity, b.velocity, rtol=0, atol=1e3 * tol)
    for ca, cb in zip(a.joint_coordinates, b.joint_coordinates):
        np.testing.assert_allclose(ca.values, cb.values, rtol=0, atol=100 * tol)
    np.testing.assert_allclose(a.extra["energy.total"], b.extra["energy.total"], rtol=0, atol=1e3 * tol)


@pytest.mark.parametrize("formulation", ["penalty", "augmented-lagrangian"])
@pytest.mark.parametrize("sample", ["four_bar", "slider_crank_torque"])
def test_compiled_penalty_formulations_solve_the_penalty_matrix_of_the_numpy_path(formulation, sample):
    """(S + I/α) λ = Jv M⁻¹ f + r in band storage gives the v̇ of (M + α JvᵀJv) v̇ = f − α Jvᵀ r
    (Woodbury), and the augmented Lagrangian's iteration the same fixed point, on models with
    redundant rows (planar linkages built in 3-D). Reference: the numpy path (``fast=False``),
    which factors the penalty matrix itself."""
    mdl = model(sample)
    # (the global error estimate left out: the two paths are compared with each other)
    kw = dict(formulation=formulation, rtol=1e-10, atol=1e-10, estimate_error=False)
    a, ra = run(mdl, 1.0, 20, options={"fast": True}, **kw)
    b, rb = run(mdl, 1.0, 20, options={"fast": False}, **kw)
    assert a.complete and b.complete, (a.message, b.message)
    assert COMPILED in ra.notes and COMPILED not in rb.notes
    # measured: 2.4e-9 m and 3e-8 m/s (penalty: the penalty matrix's conditioning), 3e-11 m (AL)
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=2e-8)
    np.testing.assert_allclose(a.velocity, b.velocity, rtol=0, atol=3e-7)
    np.testing.assert_allclose(a.extra["violation.position"], b.extra["violation.position"], rtol=0, atol=1e-8)


def test_spinning_pendulum_angle_follows_the_turns(build):
    m, _ = _run(_spinning_pendulum(build), 2.0, 200, 1e-10)
    angle = m.coordinate("pivot.angle")
    assert np.max(np.abs(angle)) > 4 * math.pi  # more than two turns ...
    assert np.max(np.abs(np.diff(angle))) < 0.5  # ... and no jump of 2π between frames of 10 ms
    E = m.extra["energy.total"]  # the spring's energy is continuous over the turns too
    assert np.max(np.abs(E - E[0])) < 1e-8 * np.max(m.extra["energy.kinetic"])


def _double_pendulum_lagrange(t_end, times):
    """Absolute rod angles (rad) from the minimal-coordinate Lagrange equations (1 m / 1 kg rods,
    I = m L²/12), released from rest horizontal; scipy DOP853 at rtol = atol = 1e-13."""
    g = 9.81
    a, b = 4.0 / 3.0, 1.0 / 3.0  # m L²/4 + I + m L², m L²/4 + I (kg m²)

    def f(t, s):
        p1, p2, w1, w2 = s
        d = p1 - p2
        M = np.array([[a, 0.5 * math.cos(d)], [0.5 * math.cos(d), b]])
        r = np.array([-0.5 * math.sin(d) * w2 ** 2 - 1.5 * g * math.cos(p1),
                      0.5 * math.sin(d) * w1 ** 2 - 0.5 * g * math.cos(p2)])
        return np.concatenate([[w1, w2], np.linalg.solve(M, r)])

    sol = solve_ivp(f, (0.0, t_end), [0.0, 0.0, 0.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-13, t_eval=times)
    return sol.y[:2].T


def _rod_angles(m):
    out = []
    for name in ("link1", "link2"):
        q = m.quaternion[:, m.part_index(name)]
        out.append(2 * np.arctan2(q[:, 3], q[:, 0]))
    return np.unwrap(np.array(out).T, axis=0)


def test_compiled_loop_error_follows_the_tolerance():
    """Error against the Lagrange solution at three tolerances: within 30 × tol, and down by at
    least 10 × for every 100 × tighter tolerance."""
    mdl = model("double_pendulum")
    t_end = 2.0
    ref = _double_pendulum_lagrange(t_end, np.linspace(0.0, t_end, 5))
    err = []
    for tol in (1e-6, 1e-8, 1e-10):
        m, _ = _run(mdl, t_end, 4, tol)
        err.append(np.max(np.abs(_rod_angles(m) - ref)))
        assert err[-1] < 30 * tol, (tol, err)
    assert np.all(np.array(err[1:]) < 0.1 * np.array(err[:-1])), err


# ---------------------------------------------------------------------------- the template on a toy ODE
@numba.njit
def _toy_rhs(t, y, df, di, dd, ws):
    """x' = v, v' = −x, u' = u (1 − u) (exact from (1, 0, 0.5) at t = 0: cos t, −sin t, 1 / (1 + e^−t))."""
    return np.array([y[1], -y[0], y[2] * (1.0 - y[2])]), True


@numba.njit
def _no_windings(y, df, di, dd, ws):
    return 0


@numba.njit
def _no_rows(df, di, dd, ws, factored):
    return None


@numba.njit
def _no_groups(t, y, df, di, dd, ws, need_gamma):
    return 0


@numba.njit
def _no_step_limit(y, df, di, dd, ws):
    return np.inf


@numba.njit
def _whole_interval(t0, y0, f0, t_bound, rtol, atol, df, di, dd, ws, order):
    return t_bound - t0, True


def _toy_exact(t):
    return np.array([np.cos(t), -np.sin(t), 1.0 / (1.0 + np.exp(-t))])


@numba.njit
def _toy_rhs_failing(t, y, df, di, dd, ws):
    """The toy right-hand side, not finite after t = 0.7 s."""
    out, ok = _toy_rhs(t, y, df, di, dd, ws)
    return out, t <= 0.7


def _toy_integrator(one_step, rhs=_toy_rhs):
    """The templates of _dop853 compiled with a toy right-hand side (as fast.py compiles them
    with a model's); ``one_step``: the first step spans the whole interval."""
    from cadmotion.kernel.dynamics import _dop853 as D

    ns = {}
    exec("import math\nimport numba\nimport numpy as np\nfrom cadmotion.kernel.dynamics import _kernels as K\n"
         f"from cadmotion.kernel.dynamics._dop853 import {', '.join(D.HELPERS)}\n", ns)
    for fn in D.TEMPLATES:
        exec("@numba.njit\n" + inspect.getsource(fn), ns)
    ns.update(rhs=rhs, windings=_no_windings, groups=_no_groups, step_limit=_no_step_limit, choose_rows=_no_rows)
    if one_step:
        ns["initial_step"] = _whole_interval
    dop853 = ns["dop853"]

    def solve(times, tol):
        times = np.asarray(times, float)
        Y = np.zeros((len(times), 3))
        Y[0] = _toy_exact(0.0)
        stats = np.zeros(N_STATS)
        z = np.zeros(1)
        status = dop853(times[0], Y[0].copy(), times, tol, tol, -1.0, 0, 0.0, z, np.zeros(8, np.int64), z, z, Y,
                        np.zeros((len(times), 1)), stats, np.zeros(3))  # zone 0: no singular configurations
        return status, Y, stats

    return solve, D


def test_one_dop853_step_has_local_error_of_order_9_and_dense_output_of_order_8():
    """One step of size h (error control off: tol 1e3) on the toy ODE: the error at t = h falls
    as h⁹ (an 8th-order method) and the dense output's at h/2 as h⁸ (7th-order interpolant)."""
    solve, D = _toy_integrator(one_step=True)
    hs = np.array([1.6, 0.8, 0.4, 0.2])
    end, mid = [], []
    for h in hs:
        status, Y, stats = solve([0.0, 0.5 * h, h], 1e3)
        assert status == D.DONE and stats[D.S_NSTEPS] == 1
        mid.append(np.max(np.abs(Y[1] - _toy_exact(0.5 * h))))
        end.append(np.max(np.abs(Y[2] - _toy_exact(h))))
    p_end = np.log2(np.array(end[:-1]) / np.array(end[1:]))
    p_mid = np.log2(np.array(mid[:-1]) / np.array(mid[1:]))
    assert np.all((p_end > 8.5) & (p_end < 9.5)), (end, p_end)
    assert np.all((p_mid > 7.5) & (p_mid < 8.5)), (mid, p_mid)


def test_compiled_template_matches_scipys_dop853_step_for_step():
    """The adaptive loop on the toy ODE against scipy.integrate.solve_ivp(DOP853) at rtol = atol
    = 1e-10: the same number of evaluations and steps, solutions equal to 1e-13."""
    solve, D = _toy_integrator(one_step=False)
    times = np.linspace(0.0, 1.5, 7)
    status, Y, stats = solve(times, 1e-10)
    assert status == D.DONE
    sol = solve_ivp(lambda t, y: _toy_rhs(t, y, None, None, None, None)[0], (0.0, 1.5), _toy_exact(0.0),
                    method="DOP853", rtol=1e-10, atol=1e-10, dense_output=True)
    assert stats[D.S_NSTEPS] == sol.t.size - 1
    plain = solve_ivp(lambda t, y: _toy_rhs(t, y, None, None, None, None)[0], (0.0, 1.5), _toy_exact(0.0),
                      method="DOP853", rtol=1e-10, atol=1e-10)
    extra = stats[D.S_NFEV] - plain.nfev  # the dense output's 3 evaluations per step with a frame inside
    assert extra % 3 == 0 and 0 < extra <= 3 * (len(times) - 2), extra
    np.testing.assert_allclose(Y, sol.sol(times).T, rtol=0, atol=1e-13)
    np.testing.assert_allclose(Y, np.array([_toy_exact(t) for t in times]), rtol=0, atol=1e-9)


def test_double_pendulum_p3_tip_and_energy_with_the_compiled_loop():
    m, res = _run(model("double_pendulum"), 10.0, 100, 3e-13)
    tip = (m.pose("link2", 10.0) @ np.array([1.0, 0, 0, 1]))[:2]
    assert np.hypot(*(tip - P3_TIP)) < 5e-9  # within the reference's own error
    assert np.max(np.abs(m.extra["energy.total"])) < 1e-10  # E(0) = 0 J, conservative


def test_conservative_four_bar_energy_with_the_compiled_loop():
    m, _ = _run(model("four_bar"), 10.0, 100, 1e-10)
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) / abs(E[0]) < 1e-8
    assert np.max(m.extra["violation.position"]) < 1e-9


def test_nut_on_a_screw_falls_with_the_closed_form_acceleration(build):
    """The screw's equation uses the continuous angle (three turns here): x = p θ / 2π, so
    the nut falls with a = m g / (m + I (2π/p)²) (m, I about the axis, p the pitch)."""
    mass, inertia, pitch = 2.0, 0.004, 0.05
    mdl = compile_model(build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "nut": {"position": [0, 0, 0], "mass": mass, "com": [0, 0, 0], "inertia": [0.01, inertia, 0.01]}},
        "joints": [{"name": "thread", "type": "screw", "parts": ["ground", "nut"], "origin": [0, 0, 0],
                    "axis": [0, 1, 0], "pitch": pitch}],
    }))
    m, _ = _run(mdl, 1.0, 10, 1e-10)
    acc = 9.81 * mass / (mass + inertia * (2 * math.pi / pitch) ** 2)
    np.testing.assert_allclose(m.position[:, m.part_index("nut"), 1], -0.5 * acc * m.time ** 2, rtol=0, atol=1e-9)
    theta = m.coordinate("thread.angle")
    assert abs(theta[-1]) > 4 * math.pi
    np.testing.assert_allclose(np.abs(theta), 2 * math.pi / pitch * 0.5 * acc * m.time ** 2, rtol=0, atol=1e-7)


def _slider_with_axis_force(build, joint="prismatic"):
    """A 2 kg slider on an inclined joint axis, pushed along it by F = 2 − 4 q − 0.5 qd (N, q in
    m): the force acts at the joint's point, away from the com, so the joint takes a moment."""
    return compile_model(build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "slider": {"position": [0.1, 0.2, 0], "orientation": [0.9, 0.1, 0.3, 0.2], "mass": 2.0,
                             "com": [0.1, 0.2, 0.05], "inertia": [0.01, 0.02, 0.025, 0.001, 0.0, 0.002]}},
        "joints": [{"name": "rail", "type": joint, "parts": ["ground", "slider"], "origin": [0.3, 0.1, 0.2],
                    "axis": [1, 1, 0]}],
        "forces": [{"name": "push", "type": "force", "joint": "rail", "expression": "2 - 4*q - 0.5*qd"}],
    }))


@pytest.mark.parametrize("fast_path", [True, False])
def test_force_along_a_joint_axis_gives_the_closed_form_damped_oscillation(build, fast_path):
    """m q̈ = F0 − k q − c q̇ along the rail (gravity is normal to it only in part: its
    component along the axis, m g sin 45°, shifts the equilibrium). Closed form of the damped
    oscillator from rest; the compiled expression (``force_<s>``) and the numpy path."""
    from cadmotion.kernel.dynamics.energy import energy_balance

    mdl = _slider_with_axis_force(build)
    m, res = run(mdl, 2.0, 20, rtol=1e-11, atol=1e-11, options={"fast": fast_path})
    assert m.complete, m.message
    assert (COMPILED in res.notes) == fast_path
    mass, k, c = 2.0, 4.0, 0.5
    q_eq = (2.0 - mass * 9.81 / math.sqrt(2)) / k
    w0, zeta = math.sqrt(k / mass), c / (2 * math.sqrt(k * mass))
    wd = w0 * math.sqrt(1 - zeta ** 2)
    t = m.time
    q = q_eq - np.exp(-zeta * w0 * t) * (q_eq * np.cos(wd * t) + zeta * w0 * q_eq / wd * np.sin(wd * t))
    np.testing.assert_allclose(m.coordinate("rail.disp"), q, rtol=0, atol=1e-9)
    assert m.extra["work.nonconservative"][-1] != 0.0 and energy_balance(m) < 1e-8


def _bushing_box(build):
    """A free body held to ground by a bushing with different stiffness and damping per axis,
    its second point away from the first: translation and rotation couple."""
    from dataclasses import replace

    spec = build({
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "box": {"position": [0, 0, 0], "orientation": [0.95, 0.1, 0.2, 0.2], "mass": 2.0,
                          "com": [0.1, 0, 0], "inertia": [0.01, 0.02, 0.025]}},
        "forces": [{"name": "b", "type": "bushing", "parts": ["ground", "box"], "points": [[0, 0, 0], [0.05, 0.02, 0]],
                    "stiffness": [500.0, 800.0, 300.0], "damping": [0.5, 1.0, 0.2]}],
        "initial_velocity": {"box": {"velocity": [0.1, 0.2, 0.0], "angular_velocity": [0.3, -0.5, 2.0]}},
    })
    extra = (("rotational_stiffness", (3.0, 4.0, 5.0)), ("rotational_damping", (0.01, 0.02, 0.0)))
    return compile_model(replace(spec, forces=(replace(spec.forces[0], params=spec.forces[0].params + extra),)))


def test_compiled_bushing_gives_the_numpy_paths_motion_and_balances_energy(build):
    """The compiled bushing kernel against the numpy force elements (``fast=False``), and the
    energy balance: E(t) − E(0) = the dampers' work."""
    from cadmotion.kernel.dynamics.energy import energy_balance

    mdl = _bushing_box(build)
    a, ra = run(mdl, 1.0, 20, rtol=1e-11, atol=1e-11, options={"fast": True})
    b, rb = run(mdl, 1.0, 20, rtol=1e-11, atol=1e-11, options={"fast": False})
    assert a.complete and b.complete and COMPILED in ra.notes and COMPILED not in rb.notes
    assert np.ptp(a.position[:, a.part_index("box")], axis=0).min() > 1e-3  # it moves in x, y and z
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.quaternion, b.quaternion, rtol=0, atol=1e-9)
    assert a.extra["work.nonconservative"][-1] < -1e-4 and energy_balance(a) < 1e-8


SHOULDER_TABLE = ((0.0, 0.0), (0.3, 0.2), (0.7, -0.1), (1.0, 0.4), (1.5, 0.0))


def _driven_pendulum(function):
    """The double pendulum with its shoulder driven by ``function`` (rad, a TimeFunctionSpec)
    and the elbow free: the driven arm shakes the free one."""
    from dataclasses import replace

    from cadmotion.kernel.spec import DriverSpec

    base = model("double_pendulum")
    drivers = (DriverSpec("shake", function, joint="shoulder", coordinate="angle"),)
    return compile_model(replace(base.spec, drivers=drivers))


def _shoulder_functions():
    from scipy.interpolate import CubicSpline

    from cadmotion.kernel.spec import TimeFunctionSpec

    table = np.array(SHOULDER_TABLE)
    return {"expression": (TimeFunctionSpec(expression="0.3*sin(3.5*t) + 0.05*t^2"),
                           lambda t: 0.3 * np.sin(3.5 * t) + 0.05 * t ** 2),
            "table": (TimeFunctionSpec(table=SHOULDER_TABLE), CubicSpline(table[:, 0], table[:, 1], bc_type="not-a-knot"))}


@pytest.mark.parametrize("kind", ["expression", "table"])
def test_drivers_time_functions_run_compiled_and_the_driven_joint_follows_them(kind):
    """A driver's f, f', f'' are evaluated in compiled code (expression: sympy derivatives of the
    printed expression; table: the spline's pieces, extended past its ends as scipy does, t ∈
    [0, 2] s for a table ending at 1.5 s). References: the function itself, evaluated
    independently, for the driven angle; the numpy path with the Python time function for the
    free arm."""
    spec, reference = _shoulder_functions()[kind]
    mdl = _driven_pendulum(spec)
    a, ra = run(mdl, 2.0, 40, rtol=1e-10, atol=1e-10)
    b, rb = run(mdl, 2.0, 40, rtol=1e-10, atol=1e-10, options={"fast": False})
    assert a.complete and b.complete, (a.message, b.message)
    assert COMPILED in ra.notes and COMPILED not in rb.notes
    np.testing.assert_allclose(a.coordinate("shoulder.angle"), reference(a.time), rtol=0, atol=1e-9)
    assert np.ptp(a.coordinate("elbow.angle")) > 0.5  # the free arm swings
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-7)
    np.testing.assert_allclose(a.extra["shake.effort"], b.extra["shake.effort"], rtol=0, atol=1e-5)


def test_a_time_function_left_in_python_keeps_scipys_loop_with_the_same_motion(monkeypatch):
    """Time functions compiled code cannot evaluate (a TimeFunction with neither an expression
    nor a spline, e.g. built in Python) are called from Python before each evaluation."""
    mdl = _driven_pendulum(_shoulder_functions()["expression"][0])
    a, _ = run(mdl, 0.5, 5, rtol=1e-10, atol=1e-10)
    from cadmotion.kernel.dynamics._kernels import FN_PYTHON

    monkeypatch.setattr(compiled_expressions, "_time_function_kind", lambda fn: FN_PYTHON)
    b, rb = run(mdl, 0.5, 5, rtol=1e-10, atol=1e-10)
    assert b.complete and COMPILED not in rb.notes
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-9)


def test_every_driver_expression_is_data_for_the_one_compiled_library():
    """A driver's expression is a program the library interprets, not code compiled into it:
    models whose drivers differ in decimals or in form share one compiled library, and each
    runs its own f(t)."""
    from cadmotion.kernel.dynamics.equations import Dynamics
    from cadmotion.kernel.spec import TimeFunctionSpec

    def driven(text):
        return _driven_pendulum(TimeFunctionSpec(expression=text))

    modules = {library.module(Dynamics(driven(text))) for text in ("0.3*sin(3.5*t)", "0.2*sin(1.5*t)",
                                                                  "0.3*cos(3.5*t)")}
    assert len(modules) == 1
    assert "math.sin" not in Path(modules.pop().__file__).read_text()
    for text, law in (("0.3*sin(3.5*t)", lambda t: 0.3 * np.sin(3.5 * t)),
                      ("0.3*cos(3.5*t)", lambda t: 0.3 * np.cos(3.5 * t))):  # each angle follows its own law
        m, res = run(driven(text), 0.5, 5, rtol=1e-10, atol=1e-10)
        assert m.complete and COMPILED in res.notes
        np.testing.assert_allclose(m.coordinate("shoulder.angle"), law(m.time), rtol=0, atol=1e-9)


# ---------------------------------------------------------------- torque expressions in compiled code
P1_TIMES = [0.0, 0.5, 1.0, 1.5, 2.0]
#: P1's reference crank angles (rad, minimal-coordinate Lagrange ODE of ../shared/peers/reference/p1.py)
P1_CRANK = np.array([-3.8723571541, 0.7267300877, -3.7281819064, 0.5740136324])


def test_p1_torque_expression_runs_in_the_compiled_loop_and_matches_the_reference():
    mdl = model("slider_crank_torque")
    m, res = run(mdl, times=P1_TIMES, rtol=1e-9, atol=1e-9)
    assert m.complete, m.message
    assert COMPILED in res.notes
    crank = math.pi / 4 + m.coordinate("crank_pivot.angle")[1:]
    # the reference is given to 1e-10 rad; the run's error was 2.2e-9 rad in scipy's loop
    np.testing.assert_allclose(crank, P1_CRANK, rtol=0, atol=1e-8)
    b, _ = _run(mdl, 2.0, 4, 1e-9, compiled=False)  # scipy's loop on the same compiled rhs
    np.testing.assert_allclose(m.coordinate("crank_pivot.angle"), b.coordinate("crank_pivot.angle"), rtol=0, atol=1e-9)


def _rhs_and_torque(mdl, use_fast, t, turns=2):
    """(ẏ at a state off the initial one, the torque element's value, q, qd) by the compiled
    (``use_fast``) or the numpy right-hand side; the angle reference ``turns`` turns on, so
    q = raw angle + 2π·turns."""
    from cadmotion.kernel.dynamics.formulations import FORMULATIONS
    from cadmotion.kernel.dynamics.forward import prepare
    from cadmotion.kernel.dynamics.mass import body_state

    dyn, q0, v0, angles, refs = prepare(mdl)
    refs += 2 * math.pi * turns
    form = FORMULATIONS["projection"](dyn, angles=angles, refs=refs, fast=use_fast)
    assert (form._fast is not None) == use_fast
    form.atol = 1e-10
    y = form.initial_state(0.0, q0, v0)
    y[form.nq:form.nq + form.nv] *= 1.7  # consistent velocities, other than the initial ones
    out = np.array(form.rhs(t, y))
    bs = body_state(mdl, dyn.mass, y[:form.nq], y[form.nq:form.nq + form.nv])
    theta, rate, _ = dyn.forces._angles(bs, refs)
    nr = dyn.forces.n_axis_rot
    value = form._fast.tau[nr] if use_fast else dyn.forces.axis_expr[0][1](t, theta[nr], rate[nr])
    return out, value, theta[nr], rate[nr]


@pytest.mark.parametrize("expression", [TORQUE, ALL_FUNCTIONS], ids=["law", "all functions"])
def test_compiled_torque_expression_matches_the_numpy_path(build, expression):
    mdl = _torque_pendulum(build, expression)
    assert compiled_expressions.expression_code(_forces(mdl).axis_expr[0][1]) is not None
    for t in (0.0, 0.37, 1.9):
        a, tau_a, q, qd = _rhs_and_torque(mdl, True, t)
        b, tau_b, _, _ = _rhs_and_torque(mdl, False, t)
        assert abs(q) > 3 * math.pi and abs(qd) > 0.1  # the continuous angle (two turns on) and a rate
        # the same expression and arguments: the torque to round-off (a few ulp)
        assert abs(tau_a - tau_b) <= 1e-14 * max(1.0, abs(tau_b)), (tau_a, tau_b)
        # ẏ: the compiled and the numpy linear algebra differ in round-off only
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * np.max(np.abs(b)))


def _forces(mdl):
    from cadmotion.kernel.dynamics.equations import Dynamics

    return Dynamics(mdl).forces


def test_every_expression_form_shares_the_one_compiled_library_and_decimals_are_data(build):
    """Torque expressions are programs of the library's interpreter: models whose expressions
    differ in form or in decimals share one compiled library, so neither a new law nor a user
    tuning 0.01 to 0.02 waits for a compilation; the decimals are the program's constants."""
    from cadmotion.kernel.dynamics.equations import Dynamics
    from cadmotion.kernel.expression_programs import ProgramTable

    def module(expression):
        return library.module(Dynamics(_torque_pendulum(build, expression)))

    a = module("0.01*exp(-t)")
    assert module("0.01*exp(-2*t)") is a and module("0.02*exp(-t)") is a
    assert "math.exp" not in Path(a.__file__).read_text()
    for value in (0.01, 0.02):
        dyn = Dynamics(_torque_pendulum(build, f"{value}*exp(-t)"))
        # element 0 is the spring (no expression), element 1 the torque
        prog, consts = compiled_expressions.expression_table(dyn, "torque", 2, ProgramTable())
        assert prog.tolist() == [-1, 0] and np.array_equal(consts, [[0.0], [value]])


def test_expression_code_is_printed_from_the_tree_and_whitelisted():
    """Only whitelisted names reach the generated module; anything else stays a Python callback."""
    import types

    import sympy as sp

    t, q, qd = (sp.Symbol(n, real=True) for n in ("t", "q", "qd"))
    fn = types.SimpleNamespace(args=(t, q, qd))
    fn.expr = 0.5 * sp.exp(-t) + sp.Min(q, qd)
    assert compiled_expressions.expression_code(fn) == "c_0*math.exp(-t) + min(q, qd)"
    assert compiled_expressions.expression_constants(fn) == [0.5]
    for bad in (sp.gamma(t), sp.Function("f")(t), sp.Symbol("x") * t, sp.zoo * t, sp.floor(q)):
        fn.expr = bad
        assert compiled_expressions.expression_code(fn) is None, bad


def test_a_failed_evaluation_stops_the_loop_and_keeps_the_frames_before(monkeypatch):
    solve, D = _toy_integrator(one_step=False, rhs=_toy_rhs_failing)
    times = np.linspace(0.0, 1.5, 16)
    status, Y, stats = solve(times, 1e-10)
    assert status == D.NOT_FINITE
    assert stats[D.S_T_FAIL] <= 0.7 < stats[D.S_T_EVAL]  # the step that began at T_FAIL failed
    k = int(stats[D.S_K])
    assert times[k - 1] <= stats[D.S_T_FAIL] < times[k]  # the frames before the failed step, all of them
    np.testing.assert_allclose(Y[:k], np.array([_toy_exact(t) for t in times[:k]]), rtol=0, atol=1e-9)
    # the formulation reports it as the scipy loop does: frames kept, run incomplete, time named
    from cadmotion.kernel.dynamics.fast import FastRHS

    real = FastRHS.dop853

    def failing(self, times, *args, **kw):
        status, Y, snaps, stats, y_end = real(self, times, *args, **kw)
        stats[D.S_K], stats[D.S_T_FAIL], stats[D.S_T_EVAL] = 3, times[2], times[2] + 0.01
        return D.NOT_FINITE, Y, snaps, stats, y_end

    monkeypatch.setattr(FastRHS, "dop853", failing)
    m, res = run(model("double_pendulum"), 1.0, 10, rtol=1e-9, atol=1e-9)
    assert not m.complete and m.nt == 3
    assert "not finite" in m.message and "t = 0.2 s" in m.message
    assert [e for e in m.events if e.kind == "failed"]


# ---------------------------------------------------------------- the compiled RK4 loop (_rk4.py)
RK4_COMPILED = "RK4 in the compiled loop"
VEHICLES = Path(__file__).resolve().parents[2] / "samples" / "vehicles"

RK4_CASES = {
    # name: (model, formulation, t_end (s), dt (s))
    "spinning pendulum, torque of t, q, qd": (lambda build: _torque_pendulum(build, TORQUE), "projection", 2.0, 1e-3),
    "spinning pendulum, torque of t, q, qd, baumgarte": (lambda build: _torque_pendulum(build, TORQUE), "baumgarte",
                                                         2.0, 1e-3),
    # closed loops: the singular-configuration watch probes every step
    "four-bar (redundant rows)": (lambda build: model("four_bar"), "projection", 2.0, 1e-3),
    "slider-crank, torque of t (P1)": (lambda build: model("slider_crank_torque"), "projection", 2.0, 1e-3),
    # tyres, bushings, torsion bars, a driven rack: the issue-17 sample
    "van": (lambda build: compile_model(read_model_file(VEHICLES / "van.cadmotion.toml")), "projection", 0.2, 1e-3),
}


def _rk4(mdl, t_end, steps, dt, compiled, formulation="projection"):
    m, res = run(mdl, t_end, steps, formulation=formulation, integrator="RK4", dt=dt, rtol=1e-10, atol=1e-10,
                 options={"compiled_loop": compiled})
    assert m.complete, m.message
    assert (RK4_COMPILED in res.notes) == compiled
    return m, res


@pytest.mark.parametrize("case", sorted(RK4_CASES))
def test_compiled_rk4_takes_the_steps_of_the_python_rk4_loop(case, build):
    """The compiled loop against the Python loop of ``Formulation._run_rk4`` on the same compiled
    right-hand side: the same steps (each output interval cut alike), projections and angle
    bookkeeping, so the same states to round-off (measured: equal to the last bit on the
    slider-crank and the van)."""
    make, formulation, t_end, dt = RK4_CASES[case]
    mdl = make(build)
    a, ra = _rk4(mdl, t_end, 20, dt, True, formulation)
    b, rb = _rk4(mdl, t_end, 20, dt, False, formulation)
    assert ra.nsteps == rb.nsteps == round(t_end / dt) and ra.nproject == rb.nproject
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.quaternion, b.quaternion, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.velocity, b.velocity, rtol=0, atol=1e-10)
    for ca, cb in zip(a.joint_coordinates, b.joint_coordinates):  # angles continuous over the turns alike
        np.testing.assert_allclose(ca.values, cb.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.extra["energy.total"], b.extra["energy.total"], rtol=0, atol=1e-10)


def test_compiled_rk4_error_on_the_double_pendulum_falls_as_h4():
    """Global error of the rod angles at t = 1 s against the minimal-coordinate Lagrange solution
    (scipy DOP853 at 1e-13) for h = 8, 4, 2 ms: each halving of h divides it by 2⁴ = 16
    (accepted 11 to 21: the projections after the steps are at 1e-12, below the errors)."""
    mdl = model("double_pendulum")
    ref = _double_pendulum_lagrange(1.0, np.linspace(0.0, 1.0, 5))
    err = []
    for dt in (8e-3, 4e-3, 2e-3):
        m, _ = run(mdl, 1.0, 4, integrator="RK4", dt=dt, rtol=1e-12, atol=1e-12)
        assert m.complete and m.message == "", m.message
        err.append(np.max(np.abs(_rod_angles(m) - ref)))
    ratios = np.array(err[:-1]) / np.array(err[1:])
    assert np.all((ratios > 11) & (ratios < 21)), (err, ratios)
    assert err[-1] < 1e-7, err


def _toy_rk4(rhs=_toy_rhs):
    """The RK4 template compiled with the toy right-hand side (and the _dop853 templates it calls,
    unused here: no projection, no singular-configuration watch)."""
    from cadmotion.kernel.dynamics import _dop853 as D
    from cadmotion.kernel.dynamics import _rk4 as R4

    ns = {}
    exec("import math\nimport numba\nimport numpy as np\nfrom cadmotion.kernel.dynamics import _kernels as K\n"
         f"from cadmotion.kernel.dynamics._dop853 import {', '.join(D.HELPERS)}\n"
         f"from cadmotion.kernel.dynamics._rk4 import {', '.join(R4.HELPERS)}\n", ns)
    for fn in D.TEMPLATES + R4.TEMPLATES:
        exec("@numba.njit\n" + inspect.getsource(fn), ns)
    ns.update(rhs=rhs, windings=_no_windings, groups=_no_groups, step_limit=_no_step_limit,
              rotation_limit=_no_step_limit, choose_rows=_no_rows)

    def solve(times, dt):
        times = np.asarray(times, float)
        Y = np.zeros((len(times), 3))
        Y[0] = _toy_exact(0.0)
        stats = np.zeros(N_STATS)
        z = np.zeros(1)
        status = ns["rk4"](times[0], Y[0].copy(), times, dt, -1.0, 0, 0.0, z, np.zeros(8, np.int64), z, z, Y,
                           np.zeros((len(times), 1)), stats, np.zeros(3))
        return status, Y, stats

    return solve, D, R4


def test_rk4_template_is_the_classical_method_of_order_4():
    """On the toy ODE with its closed form: every output interval is cut into ⌈Δt / dt⌉ equal steps
    (4 evaluations each, the first stage reused from the step before), and the global error at
    t = 2 s falls by 2⁴ per halving of dt (ratios 14 to 18: the h⁵ term still shows at 0.1 s)."""
    solve, D, R4 = _toy_rk4()
    times = [0.0, 0.25, 0.3, 2.0]  # 0.25 s: ⌈2.5⌉ = 3 steps of 1/12 s at dt = 0.1 s
    err = []
    for dt in (0.1, 0.05, 0.025):
        status, Y, stats = solve(times, dt)
        steps = sum(math.ceil((b - a) / dt - 1e-9) for a, b in zip(times[:-1], times[1:]))
        assert status == D.DONE and stats[D.S_K] == len(times) and stats[D.S_NSTEPS] == steps
        assert stats[D.S_NFEV] == 1 + 4 * steps and stats[D.S_T] == 2.0
        assert stats[R4.S_STEP] == pytest.approx(1.7 / math.ceil(1.7 / dt - 1e-9), rel=1e-15)
        err.append(np.max(np.abs(Y[-1] - _toy_exact(2.0))))
    ratios = np.array(err[:-1]) / np.array(err[1:])
    assert np.all((ratios > 14) & (ratios < 18)), (err, ratios)


def test_rk4_template_stops_with_the_failing_step():
    """An evaluation that is not finite (the toy rhs after t = 0.7 s) ends the loop with
    NOT_FINITE, the frames before it filled and the start of the failed step reported."""
    solve, D, R4 = _toy_rk4(_toy_rhs_failing)
    status, Y, stats = solve(np.linspace(0.0, 1.0, 11), 0.05)
    assert status == D.NOT_FINITE
    assert stats[D.S_K] == 7 and 0.65 <= stats[D.S_T_FAIL] <= 0.7 < stats[D.S_T_EVAL]
    np.testing.assert_allclose(Y[6], _toy_exact(0.6), rtol=0, atol=1e-6)
