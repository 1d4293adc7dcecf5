"""Without the ``cad`` extra (no cadquery, no OCP): the kernel, model files, .asmt and FCStd
run; a STEP file stops with a message naming the extra to install.

Each case runs ``cadmotion`` in a fresh interpreter in which importing cadquery, OCP, VTK
or casadi fails, as on an install without the extra."""

import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:                                  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
BLOCK = """
import sys, importlib.abc
class NoCad(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("cadquery", "OCP", "vtk", "vtkmodules", "casadi", "ocp_tessellate"):
            raise ImportError("No module named " + repr(name) + " (no cad extra)")
sys.meta_path.insert(0, NoCad())
from cadmotion.plugin.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("cadquery", "OCP"))
assert not loaded, loaded
sys.exit(code)
"""


def cadmotion(*args):
    return subprocess.run([sys.executable, "-c", BLOCK, *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def test_cadquery_is_an_extra_that_the_test_extra_pulls():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("cadquery") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("cadquery") for d in extras["cad"])
    assert any(d.startswith("cadquery") for d in extras["test"])


def test_the_readme_first_command_runs_without_cad(tmp_path):
    out = cadmotion("run", ROOT / "samples" / "slider_crank.cadmotion.toml", "-o", tmp_path / "s.csv",
                    "-o", tmp_path / "s.html", "-o", tmp_path / "s.glb", "-o", tmp_path / "s.gif", "-q")
    assert out.returncode == 0, out.stderr
    with_cad = tmp_path / "with_cad.csv"
    from cadmotion.plugin.cli import main

    assert main(["run", str(ROOT / "samples" / "slider_crank.cadmotion.toml"), "-o", str(with_cad), "-q"]) == 0
    assert (tmp_path / "s.csv").read_text() == with_cad.read_text()      # the extra changes no result
    assert (tmp_path / "s.glb").read_bytes()[:4] == b"glTF"
    assert (tmp_path / "s.gif").read_bytes()[:6] == b"GIF89a"          # drawn by Pillow without VTK


@pytest.mark.skipif(not (DATA / "asmt-ondsel" / "fourbar.asmt").exists(), reason="OndselSolver corpus missing")
def test_an_asmt_file_runs_without_cad(tmp_path):
    out = cadmotion("run", DATA / "asmt-ondsel" / "fourbar.asmt", "-o", tmp_path / "f.csv", "-q")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "f.csv").read_text().startswith("t,")


@pytest.mark.skipif(not (DATA / "fcstd-crank-slider").exists(), reason="FreeCAD sample missing")
def test_an_fcstd_assembly_runs_without_cad_and_says_what_is_left_out(tmp_path):
    doc = DATA / "fcstd-crank-slider" / "crank_and_slider_assembly.FCStd"
    out = cadmotion("run", doc, "--drive", "Revolute=2*pi*t", "-o", tmp_path / "c.csv")
    assert out.returncode == 0, out.stderr
    assert "without their shapes" in out.stderr and 'pip install "cadmotion[cad]"' in out.stderr


def test_a_step_file_without_cad_names_the_file_and_the_extra(tmp_path):
    step = ROOT / "samples" / "gripper" / "gripper.step"
    out = cadmotion("run", step, "-q")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert "gripper" in out.stderr and "needs OCP" in out.stderr
    assert 'pip install "cadmotion[cad]"' in out.stderr
