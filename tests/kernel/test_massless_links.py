"""Massless links: a link of mass 0 between two joints (the virtual link of a two-axis joint in a URDF
file) runs in joint coordinates, where its joints carry it; the absolute-coordinate formulations, which
need every moving part's own mass, refuse it naming the part; a massless link that moves on its own is
refused before any run, naming its joint.

References, independent of the code under test: the same arm hung from a universal joint (one joint
template, no middle link) in the absolute formulation; the conservation of energy (no damping)."""

import warnings

import numpy as np
import pytest

from cadmotion.errors import MechanismError
from cadmotion.importers.modelfile import parse_model
from cadmotion.importers.urdf import read_urdf
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

GRAVITY = (-2.0, -3.0, -9.81)  # m/s², tilted so that both axes turn

# an arm of 1 kg, its centre of mass 0.3 m along x, hung from a gimbal: yaw about z, then pitch about y,
# through one point; the gimbal link between the two joints has no <inertial> (mass 0)
GIMBAL = """<?xml version="1.0"?>
<robot name="gimbal">
  <link name="base"/>
  <link name="gimbal"/>
  <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="yaw" type="continuous"><parent link="base"/><child link="gimbal"/><axis xyz="0 0 1"/></joint>
  <joint name="pitch" type="continuous"><parent link="gimbal"/><child link="arm"/><axis xyz="0 1 0"/></joint>
</robot>
"""


def _gimbal(tmp_path, body=GIMBAL):
    path = tmp_path / "gimbal.urdf"
    path.write_text(body)
    return compile_model(read_urdf(path, gravity=GRAVITY))


def test_a_massless_link_between_two_joints_runs_in_joint_coordinates(tmp_path):
    model = _gimbal(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn of: a well-posed model
        m, res = run(model, 1.0, 20, rtol=1e-10, atol=1e-12)
    assert res.formulation == "semi-recursive" and m.complete and res.invariants.ok
    # the same arm on a universal joint (its own template, no middle link), absolute coordinates
    uni = compile_model(parse_model({
        "gravity": list(GRAVITY),
        "parts": {"base": {"fixed": True},
                  "arm": {"mass": 1.0, "com": [0.3, 0, 0], "inertia": [0.01, 0.02, 0.03]}},
        "joints": [{"name": "cross", "type": "universal", "parts": ["base", "arm"], "origin": [0, 0, 0],
                    "axis": [0, 0, 1], "axis2": [0, 1, 0]}],
    }, source="<universal>"))
    ref, ref_res = run(uni, 1.0, 20, formulation="projection", rtol=1e-10, atol=1e-12)
    assert ref.complete
    arm, arm_ref = m.part_index("arm"), ref.part_index("arm")
    com = np.array([0.3, 0.0, 0.0])
    for k in range(m.nt):
        moved = m.pose("arm", m.time[k])[:3, :3] @ com
        expected = ref.pose("arm", ref.time[k])[:3, :3] @ com
        assert np.max(np.abs(moved - expected)) < 1e-8, (k, moved, expected)
    assert np.max(np.abs(m.position[:, arm] - ref.position[:, arm_ref])) < 1e-8
    # it moved (a fall of 1 s), and its energy is kept: the massless link stores none
    assert np.max(np.abs(m.quaternion[-1, arm] - m.quaternion[0, arm])) > 0.1
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) < 1e-8 * np.max(m.extra["energy.kinetic"])


def test_the_absolute_formulations_refuse_a_massless_link_naming_it(tmp_path):
    model = _gimbal(tmp_path)
    for formulation in ("projection", "baumgarte", "index3"):
        with pytest.raises(MechanismError) as err:
            run(model, 0.1, 2, formulation=formulation)
        text = str(err.value)
        assert "part 'gimbal' has mass 0" in text and formulation in text and "semi-recursive" in text


def test_a_massless_link_moving_on_its_own_is_refused_naming_its_joint(tmp_path):
    # a massless flap at the arm's tip, on a joint of its own: nothing carries its motion
    flap = GIMBAL.replace("</robot>", """  <link name="flap"/>
  <joint name="hinge" type="revolute"><parent link="arm"/><child link="flap"/><origin xyz="0.6 0 0"/>
    <axis xyz="1 0 0"/></joint>
</robot>""")
    model = _gimbal(tmp_path, flap)
    with pytest.raises(MechanismError, match="singular on the motion the joints allow.*joint 'hinge'"):
        run(model, 0.1, 2)


def test_a_part_of_mass_0_with_an_inertia_is_refused(build):
    spec = build({"gravity": [0, 0, -9.81],
                  "parts": {"ground": {"fixed": True}, "bob": {"mass": 0.0, "inertia": [1e-3, 1e-3, 1e-3]}},
                  "joints": [{"name": "pin", "type": "revolute", "parts": ["ground", "bob"], "origin": [0, 0, 0],
                              "axis": [1, 0, 0]}]})
    with pytest.raises(MechanismError, match="'bob' has mass 0 and an inertia"):
        run(compile_model(spec), 0.1, 2)
