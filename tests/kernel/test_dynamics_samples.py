"""The larger dynamics samples of issue 5 against independent checks.

Samples (``samples/dynamics``): ``two_pendulums`` (two 6-link pendulums closed by rods and
spring-dampers), ``plate_lattice`` (40 plates on spherical joints with rotational
spring-dampers, written by ``make_lattice.py``) and ``closed_chain`` (the P2 N-gon, written by
``make_closed_chain.py``). References: conservation of energy (and its balance with the
dampers' work), the momentum balance of the whole lattice (ground reaction against the
finite-difference acceleration of the centre of mass), the rods' lengths measured from the
output positions, the polygon's closure, and the peers' P2 results (Pinocchio and MuJoCo
agree with each other to 1e-7 m on the bottom vertex at t = 1 s). The two pendulums run in
absolute coordinates (projection) and in relative ones (semi-recursive, issue 17) against the
same checks. Runs are shortened to keep the file well under a minute.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers.modelfile import parse_model, read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import simulate
from cadmotion.kernel.dynamics.forward import run

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
G = 9.81


def _script(name):
    spec = importlib.util.spec_from_file_location(f"_cm_sample_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _energy_drift(motion):
    """max |E − E0 − W_nc| relative to the largest kinetic energy (the potential's zero is arbitrary)."""
    E = motion.extra["energy.total"] - motion.extra["work.nonconservative"]
    return float(np.max(np.abs(E - E[0])) / np.max(motion.extra["energy.kinetic"]))


# ---------------------------------------------------------------------------- two pendulums
@pytest.fixture(scope="module", params=["projection", "semi-recursive"])
def pendulums(request):
    """2 s of the sample at rtol = atol = 1e-10 in absolute coordinates and in relative ones
    (semi-recursive: the rods are ``distance`` joints, so every mass has a free base and all 15 rods
    are closure equations); with numba both run in the compiled DOP853 loop (4.9 s for
    semi-recursive at load 6, 0.1 s for projection)."""
    model = compile_model(read_model_file(SAMPLES / "two_pendulums.cadmotion.toml"))
    motion, result = run(model, t_end=2.0, steps=200, formulation=request.param, rtol=1e-10, atol=1e-10)
    if importlib.util.find_spec("numba") is not None:
        assert "DOP853 in the compiled loop" in result.notes, result.notes
    return motion


def test_two_pendulums_energy_balance_with_damper_work(pendulums):
    m = pendulums
    assert m.complete, m.message
    W = m.extra["work.nonconservative"]
    # the dampers only take energy out, and they do take some
    assert W[-1] < -1.0 and np.all(np.diff(W) <= 1e-9)
    # T(0) = ½ 10 kg (3 m/s)² exactly: the push on L6 is consistent with the joints
    assert abs(m.extra["energy.kinetic"][0] - 45.0) < 1e-9
    # E_kin + E_pot − W_dampers constant (measured 5.5e-10 of max T = 45 J at rtol = atol = 1e-10, both)
    assert _energy_drift(m) < 1e-8


def test_two_pendulums_rods_and_links_keep_their_lengths(pendulums):
    m = pendulums
    pos = {name: m.position[:, m.part_index(name)] for name in m.parts}
    pos["ground_L"] = np.zeros_like(pos["L1"])
    pos["ground_R"] = np.zeros_like(pos["R1"]) + [4.0, 0.0, 0.0]
    rods = [(f"L{k}", f"R{k}", 4.0) for k in (1, 3, 5)]
    for side in "LR":
        rods += [(f"ground_{side}", f"{side}1", 1.8)] + [(f"{side}{k}", f"{side}{k + 1}", 1.8) for k in range(1, 6)]
    for a, b, length in rods:
        gap = np.max(np.abs(np.linalg.norm(pos[b] - pos[a], axis=1) - length))
        assert gap <= 1e-8, (a, b, gap)
    # the springs do stretch (the loops are not rigid) and the motion stays planar
    d6 = np.linalg.norm(pos["R6"] - pos["L6"], axis=1) - 4.0
    assert np.max(np.abs(d6)) > 1e-3
    assert np.max(np.abs(m.position[:, :, 2])) < 1e-12


# ---------------------------------------------------------------------------- plate lattice
def _lattice(damping=None, stiffness=None):
    data = tomllib.loads((SAMPLES / "plate_lattice.cadmotion.toml").read_text())
    for f in data["forces"]:
        if damping is not None:
            f["damping"] = damping
        if stiffness is not None:
            f["stiffness"] = stiffness
    return compile_model(parse_model(data, source="plate_lattice (test)"))


def test_lattice_sample_is_the_generators_output():
    mk = _script("make_lattice")
    assert (SAMPLES / "plate_lattice.cadmotion.toml").read_text() == mk.lattice_toml()
    data = tomllib.loads(mk.lattice_toml())
    plates = [p for p, e in data["parts"].items() if not e.get("fixed")]
    assert len(plates) == 40
    assert all(e["mass"] == 1.25 for p, e in data["parts"].items() if p in plates)
    assert data["simulation"]["t_end"] == 4.0


def test_lattice_without_dampers_keeps_its_energy():
    m = simulate(_lattice(damping=0.0), t_end=0.5, steps=50, rtol=1e-9, atol=1e-9)
    assert m.complete, m.message
    assert np.all(m.extra["work.nonconservative"] == 0.0)
    assert np.max(m.extra["energy.kinetic"]) > 100.0  # it falls: ~310 J after 0.5 s
    assert _energy_drift(m) < 1e-9  # measured 1.4e-12
    assert np.max(m.extra["violation.position"]) < 1e-8


def test_lattice_ground_reaction_is_the_momentum_balance():
    """Σ external forces = M a_com: the pivot's reaction on plate_0_0 = M (a_com − g).

    a_com is taken two ways: from the output accelerations (exact, 1e-9 of the weight) and
    by central differences of the output velocities, which never see the multipliers
    (h = 2 ms, O(h²): 1e-3 of the weight; measured 5e-16 and 2.3e-4)."""
    model = _lattice()
    h = 0.002
    times = np.arange(0.0, 0.3 + h / 2, h)
    m = simulate(model, times=times, rtol=1e-10, atol=1e-10)
    assert m.complete, m.message
    plates = [k for k, p in enumerate(m.parts) if p.startswith("plate_")]
    M = 1.25 * len(plates)  # the part frames are at the plates' centres of mass
    g = np.array([0.0, 0.0, -G])
    F = np.stack([m.extra[f"pivot.f{c}"] for c in "xyz"], axis=1)  # on plate_0_0, from ground
    a_com = m.acceleration[:, plates].mean(axis=1)
    weight = M * G
    assert np.max(np.abs(F - M * (a_com - g))) < 1e-9 * weight
    v_com = m.velocity[:, plates].mean(axis=1)
    a_fd = (v_com[2:] - v_com[:-2]) / (2 * h)
    assert np.max(np.abs(F[1:-1] - M * (a_fd - g))) < 1e-3 * weight
    # at rest at t = 0 the lattice is not in equilibrium: the pivot carries less than the weight
    assert 0.0 < F[0, 2] < 0.99 * weight
    assert np.allclose(F[0, :2], 0.0, atol=1e-9 * weight)


# ---------------------------------------------------------------------------- closed chain
@pytest.mark.parametrize("n", [20, 300])
def test_closed_chain_generator_closes_the_polygon(n):
    mk = _script("make_closed_chain")
    data = tomllib.loads(mk.closed_chain_toml(n))
    assert len(data["parts"]) == n and len(data["joints"]) == n
    ends = []
    for k in range(n):
        part = data["parts"][f"link{k}"]
        w, _, _, z = part["orientation"]
        angle = 2.0 * math.atan2(z, w)
        ends.append((np.array(part["position"][:2]), np.array(part["position"][:2]) + [math.cos(angle), math.sin(angle)]))
    for k, joint in enumerate(data["joints"]):
        a, b = (int(p[4:]) for p in joint["parts"])
        origin = np.array(joint["origin"][:2])
        assert np.max(np.abs(ends[a][1] - origin)) <= 1e-12 and np.max(np.abs(ends[b][0] - origin)) <= 1e-12
        assert b == k and a == (k - 1) % n


def test_closed_chain_sample_is_the_generators_output():
    mk = _script("make_closed_chain")
    assert (SAMPLES / "closed_chain.cadmotion.toml").read_text() == mk.closed_chain_toml(20)


def test_closed_chain_falls_like_the_peers_p2_and_keeps_its_energy():
    model = compile_model(read_model_file(SAMPLES / "closed_chain.cadmotion.toml"))
    m = simulate(model, t_end=1.0, steps=20, rtol=1e-10, atol=1e-10)
    assert m.complete, m.message
    # joint gaps at t = 0 (after assembly) and along the run, from the output poses
    for k in range(m.nt):
        gaps = []
        for j in range(20):
            Xa = m.pose(f"link{(j - 1) % 20}", m.time[k])
            Xb = m.pose(f"link{j}", m.time[k])
            gaps.append(np.linalg.norm((Xa @ [1.0, 0, 0, 1])[:3] - Xb[:3, 3]))
        assert max(gaps) <= (1e-12 if k == 0 else 1e-9), (m.time[k], max(gaps))
    assert _energy_drift(m) < 1e-9  # conservative: measured 1e-11
    assert np.max(m.extra["energy.kinetic"]) > 100.0
    # the bottom vertex (joint N//2 = start of link 10) at t = 1 s: peers' P2 N = 20 value
    y = m.pose("link10", 1.0)[1, 3]
    assert abs(y - (-8.5494426)) < 2e-7  # measured 4e-9 (the peer value has 8 digits)
