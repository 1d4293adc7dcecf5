"""Specification of the OndselSolver ``.asmt`` reader.

The reference values are the files' own: the counts in shared/data/SOURCES.md, the
blocks of the files (RotationMatrix, Position3D, gravity, simulation parameters), and
above all the ``TimeSeries`` that OndselSolver computed and stored in the same files.
The kinematics of cadmotion's kernel is compared against that series at every stored
time, for every part.

Accuracy that OndselSolver's own series allows: the joints of the stored series close to
better than 1e-11 m (checked below), the values are printed with 14 significant digits,
and in kinematic mode the solver converges Newton iterations at every output time (no
time integration).  The comparisons therefore use, for every component,
``|ours - theirs| <= TOL * max(1, max |theirs| over the run)`` with ``TOL = 1e-8``.
"""

import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cadmotion.errors import CadImportError, ExpressionError
from cadmotion.importers.asmt import (
    bryant_to_matrix,
    read_asmt,
    read_asmt_simulation,
    read_asmt_time_series,
)
from cadmotion.importers.asmt_expressions import evaluate_expression, translate_expression

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "asmt-ondsel"  # ../shared/data beside the repo
FOURBAR = DATA / "fourbar.asmt"
GEARS = DATA / "Gears.asmt"
RACKSCREW = DATA / "rackscrew.asmt"
RACKPINION = DATA / "rackPinion.asmt"
WITH_SERIES = [FOURBAR, GEARS, RACKSCREW]

needs_data = pytest.mark.skipif(not DATA.exists(), reason="shared test data not available")

TOL = 1e-8


def _quat_to_matrix(q):
    q = np.asarray(q, float)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def _marker_world(R_WP, p_WP, frame):
    R_PM = np.array(frame.rotation)
    return R_WP @ R_PM, p_WP + R_WP @ np.array(frame.origin)


# --------------------------------------------------------------------------------------
# expressions
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("2.0d*pi*time", "2.0*pi*t"),            # fourbar.asmt, Smalltalk 'd' number
    ("2*pi*time", "2.0*pi*t"),               # Gears.asmt
    ("1.5d-3*time^2", "0.0015*t^2.0"),
    ("-2^2", "-(2.0^2.0)"),                  # OndselSolver negates the whole term
    ("time*-2^2", "t*(-2.0)^2.0"),           # ... but a glued sign makes a signed constant
    ("arcsin(0.5)*time", "asin(0.5)*t"),
    ("sin(2*pi*time)-cos(time)/2", "sin(2.0*pi*t) - cos(t)/2.0"),
    ("time/(2*3)", "t/(2.0*3.0)"),
    ("(1-time)-(2-time)", "1.0 - t - (2.0 - t)"),
])
def test_expression_translation(source, expected):
    assert translate_expression(source) == expected


@pytest.mark.parametrize("source, t, value", [
    ("2.0d*pi*time", 0.25, 0.5 * math.pi),
    ("-2^2", 0.0, -4.0),
    ("time*-2^2", 1.5, 6.0),
    ("2^3^2", 0.0, 512.0),                   # right associative
    ("10*time- -1", 0.5, 6.0),
    ("abs(sin(time))+arctan(1)", 0.0, math.pi / 4),
])
def test_expression_values(source, t, value):
    assert evaluate_expression(source, t) == pytest.approx(value, rel=1e-15, abs=1e-15)
    # the translated text means the same in the kernel's syntax (t, ^ for powers)
    assert evaluate_expression(translate_expression(source), t, variables=("t",)) == \
        pytest.approx(value, rel=1e-15, abs=1e-15)


@pytest.mark.parametrize("bad", ["__import__('os')", "time; 1", "x*time", "spline(time)", "2*", ""])
def test_expression_whitelist(bad):
    with pytest.raises(ExpressionError):
        translate_expression(bad)


# --------------------------------------------------------------------------------------
# structure of the imported models (counts from SOURCES.md)
# --------------------------------------------------------------------------------------
@needs_data
@pytest.mark.parametrize("path, nparts, joints, ndrivers", [
    (FOURBAR, 3, {"revolute": 4}, 1),
    (GEARS, 2, {"revolute": 2, "gear": 1}, 1),
    # rackscrew: 2 Revolute, 1 Translational, 1 RackPinion, 1 Screw (both become couplers
    # of the revolute angle and the prismatic displacement)
    (RACKSCREW, 3, {"revolute": 2, "prismatic": 1, "rack-and-pinion": 2}, 1),
    (RACKPINION, 5, {"revolute": 3, "fixed": 1, "prismatic": 1, "rack-and-pinion": 1}, 0),
])
def test_import_counts(path, nparts, joints, ndrivers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = read_asmt(path)
    # the assembly itself is added as the one fixed (ground) part
    assert len(spec.parts) == nparts + 1
    assert [p.fixed for p in spec.parts].count(True) == 1
    assert spec.parts[0].fixed
    assert Counter(j.type for j in spec.joints) == joints
    assert len(spec.drivers) == ndrivers
    names = {j.name for j in spec.joints}
    for j in spec.joints:
        if not j.parts:  # couplers refer to joints of the spec
            assert len(j.joints) == 2 and set(j.joints) <= names
        else:
            assert len(j.markers) == 2 and j.parts[0] != j.parts[1]


@needs_data
def test_rackpinion_joint_names_and_parts():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = read_asmt(RACKPINION)
    assert {p.name for p in spec.parts} == {
        "OndselAssembly", "rackPinion#Box001", "rackPinion#Cylinder", "rackPinion#Box",
        "rackPinion#Cylinder001", "rackPinion#Cylinder002"}
    rp = spec.joint("rackPinion#RackPinion")
    assert set(rp.joints) == {"rackPinion#Revolute", "rackPinion#Slider"}
    assert abs(rp.param("radius")) == pytest.approx(1.0)   # pitchRadius 1 in the file
    assert spec.joint("rackPinion#GroundedJoint").parts == ("OndselAssembly", "rackPinion#Box001")


@needs_data
def test_gravity_simulation_and_mass():
    spec = read_asmt(FOURBAR)
    assert spec.gravity == (0.0, -9.81, 0.0)                 # ConstantGravity block
    sim = read_asmt_simulation(FOURBAR)
    assert (sim["tstart"], sim["tend"], sim["hout"], sim["steps"]) == (0.0, 1.0, 0.01, 100)
    assert sim["errorTol"] == 1e-6
    # rackscrew Part2: Mass 0.3233675003485, principal moments on rotated principal axes
    rs = read_asmt(RACKSCREW)
    p2 = rs.part("Assembly1Part2")
    assert p2.mass == pytest.approx(0.3233675003485)
    assert p2.com == pytest.approx((0.0125, -1.2143064331838e-17, 0.05))
    J = np.array(p2.inertia)
    assert np.allclose(np.sort(np.linalg.eigvalsh(J)),
                       sorted([0.0085917337014084, 0.0085917337014084, 0.016644521568903]))
    # A_Pcm = [[0,1,0],[-1,0,0],[0,0,1]]: the third principal axis is the part's z
    assert J[2, 2] == pytest.approx(0.016644521568903)
    assert rs.part("Assembly1Part1").mass is None             # Mass 0.0 in the file


@needs_data
def test_marker_nesting_in_refpoints():
    """fourbar/rackscrew markers sit in rotated RefPoints: X_PM = X_PR X_RM."""
    spec = read_asmt(RACKSCREW)
    # Assembly1Marker1: RefPoint rotated (z -> -x) at 0, marker at (0, 0, 3) in it
    j4 = spec.joint("Assembly1Joint4")
    assert j4.parts[0] == "Assembly1"
    assert j4.markers[0].origin == pytest.approx((3.0, 0.0, 0.0))
    R = np.array(j4.markers[0].rotation)
    assert np.allclose(R, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])


