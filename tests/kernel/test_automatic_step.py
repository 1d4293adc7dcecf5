"""An automatic fixed step answers for its own accuracy (kernel/dynamics/forward.py ``_refined``).

Without the compiled Radau loop (FreeCAD's Python, no numba) a stiff model's automatic method is index-3
generalized-α at a fixed step set by the output interval (at most 10 ms). The run's global error estimate
(``motion.error``) says how far that step leaves the motion; where it comes within a quarter of its allowance (a
hundredth of each part's motion) the step is halved as often as the method's second order asks, and the finer run
(the companion already run at that step) is the result.

The reference is closed form: two discs (0.05 kg m² about the axis each) on coaxial revolutes, the rim on the
ground through a soft rotational spring (5 N m/rad), the hub on the rim through a stiff, heavily damped one
(1e4 N m/rad, 100 N m s/rad: a mode of |λ| = 3.9e3 1/s, 195 times the 0.05 s output interval — stiff). Both start
spinning at 1 rad/s. The motion is linear, θ(t) = C exp(A t) x0, with A from the two springs.
"""
import math

import numpy as np
import pytest
import scipy.linalg as sla

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import global_error
from cadmotion.kernel.dynamics.equations import Dynamics
from cadmotion.kernel.dynamics.forward import run
from cadmotion.kernel.dynamics.global_error import pose_error
from cadmotion.kernel.dynamics.index3 import Index3Formulation
from cadmotion.kernel.dynamics.invariants import Bodies

INERTIA, SOFT, STIFF, DAMPING, SPIN = 0.05, 5.0, 1e4, 100.0, 1.0
RHO = math.sqrt(3 * INERTIA)  # each disc's radius of gyration (1 kg, isotropic): the lever of ``motion.error``
FRAMES_PER_SECOND = 20


def _disc():
    return {"position": [0, 0, 0], "mass": 1.0, "com": [0, 0, 0], "inertia": [INERTIA] * 3}


@pytest.fixture(scope="module")
def discs():
    axis = {"origin": [0, 0, 0], "axis": [0, 0, 1]}
    data = {"gravity": [0, 0, 0], "parts": {"ground": {"fixed": True}, "rim": _disc(), "hub": _disc()},
            "joints": [{"name": "outer", "type": "revolute", "parts": ["ground", "rim"], **axis},
                       {"name": "inner", "type": "revolute", "parts": ["rim", "hub"], **axis}],
            "forces": [{"name": "soft", "type": "rotational-spring-damper", "joint": "outer", "stiffness": SOFT},
                       {"name": "stiff", "type": "rotational-spring-damper", "joint": "inner", "stiffness": STIFF,
                        "damping": DAMPING}],
            "initial_velocity": {"rim": {"angular_velocity": [0, 0, SPIN]},
                                 "hub": {"angular_velocity": [0, 0, SPIN]}}}
    return compile_model(parse_model(data, source="discs.toml"))


@pytest.fixture(autouse=True)
def without_numba(monkeypatch):
    """The compiled Radau loop not there: the automatic choice is index3 / generalized-alpha at a fixed step."""
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", "0")


def _angles(t):
    """(nt, 2) rad: the rim's and the hub's angles, the linear motion's closed form."""
    k = np.array([[SOFT + STIFF, -STIFF], [-STIFF, STIFF]])
    c = np.array([[DAMPING, -DAMPING], [-DAMPING, DAMPING]])
    a = np.block([[np.zeros((2, 2)), np.eye(2)], [-k / INERTIA, -c / INERTIA]])
    return np.array([sla.expm(a * ti) @ [0.0, 0.0, SPIN, SPIN] for ti in t])[:, :2]


def _true_error(motion):
    """The largest ρ |Δθ| (m) of either disc against the closed form: the measure ``motion.error`` estimates."""
    exact = _angles(motion.time)
    worst = 0.0
    for k, part in enumerate(("rim", "hub")):
        q = motion.quaternion[:, motion.parts.index(part)]
        theta = np.unwrap(2 * np.arctan2(q[:, 3], q[:, 0]))
        worst = max(worst, float(np.max(RHO * np.abs(theta - exact[:, k]))))
    return worst


def _estimate(result):
    (check,) = [c for c in result.invariants.checks if c.name == "motion.error"]
    return check


@pytest.mark.parametrize("span, halvings", [(2.0, 1), (8.0, 2)])
def test_an_automatic_step_is_halved_until_its_error_is_a_quarter_of_its_allowance(discs, span, halvings):
    """Over 2 s the 10 ms step is 0.53 of its allowance (halved once); over 8 s 2.4 times beyond it, which the run
    reported as a broken check before (halved twice: e ∝ h², 2.4 × 4 / 4² < 1). The motion returned is within a
    quarter of its allowance against the closed form, and the estimate is the error."""
    motion, result = run(discs, span, int(span * FRAMES_PER_SECOND))
    assert (result.formulation, result.integrator) == ("index3", "generalized-alpha")
    assert result.dt == pytest.approx(0.01 / 2 ** halvings)
    assert f"the automatic step 0.01 s halved {halvings} time(s) to {result.dt:.3g} s" in result.notes[-1]
    estimate, true = _estimate(result), _true_error(motion)
    assert result.invariants.ok and motion.complete
    assert true <= global_error.REFINE_SHARE * estimate.allowed
    assert true / 2 <= estimate.max_drift <= 2 * true, (true, estimate.max_drift)


