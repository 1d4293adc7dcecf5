"""The recursive formulation's articulated-body solve (kernel/dynamics/articulated.py, issue 17 item 5).

M̄⁻¹ by the articulated-body passes must be the inverse of the tree's mass matrix: here M̄ is
assembled by the test from the velocity map R_v (com velocities [v_c; ω] = R_v ż) and the parts'
masses and inertias, M̄ = R_vᵀ diag(m I, J) R_v, and solved by LU; the generalised forces of
the parts' forces [F; N] (about their centres of mass) are R_vᵀ [F; N]. The accelerations of
the whole evaluation (multipliers, Baumgarte terms, redundant rows) must equal those of the
dense path (the Cholesky factor of the composite-inertia M̄), and a run on the ABA path must
keep the closed chain's energy and reach the peers' P2 vertex. The compiled evaluation (the tree
module's recursive stage, kernel/dynamics/fast_tree.py) must equal the numpy one on the same
kept rows, and the compiled DOP853 loop must run the chain to the same P2 vertex and energy.

Models: the slider-crank (P1), the closed chain of 20 pairs (P2), the redundant planar four-bar
built in 3-D, a tree of every joint type but planar and fixed with a free base (nz = 15),
and the plate lattice (40 plates on spherical joints, 36 closure rows). The passes are checked
compiled (kernel/dynamics/_aba_kernels.py) and in numpy; the run takes the default (compiled
where numba is).
"""

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla

from cadmotion.importers import load
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import _kernels as K
from cadmotion.kernel.dynamics._tree_kernels import T_KROW
from cadmotion.kernel.dynamics.articulated import ArticulatedBodies
from cadmotion.kernel.dynamics.formulations import FORMULATIONS
from cadmotion.kernel.dynamics.forward import prepare, run

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"

#: a chain of every tree joint type but planar and fixed from ground, a free part tied to it by a rope
#: (cut: a distance row) and a rope from the spherical joint's part back to ground (a loop)
EVERY_JOINT = {
    "gravity": [0, -9.81, 0],
    "parts": {"ground": {"fixed": True},
              **{f"b{i}": {"position": [0.2 * i, 0.05 * i, 0.02 * i], "mass": 0.5 + 0.2 * i,
                           "com": [0.05, 0.01 * i, 0.0], "inertia": [0.01, 0.02 + 0.002 * i, 0.025]}
                 for i in range(1, 7)}},
    "joints": [
        {"name": "rev", "type": "revolute", "parts": ["ground", "b1"], "origin": [0.1, 0, 0], "axis": [0, 0, 1]},
        {"name": "pri", "type": "prismatic", "parts": ["b1", "b2"], "origin": [0.3, 0.1, 0], "axis": [1, 0, 0]},
        {"name": "cyl", "type": "cylindrical", "parts": ["b2", "b3"], "origin": [0.5, 0.1, 0.05],
         "axis": [0, 1, 0]},
        {"name": "sph", "type": "spherical", "parts": ["b3", "b4"], "origin": [0.7, 0.2, 0.07]},
        {"name": "uni", "type": "universal", "parts": ["b4", "b5"], "origin": [0.9, 0.25, 0.1],
         "axis": [1, 0, 0], "axis2": [0, 1, 0]},
        {"name": "rope", "type": "distance", "parts": ["b5", "b6"], "points": [[1.0, 0.25, 0.1], [1.2, 0.3, 0.12]]},
        {"name": "stay", "type": "distance", "parts": ["ground", "b4"], "points": [[0.8, 0.6, 0.0], [0.8, 0.2, 0.08]]},
    ],
    "initial_velocity": {"b6": {"velocity": [0.1, 0.0, 0.2], "angular_velocity": [0.3, 1.0, -0.2]}},
}


#: the articulated-body passes compiled (numba) and in numpy
PATHS = [pytest.param(True, id="compiled"), pytest.param(False, id="numpy")]


def sample(name):
    return compile_model(load(SAMPLES / f"{name}.cadmotion.toml"))


MODELS = {"slider_crank": lambda: sample("slider_crank_torque"), "closed_chain": lambda: sample("closed_chain"),
          "four_bar": lambda: sample("four_bar"), "plate_lattice": lambda: sample("plate_lattice"),
          "every_joint": lambda: compile_model(parse_model(EVERY_JOINT, source="every joint (test)"))}


def _formulation(model, compiled=None, **options):
    """The recursive formulation of ``model`` set up at its initial state, and that state; its
    articulated-body passes compiled or not (None: the default)."""
    if compiled:
        pytest.importorskip("numba")
    dyn, q0, v0, angles, refs = prepare(model)
    form = FORMULATIONS["recursive"](dyn, angles=angles, refs=refs, **options)
    y = form.initial_state(0.0, q0, v0)
    if compiled is not None:
        form._aba = ArticulatedBodies(form.kin, compiled=compiled)
    return form, y


def _random_states(form, y, n, seed):
    """n tree states away from the assembled one: every coordinate moved (rotations by ~0.3 rad),
    velocities of order 1 (not on the closure: the equations hold at any state)."""
    rng = np.random.default_rng(seed)
    nzq, nz = form.tree.nzq, form.tree.nz
    for _ in range(n):
        out = y.copy()
        out[:nzq] = form.kin.retract(y[:nzq], 0.3 * rng.standard_normal(nz))
        out[nzq: nzq + nz] = rng.standard_normal(nz)
        yield out


