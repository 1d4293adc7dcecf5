"""A dynamic run checks itself (issue 13): energy balance, violations, momentum, step count.

References, none of them the monitor's own output: conservation of energy on conservative
samples (at every tolerance, in every formulation); a known energy defect — a damper's work
deliberately left out of the balance, a drop injected into the energy series, a velocity
kick injected into a free system (its momentum change m Δv by hand); the N-four-bar (A02)
run through its singular configurations the way the solver did before they were crossed
(its energy drains at a flat configuration, whose times come from the independent 1-DOF
reduction 3 θ̈ + 34.335 cos θ = 0); step counts far beyond what any integrator needs.
"""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cadmotion.errors import MechanismError, SolverError
from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import FORMULATIONS, simulate
from cadmotion.kernel.dynamics.forward import check_run, describe_methods, prepare, run, to_motion
from cadmotion.kernel.dynamics.global_error import pose_error
from cadmotion.kernel.dynamics.invariants import Accuracy, Bodies, check_motion, free_system

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"


def sample(name):
    return compile_model(read_model_file(SAMPLES / f"{name}.cadmotion.toml"))


@pytest.fixture(scope="module")
def models():
    return {name: sample(name) for name in ("four_bar", "double_pendulum", "n_four_bar")}


def invariant_events(motion):
    return [e for e in motion.events if e.kind == "invariant"]


# ---------------------------------------------------------------------------- no false alarms
@pytest.mark.parametrize("name", ["four_bar", "double_pendulum", "n_four_bar"])
def test_conservative_samples_at_default_tolerances_keep_every_invariant(models, name):
    motion, res = run(models[name], 10.0, 200)
    report = res.invariants
    assert res.success and report.ok, [c.message() for c in report.broken]
    assert not invariant_events(motion)
    assert [c.name for c in report.checks] == ["energy", "violation.position", "violation.velocity", "steps",
                                               "motion.error"]
    assert any("fixed" in why for why in report.skipped)  # grounded: momentum is not conserved
    energy = report.checks[0]
    # the samples are conservative: the drift is tiny against their energy, and inside the allowance
    assert energy.max_drift < 1e-5 * np.max(motion.extra["energy.kinetic"]) <= energy.allowed


@pytest.mark.parametrize("tol", [1e-4, 1e-6, 1e-8, 1e-10])
@pytest.mark.parametrize("name", ["four_bar", "double_pendulum", "n_four_bar"])
def test_no_false_alarm_on_conservative_samples_from_loose_to_tight_tolerances(models, references, name, tol):
    """No drift check breaks; the global error estimate (``motion.error``) breaks where the run is off a run at
    rtol 1e-12 by more than its allowance (the double pendulum is chaotic: at rtol 1e-4 it is 0.1 m off after 10 s),
    and only there, within the estimate's factor of two."""
    motion, res = run(models[name], 10.0, 100, rtol=tol, atol=tol)
    assert res.success
    drifts = [c for c in res.invariants.broken if c.name != "motion.error"]
    assert not drifts, [c.message() for c in drifts]
    (check,) = [c for c in res.invariants.checks if c.name == "motion.error"]
    true = float(np.max(pose_error(motion, references[name], Bodies.of(prepare(models[name])[0]))))
    assert true > check.allowed / 2 if check.broken else true < 2 * check.allowed, (true, check.line())
    assert [e.items for e in invariant_events(motion)] == ([("motion.error",)] if check.broken else [])


@pytest.fixture(scope="module")
def references(models):
    """Each sample's motion at rtol 1e-12 (atol 1e-14), 10 s, 100 intervals."""
    return {name: run(model, 10.0, 100, rtol=1e-12, atol=1e-14, estimate_error=False)[0]
            for name, model in models.items()}


@pytest.mark.parametrize("formulation", sorted(FORMULATIONS))
def test_no_false_alarm_in_any_formulation(models, formulation):
    motion, res = run(models["double_pendulum"], 2.0, 40, formulation=formulation)
    assert res.success and res.invariants.ok, [c.message() for c in res.invariants.broken]


