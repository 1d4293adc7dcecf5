"""The run's own checks through compliant contacts (issue 13 × issue 16): a contact is a fast, short
motion of its own, which the output frames may miss.

References, none of them the checks' own output: the contact's duration from the force law (a linear
contact lasts π sqrt(m/k)); the same run reported at frames that see the contact and at frames that
miss it (the verdict must not depend on the frames); an energy drop injected into the frames; a step
dt larger than a third of the contact's duration (no error bound of RK4's order holds there).
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import check_run, prepare, run

G = 9.81


def drop(k, n, h0=0.1, R=0.05, m=1.0):
    """A 1 kg ball (R = 0.05 m) dropped from h0 onto a floor: undamped, frictionless, F = k δ^n."""
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, -G],
        "parts": {"floor": {"fixed": True},
                  "ball": {"position": [0, 0, R + h0], "mass": m, "inertia": [0.4 * m * R * R] * 3}},
        "contacts": [{"name": "c", "parts": ["ball", "floor"], "method": "compliant", "damping": 0.0,
                      "stiffness": k, "exponent": n, "shape": [{"sphere": R}, {"plane": {}}]}]}, source="drop"))


def glance(k, where):
    """A 0.3 kg ball (R = 0.02 m) at 1 m/s, no gravity, glancing 2.5 mm deep off a fixed 0.1 m cube's edge
    or corner at t = 0.1 s (undamped, frictionless, n = 1.5)."""
    R, m, h = 0.02, 0.3, 0.05
    if where == "edge":
        p, d, e = np.array([1.0, 0, 1.0]) / math.sqrt(2), np.array([1.0, 0, -1.0]) / math.sqrt(2), np.array([h, 0, h])
    else:
        p, d, e = np.ones(3) / math.sqrt(3), np.array([1.0, -1.0, 0]) / math.sqrt(2), np.array([h, h, h])
    c0 = e + (R - 0.0025) * p - 0.1 * d
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, 0],
        "parts": {"block": {"fixed": True}, "ball": {"position": c0.tolist(), "mass": m, "inertia": [0.4 * m * R * R] * 3}},
        "initial_velocity": {"ball": {"velocity": d.tolist()}},
        "contacts": [{"name": "c", "parts": ["ball", "block"], "method": "compliant", "damping": 0.0, "stiffness": k,
                      "exponent": 1.5, "shape": [{"sphere": R}, {"box": [0.1, 0.1, 0.1]}]}]}, source=f"glance {where}"))


def checks(res):
    return {c.name: c for c in res.invariants.checks}


def relative_drift(motion):
    E, W = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    return float(np.max(np.abs(E - E[0] - W)) / abs(E[0]))


# ---------------------------------------------------------------------------- the step's own error at the onset
def test_the_onset_constant_is_the_quadrature_error_of_the_steps_samples():
    from cadmotion.kernel.dynamics.invariants import onset_constant

    # RK4 samples a force t ↦ (t − θ)_+ at 0, ½, ½, 1 with weights 1/6, 4/6, 1/6 (Simpson): at θ = ½ it
    # sees 1/12 of the exact 1/8, the largest miss over θ
    assert onset_constant("RK4", 1.0) == pytest.approx(1 / 8 - 1 / 12, rel=1e-3)
    assert onset_constant("BDF", 1.5) == 1.0
    for name in ("RK23", "RK45", "DOP853", "Radau"):
        assert 0 < onset_constant(name, 1.5) < onset_constant(name, 1.0) < 0.1


# ---------------------------------------------------------------------------- no false alarms
def test_a_tight_dop853_drop_is_not_flagged_for_the_error_of_its_step_across_the_touch():
    """DOP853 at rtol 1e-12: the drift (≈ 4e-9 of E0) comes from the step that crosses the touch, whose
    error is of order n + 1 = 2 and which the error estimate does not bound; the run limits that step to
    TOUCH_STEP · t_c, and that is what its accuracy warrants (it was flagged against N √n rtol G_rel)."""
    motion, res = run(drop(1e4, 1.0), 0.4, 200, integrator="DOP853", rtol=1e-12, atol=1e-14)
    assert res.success
    energy = checks(res)["energy"]
    assert 1e-9 < relative_drift(motion) < 1e-7
    assert not energy.broken, energy.message()
    # the onsets' share stays far below the energy: the check still sees a 1e-5 defect
    assert energy.allowed < 1e-5 * energy.scale


@pytest.mark.parametrize("integrator, rtol", [("Radau", 1e-10), ("BDF", 1e-8), ("RK45", 1e-10)])
@pytest.mark.parametrize("where", ["edge", "corner"])
def test_a_glancing_stiff_impact_between_frames_is_no_step_collapse(where, integrator, rtol):
    """k = 1e9: the contact lasts ≈ 60 µs between two frames of a free flight (rate 0 at the frames); its
    step limit and its own rate set the steps (they were flagged as a collapse beyond 100 × 1 step)."""
    motion, res = run(glance(1e9, where), 0.2, 50, integrator=integrator, rtol=rtol, atol=rtol * 1e-2)
    assert res.success and res.nsteps > 100
    v = motion.velocity[-1, motion.part_index("ball")]
    assert abs(np.linalg.norm(v) - 1.0) < 1e-4 and abs(v[2]) > 0.05  # it did glance off, elastically
    assert res.invariants.ok, [c.message() for c in res.invariants.broken]
    assert "compliant contacts" in checks(res)["steps"].description


def test_an_rk4_drop_gets_the_same_verdict_whether_the_frames_see_the_contact_or_not():
    """RK4 at dt = T/10 (T = 12 ms, n = 1.5, k = 1e6) through the impact: frames every 2 ms see the
    contact, frames every 40 ms miss it. The same steps, the same drift (1e-4 of E0, the order of RK4's
    error at h ω_c = π/10), the same verdict (the coarse frames flagged it: the steps in contact were
    charged at the free fall's rate)."""
    model = drop(1e6, 1.5)
    dt = 0.01198 / 10
    reports = []
    for frames in (200, 10):
        motion, res = run(model, 0.4, frames, integrator="RK4", dt=dt)
        assert 1e-5 < relative_drift(motion) < 1e-3
        reports.append(res.invariants)
    assert [r.ok for r in reports] == [True, True], [c.message() for r in reports for c in r.broken]
    # h ω_c ≈ π/10 at the impact speed; between coarse frames the speed bound (and so ω_c) is higher
    fine, coarse = ({c.name: c for c in r.checks}["steps.resolution"].max_drift for r in reports)
    assert 0.3 < fine <= coarse < 0.5


# ---------------------------------------------------------------------------- what is still caught
def test_an_rk4_step_that_does_not_resolve_the_contact_is_flagged():
    """dt = T/2 (n = 1.5, k = 1e4, T = 76 ms): h ω_c = π/2 > 1, the error bound (h ω)^q holds no more
    (the frames saw the contact: ω_m = 35/s charged to every step, and the run passed unflagged)."""
    motion, res = run(drop(1e4, 1.5), 0.4, 10, integrator="RK4", dt=0.0378)
    broken = {c.name: c for c in res.invariants.broken}
    assert "steps.resolution" in broken
    assert broken["steps.resolution"].max_drift > 1.0  # π/2 at the impact's speed, estimated from the frames
    assert "does not resolve the contact" in broken["steps.resolution"].message()


def test_an_energy_drop_injected_after_an_impact_is_flagged():
    model = drop(1e6, 1.5)
    motion, res = run(model, 0.4, 200, integrator="DOP853", rtol=1e-8, atol=1e-10)
    assert res.invariants.ok
    E = motion.extra["energy.total"].copy()
    k0 = 120  # after the impact (t = 0.143 s)
    E[k0:] -= 1e-5 * E[0]
    broken_motion = replace(motion, extra={**motion.extra, "energy.total": E}, events=[])
    dyn = prepare(model)[0]
    report = check_run(dyn, broken_motion, res, formulation="projection", integrator="DOP853", rtol=1e-8,
                       atol=1e-10)
    assert [c.name for c in report.broken] == ["energy"]
    assert report.broken[0].first_time == pytest.approx(motion.time[k0])
