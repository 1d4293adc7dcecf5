"""CSV and JSON writers: the exact column interface, full precision, partial runs."""

import csv
import json

import numpy as np
import pytest

from cadmotion.plugin.writers import write_outputs

try:
    from .test_writers_motions import turntable
except ImportError:
    from test_writers_motions import turntable


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(x) for x in r] for r in rows[1:]])


def test_csv_header_lists_time_then_part_fields_then_joints_then_extra(tmp_path):
    m = turntable(nt=7, with_shapes=False)
    (path,) = write_outputs(m, [tmp_path / "m.csv"])
    header, _ = read_csv(path)
    per_part = ["x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz",
                "ax", "ay", "az", "alx", "aly", "alz"]
    expected = (["t"] + [f"{p}.{s}" for p in ("base", "crank", "slider") for s in per_part]
                + ["crank_pivot.angle", "slide.disp", "energy", "crank_pivot.torque"])
    assert header == expected


def test_csv_has_one_row_per_time_and_values_read_back_bit_for_bit(tmp_path):
    m = turntable(nt=13, with_shapes=False)
    m.position[3, 2, 1] = 1.0 / 3.0               # a number needing all 17 digits
    (path,) = write_outputs(m, [tmp_path / "m.csv"])
    header, data = read_csv(path)
    assert data.shape == (13, len(header))
    col = {name: i for i, name in enumerate(header)}
    assert np.array_equal(data[:, col["t"]], m.time)
    assert data[3, col["slider.y"]] == 1.0 / 3.0
    assert np.array_equal(data[:, col["slider.x"]], m.position[:, 2, 0])
    assert np.array_equal(data[:, col["crank.qz"]], m.quaternion[:, 1, 3])
    assert np.array_equal(data[:, col["crank.wz"]], m.angular_velocity[:, 1, 2])
    assert np.array_equal(data[:, col["slider.ax"]], m.acceleration[:, 2, 0])
    assert np.array_equal(data[:, col["crank_pivot.angle"]], m.coordinate("crank_pivot.angle"))
    assert np.array_equal(data[:, col["energy"]], m.extra["energy"])


def test_csv_of_a_partial_run_is_still_a_plain_table(tmp_path):
    m = turntable(nt=5, with_shapes=False).truncated(3, "interrupted")
    (path,) = write_outputs(m, [tmp_path / "m.csv"], partial=True)
    text = path.read_text(encoding="utf-8")
    assert not text.startswith("#") and text.count("\n") == 4  # header + 3 rows


def test_csv_writes_nan_as_nan(tmp_path):
    m = turntable(nt=3, with_shapes=False)
    m.extra["energy"][1] = np.nan
    (path,) = write_outputs(m, [tmp_path / "m.csv"])
    _, data = read_csv(path)
    assert np.isnan(data[1, -2])


def test_json_holds_the_same_series_with_status(tmp_path):
    m = turntable(nt=9, with_shapes=False)
    (path,) = write_outputs(m, [tmp_path / "m.json"])
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) == {"time", "parts", "joints", "extra", "events", "complete", "message"}
    assert doc["time"] == m.time.tolist()
    assert list(doc["parts"]) == m.parts
    crank = doc["parts"]["crank"]
    assert set(crank) == {"position", "quaternion", "velocity", "angular_velocity",
                          "acceleration", "angular_acceleration"}
    assert np.array_equal(np.array(crank["quaternion"]), m.quaternion[:, 1])
    assert np.array_equal(np.array(doc["parts"]["slider"]["velocity"]), m.velocity[:, 2])
    assert list(doc["joints"]) == ["crank_pivot.angle", "slide.disp"]
    assert list(doc["extra"]) == ["energy", "crank_pivot.torque"]
    assert doc["events"] == [{"kind": "limit", "time": float(m.time[4]),
                              "message": "slide at its end", "items": []}]
    assert doc["complete"] is True and doc["message"] == ""


@pytest.mark.parametrize("complete, partial", [(False, False), (True, True)])
def test_json_marks_an_incomplete_run(tmp_path, complete, partial):
    m = turntable(nt=4, with_shapes=False, complete=complete)
    (path,) = write_outputs(m, [tmp_path / "m.json"], partial=partial)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["complete"] is False


def test_json_writes_non_finite_numbers_as_null(tmp_path):
    m = turntable(nt=3, with_shapes=False)
    m.extra["energy"][2] = np.inf
    (path,) = write_outputs(m, [tmp_path / "m.json"])
    doc = json.loads(path.read_text(encoding="utf-8"))   # strict JSON parses
    assert doc["extra"]["energy"][2] is None
