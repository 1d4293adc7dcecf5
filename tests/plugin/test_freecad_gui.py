"""The workbench in the real FreeCAD window, under Xvfb; skipped without FreeCAD or Xvfb.

Also the install step: ``cadmotion freecad-install`` into a scratch home, then FreeCAD
(GUI) and freecadcmd find cadmotion through the installed Mod folder alone (no
PYTHONPATH). FreeCAD is started with ``xvfb-run``; if the window cannot start at all
(no display server, a broken OpenGL) the GUI test is skipped, a failure inside the
script fails it.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from .freecad_harness import FREECADCMD, run_freecad
except ImportError:
    from freecad_harness import FREECADCMD, run_freecad

FREECAD_GUI = shutil.which("freecad") or shutil.which("FreeCAD")
XVFB = shutil.which("xvfb-run")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "cadquery_crank.py"

pytestmark = pytest.mark.skipif(FREECADCMD is None, reason="freecadcmd (FreeCAD) is not installed")


def _cli(args, home):
    env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(Path(home) / ".local" / "share"))
    return subprocess.run([sys.executable, "-m", "cadmotion.plugin.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A scratch HOME with cadmotion installed into its FreeCAD user folders."""
    home = tmp_path_factory.mktemp("home")
    dry = _cli(["freecad-install", "--dry-run"], home)
    assert dry.returncode == 0, dry.stderr
    mod = home / ".local" / "share" / "FreeCAD" / "Mod" / "cadmotion"
    assert "would link" in dry.stdout and str(mod) in dry.stdout
    assert not mod.exists()                                   # a dry run changes nothing
    done = _cli(["freecad-install"], home)
    assert done.returncode == 0, done.stderr
    return home, done.stdout


def test_install_makes_the_mod_folder_and_macro(home):
    home, output = home
    mod = home / ".local" / "share" / "FreeCAD" / "Mod" / "cadmotion"
    assert (mod / "Init.py").is_file() and (mod / "InitGui.py").is_file()
    assert (mod / "lib" / "cadmotion" / "plugin" / "freecad" / "simulate.py").is_file()
    marker = json.loads((mod / "cadmotion_mod.json").read_text())
    assert marker["mode"] == "link"
    assert (home / ".local" / "share" / "FreeCAD" / "Macro" / "cadmotion_simulate.FCMacro").is_file()
    assert "asked" in output and "FreeCAD 0." in output or "FreeCAD 1." in output


def test_freecadcmd_finds_the_installed_package(home, tmp_path):
    home, _ = home
    result, _ = run_freecad("""
        import cadmotion.plugin.freecad.simulate as S
        RESULT["file"] = S.__file__
    """, tmp_path, env={"HOME": str(home)}, pythonpath=False)
    assert "/Mod/cadmotion/lib/cadmotion/" in result["file"]


def test_uninstall_removes_only_what_install_made(tmp_path):
    home = tmp_path / "home"
    mod = home / "Mod"
    other = mod / "other"
    other.mkdir(parents=True)
    args = ["--mod-dir", str(mod), "--macro-dir", str(home / "Macro")]
    assert _cli(["freecad-install", *args, "--copy"], home).returncode == 0
    assert (mod / "cadmotion" / "lib" / "cadmotion" / "kernel" / "model.py").is_file()
    assert not (mod / "cadmotion" / "lib" / "cadmotion" / "tests").exists()
    out = _cli(["freecad-install", *args, "--uninstall"], home)
    assert out.returncode == 0 and "remove" in out.stdout
    assert not (mod / "cadmotion").exists() and not (home / "Macro" / "cadmotion_simulate.FCMacro").exists()
    assert other.is_dir()
    (mod / "cadmotion").mkdir()                                # not ours: refused
    refused = _cli(["freecad-install", *args, "--uninstall"], home)
    assert refused.returncode != 0 and "not made by cadmotion" in refused.stderr + refused.stdout
    assert (mod / "cadmotion").is_dir()