# --------------------------------------------------------------------------------------
# the TimeSeries block and its agreement with the imported model (no kernel needed)
# --------------------------------------------------------------------------------------
@needs_data
@pytest.mark.parametrize("path", WITH_SERIES)
def test_time_series_layout(path):
    ts = read_asmt_time_series(path)
    sim = read_asmt_simulation(path)
    n = sim["steps"] + 1
    assert ts["time"].shape == (n,)
    assert ts["time"] == pytest.approx(np.linspace(sim["tstart"], sim["tend"], n))
    spec = read_asmt(path)
    assert set(ts["parts"]) == {p.name for p in spec.parts}
    for name, s in ts["parts"].items():
        for key in ("position", "velocity", "angular_velocity", "acceleration",
                    "angular_acceleration", "bryant_angles"):
            assert s[key].shape == (n, 3)
        R = s["rotation"]
        assert np.allclose(R @ np.swapaxes(R, 1, 2), np.eye(3), atol=1e-12)
        # the Input column is the state the solver started from: the Part block's
        # Position3D/RotationMatrix (Gears.asmt differs by 2e-8 m / 2e-7 rad)
        part = spec.part(name)
        assert ts["input"][name]["position"] == pytest.approx(part.position, abs=1e-6)
        assert np.allclose(ts["input"][name]["rotation"], _quat_to_matrix(part.orientation),
                           atol=1e-6)


def test_bryant_angles_round_trip():
    """bryant_to_matrix inverts OndselSolver's FullMatrix::bryantAngles formulas."""
    rng = np.random.default_rng(1)
    for a in rng.uniform(-1.4, 1.4, size=(20, 3)):
        A = bryant_to_matrix(a)
        back = (math.atan2(-A[1, 2], A[2, 2]), math.asin(A[0, 2]), math.atan2(-A[0, 1], A[0, 0]))
        assert back == pytest.approx(tuple(a), abs=1e-12)


def _series_coordinates(spec, ts):
    """Joint angle/disp (cadmotion's definitions) and closure residuals from the stored poses."""
    nt = len(ts["time"])
    out, closure = {}, 0.0
    for j in spec.joints:
        if not j.parts:
            continue
        ang, disp = np.empty(nt), np.empty(nt)
        for k in range(nt):
            a, b = ts["parts"][j.parts[0]], ts["parts"][j.parts[1]]
            R_i, o_i = _marker_world(a["rotation"][k], a["position"][k], j.markers[0])
            R_j, o_j = _marker_world(b["rotation"][k], b["position"][k], j.markers[1])
            ang[k] = math.atan2(R_i[:, 1] @ R_j[:, 0], R_i[:, 0] @ R_j[:, 0])
            disp[k] = (o_j - o_i) @ R_i[:, 2]
            d = o_j - o_i
            if j.type in ("revolute", "fixed", "spherical"):
                closure = max(closure, np.linalg.norm(d))
            if j.type in ("revolute", "prismatic", "cylindrical", "fixed"):
                closure = max(closure, np.linalg.norm(np.cross(R_i[:, 2], R_j[:, 2])))
            if j.type in ("prismatic", "cylindrical"):
                closure = max(closure, np.linalg.norm(d - (d @ R_i[:, 2]) * R_i[:, 2]))
        out[j.name] = (np.unwrap(ang), disp)
    return out, closure


@needs_data
@pytest.mark.parametrize("path", WITH_SERIES)
def test_markers_couplers_and_drivers_reproduce_the_series(path):
    """Our markers close every joint in OndselSolver's stored poses, our coupler ratios
    and signs relate the stored joint coordinates, and our driver expressions give the
    stored driven coordinate (measured from the initial pose)."""
    spec = read_asmt(path)
    ts = read_asmt_time_series(path)
    coords, closure = _series_coordinates(spec, ts)
    assert closure < 1e-10
    for j in spec.joints:
        if j.parts:
            continue
        a = coords[j.joints[0]][0] - coords[j.joints[0]][0][0]
        if j.type in ("gear", "belt"):
            b = coords[j.joints[1]][0] - coords[j.joints[1]][0][0]
            assert np.max(np.abs(b - j.param("ratio") * a)) < 1e-10, j.name
        else:
            d = coords[j.joints[1]][1] - coords[j.joints[1]][1][0]
            assert np.max(np.abs(d)) > 0.1  # the rack really moves
            assert np.max(np.abs(d - j.param("radius") * a)) < 1e-10, j.name
    for d in spec.drivers:
        q = coords[d.joint][0 if d.coordinate == "angle" else 1]
        f = np.array([evaluate_expression(d.function.expression, t, variables=("t",))
                      for t in ts["time"]])
        assert np.max(np.abs((q - q[0]) - f)) < 1e-10


