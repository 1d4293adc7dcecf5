"""samples/geneva: a four-slot Geneva drive from a CadQuery-built STEP, the wheel moved by contacts only.

The driver turns at one turn per second; its pin and the slot walls are unilateral contacts. The
reference is the closed form of the mechanism (make_geneva.wheel_angle): while the pin is in a slot the
slot points at it, φ = atan2(A sin ψ, C + A cos ψ). With the slot CLEARANCE wider than the pin on each
side and the bearing's drag holding the wheel back, the pin pushes on the slot's leading wall, so the
wheel lags the closed form by the clearance seen from its axis, asin(c / |P|), |P| the pin's distance.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.importers import load  # noqa: E402
from cadmotion.plugin.run_analysis import run_spec  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "samples" / "geneva"


def design():
    spec = importlib.util.spec_from_file_location("make_geneva", FOLDER / "make_geneva.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def geneva():
    run = run_spec(load(FOLDER / "geneva.cadmotion.toml"), "dynamic")
    return run.motion, run.result


def test_the_pin_drives_the_wheel_along_the_closed_form_offset_by_the_slot_clearance(geneva):
    g = design()
    motion, result = geneva
    assert motion.complete and not result.invariants.broken
    psi = g.PSI0 + 2 * math.pi * motion.time
    phi = g.PHI0 + motion.coordinate("wheel_pivot.angle")
    # from the pin's settling on the leading wall (after its two entry impacts) to the walls' ends
    engaged = (psi >= math.radians(146)) & (psi <= math.radians(214))
    assert engaged.sum() > 30
    pin = np.hypot(g.C + g.A * np.cos(psi), g.A * np.sin(psi)) * 1e-3  # m
    lag = np.arcsin(g.CLEARANCE * 1e-3 / pin)
    expected = np.array([g.wheel_angle(p) for p in psi]) + lag
    assert np.max(np.abs(phi[engaged] - expected[engaged])) < 1e-6


def test_the_wheel_rests_before_the_pin_enters_and_is_indexed_a_quarter_turn_after_it_leaves(geneva):
    g = design()
    motion, _ = geneva
    psi = g.PSI0 + 2 * math.pi * motion.time
    turn = motion.coordinate("wheel_pivot.angle")
    assert np.all(turn[psi < math.radians(135)] == 0.0)
    # no locking disc: after the pin leaves, the wheel coasts against its bearing's drag a little
    # past the quarter turn (the walls end 3 mm inside the slot's mouth)
    assert math.degrees(turn[-1]) == pytest.approx(-90.0, abs=1.0)
    impacts = [ev for ev in motion.events if ev.kind == "impact"]
    assert impacts and all("pin_wall" in ev.message for ev in impacts)
