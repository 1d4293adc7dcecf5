"""The FreeCAD front end, run in Debian's real FreeCAD (``freecadcmd``); skipped without it.

One freecadcmd run does the whole headless story (FreeCAD's startup is slow, so checks
are batched): a STEP slider-crank made with cadquery is imported into a document, joints
are added through the workbench's joint objects (axes picked from hole edges and a
straight edge, as a user's selection would), the document is simulated, saved,
reopened and checked again, and the bad inputs are tried. The placements FreeCAD ends up
with are compared here, outside FreeCAD, with the kernel's own run on the same STEP file
read by cadmotion's STEP importer.
"""

import importlib.util
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

try:
    from .freecad_harness import FREECADCMD, run_freecad
except ImportError:
    from freecad_harness import FREECADCMD, run_freecad

pytestmark = pytest.mark.skipif(FREECADCMD is None, reason="freecadcmd (FreeCAD) is not installed")

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "cadquery_crank.py"


def _sample():
    spec = importlib.util.spec_from_file_location("cadquery_crank_sample_fc", SAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAIN_SCRIPT = r'''
import time
import FreeCAD as App, Part
from cadmotion.errors import CadmotionError, MechanismError
from cadmotion.plugin.freecad import simulate as S, joints as J, document as D

tick = time.time()
step, out = ARGS["step"], ARGS["out"]
doc = S.import_step(step)
objs = {o.Label: o for o in D.shape_parts(doc)}
RESULT["labels"] = sorted(objs)
base, crank, rod, slider = (objs[n] for n in ("base", "crank", "rod", "slider"))

def circle_edge(obj, center, r=4.0):
    gp = D.global_placement(obj)
    for i, e in enumerate(Part.getShape(obj, "", transform=False).Edges):
        c = e.Curve
        if isinstance(c, Part.Circle) and abs(c.Radius - r) < 1e-6 and (gp.multVec(c.Center) - App.Vector(*center)).Length < 1e-6:
            return "Edge%d" % (i + 1)
    raise RuntimeError("no hole edge at %s" % (center,))

def x_edge(obj):
    for i, e in enumerate(Part.getShape(obj, "", transform=False).Edges):
        if isinstance(e.Curve, Part.Line):
            d = e.Vertexes[-1].Point - e.Vertexes[0].Point
            if abs(abs(d.x) - d.Length) < 1e-9:
                return "Edge%d" % (i + 1)

pin, sx = ARGS["pin"], ARGS["slider_x"]
J.make_joint(doc, "fixed", None, base, name="Ground")
# selections as FreeCAD's Gui.Selection.getSelectionEx("", 0) gives them: root object + sub-path
root = doc.getObject("LinkGroup")
sel = lambda o, sub: (root, o.Name + "." + sub)
joints = [
    J.joint_from_selection(doc, "revolute", [sel(base, ""), sel(crank, circle_edge(crank, (0, 0, 0)))], name="pivot", driver="2*pi*t"),
    J.joint_from_selection(doc, "revolute", [(crank, circle_edge(crank, (pin[0], pin[1], 6))), (rod, "")], name="crank_pin"),
    J.joint_from_selection(doc, "revolute", [(rod, ""), (slider, circle_edge(slider, (sx, 0, 30)))], name="wrist_pin"),
    J.joint_from_selection(doc, "prismatic", [(base, x_edge(base)), (slider, "")], name="slide"),
]
frames = {}
for j in joints:
    X1 = D.placement_matrix(D.global_placement(j.Part1)) @ J._part1_frame(j)
    frames[j.Label] = {"type": j.Type, "parts": [j.Part1.Label, j.Part2.Label],
                       "origin": list(X1[:3, 3]), "axis": list(X1[:3, 2]), "xaxis": list(X1[:3, 0])}
RESULT["joints"] = frames
RESULT["import_and_joints_s"] = time.time() - tick

def placements(d):
    return {o.Label: D.placement_matrix(D.global_placement(o)).tolist() for o in D.shape_parts(d)}

tick = time.time()
run = S.simulate_document(doc, t_end=1.0, steps=24, at=0.3, save_as=out + "/crank.FCStd")
RESULT["simulate_document_s"] = time.time() - tick
RESULT["timings"] = run.timings
RESULT["saved"] = run.saved
RESULT["complete"] = run.motion.complete
RESULT["origin"] = run.model.origin
RESULT["masses"] = {p.name: p.mass for p in run.spec.parts}
RESULT["at_0.3"] = placements(doc)
written = S.export_motion(run.motion, [out + "/fc.html", out + "/fc.glb", out + "/fc.csv", out + "/fc.step"],
                          doc=doc, bindings=run.model.bindings, at=0.5)
RESULT["exported"] = [str(p) for p in written]
RESULT["after_export"] = placements(doc)
App.closeDocument(doc.Name)

# -- reopen --------------------------------------------------------------------------
tick = time.time()
doc = App.openDocument(out + "/crank.FCStd")
RESULT["reopen_s"] = time.time() - tick
RESULT["reopened_at_0.3"] = placements(doc)
motion, bindings = S.load_motion(doc)
RESULT["stored_time"] = list(motion.time)
RESULT["stored_shown"] = S.motion_object(doc).ShownTime
RESULT["stored_slider_x"] = list(motion.position[:, motion.part_index("slider"), 0])
RESULT["proxies"] = sorted({type(j.Proxy).__name__ for j in D.workbench_joints(doc)})
S.show_time(doc, 0.7)
RESULT["at_0.7"] = placements(doc)
# the document's own joints give the same mechanism again (from the t = 0 pose)
S.show_time(doc, 0.0)
again = S.simulate_document(doc, t_end=1.0, steps=24, save=False)
RESULT["again_slider_x"] = list(again.motion.position[:, again.motion.part_index("slider"), 0])

# -- bad input: a joint whose part was deleted --------------------------------------------
count = len(doc.Objects)
before = placements(doc)
stored = list(S.motion_object(doc).Time)
doc.removeObject(doc.getObjectsByLabel("rod")[0].Name)
try:
    S.simulate_document(doc, t_end=1.0, steps=4, save=False)
    RESULT["deleted"] = "no error"
except MechanismError as exc:
    RESULT["deleted"] = D.report_error(exc)
after = placements(doc)
RESULT["deleted_untouched"] = all(after[k] == before[k] for k in after) and list(S.motion_object(doc).Time) == stored
App.closeDocument(doc.Name)

# -- a lock-up run headless: a warning in the report view ----------------------------------
doc = App.openDocument(out + "/crank.FCStd")
doc.getObjectsByLabel("pivot")[0].Driver = ""
warned, console = [], App.Console

class Spy:
    def __getattr__(self, name):
        return getattr(console, name)
    def PrintWarning(self, text):
        warned.append(text)

App.Console = Spy()
try:
    lock = S.simulate_document(doc, t_end=1.0, steps=20, drivers=[{"joint": "slide", "expression": "20*t"}],
                               save=False)
finally:
    App.Console = console
RESULT["lock_warnings"] = warned
RESULT["lock_events"] = [[e.kind, e.time, e.message] for e in lock.motion.events]
RESULT["lock_stored_events"] = list(S.motion_object(doc).Events)
RESULT["lock_loaded_events"] = [[e.kind, e.time, e.message] for e in S.load_motion(doc)[0].events]
App.closeDocument(doc.Name)

# -- bad input: selections that define no axis --------------------------------------------
doc = S.import_step(step)
objs = {o.Label: o for o in D.shape_parts(doc)}
count = len(doc.Objects)
msgs = []
for selection in ([(objs["base"], ""), (objs["crank"], "")],
                  [(objs["base"], "Vertex1"), (objs["crank"], "")],
                  [(objs["base"], ""), (objs["crank"], ""), (objs["rod"], "Edge1")]):
    try:
        J.joint_from_selection(doc, "revolute", selection)
        msgs.append("no error")
    except J.SelectionError as exc:
        msgs.append(D.report_error(exc))
RESULT["selection_errors"] = msgs
RESULT["selection_untouched"] = len(doc.Objects) == count

# -- joints from a model file beside the document -------------------------------------
doc.saveAs(out + "/side.FCStd")
RESULT["sidecar"] = D.sidecar_path(doc)
side = S.simulate_document(doc, t_end=0.5, steps=6)
RESULT["sidecar_origin"] = side.model.origin
RESULT["sidecar_slider_x"] = list(side.motion.position[:, side.motion.part_index("slider"), 0])
App.closeDocument(doc.Name)

# -- bad input: a document without solids ------------------------------------------------
doc = App.newDocument("empty")
doc.addObject("Part::Circle", "Circle")
doc.recompute()
count = len(doc.Objects)
try:
    S.simulate_document(doc, save=False)
    RESULT["no_solids"] = "no error"
except MechanismError as exc:
    RESULT["no_solids"] = D.report_error(exc)
RESULT["no_solids_untouched"] = len(doc.Objects) == count

# -- bad input: a FreeCAD Python without scipy ------------------------------------------
import sys
saved_scipy = sys.modules.get("scipy")
sys.modules["scipy"] = None
try:
    RESULT["missing"] = D.missing_modules()
    try:
        S.simulate_document(out + "/crank.FCStd", save=False)
        RESULT["no_scipy"] = "no error"
    except CadmotionError as exc:
        RESULT["no_scipy"] = D.report_error(exc)
finally:
    sys.modules["scipy"] = saved_scipy
RESULT["open_documents"] = sorted(App.listDocuments())
'''

SIDECAR = """
units = "mm"
[parts.base]
fixed = true
[[joints]]
name = "pivot"
type = "revolute"
parts = ["base", "crank"]
origin = [0, 0, 0]
axis = [0, 0, 1]
[[joints]]
name = "crank_pin"
type = "revolute"
parts = ["crank", "rod"]
origin = [{px}, {py}, 6]
[[joints]]
name = "wrist_pin"
type = "revolute"
parts = ["rod", "slider"]
origin = [{sx}, 0, 14]
[[joints]]
name = "slide"
type = "prismatic"
parts = ["base", "slider"]
origin = [{sx}, 0, 0]
axis = [1, 0, 0]
[[drivers]]
joint = "pivot"
expression = "2*pi*t"
"""


@pytest.fixture(scope="module")
def crank(tmp_path_factory):
    """The STEP file, the FreeCAD run's results, and the sample module."""
    sample = _sample()
    work = tmp_path_factory.mktemp("freecad")
    step = work / "crank.step"
    sample.export_step(sample.build_assembly(), step)
    (work / "side.cadmotion.toml").write_text(SIDECAR.format(px=sample.PIN[0], py=sample.PIN[1], sx=sample.SLIDER_X))
    result, output = run_freecad(MAIN_SCRIPT, work, {"step": str(step), "out": str(work),
                                                     "pin": list(sample.PIN), "slider_x": sample.SLIDER_X})
    return result, output, step, work, sample


@pytest.fixture(scope="module")
def reference(crank):
    """The kernel's run outside FreeCAD: cadmotion's STEP importer + the joints FreeCAD recorded."""
    from cadmotion.importers.modelfile import parse_model
    from cadmotion.kernel import compile_model, kinematics

    result, _, step, _, _ = crank
    joints = []
    for name, j in result["joints"].items():
        joints.append({"name": name, "type": j["type"], "parts": j["parts"], "origin": j["origin"],
                       "axis": j["axis"], "xaxis": j["xaxis"]})
    data = {"units": "m", "step": str(step), "parts": {"base": {"fixed": True}}, "joints": joints,
            "drivers": [{"joint": "pivot", "expression": "2*pi*t"}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = parse_model(data, source="reference", base_dir=step.parent)
    return kinematics(compile_model(spec), t_end=1.0, steps=24)


def _close(X, Y, atol=1e-7):
    return np.allclose(np.asarray(X), np.asarray(Y), atol=atol)


def test_step_is_imported_and_joints_come_from_the_selected_geometry(crank):
    result, _, _, _, sample = crank
    assert result["labels"] == ["base", "crank", "rod", "slider"]
    j = result["joints"]
    assert _close(np.abs(j["pivot"]["axis"]), [0, 0, 1]) and _close(j["pivot"]["origin"][:2], [0, 0])
    assert _close(j["crank_pin"]["origin"][:2], [sample.PIN[0] * 1e-3, sample.PIN[1] * 1e-3])
    assert _close(j["wrist_pin"]["origin"][:2], [sample.SLIDER_X * 1e-3, 0])
    assert _close(np.abs(j["slide"]["axis"]), [1, 0, 0])
    assert result["origin"] == "workbench" and result["complete"]


def test_mass_properties_from_freecad_match_the_step_importer(crank, reference):
    result = crank[0]
    for name, mass in result["masses"].items():
        if name != "world":
            assert mass == pytest.approx(reference.spec.part(name).mass, rel=1e-9)


@pytest.mark.parametrize("key, t", [("at_0.3", 0.3), ("reopened_at_0.3", 0.3), ("at_0.7", 0.7),
                                    ("after_export", 0.3)])
def test_placements_match_the_kernel_run_outside_freecad(crank, reference, key, t):
    result = crank[0]
    for name, X in result[key].items():
        assert _close(X, reference.pose(name, t), atol=1e-9), (key, name)


def test_the_motion_is_stored_in_the_document_and_survives_reopening(crank, reference):
    result = crank[0]
    assert result["saved"].endswith("crank.FCStd")
    assert _close(result["stored_time"], reference.time, atol=0)
    assert result["stored_shown"] == pytest.approx(0.3)
    b = reference.part_index("slider")
    assert _close(result["stored_slider_x"], reference.position[:, b, 0], atol=1e-12)
    assert _close(result["again_slider_x"], reference.position[:, b, 0], atol=1e-9)
    assert result["proxies"] == ["JointProxy"]


def test_a_lockup_is_one_warning_at_the_dead_centre_time_and_is_stored(crank):
    # slider driven at 20 mm/s from x0 reaches the crank's reach r + l at t* = (r + l - x0) / 20
    result, _, _, _, sample = crank
    r = math.hypot(*sample.PIN[:2])
    l = math.hypot(sample.SLIDER_X - sample.PIN[0], sample.PIN[1])
    t_star = (r + l - sample.SLIDER_X) / 20.0
    (stop,) = [e for e in result["lock_events"] if e[0] in ("lockup", "singular")]
    assert t_star - 0.01 <= stop[1] <= t_star + 0.05 + 1e-9          # within one output step
    assert result["lock_warnings"] == [f"cadmotion: {stop[2]}\n"]
    assert f"t = {stop[1]:.6g} s" in stop[2]
    assert result["lock_loaded_events"] == result["lock_events"]      # read back from the document
    assert len(result["lock_stored_events"]) == len(result["lock_events"])


def test_exports_from_inside_freecad(crank):
    result, _, _, work, _ = crank
    names = [Path(p).name for p in result["exported"]]
    assert names == ["fc.html", "fc.csv", "fc.glb", "fc.step"] or sorted(names) == sorted(
        ["fc.html", "fc.glb", "fc.csv", "fc.step"])
    assert (work / "fc.glb").read_bytes()[:4] == b"glTF"
    assert (work / "fc.html").read_bytes().startswith(b"<!DOCTYPE html>")
    assert (work / "fc.csv").read_text().startswith("t,")
    assert (work / "fc.step").read_bytes().startswith(b"ISO-10303-21")


def test_joints_from_a_model_file_beside_the_document(crank, reference):
    result = crank[0]
    assert result["sidecar"].endswith("side.cadmotion.toml")
    assert result["sidecar_origin"] == "sidecar"
    # the model file's pivot axis may be opposite to the hole edge's: compare the stroke
    x = np.array(result["sidecar_slider_x"])
    sample = crank[4]
    th = math.radians(sample.ANGLE0) + 2 * math.pi * np.linspace(0, 0.5, 7)
    c, l = sample.CRANK * 1e-3, sample.ROD * 1e-3
    assert _close(x, c * np.cos(th) + np.sqrt(l * l - (c * np.sin(th)) ** 2), atol=1e-9)


def test_bad_input_gives_a_clear_message_and_leaves_the_document_alone(crank):
    result, output, _, _, _ = crank
    assert "Part2 refers to" in result["deleted"] and "deleted" in result["deleted"]
    assert "Solid002" in result["deleted"]
    assert result["deleted_untouched"]
    first, vertex, three = result["selection_errors"]
    assert "defines no axis" in first
    assert "vertex defines a point but no axis" in vertex
    assert "3 parts" in three
    assert result["selection_untouched"]
    assert "no solid parts" in result["no_solids"] and result["no_solids_untouched"]
    assert result["missing"] == ["scipy"]
    assert "lacks scipy" in result["no_scipy"] and "python3-scipy" in result["no_scipy"]
    # every message went to FreeCAD's report view (the console in freecadcmd)
    for text in (result["deleted"], first, result["no_solids"]):
        assert f"cadmotion: {text.splitlines()[0]}" in output


def test_timings(crank):
    """Not a check: the numbers the report quotes (printed with -s)."""
    result = crank[0]
    print("\nFreeCAD timings:", json.dumps({k: result[k] for k in ("import_and_joints_s", "simulate_document_s",
                                                                      "reopen_s", "timings")}, default=float))


# --------------------------------------------------------------------------- FCStd writer
FCSTD = Path(__file__).resolve().parents[3] / "shared" / "data" / "fcstd-crank-slider" / "crank_and_slider_assembly.FCStd"

REOPEN_SCRIPT = r'''
import FreeCAD as App
from cadmotion.plugin.freecad import document as D
for key in ("original", "copy"):
    doc = App.openDocument(ARGS[key])
    RESULT[key] = {o.Name: {"placement": D.placement_matrix(o.Placement).tolist(),
                            "shape": D.placement_matrix(o.Shape.Placement).tolist(),
                            "volume": o.Shape.Volume, "valid": o.Shape.isValid(),
                            "com": list(o.Shape.Solids[0].CenterOfMass) if o.Shape.Solids else None}
                   for o in doc.Objects if o.TypeId == "Part::Feature"}
    App.closeDocument(doc.Name)
'''


def test_fcstd_copy_with_new_placements_reopens_in_freecad(tmp_path):
    pytest.importorskip("OCP")
    from dataclasses import replace

    from cadmotion.importers.fcstd import read_fcstd
    from cadmotion.kernel import DriverSpec, TimeFunctionSpec, compile_model, kinematics
    from cadmotion.plugin.freecad.fcstd_placements import read_placements, write_motion_frame

    src = FCSTD
    if not src.is_file():
        pytest.skip("the crank-slider FCStd sample is not available")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = read_fcstd(src)
    spec = replace(spec, drivers=(DriverSpec("turn", TimeFunctionSpec("2*pi*t"), joint="Revolute",
                                             coordinate="angle"),))
    motion = kinematics(compile_model(spec), t_end=1.0, steps=20)
    dst = write_motion_frame(src, tmp_path / "copy.FCStd", motion, t=0.35)
    assert not np.allclose(read_placements(src)["Crank"], read_placements(dst)["Crank"])
    result, _ = run_freecad(REOPEN_SCRIPT, tmp_path, {"original": str(src), "copy": str(dst)})
    for name in ("Crank", "ConnectingRod", "SliderRod", "Base"):
        X = motion.pose(name, 0.35)
        got = result["copy"][name]
        assert _close(got["placement"], X, atol=1e-9), name
        assert _close(got["shape"], X, atol=1e-9), name          # the .brp location agrees
        assert got["valid"] and got["volume"] == pytest.approx(result["original"][name]["volume"], rel=1e-9)
        # the solid moved rigidly: its centre of mass follows the change of placement
        X0 = np.asarray(result["original"][name]["placement"])
        c0 = np.r_[np.asarray(result["original"][name]["com"]) * 1e-3, 1.0]
        assert _close(np.asarray(got["com"]) * 1e-3, (X @ np.linalg.inv(X0) @ c0)[:3], atol=1e-9), name


# ------------------------------------------------------------ a 1.x Assembly document in 0.20
ASSEMBLY_SCRIPT = r'''
import FreeCAD as App
from cadmotion.errors import OutputError
from cadmotion.plugin.freecad import simulate_document, document as D
drivers = [{"joint": "Revolute", "expression": "2*pi*t"}]
doc = App.openDocument(ARGS["doc"])
RESULT["has_assembly_objects"] = bool(D.assemblies(doc))
RESULT["saved_assembly"] = D.saved_assembly(doc)
try:
    simulate_document(doc, drivers=drivers, t_end=1.0, steps=20)
    RESULT["refused"] = None
except OutputError as exc:
    RESULT["refused"] = str(exc)
run = simulate_document(doc, drivers=drivers, t_end=1.0, steps=20, at=0.35, save_as=ARGS["out"])
RESULT["origin"] = run.model.origin
RESULT["joints"] = sorted(j.name for j in run.model.spec.joints)
RESULT["placements"] = {o.Name: D.placement_matrix(o.Placement).tolist()
                        for o in doc.Objects if o.TypeId == "Part::Feature"}
'''


def test_a_freecad_1x_assembly_document_simulates_where_freecad_has_no_assembly_workbench(tmp_path):
    """Debian's FreeCAD 0.20 loads the crank-slider's parts but not its Assembly: the joints
    come from the saved file, the original is never overwritten, and the placements FreeCAD
    shows at t = 0.35 s are the ones cadmotion's FreeCAD-free importer and kernel compute."""
    pytest.importorskip("OCP")
    import shutil
    from dataclasses import replace

    from cadmotion.importers.fcstd import read_fcstd
    from cadmotion.kernel import DriverSpec, TimeFunctionSpec, compile_model, kinematics

    if not FCSTD.is_file():
        pytest.skip("the crank-slider FCStd sample is not available")
    src = tmp_path / "crank.FCStd"
    shutil.copy(FCSTD, src)
    before = src.read_bytes()
    result, _ = run_freecad(ASSEMBLY_SCRIPT, tmp_path, {"doc": str(src), "out": str(tmp_path / "moved.FCStd")})
    if result["has_assembly_objects"]:
        pytest.skip("this FreeCAD has the Assembly workbench (the document's own objects are used)")
    assert result["saved_assembly"] and result["origin"] == "saved-assembly"
    assert "save_as" in result["refused"] and src.read_bytes() == before
    assert result["joints"] == ["Revolute", "Revolute001", "Revolute002", "Slider"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = read_fcstd(FCSTD)
    spec = replace(spec, drivers=(DriverSpec("turn", TimeFunctionSpec("2*pi*t"), joint="Revolute",
                                             coordinate="angle"),))
    motion = kinematics(compile_model(spec), t_end=1.0, steps=20)
    for name in ("Crank", "ConnectingRod", "SliderRod"):
        assert _close(result["placements"][name], motion.pose(name, 0.35), atol=1e-7), name
    assert (tmp_path / "moved.FCStd").is_file()