@pytest.mark.parametrize("compiled", PATHS)
@pytest.mark.parametrize("name", MODELS)
def test_the_articulated_passes_invert_the_tree_mass_matrix(name, compiled):
    form, y = _formulation(MODELS[name](), compiled, aba=True)
    rng = np.random.default_rng(5)
    nz = form.tree.nz
    for ys in _random_states(form, y, 3, seed=11):
        _, zd, q, v, b, Z, rc = form._state(0.0, ys)
        ev = form.dyn.evaluate(q, v, 0.0, form.refs)
        Rv = form._rv(b, rc)
        blocks = [np.diag([m] * 3) for m in form._mass]
        M = Rv.T @ sla.block_diag(*[sla.block_diag(B, J) for B, J in zip(blocks, ev.bs.J)]) @ Rv
        lu = sla.lu_factor(M)
        tau = rng.standard_normal((nz, 3))
        g = rng.standard_normal((form.kin.nmov, 6))
        aba = form._aba.factor(form._mass, ev.bs.J, rc, b)
        # relative to the solution; cond(M̄) ≤ 4.3e5 here, measured ≤ 2.1e-12 (the closed chain)
        x = sla.lu_solve(lu, tau)
        assert np.max(np.abs(aba.solve(tau) - x)) < 1e-10 * np.max(np.abs(x))
        x = sla.lu_solve(lu, Rv.T @ g.reshape(-1))
        assert np.max(np.abs(aba.solve(np.zeros(nz), g) - x)) < 1e-10 * np.max(np.abs(x))


@pytest.mark.parametrize("compiled", PATHS)
@pytest.mark.parametrize("name", MODELS)
def test_the_accelerations_are_those_of_the_dense_solve(name, compiled):
    """The whole numpy evaluation: z̈ with the multipliers of the kept closure rows and the
    Baumgarte terms (α = β = 10 1/s), against the assembled M̄'s Cholesky factor."""
    model = MODELS[name]()
    (aba, y), (dense, _) = _formulation(model, compiled, aba=True, fast=False), _formulation(model, aba=False,
                                                                                         fast=False)
    assert aba.aba and not dense.aba
    for ys in _random_states(aba, y, 3, seed=3):
        a, d = aba.rhs(0.0, ys), dense.rhs(0.0, ys)
        assert np.max(np.abs(a - d)) < 1e-10 * np.max(np.abs(d))  # measured ≤ 1.2e-12 (the lattice)


@pytest.mark.parametrize("fast", ["1", "0"])
def test_the_solve_is_chosen_by_the_compiled_passes(fast, monkeypatch):
    """aba=None: the articulated-body passes where they run compiled (the code generation on,
    ``CADMOTION_DYNAMICS_FAST`` not 0); in numpy the dense factor (the Python loop over the joints
    costs more up to the 300-pair chain)."""
    if fast == "1":
        pytest.importorskip("numba")
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", fast)
    form, _ = _formulation(sample("closed_chain"))
    assert form.aba == form._aba.compiled == (fast == "1")


@pytest.mark.parametrize("name", MODELS)
def test_the_compiled_evaluation_equals_the_numpy_one(name, monkeypatch):
    """The tree module's recursive stage against the numpy evaluation on the rows it kept (chosen
    by the same pivoted QRs at the first evaluation, at the assembled state)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", "compile")
    model = MODELS[name]()
    (fast, y), (numpy, _) = _formulation(model), _formulation(model, fast=False)
    assert fast._fast is not None and numpy._fast is None
    a, d = fast.rhs(0.0, y), numpy.rhs(0.0, y)
    kept = K.f1(fast._fast.ws, fast._fast.di, len(K.COMMON) + T_KROW)
    assert np.array_equal(np.nonzero(kept > 0.5)[0], numpy._kept_rows(None))
    assert np.max(np.abs(a - d)) <= 1e-10 * np.max(np.abs(d))
    for ys in _random_states(numpy, y, 3, seed=3):
        a, d = fast.rhs(0.0, ys), numpy.rhs(0.0, ys)
        assert np.max(np.abs(a - d)) < 1e-10 * np.max(np.abs(d))


@pytest.mark.parametrize("fast", ["compile", "0"], ids=["compiled loop", "numpy"])
def test_the_closed_chain_keeps_its_energy_and_falls_like_the_peers_p2(fast, monkeypatch):
    if fast == "compile":
        pytest.importorskip("numba")
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", fast)
    m, res = run(sample("closed_chain"), 1.0, 4, formulation="recursive", rtol=1e-10, atol=1e-10,
                 options={"aba": True})
    assert res.success, res.message
    assert ("DOP853 in the compiled loop" in res.notes) == (fast == "compile")
    assert abs(m.pose("link10", 1.0)[1, 3] - (-8.5494426)) < 2e-7  # the peers' P2 N = 20 vertex; measured 4e-9
    E = m.extra["energy.total"] - m.extra["work.nonconservative"]
    assert np.max(np.abs(E - E[0])) < 1e-9 * np.max(m.extra["energy.kinetic"])  # measured 6e-12