def test_a_stiff_model_solved_explicitly_is_slow_but_not_a_collapse():
    """The flyball governor (stiff springs) takes ~10⁴ DOP853 steps: stability, not a collapse."""
    motion, res = run(sample("flyball_governor"), 10.0, 100, formulation="projection")
    assert res.integrator == "DOP853" and res.success and res.nsteps > 5000
    assert res.invariants.ok, [c.message() for c in res.invariants.broken]


# ---------------------------------------------------------------------------- broken balances are caught
def _damped_pendulum(build, damping):
    data = {
        "gravity": [0, -9.81, 0],
        "parts": {"ground": {"fixed": True},
                  "arm": {"position": [0, 0, 0], "mass": 1.5, "com": [0.3, 0.1, 0.0], "inertia": [0.02, 0.03, 0.04]}},
        "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "arm"], "origin": [0, 0, 0],
                    "axis": [0, 0, 1]}],
        "forces": [{"name": "d", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 0.0,
                    "damping": damping}],
        "initial_velocity": {"arm": {"angular_velocity": [0, 0, 3.0]}},
    }
    return compile_model(build(data))


def test_damper_work_left_out_of_the_balance_is_flagged_with_its_size_and_time(build):
    model = _damped_pendulum(build, 0.5)
    times = np.linspace(0.0, 2.0, 41)
    dyn, q0, v0, angles, refs = prepare(model)
    form = FORMULATIONS["projection"](dyn, angles=angles, refs=refs)
    result = form.solve(times, q0, v0, integrator="DOP853", rtol=1e-8, atol=1e-10)
    honest = to_motion(dyn, result, "projection", "DOP853")
    kw = dict(formulation="projection", integrator="DOP853", rtol=1e-8, atol=1e-10)
    assert check_run(dyn, honest, result, **kw).ok
    W = honest.extra["work.nonconservative"]
    assert W[-1] < -0.5  # the damper took a good part of the energy

    # the same run with the damper's work left out: E − E0 falls by exactly the work done
    cheat = replace(result, work=np.zeros_like(result.work))
    report = check_run(dyn, to_motion(dyn, cheat, "projection", "DOP853"), cheat, **kw)
    (energy,) = report.broken
    assert energy.name == "energy"
    assert energy.max_drift == pytest.approx(np.max(np.abs(W)), rel=1e-6)
    first = times[np.argmax(np.abs(W) > energy.allowed)]
    assert energy.first_time == pytest.approx(first)
    (event,) = report.events()
    assert event.kind == "invariant" and event.time == pytest.approx(first) and event.items == ("energy",)
    assert f"{energy.max_drift:.3g} J" in event.message and "tighten" in event.message


def test_an_energy_drop_injected_into_a_run_is_flagged_at_the_frame_it_happens(models):
    model = models["double_pendulum"]
    motion, res = run(model, 4.0, 80)
    assert res.invariants.ok
    drop = 0.01 * np.max(motion.extra["energy.kinetic"])  # 1 % of the largest kinetic energy
    k0 = 37
    E = motion.extra["energy.total"].copy()
    E[k0:] -= drop
    broken_motion = replace(motion, extra={**motion.extra, "energy.total": E}, events=[])
    dyn = prepare(model)[0]
    report = check_run(dyn, broken_motion, res, formulation="projection", integrator="DOP853", rtol=1e-8,
                       atol=1e-10)
    assert [c.name for c in report.broken] == ["energy"]
    energy = report.broken[0]
    assert energy.first_time == pytest.approx(motion.time[k0])
    assert energy.max_drift == pytest.approx(drop, rel=1e-3)


def test_the_allowance_shrinks_with_the_tolerance(models):
    loose = run(models["double_pendulum"], 4.0, 40, rtol=1e-6, atol=1e-6)[1].invariants.checks[0]
    tight = run(models["double_pendulum"], 4.0, 40, rtol=1e-10, atol=1e-10)[1].invariants.checks[0]
    assert loose.name == tight.name == "energy"
    assert tight.allowed < 1e-2 * loose.allowed


