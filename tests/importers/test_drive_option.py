"""`--drive NAME=EXPR` and `--gravity`: motion for files that store joints but no drivers."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from cadmotion.errors import CadmotionError
from cadmotion.importers import load
from cadmotion.importers.drive_option import parse_drive, with_drivers, with_gravity
from cadmotion.kernel.spec import JointSpec, MechanismSpec, PartSpec
from cadmotion.plugin.cli import main

ROOT = Path(__file__).resolve().parents[2]
SLIDER_CRANK = ROOT / "samples" / "slider_crank.cadmotion.toml"
CRANK_FCSTD = ROOT.parent / "shared" / "data" / "fcstd-crank-slider" / "crank_and_slider_assembly.FCStd"


def _columns(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return {name: np.array([float(r[k]) for r in rows[1:]]) for k, name in enumerate(rows[0])}


@pytest.fixture(scope="module")
def cylinder_spec():
    parts = (PartSpec("ground", fixed=True), PartSpec("shaft"))
    return MechanismSpec(parts, joints=(JointSpec("bearing", "cylindrical", ("ground", "shaft")),), name="bearing")


def test_a_joint_name_drives_the_first_coordinate_of_its_type(cylinder_spec):
    driver = parse_drive("bearing = 2*pi*t", cylinder_spec)
    assert (driver.joint, driver.coordinate, driver.function.expression) == ("bearing", "angle", "2*pi*t")
    assert parse_drive("bearing.disp=0.01*t", cylinder_spec).coordinate == "disp"


def test_a_part_coordinate_is_driven_by_part_dot_axis(cylinder_spec):
    driver = parse_drive("shaft.z=0.1*sin(t)", cylinder_spec)
    assert (driver.joint, driver.part, driver.coordinate) == (None, "shaft", "z")


@pytest.mark.parametrize("text, message", [
    ("nothing", "expected NAME=EXPRESSION"),
    ("bearing=", "expected NAME=EXPRESSION"),
    ("crank=t", "joints that can be driven: bearing"),
    ("shaft.w=t", "neither a joint nor PART.x|y|z"),
    ("bearing=__import__('os').system('true')", "bearing"),
    ("bearing=t; x", "cannot parse"),
])
def test_bad_drive_text_is_refused_with_the_option_named(cylinder_spec, text, message):
    with pytest.raises(CadmotionError) as info:
        parse_drive(text, cylinder_spec)
    assert "--drive" in str(info.value) and message in str(info.value)


def test_a_command_line_driver_replaces_the_files_driver_of_that_coordinate():
    spec = load(SLIDER_CRANK)
    (original,) = [d for d in spec.drivers if d.joint == "crank_pivot"]
    driven = with_drivers(spec, ["crank_pivot=0.5*t"])
    (new,) = [d for d in driven.drivers if d.joint == "crank_pivot"]
    assert new.function.expression == "0.5*t" and original.function.expression != "0.5*t"
    assert len(driven.drivers) == len(spec.drivers)
    assert with_gravity(spec, (0, 0, -9.81)).gravity == (0.0, 0.0, -9.81)
    assert with_gravity(spec, None) is spec


def test_cli_run_with_drive_overrides_the_model_file(tmp_path):
    out = tmp_path / "crank.csv"
    assert main(["run", str(SLIDER_CRANK), "--drive", "crank_pivot=0.5*t", "--t-end", "1", "--steps", "10",
                 "-o", str(out), "-q"]) == 0
    cols = _columns(out)
    assert np.allclose(cols["crank_pivot.angle"], 0.5 * cols["t"], atol=1e-10)


@pytest.mark.skipif(not CRANK_FCSTD.is_file(), reason="../shared/data not present")
@pytest.mark.filterwarnings("ignore:.*saved pose")  # the document's saved pose is off; the CLI prints that
def test_a_freecad_document_without_drivers_moves_when_driven_from_the_command_line(tmp_path):
    """One crank turn in 1 s: the crank angle is 2πt and the slider comes back where it started."""
    out = tmp_path / "crank_slider.csv"
    code = main(["run", str(CRANK_FCSTD), "--drive", "Revolute=2*pi*t", "--t-end", "1", "--steps", "40",
                 "-o", str(out), "-q"])
    assert code == 0
    cols = _columns(out)
    assert np.allclose(cols["Revolute.angle"], 2 * math.pi * cols["t"], atol=1e-9)
    stroke = cols["Slider.disp"]
    assert np.ptp(stroke) > 0.02  # it does slide (measured 0.0300 m, about twice the crank radius)
    assert abs(stroke[-1] - stroke[0]) < 1e-9


@pytest.mark.skipif(not CRANK_FCSTD.is_file(), reason="../shared/data not present")
def test_check_api_and_cli_take_drivers(tmp_path):
    from cadmotion import check

    with pytest.warns(UserWarning, match="saved pose"):
        report = check(CRANK_FCSTD, t_end=1.0, steps=20, interference=False, drive=["Revolute=2*pi*t"])
    assert report.status == "ok" and report.dof == 1 and report.dof_driven == 0
    with pytest.warns(UserWarning, match="saved pose"):
        undriven = check(CRANK_FCSTD, interference=False)
    assert any("no drivers" in m for m in undriven.messages)
    code = main(["check", str(CRANK_FCSTD), "--drive", "Nope=t", "--no-interference",
                 "--report", str(tmp_path / "r.json")])
    assert code == 1 and "Nope" in (tmp_path / "r.json").read_text()
