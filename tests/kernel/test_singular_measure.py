"""The singular-configuration measure weighs each part's rotation by the part's own size.

A rack driven along y turns an 8 mm pinion through a rack-and-pinion coupler, with a pendulum
hanging 3 m away. Nothing here can lose rank: the coupler row and the rack's driver differ by the
pinion's turn. Weighed by the whole model's length scale (≈ 1.3 m) the pinion's turn counted
(8 mm / 1.3 m)² ≈ 4e-5 of a translation, the measure read the start as singular, and the run
crossed its whole second by index-3 steps. Weighed by each part's radius of gyration it reads the
mechanism as regular, and the pinion turns by exactly the rack's travel over its radius.
"""

import math

import numpy as np
import pytest

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.equations import rotation_weights
from cadmotion.kernel.dynamics.forward import run

RADIUS = 0.008  # m, the pinion's pitch radius
MODEL = f"""
units = "m"
gravity = [0, 0, -9.81]
[parts.ground]
fixed = true
[parts.rack]
mass = 5.0
inertia = [0.1, 0.01, 0.1]
[parts.pinion]
mass = 0.05
inertia = [1.6e-6, 1e-6, 1e-6]
position = [0, 0, {RADIUS}]
[parts.arm]
mass = 1.0
inertia = [0.01, 0.01, 0.001]
position = [3, 0, -0.5]
[[joints]]
name = "rack_slide"
type = "prismatic"
parts = ["ground", "rack"]
origin = [0, 0, 0]
axis = [0, 1, 0]
[[joints]]
name = "pinion_pivot"
type = "revolute"
parts = ["ground", "pinion"]
origin = [0, 0, {RADIUS}]
axis = [1, 0, 0]
[[joints]]
name = "rack_pinion"
type = "rack-and-pinion"
joints = ["pinion_pivot", "rack_slide"]
radius = {RADIUS}
[[joints]]
name = "arm_pivot"
type = "revolute"
parts = ["rack", "arm"]
origin = [3, 0, 0]
axis = [1, 0, 0]
[[drivers]]
joint = "rack_slide"
expression = "0.01*sin(2*pi*t)"
"""


def test_a_body_weighs_its_rotation_by_its_radius_of_gyration():
    rod = np.diag([0.0, 1.0 / 12.0, 1.0 / 12.0])  # 1 kg, 1 m thin rod along x
    point = np.zeros((3, 3))
    w = rotation_weights([1.0, 2.0, 0.0], [rod, point, rod], 1.5)
    assert w[0] == pytest.approx(12.0)  # ℓ² = trace / (2 m) = L² / 12
    assert w[1] == pytest.approx(1 / 1.5 ** 2) and w[2] == pytest.approx(1 / 1.5 ** 2)  # no inertia, no mass


@pytest.mark.parametrize("compiled", ["0", "compile"])
def test_a_small_pinion_far_from_the_rest_is_not_read_as_a_singular_configuration(monkeypatch, tmp_path, compiled):
    monkeypatch.setenv("CADMOTION_DYNAMICS_FAST", compiled)
    path = tmp_path / "rack_pinion.cadmotion.toml"
    path.write_text(MODEL)
    model = compile_model(load(path))
    motion, res = run(model, 1.0, 50)
    assert res.success
    assert not any("singular" in n for n in res.notes), res.notes
    assert res.nsteps < 100  # regular index-1 steps (the false crossing took 3,367 of 0.3 ms)
    travel = motion.coordinate("rack_slide.disp")
    assert np.allclose(travel, 0.01 * np.sin(2 * math.pi * motion.time), atol=1e-12)
    assert np.allclose(motion.coordinate("pinion_pivot.angle") * RADIUS, travel, atol=1e-10)