@needs_data
def test_initial_pose_from_series():
    """Gears.asmt was saved after a run: its part blocks hold the last frame, and the
    solver assembled gear 2 half a turn away (the other branch of the 1:2 pair) at t=0."""
    ts = read_asmt_time_series(GEARS)
    spec = read_asmt(GEARS, initial_pose="series")
    for name, ser in ts["parts"].items():
        p = spec.part(name)
        assert p.position == pytest.approx(tuple(ser["position"][0]), abs=1e-15)
        assert np.allclose(_quat_to_matrix(p.orientation), ser["rotation"][0], atol=1e-14)
    file_pose = read_asmt(GEARS).part("Part2")
    assert np.allclose(_quat_to_matrix(file_pose.orientation), ts["parts"]["Part2"]["rotation"][-1],
                       atol=1e-12)
    # fourbar: the file pose is the series' first frame
    a, b = read_asmt(FOURBAR), read_asmt(FOURBAR, initial_pose="series")
    for p, q in zip(a.parts, b.parts):
        assert p.position == pytest.approx(q.position, abs=1e-14)
    assert a.drivers[0].function == b.drivers[0].function


@needs_data
def test_gear_ratio_is_external_pair():
    """Gears.asmt: radiusI 1, radiusJ 2, parallel axes -> external pair, ratio -1/2."""
    spec = read_asmt(GEARS)
    assert spec.joint("Joint3").param("ratio") == pytest.approx(-0.5)
    assert spec.joint("Joint3").joints == ("Joint1", "Joint2")


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
def _edited(tmp_path, src, old, new, name="edited.asmt"):
    text = src.read_text()
    assert old in text
    out = tmp_path / name
    out.write_text(text.replace(old, new, 1))
    return out


@needs_data
def test_unknown_joint_type_names_joint_and_type(tmp_path):
    bad = _edited(tmp_path, FOURBAR, "\t\t\tRevoluteJoint\n\t\t\t\tName\n\t\t\t\t\tJoint2",
                  "\t\t\tWobbleJoint\n\t\t\t\tName\n\t\t\t\t\tJoint2")
    with pytest.raises(CadImportError) as err:
        read_asmt(bad)
    assert "Joint2" in str(err.value) and "WobbleJoint" in str(err.value)


@needs_data
def test_joint_outside_the_kernel_library_is_refused(tmp_path):
    bad = _edited(tmp_path, FOURBAR, "\t\t\tRevoluteJoint\n\t\t\t\tName\n\t\t\t\t\tJoint3",
                  "\t\t\tNoRotationJoint\n\t\t\t\tName\n\t\t\t\t\tJoint3")
    with pytest.raises(CadImportError) as err:
        read_asmt(bad)
    assert "Joint3" in str(err.value) and "NoRotationJoint" in str(err.value)


@needs_data
def test_missing_marker_names_joint(tmp_path):
    bad = _edited(tmp_path, FOURBAR, "/Assembly1/Part2/Marker1", "/Assembly1/Part2/Nowhere")
    with pytest.raises(CadImportError) as err:
        read_asmt(bad)
    assert "Joint2" in str(err.value) and "Nowhere" in str(err.value)


@needs_data
def test_motion_expression_outside_whitelist(tmp_path):
    bad = _edited(tmp_path, FOURBAR, "RotationZ\n\t\t\t\t\t2.0d*pi*time",
                  "RotationZ\n\t\t\t\t\tsystem(time)")
    with pytest.raises(CadImportError) as err:
        read_asmt(bad)
    assert "Motion1" in str(err.value)


def test_not_an_asmt_file(tmp_path):
    p = tmp_path / "x.asmt"
    p.write_text("hello\nworld\n")
    with pytest.raises(CadImportError):
        read_asmt(p)
    with pytest.raises(CadImportError):
        read_asmt(tmp_path / "missing.asmt")


@needs_data
def test_file_without_time_series():
    with pytest.raises(CadImportError):
        read_asmt_time_series(RACKPINION)


# --------------------------------------------------------------------------------------
# cadmotion's kinematics against OndselSolver's TimeSeries
# --------------------------------------------------------------------------------------
def _kinematics(spec, sim):
    from cadmotion.kernel import compile_model, kinematics

    assert sim["tstart"] == 0.0  # the kernel's runs start at t = 0
    model = compile_model(spec)
    return kinematics(model, t_end=sim["tend"], steps=sim["steps"])


def _max_rel_error(ours, theirs):
    scale = max(1.0, float(np.max(np.abs(theirs))))
    return float(np.max(np.abs(ours - theirs))) / scale


@needs_data
@pytest.mark.parametrize("path", WITH_SERIES, ids=lambda p: p.stem)
def test_kinematics_matches_ondselsolver_time_series(path):
    # start where OndselSolver assembled the parts at t=0 (see test_initial_pose_from_series)
    spec = read_asmt(path, initial_pose="series")
    sim = read_asmt_simulation(path)
    ts = read_asmt_time_series(path)
    motion = _kinematics(spec, sim)
    assert motion.complete, motion.message
    assert np.allclose(motion.time, ts["time"], rtol=0, atol=1e-12)
    errors = {}
    for name, ref in ts["parts"].items():
        b = motion.part_index(name)
        errors[name] = {
            "position": _max_rel_error(motion.position[:, b], ref["position"]),
            "rotation": _max_rel_error(_quat_to_matrix(motion.quaternion[:, b]), ref["rotation"]),
            "velocity": _max_rel_error(motion.velocity[:, b], ref["velocity"]),
            "angular_velocity": _max_rel_error(motion.angular_velocity[:, b], ref["angular_velocity"]),
            "acceleration": _max_rel_error(motion.acceleration[:, b], ref["acceleration"]),
            "angular_acceleration": _max_rel_error(motion.angular_acceleration[:, b],
                                                   ref["angular_acceleration"]),
        }
    worst = {k: max(e[k] for e in errors.values()) for k in next(iter(errors.values()))}
    print(f"{path.name}: worst relative errors vs OndselSolver: {worst}")
    assert all(v <= TOL for v in worst.values()), errors


# --------------------------------------------------------------------------------------
# limits as OndselSolver (and FreeCAD's Assembly workbench) write them
# --------------------------------------------------------------------------------------
def _limit_block(kind, name, limit, bound, markers=("/Assembly1/Marker2", "/Assembly1/Part1/Marker1"),
                 joint="", extra=""):
    """A limit block laid out as ASMTLimit::storeOnLevel writes it (4 tabs: inside Limits)."""
    t = "\t\t\t"
    return (f"{t}{kind}\n{t}\tName\n{t}\t\t{name}\n{t}\tMarkerI\n{t}\t\t{markers[0]}\n"
            f"{t}\tMarkerJ\n{t}\t\t{markers[1]}\n{t}\tMotionJoint\n{t}\t\t{joint}\n"
            f"{t}\tLimit\n{t}\t\t{limit}\n{t}\tType\n{t}\t\t{bound}\n{t}\tTol\n{t}\t\t1.0e-9\n{extra}")