# ---------------------------------------------------------------------------- momentum of a free system
FREE = {
    "parts": {"a": {"position": [0, 0, 0], "mass": 2.0, "com": [0.1, 0.0, 0.0], "inertia": [0.02, 0.03, 0.04]},
              "b": {"position": [0.5, 0, 0], "orientation": [0.9, 0.2, 0.3, 0.1], "mass": 1.0,
                    "com": [0.2, 0.05, 0.0], "inertia": [0.01, 0.015, 0.02, 0.001, 0.0, 0.002]}},
    "joints": [{"name": "hinge", "type": "revolute", "parts": ["a", "b"], "origin": [0.5, 0, 0], "axis": [0, 0.3, 1]}],
    "forces": [{"name": "k", "type": "rotational-spring-damper", "joint": "hinge", "stiffness": 3.0, "damping": 0.05}],
    "initial_velocity": {"a": {"velocity": [0.3, -0.1, 0.2], "angular_velocity": [0.5, 1.0, 2.0]},
                         "b": {"angular_velocity": [-1, 0.5, 0]}},
}


def test_free_system_keeps_both_momenta_and_a_kick_is_flagged(build):
    model = compile_model(build(FREE))
    assert free_system(model.spec) == (True, "")
    motion, res = run(model, 3.0, 60)
    checks = {c.name: c for c in res.invariants.checks}
    assert res.invariants.ok and {"momentum.linear", "momentum.angular"} <= set(checks)
    assert checks["momentum.linear"].max_drift < 1e-9 * checks["momentum.linear"].scale
    # a kick of 1 mm/s on part a from frame 30 on: linear momentum changes by m_a Δv = 2e-3 kg m/s
    kicked = replace(motion, velocity=motion.velocity.copy(), events=[])
    ia = motion.part_index("a")
    kicked.velocity[30:, ia, 0] += 1e-3
    dyn = prepare(model)[0]
    report = check_run(dyn, kicked, res, formulation="projection", integrator="DOP853", rtol=1e-8, atol=1e-10)
    broken = {c.name: c for c in report.broken}
    assert broken["momentum.linear"].max_drift == pytest.approx(2.0 * 1e-3, rel=1e-6)
    assert broken["momentum.linear"].first_time == pytest.approx(motion.time[30])


@pytest.mark.parametrize("change, why", [
    (lambda d: {**d, "gravity": [0, 0, -9.81]}, "gravity"),
    (lambda d: {**d, "parts": {**d["parts"], "a": {**d["parts"]["a"], "fixed": True}}}, "fixed"),
    (lambda d: {**d, "forces": [{"name": "bu", "type": "bushing", "parts": ["a", "b"], "points": [[0.5, 0, 0]],
                                 "stiffness": 10.0}]}, "bushing"),
])
def test_momentum_is_only_checked_where_it_is_conserved(build, change, why):
    ok, reason = free_system(build(change(FREE)))
    assert not ok and why in reason


# ---------------------------------------------------------------------------- step count
def test_a_step_count_far_beyond_the_need_is_a_collapse_unless_stability_explains_it(models):
    motion, res = run(models["double_pendulum"], 10.0, 100)
    acc = Accuracy("DOP853", 1e-8, 1e-10, nsteps=res.nsteps, nstate=28, ncon=10)
    assert check_motion(motion, acc).ok
    collapsed = replace(acc, nsteps=10 ** 7)  # 10⁶ steps per second of a pendulum
    report = check_motion(motion, collapsed)
    assert [c.name for c in report.broken] == ["steps"]
    assert "collapsed" in report.broken[0].message()
    stiff = check_motion(motion, collapsed, stability_steps=lambda: 5e6)  # a stiff model needs them
    assert stiff.ok
    # fixed step: RK4 at dt = 1 ms needs 10⁴ steps; 10⁷ means the step was cut again and again
    assert check_motion(motion, Accuracy("RK4", 1e-8, 1e-10, 10 ** 4, 28, 10, dt=1e-3)).ok
    assert not check_motion(motion, Accuracy("RK4", 1e-8, 1e-10, 10 ** 7, 28, 10, dt=1e-3)).ok


