"""The relative-coordinate formulations on cases beyond their samples (benchmarks/relative_sweep.py).

Each test is a finding of the sweep, stated as a specification against a reference that does not come from
cadmotion: the N-four-bar's rod angle from its 1-DOF reduction 3 θ̈ + 34.335 cos θ = 0 (test_singular_passages.py),
its energy 35.835 J.
"""

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"


@pytest.fixture(scope="module")
def n_four_bar():
    return compile_model(load(SAMPLES / "n_four_bar.cadmotion.toml"))


def _rod_angle(motion):
    q = motion.quaternion[:, motion.parts.index("rod0")]
    return np.arctan2(2 * q[:, 0] * q[:, 3], q[:, 0] ** 2 - q[:, 3] ** 2)


@pytest.mark.parametrize("formulation, integrator, rtol", [("recursive", "LSODA", 1e-10), ("recursive", "BDF", 1e-7),
                                                           ("semi-recursive", "BDF", 1e-4),
                                                           ("semi-recursive", "LSODA", 1e-7)])
def test_multistep_integrators_cross_each_singular_passage_on_the_index3_equations(n_four_bar, formulation,
                                                                                    integrator, rtol):
    """BDF and LSODA keep no ẏ, and their steps used to go unprobed for singular configurations: a step that strode
    over the flat parallelogram was taken by the index-1 equations (the recursive multipliers re-choose their rows
    there and Baumgarte closes the loop again), which threw the rods onto the crossed branch or took up to 24 J of
    the 35.8 J. Every step is probed on the integrator's own interpolant: each of the three passages in 3 s is
    crossed by index-3 steps before it is reached, and the rods follow the 1-DOF reduction."""
    times = np.linspace(0.0, 3.0, 31)
    motion, res = run(n_four_bar, times=times, formulation=formulation, integrator=integrator, rtol=rtol,
                      atol=rtol / 100)
    assert res.success, res.message
    ref = solve_ivp(lambda _, y: [y[1], -34.335 / 3.0 * np.cos(y[0])], (0.0, 3.0), [np.pi / 2, -1.0],
                    method="DOP853", rtol=1e-13, atol=1e-13, t_eval=times).y[0]
    th = _rod_angle(motion)
    assert np.max(np.hypot(np.cos(th) - np.cos(ref), np.sin(th) - np.sin(ref))) < 1e-4  # measured ≤ 2.3e-5
    assert np.max(np.abs(motion.extra["energy.total"] - 35.835)) < 1e-3
    starts = [float(n.split("from t = ")[1].split(" ")[0]) for n in res.notes
              if n.startswith("singular configuration crossed")]
    flat = [0.714, 1.228, 2.654]  # θ = 0 or π on the reference (±5 ms)
    assert len(starts) == 3 and all(s < f for s, f in zip(starts, flat)), starts