def _with_limits(tmp_path, *blocks):
    return _edited(tmp_path, FOURBAR, "\t\tGeneralConstraintSets",
                   "\t\tLimits\n" + "".join(blocks) + "\t\tGeneralConstraintSets")


@needs_data
def test_rotation_limits_bound_the_crank_where_the_stored_series_crosses_them(tmp_path):
    # FreeCAD writes "<deg>*pi/180.0"; the crank of fourbar turns as thez = 2 pi t (file's
    # own marker angle), so it reaches 90 deg at t = 0.25 s and 144 deg at t = 0.4 s.
    path = _with_limits(
        tmp_path,
        _limit_block("RotationLimit", "Joint1-LimitRotMin", "-10.000000*pi/180.0", "=>"),
        _limit_block("RotationLimit", "Joint1-LimitRotMax", "90.000000*pi/180.0", "=<"),
        _limit_block("RotationLimit", "Joint1-LimitRotMax2", "144.000000*pi/180.0", "=<",
                     joint="/Assembly1/Joint1"),
    )
    spec = read_asmt(path, initial_pose="series")
    (coord, (lo, hi)), = next(j for j in spec.joints if j.name == "Joint1").limits
    assert coord == "angle"
    motion = _kinematics(spec, read_asmt_simulation(path))
    q = motion.coordinate("Joint1.angle")
    # the tighter upper bound wins; the crank angle leaves it between 0.24 and 0.26 s
    t_out = motion.time[np.flatnonzero(q > hi)[0]]
    assert 0.25 <= t_out <= 0.26 + 1e-12
    assert np.all(q[motion.time < 0.25 - 1e-12] <= hi)
    # the lower bound sits 100 deg below the upper one, whatever the initial offset
    assert hi - lo == pytest.approx(math.radians(100.0), abs=1e-12)


@needs_data
def test_translation_limit_and_lowercase_keys_are_read(tmp_path):
    text = _limit_block("TranslationLimit", "L1", "0.5", "=<", markers=("/Assembly1/Part1/Marker2",
                                                                         "/Assembly1/Part2/Marker1"))
    path = _with_limits(tmp_path, text)
    with pytest.raises(CadImportError) as err:  # Joint2 is a revolute: no displacement
        read_asmt(path)
    assert "L1" in str(err.value) and "Joint2" in str(err.value) and "disp" in str(err.value)
    old = _limit_block("RotationLimit", "L2", "0.5", "=>")
    old = old.replace("\tLimit\n", "\tlimit\n").replace("\tType\n", "\ttype\n")
    assert "\tlimit\n" in old and "\ttype\n" in old
    spec = read_asmt(_with_limits(tmp_path, old))
    assert next(j for j in spec.joints if j.name == "Joint1").limits[0][1][1] == math.inf


@needs_data
@pytest.mark.parametrize("block, words", [
    (_limit_block("RotationLimit", "L3", "1.0", "<<"), ["L3", "'<<'"]),
    (_limit_block("RotationLimit", "L4", "1.0", "=<", markers=("/Assembly1/Marker1", "/Assembly1/Part1/Marker1")),
     ["L4", "/Assembly1/Marker1", "not the markers"]),
    (_limit_block("RotationLimit", "L5", "1.0", "=<", joint="/Assembly1/Joint9"), ["L5", "Joint9"]),
    (_limit_block("RotationLimit", "L6", "__import__(1)", "=<"), ["L6"]),
])
def test_bad_limit_blocks_are_refused_naming_the_limit(tmp_path, block, words):
    with pytest.raises(CadImportError) as err:
        read_asmt(_with_limits(tmp_path, block))
    assert all(w in str(err.value) for w in words), str(err.value)


@needs_data
def test_compliant_limit_is_read_with_a_warning(tmp_path):
    t = "\t\t\t\t"
    extra = f"{t}Behavior\n{t}\tCompliant\n{t}Stiffness\n{t}\t1000.0\n{t}Damping\n{t}\t1.0\n"
    path = _with_limits(tmp_path, _limit_block("RotationLimit", "L7", "1.0", "=<", extra=extra))
    with pytest.warns(UserWarning, match="stiffness and damping"):
        spec = read_asmt(path)
    assert next(j for j in spec.joints if j.name == "Joint1").limits


# --------------------------------------------------------------------------------------
# FreeCAD's Distance joints (OndselSolver compound joints with a distanceIJ)
# --------------------------------------------------------------------------------------
_I3 = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
#: a marker whose z axis is the world x axis (columns: y, z, x of the world)
_Z_ALONG_X = ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0))


def _rows(level, *rows):
    return "".join("\t" * level + "\t".join(repr(float(x)) for x in r) + "\n" for r in rows)


