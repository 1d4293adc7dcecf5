"""A model file that takes its parts from a STEP file and its joint axes from their faces."""

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics


@pytest.fixture(scope="module")
def hinge_step(tmp_path_factory):
    """A base plate and a lid whose hinge pin is a cylinder along y through (0, *, 20) mm."""
    folder = tmp_path_factory.mktemp("hinge")
    base = cq.Workplane("XY").box(100, 60, 10).translate((50, 0, 5))
    lid = (cq.Workplane("XY").box(100, 60, 4).translate((50, 0, 22))
           .union(cq.Workplane("XZ").circle(3).extrude(30, both=True).translate((0, 0, 20))))
    assy = cq.Assembly(name="box")
    assy.add(base, name="base", color=cq.Color(0.5, 0.5, 0.5))
    assy.add(lid, name="lid", color=cq.Color(0.8, 0.3, 0.2))
    path = folder / "hinge.step"
    assy.export(str(path))
    return path


def test_axis_and_origin_from_the_nearest_cylindrical_face(hinge_step):
    model_file = hinge_step.with_name("hinge.cadmotion.toml")
    model_file.write_text(f"""
units = "mm"
step = "{hinge_step.name}"
[parts.base]
fixed = true
[parts.lid]
material = "aluminium"
[[joints]]
name = "hinge"
type = "revolute"
parts = ["base", "lid"]
origin = {{ part = "lid", face = "cylinder", near = [0, 10, 23] }}
axis = {{ part = "lid", face = "cylinder", near = [0, 10, 23] }}
[[drivers]]
joint = "hinge"
expression = "-0.5*t"
""")
    spec = load(model_file)
    lid = spec.part("lid")
    # aluminium, from the exact geometry: plate 100x60x4 mm plus the pin beyond it
    assert lid.mass == pytest.approx(2700 * (0.1 * 0.06 * 0.004 + np.pi * 0.003**2 * 0.06) - 2700 * _overlap(), rel=2e-2)
    motion = kinematics(compile_model(spec), t_end=1.0, steps=10)
    # the pin's axis points lie on the hinge axis: they do not move
    X = motion.pose("lid", 1.0)
    for y in (-0.02, 0.02):
        p_world0 = np.array([0.0, y, 0.020])
        np.testing.assert_allclose(X[:3, :3] @ p_world0 + X[:3, 3], p_world0, atol=1e-9)
    # a point of the plate 0.1 m from the axis turns 0.5 rad about y
    angle = np.arctan2(-X[2, 0], X[0, 0])
    assert abs(angle) == pytest.approx(0.5, abs=1e-9)


def _overlap():
    # the part of the pin (radius 3 mm) inside the plate (z 20..24 mm): a segment of the disc
    # above z = 20 is exactly half the disc, over the plate's 60 mm width
    return 0.5 * np.pi * 0.003**2 * 0.06
