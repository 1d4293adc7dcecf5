"""Model files: the documented keys load in SI units; every mistake gives one clear message."""

import numpy as np
import pytest

from cadmotion.errors import CadmotionError, ModelFileError
from cadmotion.importers import load
from cadmotion.kernel import compile_model

GOOD = """
units = "mm"
gravity = [0, -9.81, 0]
[parts.ground]
fixed = true
[parts.crank]
position = [0, 0, 0]
orientation = [1, 0, 0, 0]
mass = 1.0
com = [50, 0, 0]
inertia = [10, 830, 830]
[[joints]]
name = "crank_pivot"
type = "revolute"
parts = ["ground", "crank"]
origin = [0, 0, 0]
axis = [0, 0, 1]
[[drivers]]
joint = "crank_pivot"
expression = "t**2"
"""


def write(tmp_path, text, name="m.cadmotion.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_documented_keys_load_in_si_units(tmp_path):
    spec = load(write(tmp_path, GOOD))
    crank = spec.part("crank")
    assert crank.mass == 1.0
    assert crank.com == pytest.approx((0.05, 0, 0))
    assert np.diag(crank.inertia) == pytest.approx([1e-5, 8.3e-4, 8.3e-4])
    assert spec.gravity == (0, -9.81, 0)
    assert spec.joints[0].type == "revolute" and spec.joints[0].parts == ("ground", "crank")
    assert spec.drivers[0].joint == "crank_pivot" and spec.drivers[0].coordinate == "angle"


@pytest.mark.parametrize("edit,expected", [
    (lambda s: s.replace('parts = ["ground", "crank"]', 'parts = ["ground", "crnk"]'), r"unknown part 'crnk'.*known parts"),
    (lambda s: s.replace('type = "revolute"', 'type = "hinge"'), r"unknown joint type 'hinge'.*known types"),
    (lambda s: s.replace('expression = "t**2"', 'expression = "__import__(\'os\').system(\'true\')"'), r"not allowed|unknown name"),
    (lambda s: s.replace('expression = "t**2"', 'expression = "t**"'), r"cannot parse"),
    (lambda s: s.replace('units = "mm"', 'units = "furlong"'), r"unknown length unit"),
    (lambda s: s.replace('mass = 1.0', 'mass = -1.0'), r"`mass` must be positive"),
    (lambda s: s.replace('axis = [0, 0, 1]', 'axis = [0, 0]'), r"`axis` must be a list of 3 numbers"),
    (lambda s: s.replace('joint = "crank_pivot"', 'joint = "nope"'), r"unknown joint 'nope'"),
    (lambda s: s + "\n[[joints]]\nname = \"x\"\ntype = \"revolute\"\nparts = [\"ground\", \"crank\"]\norigin = [0,0,0]\naxs = [0,0,1]\n",
     r"unknown key\(s\) 'axs'"),
    (lambda s: s.replace("[parts.crank]", "[parts.crank"), r"TOML syntax error.*line"),
])
def test_each_mistake_gives_one_message_naming_the_file_and_item(tmp_path, edit, expected):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(CadmotionError, match="(?s)" + expected) as info:
        compile_model(load(path))
    assert str(path) in str(info.value)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(ModelFileError, match="no such model file"):
        load(tmp_path / "absent.cadmotion.toml")
    with pytest.raises(CadmotionError, match="unknown file type"):
        load(write(tmp_path, "x", "model.yaml"))


def test_joint_frame_is_attached_to_both_parts_at_the_initial_pose(tmp_path):
    text = GOOD.replace("position = [0, 0, 0]\norientation = [1, 0, 0, 0]",
                        "position = [10, 20, 30]\norientation = [0.7071067811865476, 0, 0, 0.7071067811865476]")
    spec = load(write(tmp_path, text))
    m_ground, m_crank = spec.joints[0].markers
    # the crank's marker, taken through the crank's pose, lands on the ground's marker
    R = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    world = R @ np.array(m_crank.origin) + np.array([0.01, 0.02, 0.03])
    np.testing.assert_allclose(world, m_ground.origin, atol=1e-15)
    np.testing.assert_allclose(R @ np.array(m_crank.rotation), np.array(m_ground.rotation), atol=1e-15)


BUSHING = """
units = "mm"
gravity = [0, -9.81, 0]
[parts.ground]
fixed = true
[parts.box]
mass = 2.0
inertia = [10000, 20000, 25000]
[[forces]]
name = "mount"
type = "bushing"
parts = ["ground", "box"]
points = [[0, 0, 0]]
stiffness = [1000.0, 4000.0, 1000.0]
damping = [60.0, 120.0, 60.0]
rotational_stiffness = 50.0
rotational_damping = 2.0
"""


def test_bushing_keys_reach_the_dynamics_and_the_mount_sags_by_m_g_over_k(tmp_path):
    from cadmotion.kernel.dynamics import simulate

    spec = load(write(tmp_path, BUSHING))
    params = dict(spec.forces[0].params)
    assert params["stiffness"] == (1000.0, 4000.0, 1000.0)
    assert params["rotational_stiffness"] == 50.0 and params["rotational_damping"] == 2.0
    motion = simulate(compile_model(spec), 3.0, 30)
    # damped to rest: the y-stiffness carries the weight, 2 kg * 9.81 / 4000 N/m
    assert motion.position[-1, motion.part_index("box")] == pytest.approx([0, -2 * 9.81 / 4000, 0], abs=1e-6)


def test_force_keys_that_mean_nothing_are_refused(tmp_path):
    with pytest.raises(ModelFileError, match="unknown key\\(s\\) 'torque'"):
        load(write(tmp_path, BUSHING.replace("rotational_damping = 2.0", "torque = 1.0")))


ON_A_CYLINDER = """
gravity = [0, 0, -9.81]
[parts.ground]
fixed = true
[parts.bob]
position = [0.5, 0, -0.3]
mass = 2.0
inertia = [1e-3, 1e-3, 1e-3]
[[joints]]
name = "keep"
type = "point-line-distance"
parts = ["ground", "bob"]
origin = [0, 0, 0]
axis = [0, 0, 1]
origin2 = [0.5, 0, -0.3]
[initial_velocity.bob]
velocity = [0, 1.0, 0]
"""


def test_point_line_distance_measures_from_the_line_and_keeps_the_bob_on_its_cylinder(tmp_path):
    """The bob starts 0.5 m from the z axis and 0.3 m below the origin: the measured length is the
    0.5 m from the line (not the 0.58 m to the origin); released at 1 m/s tangentially it circles
    at ω = v/r = 2 rad/s while it falls freely along the axis."""
    from cadmotion.kernel.dynamics import simulate

    model = compile_model(load(write(tmp_path, ON_A_CYLINDER)))
    [group] = [g for g in model.groups if g.template == "point-line-distance"]
    assert group.params[0] == pytest.approx([0.5], abs=1e-15)
    motion = simulate(model, 1.0, 10, rtol=1e-10, atol=1e-12)
    t, r = motion.time, motion.position[:, motion.part_index("bob")]
    np.testing.assert_allclose(r[:, 0], 0.5 * np.cos(2 * t), atol=1e-7)
    np.testing.assert_allclose(r[:, 1], 0.5 * np.sin(2 * t), atol=1e-7)
    np.testing.assert_allclose(r[:, 2], -0.3 - 9.81 / 2 * t**2, atol=1e-7)


def test_line_distance_joints_need_the_point_on_the_second_part(tmp_path):
    text = ON_A_CYLINDER.replace("origin2 = [0.5, 0, -0.3]\n", "")
    with pytest.raises(ModelFileError, match="point-line-distance joint needs `origin2`"):
        load(write(tmp_path, text))
    with pytest.raises(ModelFileError, match="`origin2` is only for"):
        load(write(tmp_path, ON_A_CYLINDER.replace('"point-line-distance"', '"spherical"')))
