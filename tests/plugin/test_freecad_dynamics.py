"""Dynamics in FreeCAD's own Python (Debian's ``freecadcmd``: no numba), as a FreeCAD macro runs it; skipped without it.

Two samples through the FreeCAD front end's run service, in one FreeCAD process. The stiff flyball governor: without
numba its automatic method is index-3 generalized-α at a fixed step, evaluated with numpy (``index3_numpy``, the
springs' ``force_jacobians_numpy``). The four-bar, a closed loop: projection / DOP853 on the numpy right-hand side,
watched for singular configurations step by step (which imported numba-only code and failed in FreeCAD for every
closed loop). The references are independent of those paths: projection / Radau IIA at rtol 1e-10 outside FreeCAD
(another formulation or integrator, compiled where numba is).
"""

from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.equations import Dynamics
from cadmotion.kernel.dynamics.forward import run
from cadmotion.kernel.dynamics.global_error import pose_error
from cadmotion.kernel.dynamics.invariants import Bodies

try:
    from .freecad_harness import FREECADCMD, run_freecad
except ImportError:
    from freecad_harness import FREECADCMD, run_freecad

pytestmark = pytest.mark.skipif(FREECADCMD is None, reason="freecadcmd (FreeCAD) is not installed")

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
MODELS = {"governor": SAMPLES / "flyball_governor.cadmotion.toml", "four_bar": SAMPLES / "four_bar.cadmotion.toml"}

SCRIPT = r'''
import importlib.util
from cadmotion.importers import load
from cadmotion.plugin.run_analysis import run_spec

RESULT["numba"] = importlib.util.find_spec("numba") is not None
for name, path in ARGS["models"].items():
    outcome = run_spec(load(path), "dynamic")
    motion, result = outcome.motion, outcome.result
    RESULT[name] = dict(
        time=motion.time.tolist(), position=motion.position.tolist(), quaternion=motion.quaternion.tolist(),
        parts=list(motion.parts), complete=bool(motion.complete), formulation=result.formulation,
        integrator=result.integrator, dt=result.dt, notes=list(result.notes),
        checked=[c.name for c in result.invariants.checks], broken=[c.name for c in result.invariants.broken],
        estimate=[[c.max_drift, c.allowed, c.description] for c in result.invariants.checks if c.name == "motion.error"])
'''


@pytest.fixture(scope="module")
def in_freecad(tmp_path_factory):
    models = {name: str(path) for name, path in MODELS.items()}
    result, _ = run_freecad(SCRIPT, tmp_path_factory.mktemp("fc_dynamics"), {"models": models}, timeout=600)
    return result


def _true_errors(run_in_freecad, model):
    """(k,) m: each moving part's largest |Δr_c| + ρ θ between the FreeCAD run's frames and projection / Radau at
    rtol 1e-10 here (the measure ``motion.error`` estimates), and the parts' names."""
    times = np.asarray(run_in_freecad["time"])
    reference, _ = run(model, times=times, formulation="projection", integrator="Radau", rtol=1e-10, atol=1e-10,
                       estimate_error=False)

    class Frames:  # the FreeCAD run's frames, as pose_error reads a motion
        nt = len(times)
        position, quaternion = np.asarray(run_in_freecad["position"]), np.asarray(run_in_freecad["quaternion"])

        @staticmethod
        def part_index(name):
            return run_in_freecad["parts"].index(name)

    bodies = Bodies.of(Dynamics(model))
    return np.max(pose_error(Frames, reference, bodies), axis=0), bodies.names


def test_freecads_python_has_no_numba_and_the_governor_takes_the_fixed_step_method(in_freecad):
    governor = in_freecad["governor"]
    assert not in_freecad["numba"]
    assert governor["complete"] and not governor["broken"]
    assert (governor["formulation"], governor["integrator"]) == ("index3", "generalized-alpha")


def test_the_governor_in_freecad_is_within_its_allowance_of_a_radau_run_and_its_estimate_says_how_far(in_freecad):
    """The automatic 10 ms step was 0.94 of its allowance there (on the slider); halved, the motion FreeCAD gets is
    within a quarter of it, as the estimate FreeCAD's run reports says (to a factor 2)."""
    governor = in_freecad["governor"]
    errors, names = _true_errors(governor, compile_model(load(MODELS["governor"])))
    true = errors[names.index("slider")]
    ((estimate, allowed, description),) = governor["estimate"]
    assert description.startswith("the global error of slider's pose")
    assert governor["dt"] == pytest.approx(0.005) and "halved 1 time(s)" in governor["notes"][-1]
    assert true <= allowed / 4
    assert true / 2 <= estimate <= 2 * true, (true, estimate)


def test_a_closed_loop_runs_in_freecad_keeps_its_checks_and_is_where_radau_puts_it(in_freecad):
    """The four-bar in FreeCAD: complete, its singular-configuration watch and every check run, none broken, and
    its links within their global error allowance of the Radau run."""
    four_bar = in_freecad["four_bar"]
    assert four_bar["complete"] and not four_bar["broken"], four_bar["broken"]
    assert (four_bar["formulation"], four_bar["integrator"]) == ("projection", "DOP853")
    assert {"energy", "violation.position", "motion.error"} <= set(four_bar["checked"])
    errors, _ = _true_errors(four_bar, compile_model(load(MODELS["four_bar"])))
    ((estimate, allowed, _),) = four_bar["estimate"]
    assert np.max(errors) <= allowed
