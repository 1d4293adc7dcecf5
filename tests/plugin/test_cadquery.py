"""The CadQuery front end, with real cadquery: parts, joints (dicts or constraints), moving the assembly."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from cadmotion.errors import DrivingError, MechanismError  # noqa: E402
from cadmotion.importers.cadquery import assembly_spec, constraint_joints  # noqa: E402
from cadmotion.plugin.cadquery import CadQueryMotion, ocp_tracks, simulate  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "cadquery_crank.py"


def _sample():
    spec = importlib.util.spec_from_file_location("cadquery_crank_sample", SAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sample():
    return _sample()


@pytest.fixture(scope="module")
def run(sample):
    assy = sample.build_assembly()
    motion = simulate(assy, sample.JOINTS, sample.DRIVERS, fixed=sample.FIXED, t_end=1.0, steps=24)
    return assy, motion


def slider_x(sample, t):
    """Closed form: crank angle 30 deg + 360 deg/s * t, pin offset 0 (metres)."""
    th = math.radians(sample.ANGLE0) + 2 * math.pi * t
    c, l = sample.CRANK * 1e-3, sample.ROD * 1e-3
    return c * math.cos(th) + math.sqrt(l * l - (c * math.sin(th)) ** 2)


def test_parts_are_the_assembly_children_in_metres_with_mass(run, sample):
    assy, motion = run
    spec = motion.spec
    assert [p.name for p in spec.parts] == ["base", "crank", "rod", "slider"]
    rod = spec.part("rod")
    assert np.allclose(rod.position, (sample.PIN[0] * 1e-3, sample.PIN[1] * 1e-3, 0.008))
    # crank: a 56 x 16 x 6 mm bar with two 8 mm holes, density 1000
    vol = (56 * 16 - 2 * math.pi * 16) * 6 * 1e-9
    assert spec.part("crank").mass == pytest.approx(1000 * vol, rel=1e-9)
    assert spec.part("base").fixed and not spec.part("crank").fixed
    assert spec.part("crank").color[:3] == pytest.approx((0.85, 0.3, 0.2))
    assert spec.cad is assy


def test_slider_follows_the_closed_form(run, sample):
    _, motion = run
    assert isinstance(motion, CadQueryMotion) and motion.complete
    b = motion.part_index("slider")
    expected = [slider_x(sample, t) for t in motion.time]
    assert np.allclose(motion.position[:, b, 0], expected, atol=1e-9)
    assert np.allclose(motion.position[:, b, 1:], [0.0, 0.016], atol=1e-9)


def test_apply_moves_the_parts_in_place_and_frames_copy(run, sample):
    assy, motion = run
    fresh = sample.build_assembly()
    motion.apply(fresh, 0.125)
    loc = fresh.objects["crank"].loc.toTuple()
    assert loc[1][2] == pytest.approx(sample.ANGLE0 + 45.0, abs=1e-6)   # toTuple gives degrees
    assert fresh.objects["slider"].loc.toTuple()[0][0] == pytest.approx(1e3 * slider_x(sample, 0.125), abs=1e-6)
    before = assy.objects["slider"].loc.toTuple()
    got = list(motion.frames(assy, times=[0.0, 0.25]))
    assert [t for t, _ in got] == [0.0, 0.25]
    assert got[1][1].objects["slider"].loc.toTuple()[0][0] == pytest.approx(1e3 * slider_x(sample, 0.25), abs=1e-6)
    assert assy.objects["slider"].loc.toTuple() == before       # the original is not moved


def test_nested_nodes_get_locations_relative_to_their_parent():
    arm = cq.Assembly(cq.Workplane().box(10, 2, 2).translate((5, 0, 0)), name="arm",
                      loc=cq.Location((100, 0, 0)))
    arm.add(cq.Workplane().sphere(1), name="tip", loc=cq.Location((10, 0, 0)))
    assy = cq.Assembly(name="top")
    assy.add(cq.Workplane().box(4, 4, 4), name="ground", loc=cq.Location((100, 0, -5)))
    assy.add(arm)
    joints = [{"name": "hinge", "type": "revolute", "parts": ["ground", "arm"], "origin": [100, 0, 0], "axis": [0, 0, 1]},
              {"name": "weld", "type": "fixed", "parts": ["arm", "arm/tip"], "origin": [110, 0, 0]}]
    motion = simulate(assy, joints, [{"joint": "hinge", "expression": "pi/2*t"}], fixed=["ground"], t_end=1, steps=4)
    assert motion.part_index("arm/tip") >= 0
    motion.apply(assy, 1.0)
    # the tip's world position: the arm turned by 90 deg about (100, 0, 0)
    X = np.eye(4)
    for node in (assy, assy.objects["arm"], assy.objects["arm/tip"]):
        T = node.loc.wrapped.Transformation()
        X = X @ np.array([[T.Value(r, c) for c in range(1, 5)] for r in range(1, 4)] + [[0, 0, 0, 1]])
    assert np.allclose(X[:3, 3], (100, 10, 0), atol=1e-6)
    tip_loc = assy.objects["arm/tip"].loc.toTuple()[0]
    assert np.allclose(tip_loc, (10, 0, 0), atol=1e-6)            # unchanged relative to the arm


def _two_part(constraints):
    base = cq.Workplane().box(60, 30, 10).faces(">Z").workplane().hole(8)
    crank = cq.Workplane().center(20, 0).box(56, 12, 5).faces(">Z").workplane(
        centerOption="ProjectedOrigin", origin=(0, 0, 0)).pushPoints([(0, 0), (40, 0)]).hole(8)
    assy = cq.Assembly(name="pair")
    assy.add(base, name="base")
    assy.add(crank, name="crank", loc=cq.Location((0, 0, 5), (0, 0, 1), 20))
    near = lambda p: cq.selectors.NearestToPointSelector(p)
    base_hole = base.edges("%CIRCLE").edges(near((0, 0, 5))).val()
    crank_hole = crank.edges("%CIRCLE").edges(near((0, 0, 0))).val()
    for kind in constraints:
        if kind == "Fixed":
            assy.constrain("base", "Fixed")
        else:
            assy.constrain("base", base_hole, "crank", crank_hole, kind)
    return assy


def test_assembly_constraints_point_and_axis_make_a_revolute():
    assy = _two_part(["Fixed", "Point", "Axis"])
    joints, fixed = constraint_joints(assy)
    assert fixed == ["base"]
    assert [(j["name"], j["type"], j["parts"]) for j in joints] == [("base-crank", "revolute", ["base", "crank"])]
    assert np.allclose(joints[0]["origin"], (0, 0, 5), atol=1e-9)
    assert abs(joints[0]["axis"][2]) == pytest.approx(1.0)
    motion = simulate(assy, drivers=[{"joint": "base-crank", "expression": "pi*t"}], t_end=1.0, steps=8)
    X0, X1 = motion.pose("crank", 0.0), motion.pose("crank", 1.0)
    pin0 = X0[:3, :3] @ [0.04, 0, 0] + X0[:3, 3]
    pin1 = X1[:3, :3] @ [0.04, 0, 0] + X1[:3, 3]
    assert np.allclose(pin1[:2], -pin0[:2], atol=1e-9)            # half a turn about the hole
    assert pin1[2] == pytest.approx(pin0[2])


def test_plane_and_point_constraints():
    joints, _ = constraint_joints(_two_part(["Plane"]))
    assert joints[0]["type"] == "revolute"
    joints, _ = constraint_joints(_two_part(["Point"]))
    assert joints[0]["type"] == "spherical"


def test_unsupported_constraints_are_refused_with_a_hint():
    with pytest.raises(MechanismError, match="joints="):
        constraint_joints(_two_part(["Axis"]))
    with pytest.raises(MechanismError, match="no joints and no constraints"):
        assembly_spec(cq.Assembly(cq.Workplane().box(1, 1, 1), name="lonely"))


def test_geometry_references_in_joint_dicts(sample):
    assy = sample.build_assembly()
    joints = [dict(j) for j in sample.JOINTS]
    joints[0] = {"name": "pivot", "type": "revolute", "parts": ["base", "crank"],
                 "origin": {"part": "crank", "edge": "circle", "near": [0, 0, 6]},
                 "axis": {"part": "crank", "face": "cylinder", "near": [4, 0, 3]}}
    spec = assembly_spec(assy, joints, sample.DRIVERS, fixed=["base"])
    Xc = np.eye(4)
    p = spec.part("crank")
    from cadmotion.kernel.motion import quat_to_matrix
    Xc[:3, :3], Xc[:3, 3] = quat_to_matrix(np.array(p.orientation)), p.position
    m = spec.joint("pivot").markers[1]
    world = Xc[:3, :3] @ np.array(m.origin) + Xc[:3, 3]
    assert np.allclose(world[:2], 0, atol=1e-9)


def test_unknown_unit_and_fixed_part_are_errors(sample):
    assy = sample.build_assembly()
    with pytest.raises(MechanismError, match="length unit"):
        simulate(assy, sample.JOINTS, sample.DRIVERS, length_unit="furlong")
    with pytest.raises(MechanismError, match="fixed part 'nope'"):
        simulate(assy, sample.JOINTS, sample.DRIVERS, fixed=["nope"])


def test_html_view(run):
    assy, motion = run
    html = motion._repr_html_()
    assert html.startswith("<iframe srcdoc=") and "&lt;!DOCTYPE html&gt;" in html


def _quat_xyzw_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_ocp_viewer_tracks_put_every_part_where_apply_puts_it(sample):
    """three-cad-viewer plays a "t" track as initial position + offset and a "q" track as
    initial quaternion * q (its animation.js); composed that way, the tracks must give
    the node locations that ``apply`` sets, at every frame. The assembly is built inside a
    tilted and shifted sub-assembly so that parent frames matter, and the crank's node is
    turned over about the crank's long axis, so that initial * q and q * initial differ."""
    from cadmotion.importers.cadquery import _loc_matrix

    def inner_assembly():
        assy = sample.build_assembly()
        crank = assy.objects["crank"]
        crank.loc = crank.loc * cq.Location(cq.Vector(0, 0, 0), cq.Vector(1, 0, 0), 180)
        return assy

    inner = inner_assembly()
    outer = cq.Assembly(name="top")
    shift, turn = np.array([5.0, -3.0, 2.0]), np.radians(30)
    outer_loc = cq.Location(cq.Vector(*shift), cq.Vector(0, 0, 1), 30)
    outer.add(inner, name=inner.name, loc=outer_loc)
    R = np.array([[np.cos(turn), -np.sin(turn), 0], [np.sin(turn), np.cos(turn), 0], [0, 0, 1]])
    joints = [dict(j, origin=list(R @ j["origin"] + shift), axis=list(R @ j["axis"]),
                   parts=[f"{inner.name}/{p}" for p in j["parts"]]) for j in sample.JOINTS]
    motion = simulate(outer, joints, sample.DRIVERS, fixed=[f"{inner.name}/{p}" for p in sample.FIXED],
                      t_end=1.0, steps=8)
    assert motion.complete
    tracks = ocp_tracks(motion, outer)
    moving = {path for path, *_ in tracks}
    assert moving == {f"/top/{inner.name}/{n}" for n in ("crank", "rod", "slider")}
    initial = {f"/top/{inner.name}/{n.name}": _loc_matrix(n.loc) for n in inner.children}
    for k, t in enumerate(motion.time):
        moved = motion.apply(cq.Assembly(name="top").add(inner_assembly(), name=inner.name, loc=outer_loc),
                             float(t))
        now = {f"/top/{inner.name}/{n.name}": _loc_matrix(n.loc) for n in moved.children[0].children}
        for path, action, times, values in tracks:
            L0 = initial[path]
            if action == "t":
                np.testing.assert_allclose(L0[:3, 3] + values[k], now[path][:3, 3], atol=1e-9)
            else:
                np.testing.assert_allclose(L0[:3, :3] @ _quat_xyzw_matrix(values[k]), now[path][:3, :3], atol=1e-9)