# ---------------------------------------------------------------------------- what ran, and bad input
def test_the_stats_event_names_the_integrator_that_ran(models):
    model = models["double_pendulum"]
    m, res = run(model, 1.0, 10, formulation="index3")
    assert res.integrator == "generalized-alpha"
    (stats,) = [e for e in m.events if e.kind == "stats"]
    assert stats.message.startswith("index3 / generalized-alpha:") and "DOP853" not in stats.message
    m, res = run(model, 1.0, 10)
    (stats,) = [e for e in m.events if e.kind == "stats"]
    compiled = any("compiled loop" in n for n in res.notes)
    # the double pendulum is an open tree: the default runs it in joint coordinates
    assert stats.message.startswith("semi-recursive / DOP853" + (" (compiled loop)" if compiled else "") + ":")
    with pytest.raises(SolverError, match="does not run the integrator 'DOP853'"):
        simulate(model, 1.0, 10, formulation="index3", integrator="DOP853")


@pytest.mark.parametrize("kw, words", [
    (dict(rtol=0.0), "rtol (--rtol)"), (dict(rtol=-1e-8), "rtol (--rtol)"), (dict(rtol=1.0), "rtol (--rtol)"),
    (dict(rtol=float("nan")), "rtol (--rtol)"), (dict(atol=0.0), "atol (--atol)"), (dict(atol=2.0), "atol (--atol)"),
    (dict(atol=np.array([1e-8, -1.0])), "atol (--atol)"),
    (dict(dt=0.0), "(--dt)"), (dict(dt=-1e-3), "(--dt)"), (dict(dt=float("inf")), "(--dt)"),
    (dict(dt=3.0, integrator="RK4"), "larger than the span 2 s"),
    (dict(times=[0.0, 1.0, 0.5]), "increase"),
])
def test_bad_settings_are_errors_that_name_the_setting(models, kw, words):
    with pytest.raises(SolverError) as err:
        simulate(models["double_pendulum"], 2.0, 10, **kw)
    assert words in str(err.value)


def test_tiny_but_positive_tolerances_and_a_step_equal_to_the_span_are_accepted(models):
    m = simulate(models["double_pendulum"], 0.01, 1, rtol=1e-13, atol=1e-300, integrator="RK4", dt=0.01)
    assert m.complete


@pytest.mark.parametrize("change, words", [
    (dict(mass=float("nan")), "positive mass"),
    (dict(mass="heavy"), "a mass is a number of kg"),
    (dict(inertia=((1.0, 0.5, 0), (0, 1.0, 0), (0, 0, 1.0))), "not symmetric"),
    (dict(inertia=((0.0, 0, 0), (0, 0.1, 0), (0, 0, 0.1))), "not positive definite"),
    (dict(inertia="big"), "finite 3x3 tensor"),
])
def test_bad_mass_properties_name_the_part(models, change, words):
    spec = models["double_pendulum"].spec
    parts = tuple(replace(p, **change) if p.name == "link2" else p for p in spec.parts)
    assert any(p.name == "link2" for p in parts)
    with pytest.raises(MechanismError) as err:
        simulate(compile_model(replace(spec, parts=parts)), 0.1, 1)
    assert "'link2'" in str(err.value) and words in str(err.value)


def test_every_formulation_and_integrator_has_a_line(models):
    forms, integrators = describe_methods()
    assert [f[0] for f in forms] == list(FORMULATIONS)
    runs = set()
    for name, summary, default, names in forms:
        cls = FORMULATIONS[name]
        assert summary and "\n" not in summary and "docstring" not in summary
        assert default == cls.default_integrator and set(names) == set(cls.integrators)
        runs.update(names)
    assert {n for n, _ in integrators} == runs
    assert all(summary for _, summary in integrators)
    from cadmotion.plugin.cli import FORMULATION_NAMES, INTEGRATOR_NAMES

    assert set(FORMULATION_NAMES) == set(FORMULATIONS) and set(INTEGRATOR_NAMES) == runs
