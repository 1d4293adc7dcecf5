"""A run that starts on numpy goes on in the compiled loop once its library is ready.

With an empty code cache a dynamic run starts on the numpy equations while the library
compiles (:mod:`cadmotion.kernel.dynamics.late_compiled`); at a recorded frame after the
library's ready marker appears, it goes on from that frame's accepted state in the compiled loop
of the same integrator. Here the marker "appears" after a given number of looks (the library is
compiled already in the test session): the switched run must say so in its notes, keep the
energy of a conservative pendulum (an independent invariant) and agree with a run that was
compiled from its start — to round-off for fixed RK4 steps, which both loops take identically,
and to the tolerance for DOP853, whose step sequence restarts at the switch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import fast, forward, late_compiled, library

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"

pytestmark = pytest.mark.skipif(not fast.available(), reason="the compiled path needs numba")


@pytest.fixture
def library_ready_after(monkeypatch):
    """``set(n)``: the library reads as not compiled when the run is set up and for its first
    n looks, then as ready (every frame looks: no wait between looks)."""
    monkeypatch.setattr(late_compiled, "CHECK_EVERY_S", 0.0)
    looks = {"left": None, "count": 0}

    def ready(dyn):
        looks["count"] += 1
        looks["left"] -= 1
        return looks["left"] < 0

    def arm(n):
        looks["left"] = n
        monkeypatch.setattr(library, "ready", lambda dyn: False)
        monkeypatch.setattr(library, "library_ready", ready)
        return looks

    return arm


def _run(path, **kwargs):
    """A run without the global error's companion run, whose looks at the library these tests would count too."""
    model = compile_model(load(path))
    return forward.run(model, estimate_error=False, **kwargs)


def _switch_notes(result):
    return [n for n in result.notes if "compiled from there on" in n]


def test_dop853_run_switches_keeps_energy_and_agrees_to_tolerance(library_ready_after):
    kwargs = dict(times=np.linspace(0.0, 2.0, 41), formulation="projection", integrator="DOP853", rtol=1e-10,
                  atol=1e-10)
    path = SAMPLES / "double_pendulum.cadmotion.toml"
    _, compiled = _run(path, **kwargs)
    assert not _switch_notes(compiled)
    looks = library_ready_after(5)
    motion, result = _run(path, **kwargs)
    assert result.success, result.message
    notes = _switch_notes(result)
    assert len(notes) == 1 and "DOP853 in the compiled loop" in result.notes
    from cadmotion.plugin.cli import _notes

    assert notes[0] in _notes(result.notes)  # the command line's summary shows it
    t_switch = float(notes[0].split("t = ")[1].split(" s")[0])
    assert 0.0 < t_switch < 2.0 and looks["count"] == 6
    assert len(result.t) == 41 and np.allclose(result.t, kwargs["times"])
    # the pendulum is conservative: its mechanical energy is the independent check
    energy = motion.extra["energy.total"]
    assert np.max(motion.extra["energy.kinetic"]) > 1.0  # it does swing
    assert np.ptp(energy) <= 1e-7 * max(1.0, np.abs(energy).max())
    # the same trajectory as the run compiled from the start, to the tolerance (the step
    # sequence restarts at the switch)
    assert np.abs(result.q - compiled.q).max() <= 1e-7
    assert np.abs(result.v - compiled.v).max() <= 1e-6



@pytest.mark.parametrize("integrator", ["RK45", "LSODA"])
def test_an_integrator_without_a_compiled_loop_goes_on_in_its_own_loop_on_the_compiled_rhs(library_ready_after,
                                                                                          integrator):
    # RK45 and LSODA have no compiled loop: once the library is ready they restart their own loop from the
    # accepted state on the compiled right-hand side (before, such a run stayed on numpy to its end)
    kwargs = dict(times=np.linspace(0.0, 2.0, 41), formulation="projection", integrator=integrator, rtol=1e-10,
                  atol=1e-10)
    path = SAMPLES / "double_pendulum.cadmotion.toml"
    _, compiled = _run(path, **kwargs)
    looks = library_ready_after(5)
    motion, result = _run(path, **kwargs)
    assert result.success, result.message
    notes = _switch_notes(result)
    assert len(notes) == 1 and f"in {integrator}'s loop" in notes[0] and looks["count"] == 6
    assert not any("in the compiled loop" in n for n in result.notes)
    assert len(result.t) == 41 and np.allclose(result.t, kwargs["times"])
    energy = motion.extra["energy.total"]  # conservative: the independent check
    assert np.ptp(energy) <= 1e-7 * max(1.0, np.abs(energy).max())
    assert np.abs(result.q - compiled.q).max() <= 1e-6