def _asmt_text(markers, parts, joints, motions=(), gravity=(0.0, 0.0, 0.0), tend=1.0, hout=0.05):
    """An .asmt file in the layout OndselSolver's ASMTAssembly::storeOnLevel writes.

    ``markers``: the assembly's {name: (position, rotation rows)}; ``parts``: (name,
    position, rotation rows, mass, {marker: (position, rotation rows)}); ``joints``:
    (keyword, name, marker I path, marker J path, {extra key: value}); ``motions``:
    (keyword, name, joint path, RotationZ/TranslationZ, expression).
    """

    def marker_block(level, ms):
        out = ""
        for name, (pos, rot) in ms.items():
            t = "\t" * level
            out += (f"{t}RefPoint\n{t}\tPosition3D\n" + _rows(level + 2, (0, 0, 0))
                    + f"{t}\tRotationMatrix\n" + _rows(level + 2, *_I3)
                    + f"{t}\tMarkers\n{t}\t\tMarker\n{t}\t\t\tName\n{t}\t\t\t\t{name}\n"
                    + f"{t}\t\t\tPosition3D\n" + _rows(level + 4, pos)
                    + f"{t}\t\t\tRotationMatrix\n" + _rows(level + 4, *rot))
        return out

    s = "OndselSolver\nAssembly\n\tNotes\n\t\t(Text string: '' runs: (Core.RunArray runs: #() values: #()))\n"
    s += "\tName\n\t\tAssembly1\n\tPosition3D\n" + _rows(2, (0, 0, 0)) + "\tRotationMatrix\n" + _rows(2, *_I3)
    s += "\tVelocity3D\n" + _rows(2, (0, 0, 0)) + "\tOmega3D\n" + _rows(2, (0, 0, 0))
    s += "\tRefPoints\n" + marker_block(2, markers) + "\tRefCurves\n\tRefSurfaces\n\tParts\n"
    for name, pos, rot, mass, ms in parts:
        s += f"\t\tPart\n\t\t\tName\n\t\t\t\t{name}\n\t\t\tPosition3D\n" + _rows(4, pos)
        s += "\t\t\tRotationMatrix\n" + _rows(4, *rot)
        s += "\t\t\tVelocity3D\n" + _rows(4, (0, 0, 0)) + "\t\t\tOmega3D\n" + _rows(4, (0, 0, 0))
        s += "\t\t\tFeatureOrder\n\t\t\tPrincipalMassMarker\n\t\t\t\tName\n\t\t\t\t\tMassMarker\n"
        s += "\t\t\t\tPosition3D\n" + _rows(5, (0, 0, 0)) + "\t\t\t\tRotationMatrix\n" + _rows(5, *_I3)
        s += "\t\t\t\tMass\n" + _rows(5, (mass,)) + "\t\t\t\tMomentOfInertias\n" + _rows(5, (mass, mass, mass))
        s += "\t\t\t\tDensity\n" + _rows(5, (10.0,))
        s += "\t\t\tRefPoints\n" + marker_block(4, ms) + "\t\t\tRefCurves\n\t\t\tRefSurfaces\n"
    s += "\tKinematicIJs\n\tConstraintSets\n\t\tJoints\n"
    for kind, name, mi, mj, extra in joints:
        s += f"\t\t\t{kind}\n\t\t\t\tName\n\t\t\t\t\t{name}\n\t\t\t\tMarkerI\n\t\t\t\t\t{mi}\n"
        s += f"\t\t\t\tMarkerJ\n\t\t\t\t\t{mj}\n"
        for key, value in extra.items():
            s += f"\t\t\t\t{key}\n\t\t\t\t\t{value}\n"
    s += "\t\tMotions\n"
    for kind, name, joint, key, expr in motions:
        s += (f"\t\t\t{kind}\n\t\t\t\tName\n\t\t\t\t\t{name}\n\t\t\t\tMotionJoint\n\t\t\t\t\t{joint}\n"
              f"\t\t\t\t{key}\n\t\t\t\t\t{expr}\n")
    s += "\t\tGeneralConstraintSets\n\tForceTorques\n\tConstantGravity\n" + _rows(2, gravity)
    s += "\tSimulationParameters\n"
    for key, value in (("tstart", 0.0), ("tend", tend), ("hmin", 1e-9), ("hmax", 1.0),
                       ("hout", hout), ("errorTol", 1e-6)):
        s += f"\t\t{key}\n\t\t\t{value!r}\n"
    s += "\tAnimationParameters\n\t\tnframe\n\t\t\t21\n"
    return s


R_CRANK, L_ROD = 0.3, 1.0


def _slider_crank(tmp_path, rod_joint, extra=None):
    """Crank (Part1, revolute about world z, 2 pi t) and slider (Part2, on world x) joined
    by ``rod_joint`` from the crank pin (r, 0, 0) to the slider's point: a connecting rod
    of length L whatever the distance joint (all four coincide for this planar layout)."""
    text = _asmt_text(
        markers={"O": ((0, 0, 0), _I3), "S": ((0, 0, 0), _Z_ALONG_X)},
        parts=[("Part1", (0, 0, 0), _I3, 1.0, {"O": ((0, 0, 0), _I3), "P": ((R_CRANK, 0, 0), _I3)}),
               ("Part2", (R_CRANK + L_ROD, 0, 0), _I3, 1.0,
                {"S": ((0, 0, 0), _Z_ALONG_X), "Q": ((0, 0, 0), _I3)})],
        joints=[("RevoluteJoint", "Crank", "/Assembly1/O", "/Assembly1/Part1/O", {}),
                ("TranslationalJoint", "Slide", "/Assembly1/S", "/Assembly1/Part2/S", {}),
                (rod_joint, "Rod", "/Assembly1/Part1/P", "/Assembly1/Part2/Q",
                 extra if extra is not None else {"distanceIJ": repr(L_ROD)})],
        motions=[("RotationalMotion", "Turn", "/Assembly1/Crank", "RotationZ", "2.0*pi*time")],
    )
    path = tmp_path / f"slider_crank_{rod_joint}.asmt"
    path.write_text(text)
    return path


def _slider_closed_form(t):
    """x, dx/dt, d2x/dt2 of the slider: x = r cos(wt) + sqrt(L^2 - r^2 sin^2(wt)), w = 2 pi."""
    import sympy as sp

    ts = sp.Symbol("t")
    th = 2 * sp.pi * ts
    x = R_CRANK * sp.cos(th) + sp.sqrt(L_ROD**2 - R_CRANK**2 * sp.sin(th) ** 2)
    fs = [sp.lambdify(ts, e, "numpy") for e in (x, sp.diff(x, ts), sp.diff(x, ts, 2))]
    return [np.asarray(f(t), float) for f in fs]


@pytest.mark.parametrize("rod_joint, kernel_type", [
    ("SphSphJoint", "distance"),
    ("CylSphJoint", "point-line-distance"),
    ("RevCylJoint", "line-line-distance"),
    ("RevRevJoint", "rev-rev-distance"),
])
def test_distance_joint_as_connecting_rod_follows_the_slider_crank_closed_form(tmp_path, rod_joint,
                                                                               kernel_type):
    spec = read_asmt(_slider_crank(tmp_path, rod_joint))
    rod = next(j for j in spec.joints if j.name == "Rod")
    assert rod.type == kernel_type and rod.param("length") == L_ROD
    motion = _kinematics(spec, {"tstart": 0.0, "tend": 1.0, "steps": 40})
    assert motion.complete, motion.message
    b = motion.part_index("Part2")
    x, v, a = _slider_closed_form(motion.time)
    assert np.max(np.abs(motion.position[:, b, 0] - x)) < 1e-9
    assert np.max(np.abs(motion.velocity[:, b, 0] - v)) < 1e-8 * np.max(np.abs(v))
    assert np.max(np.abs(motion.acceleration[:, b, 0] - a)) < 1e-8 * np.max(np.abs(a))
    assert np.max(np.abs(motion.position[:, b, 1:])) < 1e-12


