"""URDF files (importers/urdf.py): the real double pendulum of Gepetto's example-robot-data
(``../shared/data/urdf-double-pendulum``, see SOURCES.md) read into parts, joints and dampers, and
its motion under gravity against the Lagrange equations of the same two links, written here from
the file's numbers; bad files get errors naming the element."""

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.errors import CadImportError
from cadmotion.importers import load
from cadmotion.importers.urdf import read_urdf, rpy_matrix
from cadmotion.kernel import compile_model

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "urdf-double-pendulum"
PENDULUM = DATA / "double_pendulum_simple.urdf"
needs_data = pytest.mark.skipif(not PENDULUM.exists(), reason="shared test data not available")

# the file's numbers: link1 (0.2 kg, com 0.05 m up its z, Ixx 0.000177083), link2 (0.3 kg, com 0.1 m, Ixx
# 0.001015625) 0.1 m up link1, both joints about x with damping 0.05 N m s/rad; link3 a massless frame 0.2 m
# up link2, welded
M1, C1, I1 = 0.2, 0.05, 0.000177083
M2, C2, I2 = 0.3, 0.1, 0.001015625
L1, DAMPING, G = 0.1, 0.05, 9.81


def lagrange_double_pendulum(t_end, times):
    """Absolute angles φ1, φ2 (rad, about +x) of the links, gravity −G along y, from rest at φ = 0 (links along
    +z: horizontal to gravity), and the joints' dampers; the two-link Lagrange equations in absolute angles."""

    def rhs(t, y):
        p1, p2, w1, w2 = y
        d = p1 - p2
        M = np.array([[M1 * C1**2 + I1 + M2 * L1**2, M2 * L1 * C2 * np.cos(d)],
                      [M2 * L1 * C2 * np.cos(d), M2 * C2**2 + I2]])
        rel = w2 - w1  # joint2's rate; joint1's is w1
        f = np.array([-M2 * L1 * C2 * np.sin(d) * w2**2 + G * (M1 * C1 + M2 * L1) * np.cos(p1) - DAMPING * w1
                      + DAMPING * rel,
                      M2 * L1 * C2 * np.sin(d) * w1**2 + G * M2 * C2 * np.cos(p2) - DAMPING * rel])
        return [w1, w2, *np.linalg.solve(M, f)]

    sol = solve_ivp(rhs, (0.0, t_end), [0.0, 0.0, 0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    return sol.y[0], sol.y[1]


def test_rpy_is_roll_about_x_then_pitch_about_y_then_yaw_about_z_all_fixed_axes():
    def about(axis, a):
        c, s = np.cos(a), np.sin(a)
        i, j = [(1, 2), (2, 0), (0, 1)][axis]
        R = np.eye(3)
        R[i, i] = R[j, j] = c
        R[i, j], R[j, i] = -s, s
        return R

    r, p, y = 0.3, -0.7, 1.9
    np.testing.assert_allclose(rpy_matrix((r, p, y)), about(2, y) @ about(1, p) @ about(0, r), atol=1e-15)


@needs_data
def test_the_double_pendulum_reads_as_its_links_joints_and_dampers():
    spec = load(PENDULUM)
    assert spec.name == "2dof_planar"
    parts = {p.name: p for p in spec.parts}
    assert list(parts) == ["base_link", "link1", "link2", "link3"] and parts["base_link"].fixed
    np.testing.assert_allclose(parts["link2"].position, [0.0375, 0.0, 0.1], atol=1e-15)
    np.testing.assert_allclose(parts["link3"].position, [0.0375, 0.0, 0.3], atol=1e-15)
    assert parts["link1"].mass == pytest.approx(M1) and parts["link1"].com == pytest.approx((0, 0, C1))
    # link3 is massless and welded to link2: together they carry link2's mass data exactly
    assert parts["link2"].mass + parts["link3"].mass == pytest.approx(M2, rel=1e-15)
    world_com = [np.asarray(parts[n].position) + np.asarray(parts[n].com) for n in ("link2", "link3")]
    np.testing.assert_allclose(world_com[0], world_com[1], atol=1e-15)
    joints = {j.name: j for j in spec.joints}
    assert [(j.type, j.parts) for j in joints.values()] == [("revolute", ("base_link", "link1")),
                                                            ("revolute", ("link1", "link2")),
                                                            ("fixed", ("link2", "link3"))]
    # lower = upper = 0 in the file: not limited (the SOURCES note: the joints are meant to be free)
    assert all(not j.limits for j in joints.values())
    assert {(f.joint, f.type, dict(f.params)["damping"]) for f in spec.forces} == {
        ("joint1", "rotational-spring-damper", DAMPING), ("joint2", "rotational-spring-damper", DAMPING)}


@needs_data
def test_the_double_pendulum_falls_as_the_lagrange_equations_of_its_links_say():
    # Gravity along −y with the links along +z: they start horizontal to it and swing down through 2 s, the
    # dampers taking energy. Reference: the Lagrange equations above, DOP853 at rtol 1e-12. Allowance 1e-6 rad
    # and 1e-6 m, the run's own tolerance 1e-10.
    from cadmotion.kernel.dynamics import simulate

    model = compile_model(read_urdf(PENDULUM, gravity=(0.0, -G, 0.0)))
    motion = simulate(model, t_end=2.0, steps=40, formulation="projection", integrator="DOP853", rtol=1e-10,
                      atol=1e-12)
    assert motion.complete, motion.message
    p1, p2 = lagrange_double_pendulum(2.0, motion.time)
    np.testing.assert_allclose(motion.coordinate("joint1.angle"), p1, atol=1e-6)
    np.testing.assert_allclose(motion.coordinate("joint2.angle"), p2 - p1, atol=1e-6)
    # the end-effector frame (link3, 0.2 m up link2) where the links' angles put it
    tip = motion.position[:, motion.part_index("link3")]
    np.testing.assert_allclose(tip[:, 1], -L1 * np.sin(p1) - 0.2 * np.sin(p2), atol=1e-6)
    np.testing.assert_allclose(tip[:, 2], L1 * np.cos(p1) + 0.2 * np.cos(p2), atol=1e-6)
    assert not [e for e in motion.events if e.kind == "invariant"]


def _write(tmp_path, body):
    path = tmp_path / "robot.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="r">\n{body}\n</robot>\n')
    return path


LINKS = '<link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>'


@pytest.mark.parametrize("body, words", [
    ("<link", ["not a well-formed XML"]),
    (LINKS + '<joint name="j" type="revolute"><parent link="a"/><child link="c"/></joint>',
     ["<joint name='j'>", "link 'c'", "does not define"]),
    (LINKS + '<joint name="j" type="gearbox"><parent link="a"/><child link="b"/></joint>',
     ["<joint name='j'>", "unknown joint type 'gearbox'"]),
    (LINKS + '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 x 0"/></joint>',
     ["<joint name='j'>", "xyz='0 x 0'"]),
    (LINKS + '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
             '<limit lower="1" upper="-1"/></joint>', ["<joint name='j'> <limit>", "lower 1.0 is above upper"]),
    (LINKS + '<link name="c"/><joint name="j" type="fixed"><parent link="b"/><child link="c"/></joint>'
             '<joint name="k" type="fixed"><parent link="c"/><child link="b"/></joint>', ["j, k form a loop"]),
    ('<link name="a"/><link name="b"/>', ["2 links are no joint's child (a, b)"]),
    (LINKS + '<link name="c"/><joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'
             '<joint name="k" type="fixed"><parent link="a"/><child link="b"/></joint>', ["child of two joints"]),
])
def test_a_bad_urdf_is_an_error_naming_the_file_and_the_element(tmp_path, body, words):
    path = _write(tmp_path, body)
    with pytest.raises(CadImportError) as info:
        read_urdf(path)
    text = str(info.value)
    assert str(path) in text and all(w in text for w in words), text


def test_limits_and_a_prismatic_axis_turned_by_the_joint_origin(tmp_path):
    # A prismatic joint along its frame's x, the frame turned by yaw 90°: the slide is along world y.
    path = _write(tmp_path, LINKS + '<joint name="j" type="prismatic"><parent link="a"/><child link="b"/>'
                                    '<origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/><axis xyz="1 0 0"/>'
                                    '<limit lower="-0.1" upper="0.2"/></joint>')
    spec = read_urdf(path)
    (joint,) = spec.joints
    assert joint.type == "prismatic" and dict(joint.limits) == {"disp": (-0.1, 0.2)}
    parts = {p.name: p for p in spec.parts}
    np.testing.assert_allclose(parts["b"].position, [1, 2, 3], atol=1e-15)
    R = np.asarray(joint.markers[0].rotation)  # the marker in part a (the root: the world), columns = axes
    np.testing.assert_allclose(np.abs(R[:, 2]), [0, 1, 0], atol=1e-12)


@needs_data
def test_the_links_visual_boxes_are_their_shapes_and_colours():
    # link1's visual: a 0.025 × 0.025 × 0.1 m box centred 0.05 m up the link's z, green; link3 has none
    pytest.importorskip("OCP")
    from cadmotion.geometry.shapes import bounding_box

    parts = {p.name: p for p in load(PENDULUM).parts}
    lo, hi = bounding_box(parts["link1"].shape)
    np.testing.assert_allclose(lo, [-0.0125, -0.0125, 0.0], atol=1e-9)
    np.testing.assert_allclose(hi, [0.0125, 0.0125, 0.1], atol=1e-9)
    assert parts["link1"].color == (0.0, 1.0, 0.0, 1.0) and parts["link3"].shape is None


def test_a_cylinder_and_a_sphere_turned_and_moved_by_their_visual_origin(tmp_path):
    # URDF's cylinder is centred on its frame, its axis along z; turned by roll 90° its axis is along −y
    pytest.importorskip("OCP")
    from cadmotion.geometry.shapes import bounding_box

    path = _write(tmp_path, '<link name="a"><visual><origin xyz="1 0 0" rpy="1.5707963267948966 0 0"/>'
                            '<geometry><cylinder radius="0.1" length="0.4"/></geometry></visual>'
                            '<visual><origin xyz="0 0 2"/><geometry><sphere radius="0.5"/></geometry></visual>'
                            '<visual><geometry><mesh filename="a.stl"/></geometry></visual></link>')
    with pytest.warns(UserWarning, match="<mesh>"):
        (part,) = read_urdf(path).parts
    lo, hi = bounding_box(part.shape)
    np.testing.assert_allclose(lo, [-0.5, -0.5, -0.1], atol=1e-7)
    np.testing.assert_allclose(hi, [1.1, 0.5, 2.5], atol=1e-7)


def _two_revolutes(mimic):
    return ('<link name="a"/>' + "".join(f'<link name="{n}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
                                         f'izz="1"/></inertial></link>' for n in "bc")
            + '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>'
            + f'<joint name="j2" type="revolute"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/>'
              f'<axis xyz="0 0 1"/>{mimic}</joint>')


def test_a_mimic_joint_turns_as_its_multiplier_times_the_joint_it_mimics(tmp_path):
    # j2 mimics j1 with multiplier −2: one degree of freedom; j1 driven through 1 rad turns j2 through −2 rad
    from cadmotion.plugin.run_analysis import run_spec

    spec = read_urdf(_write(tmp_path, _two_revolutes('<mimic joint="j1" multiplier="-2"/>')))
    assert [(j.type, j.joints, j.param("ratio")) for j in spec.joints if j.type == "gear"] == [
        ("gear", ("j1", "j2"), -2.0)]
    motion = run_spec(spec, "kinematic", t_end=1.0, steps=10, drive=["j1=t"]).motion
    np.testing.assert_allclose(motion.coordinate("j2.angle"), -2 * motion.time, atol=1e-9)


def test_a_mimic_with_an_offset_and_a_transmission_are_named_as_not_read(tmp_path):
    with pytest.warns(UserWarning, match=r"<joint name='j2'> <mimic> \(offset 0.5\); <transmission name='t'>"):
        spec = read_urdf(_write(tmp_path, _two_revolutes('<mimic joint="j1" multiplier="1" offset="0.5"/>')
                                + '<transmission name="t"><type>SimpleTransmission</type></transmission>'))
    assert not [j for j in spec.joints if j.type == "gear"]


def test_a_mimic_of_a_joint_the_file_does_not_define_leaves_the_joint_free_and_is_named(tmp_path):
    # as urdfdom and Pinocchio read it (a file of example-robot-data names its hands' joints so): two joints, two
    # degrees of freedom, and the warning names the mimic
    with pytest.warns(UserWarning, match=r"<joint name='j2'> <mimic> \(it mimics joint 'q1', which the file"):
        spec = read_urdf(_write(tmp_path, _two_revolutes('<mimic joint="q1" multiplier="2"/>')))
    assert [j.name for j in spec.joints] == ["j1", "j2"]


def test_a_fixed_joints_axis_is_not_read_and_a_moving_joints_zero_axis_is_an_error(tmp_path):
    # files write <axis xyz="0 0 0"/> on fixed joints (Talos, TIAGo, iCub, Go2 in example-robot-data)
    welded = LINKS.replace('name="a"/>', 'name="a"/><link name="c"/>') + (
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>'
        '<joint name="tool" type="fixed"><parent link="b"/><child link="c"/><axis xyz="0 0 0"/></joint>')
    spec = read_urdf(_write(tmp_path, welded))
    assert [(j.name, j.type) for j in spec.joints] == [("j", "revolute"), ("tool", "fixed")]
    with pytest.raises(CadImportError, match=r"<joint name='j'>: its <axis xyz> is zero"):
        read_urdf(_write(tmp_path, welded.replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>')))


def test_a_prismatic_joints_damping_slows_a_falling_slider_to_its_terminal_speed(tmp_path):
    # A 2 kg slider on a vertical prismatic joint, damping 4 N s/m, gravity −9.81 along it: from rest,
    # v(t) = −(m g / c) (1 − e^(−c t / m)) (the closed form of m v̇ = −m g − c v).
    from cadmotion.kernel.dynamics import simulate

    m, c, g = 2.0, 4.0, 9.81
    path = _write(tmp_path, f'<link name="a"/><link name="b"><inertial><mass value="{m}"/><inertia ixx="1" iyy="1" '
                            f'izz="1"/></inertial></link><joint name="j" type="prismatic"><parent link="a"/>'
                            f'<child link="b"/><axis xyz="0 0 1"/><dynamics damping="{c}"/></joint>')
    spec = read_urdf(path, gravity=(0.0, 0.0, -g))
    motion = simulate(compile_model(spec), t_end=2.0, steps=20, formulation="projection", integrator="DOP853",
                      rtol=1e-10, atol=1e-12)
    v = motion.velocity[:, motion.part_index("b"), 2]
    np.testing.assert_allclose(v, -(m * g / c) * (1 - np.exp(-c * motion.time / m)), atol=1e-8)


def test_a_pendulum_carrying_a_welded_point_mass_and_a_massless_rotor_swings_as_their_sum(tmp_path):
    # Files give feet point masses (inertia 0) and rotors a zero mass with an inertia (Bolt, iCub in
    # example-robot-data); welded to a link they move with it, and the group's mass properties are the sum.
    # Link b: 1 kg, com 0.3 m down the pivot's z, Ixx 0.02; c welded 0.5 m down: a 0.5 kg point mass; d welded at
    # the pivot: mass 0, Ixx 0.01. A pendulum about x, gravity −9.81 along y, from the horizontal at rest:
    # (I_b + m_b d_b² + m_c d_c² + I_d) φ̈ = g (m_b d_b + m_c d_c) cos φ (the links' z at (0, −sin φ, cos φ): V = −g md
    # sin φ) — the ODE of the sum, integrated here.
    from cadmotion.kernel.dynamics import simulate

    inertial = '<inertial><origin xyz="{0}"/><mass value="{1}"/><inertia ixx="{2}" iyy="{2}" izz="{2}"/></inertial>'
    body = ('<link name="a"/>' + f'<link name="b">{inertial.format("0 0 0.3", 1.0, 0.02)}</link>'
            + f'<link name="c">{inertial.format("0 0 0", 0.5, 0.0)}</link>'
            + f'<link name="d">{inertial.format("0 0 0", 0.0, 0.01)}</link>'
            + '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/></joint>'
            + '<joint name="w1" type="fixed"><parent link="b"/><child link="c"/><origin xyz="0 0 0.5"/></joint>'
            + '<joint name="w2" type="fixed"><parent link="b"/><child link="d"/><origin xyz="0 0 0"/></joint>')
    with pytest.warns(UserWarning, match=r"<link name='c'> \(a singular inertia\) by 'b'"):
        spec = read_urdf(_write(tmp_path, body), gravity=(0.0, -9.81, 0.0))
    J = 0.02 + 1.0 * 0.3**2 + 0.5 * 0.5**2 + 0.01
    md = 1.0 * 0.3 + 0.5 * 0.5
    ref = solve_ivp(lambda t, y: [y[1], 9.81 * md * np.cos(y[0]) / J], (0, 1), [0.0, 0.0], method="DOP853",
                    rtol=1e-12, atol=1e-14, t_eval=np.linspace(0, 1, 11))
    motion = simulate(compile_model(spec), 1.0, 10, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(motion.coordinate("j.angle"), ref.y[0], atol=1e-7)
    assert not [e for e in motion.events if e.kind == "invariant"]


ARM = ('<link name="a"/>' + "".join(f'<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" '
                                    f'izz="0.1"/></inertial></link>' for n in "bcd")
       + '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
         '<limit lower="-3" upper="-0.07"/></joint>'
       + '<joint name="j2" type="revolute"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/>'
         '<axis xyz="0 0 1"/></joint>'
       + '<joint name="s" type="prismatic"><parent link="c"/><child link="d"/><origin xyz="0.5 0 0"/>'
         '<axis xyz="1 0 0"/><limit lower="0" upper="0.4"/></joint>')


def test_a_configuration_turns_and_slides_the_joints_from_the_files_zero_and_shifts_their_limits(tmp_path):
    # j1 at −π/2 about z, then j2 at +π/2, s slid 0.25 m along c's x: b's x axis points along −y, so c's origin is
    # at (0, −1, 0); c is turned back to the world's axes, so d's origin is at (0.75, −1, 0). Limits are measured
    # from the initial pose: j1's [−3, −0.07] becomes [−3 + π/2, −0.07 + π/2], s's [0, 0.4] becomes [−0.25, 0.15].
    spec = read_urdf(_write(tmp_path, ARM), configuration={"j1": -np.pi / 2, "j2": np.pi / 2, "s": 0.25})
    where = {p.name: np.asarray(p.position) for p in spec.parts}
    np.testing.assert_allclose(where["c"], [0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(where["d"], [0.75, -1, 0], atol=1e-12)
    limits = {j.name: dict(j.limits) for j in spec.joints}
    np.testing.assert_allclose(limits["j1"]["angle"], [-3 + np.pi / 2, -0.07 + np.pi / 2], atol=1e-12)
    np.testing.assert_allclose(limits["s"]["disp"], [-0.25, 0.15], atol=1e-12)


def test_a_zero_configuration_outside_the_limits_is_named_and_a_configuration_inside_them_lets_dynamics_start(
        tmp_path):
    # the Panda's fourth joint is limited to [−3.07, −0.07]: at the file's zero configuration dynamics refuses to
    # start (the stop's error); started at −1.5 rad the arm falls, its coordinate measured from there
    from cadmotion.errors import MechanismError
    from cadmotion.kernel.dynamics import simulate

    path = _write(tmp_path, ARM)
    with pytest.warns(UserWarning, match=r"outside the limits of j1 \(0 outside \[-3, -0.07\]\).*--configuration j1="):
        spec = read_urdf(path, gravity=(0.0, -9.81, 0.0))
    with pytest.raises(MechanismError, match="j1"):
        simulate(compile_model(spec), 0.1, 2)
    motion = simulate(compile_model(read_urdf(path, gravity=(0.0, -9.81, 0.0), configuration={"j1": -1.5})), 0.1, 2)
    assert motion.complete and motion.coordinate("j1.angle")[0] == 0.0


@pytest.mark.parametrize("configuration, words", [
    ({"nope": 1.0}, ["configuration", "joint 'nope' is not in the file"]),
    ({"j1": float("nan")}, ["joint 'j1'", "not a finite number"]),
])
def test_a_bad_configuration_is_an_error_naming_the_joint(tmp_path, configuration, words):
    with pytest.raises(CadImportError) as info:
        read_urdf(_write(tmp_path, ARM), configuration=configuration)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_the_command_line_sets_a_urdf_configuration_and_refuses_it_for_other_files(tmp_path, capsys):
    from cadmotion.plugin.cli import main

    path = _write(tmp_path, ARM)
    out = tmp_path / "arm.csv"
    assert main(["run", str(path), "--configuration", "j1=-1.5", "--drive", "j1=0", "--drive", "j2=t", "--drive",
                 "s=0", "--steps", "2", "-o", str(out)]) == 0
    assert out.exists()
    other = tmp_path / "m.cadmotion.toml"
    other.write_text('[parts.a]\nfixed = true\n')
    assert main(["run", str(other), "--configuration", "j1=1", "-o", str(tmp_path / "m.csv")]) == 1
    assert "--configuration applies to URDF files only" in capsys.readouterr().err