def test_rk4_run_switches_to_the_same_steps(library_ready_after):
    kwargs = dict(times=np.linspace(0.0, 1.0, 21), formulation="projection", integrator="RK4", dt=1e-3, rtol=1e-12,
                  atol=1e-12)
    path = SAMPLES / "slider_crank_torque.cadmotion.toml"
    _, compiled = _run(path, **kwargs)
    library_ready_after(3)
    motion, result = _run(path, **kwargs)
    assert result.success, result.message
    assert len(_switch_notes(result)) == 1 and "RK4 in the compiled loop" in result.notes
    assert len(result.t) == 21
    # the work-energy balance of the crank torque (independent of either loop): E(t) − E(0) = W(t)
    energy, work = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    assert np.ptp(energy) > 0.01 and np.abs(energy - energy[0] - work).max() <= 1e-7
    # fixed steps of the same length in both loops: the states agree but for the projections onto
    # the joints after the steps, taken where the violation exceeds the tolerance — at a few
    # different steps on numpy and compiled (915 and 918 here), each moving the state by about
    # the tolerance (measured: 6.8e-10 m between whole runs of either, 2.9e-9 m switched)
    assert result.nsteps == compiled.nsteps == 1000
    assert np.abs(result.q - compiled.q).max() <= 1e-8
    assert np.abs(result.v - compiled.v).max() <= 1e-7


def test_a_semi_recursive_rk4_run_switches_to_the_compiled_tree(monkeypatch):
    # the semi-recursive formulation waits for its tree module (and the library it imports): the
    # switched run keeps the work-energy balance and follows the run compiled from its start (the
    # same fixed steps; the projections onto the closure after them differ below their tolerance)
    from cadmotion.kernel.dynamics import fast_tree

    kwargs = dict(times=np.linspace(0.0, 1.0, 21), formulation="semi-recursive", integrator="RK4", dt=1e-3,
                  rtol=1e-12, atol=1e-12)
    path = SAMPLES / "slider_crank_torque.cadmotion.toml"
    _, compiled = _run(path, **kwargs)
    assert "RK4 in the compiled loop" in compiled.notes and not _switch_notes(compiled)
    monkeypatch.setattr(late_compiled, "CHECK_EVERY_S", 0.0)
    looks = []
    monkeypatch.setattr(fast_tree, "_ready", lambda dyn: False)
    monkeypatch.setattr(fast_tree, "tree_ready", lambda dyn: looks.append(1) or len(looks) > 4)
    motion, result = _run(path, **kwargs)
    assert result.success, result.message
    assert len(_switch_notes(result)) == 1 and "RK4 in the compiled loop" in result.notes and len(looks) == 5
    energy, work = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    assert np.ptp(energy) > 0.01 and np.abs(energy - energy[0] - work).max() <= 1e-7
    assert result.nsteps == compiled.nsteps == 1000
    assert np.abs(result.q - compiled.q).max() <= 1e-8


def test_a_library_that_never_becomes_ready_leaves_the_run_on_numpy(library_ready_after):
    kwargs = dict(times=np.linspace(0.0, 0.5, 11), formulation="projection", integrator="DOP853", rtol=1e-9,
                  atol=1e-9)
    path = SAMPLES / "double_pendulum.cadmotion.toml"
    looks = library_ready_after(10 ** 9)
    _, result = _run(path, **kwargs)
    assert result.success and not _switch_notes(result)
    assert not any("compiled loop" in n for n in result.notes)
    assert 1 <= looks["count"] <= 10  # a look at each step that records a frame


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Form:
    def __init__(self):
        self.looks = 0

    def _late_fast(self, times, rtol, atol, integrator):
        self.looks += 1
        return False


@pytest.mark.parametrize("wall_per_frame, starts, looks", [(0.5, False, 5), (40.0, True, 10)])
def test_a_long_run_starts_the_compile_at_once(monkeypatch, wall_per_frame, starts, looks):
    """100 frames over 10 s: at 0.5 s of wall time a frame the run has 50 s left (the compile
    waits for the process to exit); at 40 s a frame, 3,960 s — it starts the warm-up at the
    first frame, once. It looks for the library at most once a second."""
    from cadmotion.kernel.symbolic import codegen

    calls = []
    monkeypatch.setattr(codegen, "start_warmup_now", lambda: calls.append(1) or True)
    clock, form = _Clock(), _Form()
    times = np.linspace(0.0, 10.0, 101)
    switch = late_compiled.LateSwitch(form, times, "DOP853", 1e-8, 1e-8, clock=clock)
    for k in range(1, 11):
        clock.now += wall_per_frame
        assert switch.due(times[k]) is False
    assert calls == ([1] if starts else [])
    assert form.looks == looks


def test_predicted_wall_left_scales_the_pace_so_far():
    assert late_compiled.predicted_wall_left(2.0, 0.0, 1.0, 10.0) == pytest.approx(18.0)
    assert late_compiled.predicted_wall_left(2.0, 1.0, 1.0, 10.0) == float("inf")