def test_pendulum_on_a_sphsph_joint_keeps_its_length_and_the_elliptic_period(tmp_path):
    from scipy.special import ellipk

    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import simulate

    L, g, theta0 = 1.0, 9.81, 0.3
    # a body hung by its centre of mass at L from a ground point: the joint force passes
    # through the centre of mass, so the body swings as a point mass (and does not spin)
    text = _asmt_text(markers={"G": ((0, 0, 0), _I3)},
                      parts=[("Bob", (L * math.sin(theta0), -L * math.cos(theta0), 0.0), _I3, 2.0,
                              {"M": ((0, 0, 0), _I3)})],
                      joints=[("SphSphJoint", "Rod", "/Assembly1/G", "/Assembly1/Bob/M", {"distanceIJ": repr(L)})],
                      gravity=(0.0, -g, 0.0))
    path = tmp_path / "pendulum.asmt"
    path.write_text(text)
    period = 4.0 * math.sqrt(L / g) * ellipk(math.sin(theta0 / 2) ** 2)
    motion = simulate(compile_model(read_asmt(path)), t_end=2.6 * period, steps=2000,
                      formulation="projection", integrator="DOP853", rtol=1e-10, atol=1e-12)
    assert motion.complete, motion.message
    r = motion.position[:, motion.part_index("Bob")]
    assert np.max(np.abs(np.linalg.norm(r, axis=1) - L)) < 1e-9
    assert np.max(np.abs(r[:, 2])) < 1e-12
    # downward zero crossings of x, linearly interpolated (x is straight there)
    x, t = r[:, 0], motion.time
    k = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    crossings = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    assert len(crossings) >= 2
    assert abs((crossings[1] - crossings[0]) - period) < 1e-6 * period


@pytest.mark.parametrize("keyword, extra, dof", [
    ("SphSphJoint", {"distanceIJ": "0.5"}, 5),        # a point on a sphere about another
    ("CylSphJoint", {"distanceIJ": "0.5"}, 5),        # a point on a cylinder about a line
    ("RevCylJoint", {"distanceIJ": "0.5"}, 3),        # a line on a cylinder, kept parallel
    ("RevRevJoint", {"distanceIJ": "0.5"}, 2),        # a parallel axis at fixed radius, in plane
    ("LineInPlaneJoint", {"offset": "0.25"}, 4),      # a line lying in a plane
])
def test_distance_family_leaves_the_freedom_of_its_geometry(tmp_path, keyword, extra, dof):
    from cadmotion.kernel import compile_model, mobility

    # the free body starts on its joint: J is 0.5 off the line z of I (x direction), and
    # 0.25 above the plane for the line-in-plane (its line z_j turned into the plane)
    rot_j = _Z_ALONG_X if keyword == "LineInPlaneJoint" else _I3
    pos = (0.0, 0.0, 0.25) if keyword == "LineInPlaneJoint" else (0.5, 0.0, 0.0)
    text = _asmt_text(markers={"G": ((0, 0, 0), _I3)},
                      parts=[("Body", pos, _I3, 1.0, {"M": ((0, 0, 0), rot_j)})],
                      joints=[(keyword, "J", "/Assembly1/G", "/Assembly1/Body/M", extra)])
    path = tmp_path / "free.asmt"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file's pose satisfies the joint: no warning
        spec = read_asmt(path)
    m = mobility(compile_model(spec))
    assert m.dof == dof and not m.redundant


def test_distance_joint_with_a_negative_distance_is_refused(tmp_path):
    with pytest.raises(CadImportError) as err:
        read_asmt(_slider_crank(tmp_path, "CylSphJoint", {"distanceIJ": "-1.0"}))
    assert "Rod" in str(err.value) and "distanceIJ" in str(err.value)


# --------------------------------------------------------------------------------------
# what FreeCAD writes: empty names, rotations to ~1e-6
# --------------------------------------------------------------------------------------
@needs_data
def test_an_empty_joint_name_is_a_name(tmp_path):
    path = _edited(tmp_path, FOURBAR, "\t\t\t\tName\n\t\t\t\t\tJoint1\n", "\t\t\t\tName\n\t\t\t\t\t\n")
    path.write_text(path.read_text().replace("MotionJoint\n\t\t\t\t\t/Assembly1/Joint1",
                                             "MotionJoint\n\t\t\t\t\t/Assembly1/"))
    with pytest.warns(UserWarning, match="Name is empty"):
        spec = read_asmt(path, initial_pose="series")
    names = [j.name for j in spec.joints]
    assert "Joint1" not in names and len(names) == 4
    unnamed = next(n for n in names if n.startswith("RevoluteJoint@"))
    assert spec.drivers[0].joint == unnamed
    # and it is the same mechanism: the crank still turns once a second
    motion = _kinematics(spec, {"tstart": 0.0, "tend": 1.0, "steps": 4})
    ref = read_asmt_time_series(FOURBAR)["parts"]["Part3"]["position"]
    assert np.max(np.abs(motion.position[:, motion.part_index("Part3")] - ref[::25])) < 1e-8


def _one_body(tmp_path, rotation):
    text = _asmt_text(markers={"G": ((0, 0, 0), _I3)},
                      parts=[("Body", (0.0, 0.0, 0.0), rotation, 1.0, {"M": ((0, 0, 0), _I3)})],
                      joints=[("SphericalJoint", "Ball", "/Assembly1/G", "/Assembly1/Body/M", {})])
    path = tmp_path / "one_body.asmt"
    path.write_text(text)
    return path


def test_rotation_stored_to_2e_6_becomes_the_nearest_rotation_with_a_note(tmp_path):
    from scipy.linalg import polar
    from scipy.spatial.transform import Rotation

    exact = Rotation.from_euler("xyz", [0.3, -0.2, 1.1]).as_matrix()
    stored = exact + 2e-6 * np.array([[1, -1, 0.5], [0.3, 0, -1], [1, 0.2, -0.4]])
    with pytest.warns(UserWarning, match="Body.*nearest rotation"):
        spec = read_asmt(_one_body(tmp_path, [tuple(r) for r in stored]))
    body = next(p for p in spec.parts if p.name == "Body")
    nearest = polar(stored)[0]  # the orthogonal polar factor: the nearest rotation
    assert np.max(np.abs(_quat_to_matrix(body.orientation) - nearest)) < 1e-12
    assert np.max(np.abs(nearest - exact)) < 1e-5