def test_a_step_the_user_asked_for_is_kept_and_its_error_reported(discs):
    """The same 8 s at ``dt = 0.01`` asked for: the step stands, and the estimate says it is beyond its allowance."""
    motion, result = run(discs, 8.0, 160, formulation="index3", integrator="generalized-alpha", dt=0.01)
    assert result.dt == 0.01 and not any("halved" in note for note in result.notes)
    estimate = _estimate(result)
    assert estimate.broken and estimate.max_drift == pytest.approx(_true_error(motion), rel=0.5)


def test_the_finer_run_is_the_companion_already_run(discs, monkeypatch):
    """Over 2 s: the run at 10 ms, its companions at 5 ms and (the estimate within a quarter of the allowance looks
    again) 2.5 ms; the 5 ms run becomes the result and its companion is the 2.5 ms one. Three integrations, none
    twice."""
    steps = []
    solve = Index3Formulation.solve

    def counted(self, times, q0, v0, **kw):
        steps.append(kw["dt"])
        return solve(self, times, q0, v0, **kw)

    monkeypatch.setattr(Index3Formulation, "solve", counted)
    run(discs, 2.0, 40)
    assert steps == [0.01, 0.005, 0.0025]


def test_the_step_is_halved_at_most_max_halvings_times_and_the_estimate_kept(discs, monkeypatch):
    """With one halving allowed, the 8 s run stops at 5 ms, its error 0.6 of the allowance: reported, not broken."""
    monkeypatch.setattr(global_error, "MAX_HALVINGS", 1)
    motion, result = run(discs, 8.0, 160)
    estimate = _estimate(result)
    assert result.dt == 0.005 and "halved 1 time(s)" in result.notes[-1]
    assert global_error.REFINE_SHARE * estimate.allowed < estimate.max_drift <= estimate.allowed
    assert estimate.max_drift == pytest.approx(_true_error(motion), rel=0.5)


def _stiff_bushing():
    """Two parts on a pivot and a ball joint, joined by a stiff, damped bushing (1e6–3e6 N/m, 30–90 N s/m;
    3e4–7e4 N m/rad, 3–9 N m s/rad), swinging under gravity."""
    parts = {"ground": {"fixed": True},
             "b1": {"position": [0.1, 0.2, 0.0], "orientation": [0.9, 0.2, 0.3, 0.1], "mass": 1.5,
                    "com": [0.3, 0.1, 0.05], "inertia": [0.02, 0.03, 0.04, 0.001, 0.002, 0.0]},
             "b2": {"position": [0.5, -0.1, 0.2], "orientation": [0.7, -0.1, 0.5, 0.2], "mass": 2.0,
                    "com": [0.1, 0.0, -0.05], "inertia": [0.03, 0.02, 0.04]}}
    joints = [{"name": "pivot", "type": "revolute", "parts": ["ground", "b1"], "origin": [0, 0, 0],
               "axis": [0, 0.3, 1]},
              {"name": "ball", "type": "spherical", "parts": ["b1", "b2"], "origin": [0.5, 0.2, 0.1]}]
    bushing = {"name": "mount", "type": "bushing", "parts": ["b1", "b2"], "points": [[0.3, 0.3, 0.1], [0.35, 0.2, 0.05]],
               "stiffness": [1e6, 2e6, 3e6], "damping": [30.0, 60.0, 90.0],
               "rotational_stiffness": [3e4, 5e4, 7e4], "rotational_damping": [3.0, 6.0, 9.0]}
    return compile_model(parse_model({"gravity": [0, -9.81, 0], "parts": parts, "joints": joints,
                                      "forces": [bushing]}, source="bushing.toml"))


def test_a_step_error_bound_that_overshoots_yields_to_the_error_measured(monkeypatch):
    """The automatic index-3 step on a stiff bushing (0.21 ms, resolving its lightly damped modes) is 1.0e-3 m off a
    Radau run at rtol 1e-11 over 3 s, 0.07 of its allowance. Its a-priori bound ``steps.error`` = C N (h ω)^q charged
    the bushing's first transient (ω = |a| / |v| = 2e4 1/s) at full amplitude and flagged this right run at 1e5 times
    its allowance; the error measured (``motion.error``, the companion at half the step) now decides, and the report
    says the bound yielded."""
    model = _stiff_bushing()
    motion, result = run(model, 3.0, 30)
    assert (result.formulation, result.integrator) == ("index3", "generalized-alpha")
    assert result.invariants.ok, [c.message() for c in result.invariants.broken]
    assert any(s.startswith("steps.error: its bound") and "yields to motion.error" in s
               for s in result.invariants.skipped)
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", "compile")
    reference, _ = run(model, times=motion.time, formulation="projection", integrator="Radau", rtol=1e-11,
                       atol=1e-11, estimate_error=False)
    true = float(np.max(pose_error(motion, reference, Bodies.of(Dynamics(model)))))
    estimate = _estimate(result)
    assert true <= estimate.allowed / 4
    assert true / 2 <= estimate.max_drift <= 2 * true, (true, estimate.max_drift)
