"""samples/gripper_block: a two-finger gripper picks a block off a table, held by friction only.

References (make_gripper_block.py): each finger slides freely along x under its actuator's constant
force F, so once it rests on the block its pad presses with N = F; the carried block obeys Newton's
second law, 2 F_t = m (g + a) with a the lift's closed-form acceleration; a held block creeps at the
slip speed where the documented regularised Coulomb law (kernel/dynamics/contacts.py) gives the
friction it needs; with μ below m g / (2 F) the pads slide up the block, which stays on the table
carrying m g − 2 μ_d F.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

pytest.importorskip("OCP")

from cadmotion.importers import load  # noqa: E402
from cadmotion.plugin.run_analysis import run_spec  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "samples" / "gripper_block"
MODEL = FOLDER / "gripper_block.cadmotion.toml"
G = 9.81
MU_S, MU_D, V_S = 0.5, 0.4, 1e-3  # the pads' friction in the model file; the default stiction velocity
LOW_MU_S, LOW_MU_D = 0.08, 0.06  # below m g / (2 F) ≈ 0.095: the block cannot be lifted


def design():
    spec = importlib.util.spec_from_file_location("make_gripper_block", FOLDER / "make_gripper_block.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(path):
    run = run_spec(load(path), "dynamic")
    assert run.motion.complete and not run.result.invariants.broken
    return run.motion


@pytest.fixture(scope="module")
def held():
    return _run(MODEL)


@pytest.fixture(scope="module")
def slipping(tmp_path_factory):
    text = MODEL.read_text()
    high = "friction = { static = 0.5, dynamic = 0.4 }"
    assert text.count(high) == 2
    text = text.replace(high, f"friction = {{ static = {LOW_MU_S}, dynamic = {LOW_MU_D} }}")
    text = text.replace('step = "gripper_block.step"', f'step = "{(FOLDER / "gripper_block.step").as_posix()}"')
    path = tmp_path_factory.mktemp("gripper") / "slipping.cadmotion.toml"
    path.write_text(text)
    return _run(path)


def z_of(motion, part):
    return motion.position[:, motion.part_index(part), 2]


def test_the_design_needs_less_friction_than_the_pads_have_and_more_than_the_slipping_variant():
    g = design()
    assert LOW_MU_S < g.block_mass() * G / (2 * g.F_GRIP) < g.required_friction() < MU_D


def test_each_pad_presses_on_the_block_with_its_actuators_force(held):
    g = design()
    settled = held.time >= 0.1
    for pad in ("pad_left", "pad_right"):
        assert np.all(held.extra[f"{pad}.active"][settled] > 0)
        assert np.allclose(held.extra[f"{pad}.normal_force"][settled], g.F_GRIP, rtol=1e-3)


def test_the_pads_friction_carries_the_block_through_the_lift(held):
    g = design()
    m = g.block_mass()
    lifted = held.time >= g.LIFT_START + 0.02
    assert np.all(held.extra["block_table.normal_force"][lifted] == 0)
    a = np.array([g.lift_acceleration(t) for t in held.time])
    carried = held.extra["pad_left.friction_force"] + held.extra["pad_right.friction_force"]
    assert np.allclose(carried[lifted], m * (G + a[lifted]), rtol=5e-3)
    # it goes up with the palm: the two differ only by the pads' slow creep
    rise = z_of(held, "block") - z_of(held, "block")[0]
    assert rise[-1] == pytest.approx(g.lift(held.time[-1]), abs=1e-4)
    assert np.all(np.abs(rise - (z_of(held, "palm") - z_of(held, "palm")[0])) < 1e-4)


def test_a_held_block_creeps_at_the_slip_speed_the_regularised_law_gives_for_the_friction_it_needs(held):
    g = design()
    need = g.block_mass() * G / (2 * g.F_GRIP)  # friction coefficient needed at rest after the lift

    def law(v):  # μ(v) for |v| ≤ v_s: μ_s (−1 + 2 h((v + v_s) / (2 v_s))), h(x) = 3x² − 2x³
        x = (v + V_S) / (2 * V_S)
        return MU_S * (-1 + 2 * (3 * x * x - 2 * x ** 3)) - need

    creep = brentq(law, 0.0, V_S, xtol=1e-15)
    for pad in ("pad_left", "pad_right"):
        assert held.extra[f"{pad}.slip_velocity"][-1] == pytest.approx(creep, rel=1e-3)


def test_with_too_little_friction_the_pads_slide_up_and_the_block_stays_on_the_table(slipping):
    g = design()
    m = g.block_mass()
    block = z_of(slipping, "block")
    assert np.all(np.abs(block - block[0]) < 1e-5)
    assert z_of(slipping, "palm")[-1] - z_of(slipping, "palm")[0] == pytest.approx(g.LIFT * 1e-3, abs=1e-9)
    # while the palm rises faster than 2 v_s the pads slide with μ_d: the table carries the rest
    speed = np.array([(g.lift(t + 1e-6) - g.lift(t - 1e-6)) / 2e-6 for t in slipping.time])
    sliding = speed > 2 * V_S + 1e-3
    assert sliding.sum() > 20
    table = slipping.extra["block_table.normal_force"][sliding]
    assert np.allclose(table, m * G - 2 * LOW_MU_D * g.F_GRIP, rtol=1e-2)