@pytest.mark.parametrize("rotation", [
    np.diag([1.0, 1.0, 1.01]),            # not orthonormal
    np.diag([1.0, 1.0, -1.0]),            # a reflection
])
def test_a_matrix_that_is_clearly_not_a_rotation_is_refused_naming_the_part(tmp_path, rotation):
    with pytest.raises(CadImportError) as err:
        read_asmt(_one_body(tmp_path, [tuple(r) for r in rotation]))
    assert "part Body" in str(err.value) and "not a rotation" in str(err.value)


# --------------------------------------------------------------------------------------
# assembling from far starts
# --------------------------------------------------------------------------------------
LOCAL = Path(__file__).resolve().parents[1] / "data" / "asmt"


def _marker_points(spec, motion_q, model, joint):
    pos, quat = model.body_coordinates(motion_q)
    out = []
    for part, frame in zip(joint.parts, joint.markers):
        b = model.body_names.index(part)
        out.append(pos[b] + _quat_to_matrix(quat[b]) @ np.array(frame.origin))
    return out


def test_sphsphjt_assembles_from_62_units_away():
    from cadmotion.kernel import assemble, compile_model

    with pytest.warns(UserWarning, match=r"part32#SphSphJoint \(distance 62.5\)"):
        spec = read_asmt(LOCAL / "SphSphJt.asmt")
    model = compile_model(spec)
    result = assemble(model)
    assert result.success, result.message
    joint = next(j for j in spec.joints if j.type == "distance")
    p_i, p_j = _marker_points(spec, result.q, model, joint)
    assert abs(np.linalg.norm(p_j - p_i) - 2.0) < 1e-9
    assert result.moved["part32#Body001"] < 1e-12  # held by its FixedJoint to the ground


@pytest.mark.parametrize("name, kind", [("CylSphJt.asmt", "point-line-distance"),
                                         ("RevCylJt.asmt", "line-line-distance")])
def test_freecad_distance_joint_files_assemble_onto_their_distance(name, kind):
    from cadmotion.kernel import assemble, compile_model

    with pytest.warns(UserWarning, match="does not satisfy"):
        spec = read_asmt(LOCAL / name)
    joint = next(j for j in spec.joints if j.type == kind)
    assert joint.param("length") == 2.0
    model = compile_model(spec)
    result = assemble(model)
    assert result.success, result.message
    assert result.moved["part32#Body001"] < 1e-12
    pos, quat = model.body_coordinates(result.q)
    frames = []
    for part, frame in zip(joint.parts, joint.markers):
        b = model.body_names.index(part)
        R = _quat_to_matrix(quat[b])
        frames.append((R @ np.array(frame.rotation), pos[b] + R @ np.array(frame.origin)))
    (R_i, p_i), (R_j, p_j) = frames
    d = p_j - p_i
    z = R_i[:, 2]
    assert abs(np.linalg.norm(d - (d @ z) * z) - 2.0) < 1e-9  # P_j 2 from the z line of I
    if kind == "line-line-distance":
        assert np.linalg.norm(np.cross(z, R_j[:, 2])) < 1e-9  # and the two lines parallel


@pytest.mark.parametrize("start, lever", [((0.0, 0.0, 64.0), (1.0, 0.0, 0.0)),
                                          ((-60.0, 20.0, 5.0), (0.0, 3.0, -2.0))])
def test_a_free_body_far_from_its_sphere_joint_assembles(tmp_path, start, lever):
    from cadmotion.kernel import assemble, compile_model

    text = _asmt_text(markers={"G": ((0, 0, 0), _I3)},
                      parts=[("Body", start, _I3, 1.0, {"M": (lever, _I3)})],
                      joints=[("SphSphJoint", "Jt", "/Assembly1/G", "/Assembly1/Body/M",
                               {"distanceIJ": "2.0"})])
    path = tmp_path / "far.asmt"
    path.write_text(text)
    with pytest.warns(UserWarning, match="does not satisfy"):
        spec = read_asmt(path)
    model = compile_model(spec)
    result = assemble(model)
    assert result.success, result.message
    p_i, p_j = _marker_points(spec, result.q, model, spec.joints[0])
    assert abs(np.linalg.norm(p_j - p_i) - 2.0) < 1e-9


def test_an_impossible_placement_is_refused_naming_the_joints(tmp_path):
    from cadmotion.kernel import assemble, compile_model

    # two distance-2 joints to ground points 10 apart: no pose satisfies both
    text = _asmt_text(markers={"A": ((0, 0, 0), _I3), "B": ((10, 0, 0), _I3)},
                      parts=[("Body", (5.0, 0.0, 0.0), _I3, 1.0, {"M": ((0, 0, 0), _I3)})],
                      joints=[("SphSphJoint", "ToA", "/Assembly1/A", "/Assembly1/Body/M", {"distanceIJ": "2.0"}),
                              ("SphSphJoint", "ToB", "/Assembly1/B", "/Assembly1/Body/M", {"distanceIJ": "2.0"})])
    path = tmp_path / "impossible.asmt"
    path.write_text(text)
    with pytest.warns(UserWarning):
        spec = read_asmt(path)
    result = assemble(compile_model(spec))
    assert not result.success
    assert set(result.conflicts) == {"ToA", "ToB"}, result.conflicts
    assert "ToA" in result.message and "ToB" in result.message


# --------------------------------------------------------------------------------------
# accelerations to round-off (planar mechanisms stay planar)
# --------------------------------------------------------------------------------------
ACC_TOL = 1e-9


@needs_data
@pytest.mark.parametrize("path", WITH_SERIES, ids=lambda p: p.stem)
def test_accelerations_match_the_stored_series_to_1e_9(path):
    # the stored series closes its joints to 1e-11 and prints 14 digits: an acceleration
    # error above 1e-9 (relative to the part's largest value, at least 1) is ours
    spec = read_asmt(path, initial_pose="series")
    motion = _kinematics(spec, read_asmt_simulation(path))
    for name, ref in read_asmt_time_series(path)["parts"].items():
        b = motion.part_index(name)
        for ours, key in ((motion.acceleration[:, b], "acceleration"),
                          (motion.angular_acceleration[:, b], "angular_acceleration")):
            assert _max_rel_error(ours, ref[key]) <= ACC_TOL, (name, key, _max_rel_error(ours, ref[key]))


