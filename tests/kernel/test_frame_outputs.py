"""A dynamic run's output frames from the compiled library equal the numpy outputs.

The compiled outputs (:class:`cadmotion.kernel.dynamics.outputs.CompiledFrameOutputs`) take each
frame's accelerations, minimum-norm multipliers and joint reactions from one compiled evaluation
(:meth:`~cadmotion.kernel.dynamics.fast.FastRHS.frame`); the numpy outputs
(:class:`~cadmotion.kernel.dynamics.outputs.FrameOutputs`) evaluate the equations of
:mod:`~cadmotion.kernel.dynamics.equations` and solve them with numpy and scipy — a separate
implementation of the same formulas. Each test runs a sample once and builds its Motion both
ways from the same integration result: every series (reactions at every joint, driver efforts,
energies, violations, contact series), the coordinate rates and accelerations and the events
must agree to round-off. The reactions' own correctness is checked against closed forms
elsewhere (tests/kernel/test_dynamics.py, test_andrews_squeezer.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import forward
from cadmotion.kernel.dynamics import outputs as outputs_module

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
#: round-off bound: relative to each series' scale (at least 1 in its units, N, N m, J, m; the
#: constraint forces' largest for each of them)
RTOL = 1e-9


@pytest.fixture
def frame_counts(monkeypatch):
    """How many frames each outputs class took: {'compiled': n, 'numpy': n}."""
    counts = {"compiled": 0, "numpy": 0}
    numpy_add, compiled_add = outputs_module.FrameOutputs.add, outputs_module.CompiledFrameOutputs.add

    def counted_numpy(self, *args, **kwargs):
        counts["numpy"] += 1
        return numpy_add(self, *args, **kwargs)

    def counted_compiled(self, *args, **kwargs):
        counts["compiled"] += 1
        return compiled_add(self, *args, **kwargs)

    monkeypatch.setattr(outputs_module.FrameOutputs, "add", counted_numpy)
    monkeypatch.setattr(outputs_module.CompiledFrameOutputs, "add", counted_compiled)
    return counts


def _both_ways(model, t_end, steps, formulation):
    """(compiled Motion, numpy Motion) of one run (its frames only: no companion run for the global error)."""
    motion, result = forward.run(model, t_end, steps, formulation=formulation, estimate_error=False)
    dyn = forward.prepare(model, 0.0)[0]
    return motion, forward.to_motion(dyn, result, formulation=formulation, integrator=result.integrator)


#: the series of constraint forces (N, N m): their round-off is relative to the largest of them
LOADS = (".fx", ".fy", ".fz", ".tx", ".ty", ".tz", ".effort", ".force")


def _assert_same_outputs(compiled, reference):
    assert compiled.extra.keys() == reference.extra.keys()
    loads = [series for name, series in reference.extra.items() if name.endswith(LOADS)]
    load_scale = max([1.0] + [float(np.max(np.abs(series))) for series in loads])
    for name, series in reference.extra.items():
        scale = load_scale if name.endswith(LOADS) else max(1.0, float(np.max(np.abs(series))))
        np.testing.assert_allclose(compiled.extra[name], series, rtol=0, atol=RTOL * scale, err_msg=name)
    np.testing.assert_allclose(compiled.velocity, reference.velocity, rtol=0,
                               atol=RTOL * max(1.0, np.max(np.abs(reference.velocity))))
    np.testing.assert_allclose(compiled.acceleration, reference.acceleration, rtol=0,
                               atol=RTOL * max(1.0, np.max(np.abs(reference.acceleration))))
    events = lambda m: [(e.kind, e.message) for e in m.events if e.kind != "stats"]  # noqa: E731
    assert events(compiled) == events(reference)


@pytest.mark.parametrize("sample, formulation", [
    ("dynamics/slider_crank_torque", "projection"),   # 3 redundant rows (a planar loop built in 3-D), a torque law
    ("dynamics/slider_crank_torque", "baumgarte"),    # the outputs are the index-1 λ, without stabilisation
    ("dynamics/andrews_squeezer", "projection"),      # 7 bodies, two loops, a spring, a torque
    ("dynamics/n_four_bar", "penalty"),               # 6 redundant rows, singular passages
    ("dynamics/flyball_governor", "projection"),      # a driven spin, springs
    ("dynamics/bouncing_ball", "projection"),         # a compliant contact's series
    ("slider_crank", "projection"),                   # a driver's effort, a fixed second part
])
def test_compiled_frames_equal_the_numpy_outputs(sample, formulation, frame_counts):
    model = compile_model(load(SAMPLES / f"{sample}.cadmotion.toml"))
    compiled, reference = _both_ways(model, 0.5, 25, formulation)
    assert frame_counts["compiled"] == 26  # every frame of the run went through the compiled outputs
    _assert_same_outputs(compiled, reference)


def test_frames_whose_redundant_rows_moved_go_through_numpy(frame_counts):
    """A planar closed chain of 20 links built in 3-D: which 3 rows are redundant changes with its
    configuration. The compiled frame drops the rows chosen before and checks that every row,
    theirs included, still holds (:meth:`~cadmotion.kernel.dynamics.fast.FastRHS._rows_hold`);
    where not, the numpy outputs choose the rows again. Both ways agree at every frame."""
    model = compile_model(load(SAMPLES / "dynamics/closed_chain.cadmotion.toml"))
    compiled, reference = _both_ways(model, 10.0, 100, "projection")
    assert frame_counts["compiled"] == 101
    assert frame_counts["numpy"] > 101  # the reference's 101 frames, and the compiled frames' fallbacks
    _assert_same_outputs(compiled, reference)