def test_sample_script_writes_the_animation(tmp_path, sample):
    assert sample.main([str(tmp_path)]) == 0
    assert (tmp_path / "cadquery_crank.html").read_bytes().startswith(b"<!DOCTYPE html>")
    assert (tmp_path / "cadquery_crank.glb").read_bytes()[:4] == b"glTF"
    assert (tmp_path / "cadquery_crank.step").read_bytes().startswith(b"ISO-10303-21")


# ----------------------------------------------------------------------------- README, ground, viewer
README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_cadquery_block():
    """The first python code block of the README's "## CadQuery" section, verbatim."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## CadQuery\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def _closed_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]                   # nothing listens there once closed


def test_the_readme_cadquery_example_runs_as_written(tmp_path, monkeypatch):
    ocp_vscode = pytest.importorskip("ocp_vscode")
    ocp_vscode.set_port(_closed_port())             # no viewer running
    monkeypatch.chdir(tmp_path)
    namespace = {}
    with pytest.warns(UserWarning) as caught:
        exec(compile(_readme_cadquery_block(), str(README), "exec"), namespace)   # noqa: S102
    messages = [str(w.message) for w in caught]
    assert any("'base' (the first part) is the ground" in m for m in messages)
    assert any("no OCP CAD Viewer is running" in m for m in messages)
    motion, assy = namespace["motion"], namespace["assy"]
    assert motion.spec.part("base").fixed and not motion.spec.part("crank").fixed
    # driven at 2*pi*t rad: at t = 0.25 s the crank has turned 90 degrees about z
    (x, y, z), (rx, ry, rz) = assy.objects["crank"].loc.toTuple()
    assert (x, y, z) == pytest.approx((0, 0, 0), abs=1e-9) and rz == pytest.approx(90.0, abs=1e-6)
    with pytest.warns(UserWarning, match="no OCP CAD Viewer is running"):
        assert motion.animation(assy, show=False) is None
    assert (tmp_path / "crank.glb").stat().st_size > 0 and (tmp_path / "crank.html").stat().st_size > 0


def test_a_named_ground_or_a_fixed_constraint_is_kept(sample):
    assy = sample.build_assembly()
    motion = simulate(assy, sample.JOINTS, sample.DRIVERS, fixed=["base"], t_end=0.25, steps=2)
    assert [p.name for p in motion.spec.parts if p.fixed] == ["base"]


def test_no_ground_at_all_names_the_fix_not_dynamics(sample):
    assy = sample.build_assembly()
    with pytest.raises(DrivingError) as err:
        simulate(assy, sample.JOINTS, sample.DRIVERS, fixed=[], t_end=0.25, steps=2)
    assert "no part of cq.Assembly 'slider_crank' is fixed" in str(err.value)
    assert "fixed=['base']" in err.value.hint and "dynamic" not in err.value.hint