def test_piston_crank_stays_planar_and_its_rod_follows_the_closed_form(tmp_path):
    import sympy as sp

    r, L = R_CRANK, L_ROD
    # crank about z at the origin (2 pi t), rod from the crank pin to the piston pin, piston
    # sliding on the world x axis: every part in the plane z = 0
    text = _asmt_text(
        markers={"O": ((0, 0, 0), _I3), "S": ((0, 0, 0), _Z_ALONG_X)},
        parts=[("Crank", (0, 0, 0), _I3, 1.0, {"O": ((0, 0, 0), _I3), "P": ((r, 0, 0), _I3)}),
               ("Rod", (r, 0, 0), _I3, 1.0, {"A": ((0, 0, 0), _I3), "B": ((L, 0, 0), _I3)}),
               ("Piston", (r + L, 0, 0), _I3, 1.0, {"B": ((0, 0, 0), _I3), "S": ((0, 0, 0), _Z_ALONG_X)})],
        joints=[("RevoluteJoint", "Main", "/Assembly1/O", "/Assembly1/Crank/O", {}),
                ("RevoluteJoint", "CrankPin", "/Assembly1/Crank/P", "/Assembly1/Rod/A", {}),
                ("RevoluteJoint", "WristPin", "/Assembly1/Rod/B", "/Assembly1/Piston/B", {}),
                ("TranslationalJoint", "Bore", "/Assembly1/S", "/Assembly1/Piston/S", {})],
        motions=[("RotationalMotion", "Turn", "/Assembly1/Main", "RotationZ", "2.0*pi*time")])
    path = tmp_path / "piston.asmt"
    path.write_text(text)
    spec = read_asmt(path)
    motion = _kinematics(spec, {"tstart": 0.0, "tend": 1.0, "steps": 50})
    ts = sp.Symbol("t")
    phi = sp.asin(-r / L * sp.sin(2 * sp.pi * ts))  # the rod's angle to the x axis
    rod_alpha = sp.lambdify(ts, sp.diff(phi, ts, 2), "numpy")(motion.time)
    exact = {"Crank": np.zeros_like(motion.time), "Rod": rod_alpha, "Piston": np.zeros_like(motion.time)}
    for name, alpha_z in exact.items():
        al = motion.angular_acceleration[:, motion.part_index(name)]
        scale = max(1.0, float(np.max(np.abs(alpha_z))))
        assert np.max(np.abs(al[:, :2])) <= ACC_TOL * scale, name   # out of the plane: exactly 0
        assert np.max(np.abs(al[:, 2] - alpha_z)) <= ACC_TOL * scale, name


def _corpus_piston(tmp_path):
    """OndselSolver's piston crank (the geometry of its piston.asmt: crank 0.8, rod 1.3,
    piston on a cylindrical joint along the world y axis, parts saved turned as the CAD
    left them), driven at 2 pi rad/s: 19 joint equations for 18 coordinates, two of them
    redundant."""
    c, s = -8.0 / 13.0, math.sqrt(105.0) / 13.0  # the rod's initial angle: cos = -0.8/1.3
    x_to_y = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0))  # z along world y
    text = _asmt_text(
        markers={"Marker1": ((0.0, 3.0, 0.0), x_to_y), "Marker2": ((0, 0, 0), _I3)},
        parts=[("Part1", (-0.1, -0.1, -0.1), _I3, 0.2,
                {"Marker1": ((0.1, 0.1, 0.1), _I3), "Marker2": ((0.9, 0.1, 0.1), _I3)}),
               ("Part2", (0.94036115973815, -0.017284236661228, 0.0), ((c, -s, 0.0), (s, c, 0.0), (0, 0, 1.0)),
                0.3, {"Marker1": ((0.1, 0.1, 0.0), _I3), "Marker2": ((1.4, 0.1, 0.0), _I3)}),
               ("Part3", (0.0, 1.024695076596, 0.0), x_to_y, 7.65,
                {"Marker1": ((0, 0, 0), ((1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0))),
                 "Marker2": ((0.0, 0.0, 1.0), _I3)})],
        joints=[("RevoluteJoint", "Joint1", "/Assembly1/Marker2", "/Assembly1/Part1/Marker1", {}),
                ("RevoluteJoint", "Joint2", "/Assembly1/Part1/Marker2", "/Assembly1/Part2/Marker1", {}),
                ("RevoluteJoint", "Joint3", "/Assembly1/Part2/Marker2", "/Assembly1/Part3/Marker1", {}),
                ("CylindricalJoint", "Joint4", "/Assembly1/Part3/Marker2", "/Assembly1/Marker1", {})],
        motions=[("RotationalMotion", "Motion1", "/Assembly1/Joint1", "RotationZ", "2.0*pi*time")])
    path = tmp_path / "piston_corpus.asmt"
    path.write_text(text)
    return path


def test_redundant_piston_crank_stays_planar_to_round_off(tmp_path):
    import sympy as sp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the saved pose is assembled to the file's digits
        spec = read_asmt(_corpus_piston(tmp_path))
    motion = _kinematics(spec, {"tstart": 0.0, "tend": 1.0, "steps": 25})
    assert motion.complete, motion.message
    ts = sp.Symbol("t")
    phi = sp.acos(-sp.Rational(8, 13) * sp.cos(2 * sp.pi * ts))  # the rod's angle to world x
    rod = sp.lambdify(ts, sp.diff(phi, ts, 2), "numpy")(motion.time)
    exact = {"Part1": 0.0 * motion.time, "Part2": rod, "Part3": 0.0 * motion.time}
    for name, alpha_z in exact.items():
        b = motion.part_index(name)
        scale = max(1.0, float(np.max(np.abs(alpha_z))))
        al = motion.angular_acceleration[:, b]
        assert np.max(np.abs(al[:, :2])) <= ACC_TOL * scale, (name, np.max(np.abs(al[:, :2])))
        assert np.max(np.abs(al[:, 2] - alpha_z)) <= ACC_TOL * scale, name
        assert np.max(np.abs(motion.acceleration[:, b, 2])) <= ACC_TOL * scale, name