GUI_SCRIPT = r'''
import time
import FreeCAD as App, FreeCADGui as Gui
from PySide import QtGui
Gui.activateWorkbench("CadmotionWorkbench")
RESULT["workbench"] = Gui.activeWorkbench().MenuText
RESULT["commands"] = [c for c in Gui.listCommands() if c.startswith("Cadmotion_")]
from cadmotion.plugin.freecad import gui, simulate as S
doc = S.import_step(ARGS["step"])
S.add_joints(doc, ARGS["joints"], fixed=["base"])
for j in doc.Objects:
    if j.Label == "pivot":
        j.Driver = "2*pi*t"
Gui.SendMsgToActiveView("ViewFit")
panel = gui.open_task_panel(doc)
RESULT["panel"] = panel is not None and Gui.Control.activeDialog()
before = {o.Name: str(o.Placement) for o in doc.Objects if hasattr(o, "Placement")}
panel.steps.setValue(48)
panel.run()
RESULT["status"] = panel.status.text()
panel.play()
t0 = time.time()
while time.time() - t0 < 0.6:
    QtGui.QApplication.processEvents()
    time.sleep(0.01)
panel.pause()
RESULT["t_after_play"] = panel.t
panel.slider.setValue(500)                     # scrub to the middle
RESULT["t_scrubbed"] = panel.t
QtGui.QApplication.processEvents()
RESULT["screenshot"] = Gui.getMainWindow().grab().save(ARGS["png"])
try:
    Gui.activeDocument().activeView().saveImage(ARGS["view_png"], 640, 480, "White")
    RESULT["view_screenshot"] = True
except Exception as exc:
    RESULT["view_screenshot"] = str(exc)
dialog = panel.plot("crank,slider")
RESULT["plot"] = dialog is not None
panel.reject()                                  # closing without keeping: nothing changed
after = {o.Name: str(o.Placement) for o in doc.Objects if hasattr(o, "Placement")}
RESULT["untouched"] = after == before and S.motion_object(doc) is None
'''


@pytest.mark.skipif(FREECAD_GUI is None or XVFB is None, reason="needs FreeCAD's GUI and xvfb-run")
def test_workbench_task_panel_playback_under_xvfb(home, tmp_path):
    home, _ = home
    spec = importlib.util.spec_from_file_location("cadquery_crank_sample_gui", SAMPLE)
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    pytest.importorskip("cadquery")
    step = tmp_path / "crank.step"
    sample.export_step(sample.build_assembly(), step)
    args = {"step": str(step), "joints": sample.JOINTS, "png": str(tmp_path / "window.png"),
            "view_png": str(tmp_path / "view.png")}
    env = {"HOME": str(home), "QTWEBENGINE_DISABLE_SANDBOX": "1", "CADMOTION_TEST_EXIT": "1"}
    cmd = [XVFB, "-a", "-s", "-screen 0 1280x900x24", FREECAD_GUI]
    try:
        result, output = run_freecad(GUI_SCRIPT, tmp_path, args, env=env, pythonpath=False, gui=cmd, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.skip("FreeCAD's window did not finish under Xvfb in time")
    except AssertionError as exc:
        if "wrote no result" in str(exc):
            pytest.skip(f"FreeCAD's window could not start under Xvfb: {str(exc)[-300:]}")
        raise
    assert result["workbench"] == "Cadmotion"
    assert {"Cadmotion_Revolute", "Cadmotion_Simulate", "Cadmotion_Ground"} <= set(result["commands"])
    assert result["panel"]
    assert result["status"].startswith("49 frames, t = 0 .. 1 s"), result["status"]
    assert 0.0 < result["t_after_play"] <= 1.0
    assert result["t_scrubbed"] == pytest.approx(0.5)
    assert result["screenshot"] and (tmp_path / "window.png").read_bytes()[:4] == b"\x89PNG"
    assert result["plot"]
    assert result["untouched"]
