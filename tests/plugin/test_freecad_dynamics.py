"""Dynamics in FreeCAD's own Python (Debian's ``freecadcmd``: no numba), as a FreeCAD macro runs it; skipped without it.

The stiff flyball governor sample through the FreeCAD front end's run service: without numba its automatic method
is index-3 generalized-α at a fixed step, evaluated with numpy (``index3_numpy``, the springs'
``force_jacobians_numpy``). The reference is independent of that path: projection / Radau IIA at rtol 1e-10 outside
FreeCAD (another formulation, another integrator, compiled where numba is).
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

GOVERNOR = Path(__file__).resolve().parents[2] / "samples" / "dynamics" / "flyball_governor.cadmotion.toml"

SCRIPT = r'''
import importlib.util
from cadmotion.importers import load
from cadmotion.plugin.run_analysis import run_spec

RESULT["numba"] = importlib.util.find_spec("numba") is not None
outcome = run_spec(load(ARGS["model"]), "dynamic")
motion, result = outcome.motion, outcome.result
RESULT.update(time=motion.time.tolist(), position=motion.position.tolist(), quaternion=motion.quaternion.tolist(),
              parts=list(motion.parts), complete=bool(motion.complete), formulation=result.formulation,
              integrator=result.integrator, dt=result.dt, notes=list(result.notes),
              broken=[c.name for c in result.invariants.broken],
              estimate=[[c.max_drift, c.allowed, c.description] for c in result.invariants.checks if c.name == "motion.error"])
'''


@pytest.fixture(scope="module")
def in_freecad(tmp_path_factory):
    result, _ = run_freecad(SCRIPT, tmp_path_factory.mktemp("fc_dynamics"), {"model": str(GOVERNOR)}, timeout=600)
    return result


def test_freecads_python_has_no_numba_and_takes_the_fixed_step_method(in_freecad):
    assert not in_freecad["numba"]
    assert in_freecad["complete"] and not in_freecad["broken"]
    assert (in_freecad["formulation"], in_freecad["integrator"]) == ("index3", "generalized-alpha")


def test_the_governor_in_freecad_is_within_its_allowance_of_a_radau_run_and_its_estimate_says_how_far(in_freecad):
    """The automatic 10 ms step was 0.94 of its allowance there (on the slider); halved, the motion FreeCAD gets is
    within a quarter of it, as the estimate FreeCAD's run reports says (to a factor 2)."""
    model = compile_model(load(GOVERNOR))
    times = np.asarray(in_freecad["time"])
    reference, _ = run(model, times=times, formulation="projection", integrator="Radau", rtol=1e-10, atol=1e-10,
                       estimate_error=False)

    class Frames:  # the FreeCAD run's frames, as pose_error reads a motion
        nt = len(times)
        position, quaternion = np.asarray(in_freecad["position"]), np.asarray(in_freecad["quaternion"])

        @staticmethod
        def part_index(name):
            return in_freecad["parts"].index(name)

    bodies = Bodies.of(Dynamics(model))
    true = np.max(pose_error(Frames, reference, bodies), axis=0)[bodies.names.index("slider")]
    ((estimate, allowed, description),) = in_freecad["estimate"]
    assert description.startswith("the global error of slider's pose")
    assert in_freecad["dt"] == pytest.approx(0.005) and "halved 1 time(s)" in in_freecad["notes"][-1]
    assert true <= allowed / 4
    assert true / 2 <= estimate <= 2 * true, (true, estimate)
