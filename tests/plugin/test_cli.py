"""The `cadmotion` command: outputs, exit codes and messages, run as users run it."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cadmotion.plugin.cli import main

ROOT = Path(__file__).resolve().parents[2]
SLIDER = ROOT / "samples" / "slider_crank.cadmotion.toml"


def test_run_writes_n_plus_one_rows_with_the_documented_columns(tmp_path):
    out = tmp_path / "out.csv"
    proc = subprocess.run([sys.executable, "-m", "cadmotion.plugin.cli", "run", str(SLIDER), "--t-end", "1",
                           "--steps", "50", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(out.open()))
    header, data = rows[0], rows[1:]
    assert len(data) == 51
    assert header[0] == "t"
    crank = ["crank." + c for c in "x y z qw qx qy qz vx vy vz wx wy wz ax ay az alx aly alz".split()]
    i = header.index("crank.x")
    assert header[i:i + 19] == crank
    assert header[-4:] == ["crank_pivot.angle", "crank_pin.angle", "wrist_pin.angle", "slide.disp"]
    assert float(data[-1][0]) == 1.0
    assert float(data[-1][header.index("crank_pivot.angle")]) == pytest.approx(1.0, abs=1e-9)


def test_check_json_reports_dof_redundancy_and_exit_zero(capsys):
    code = main(["check", str(SLIDER), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["status"] == "ok" and report["exit_code"] == 0
    assert report["dof"] == 1 and report["dof_driven"] == 0
    assert len(report["redundant"]) == 3
    assert report["assembly"]["success"] is True


def test_check_of_an_unassemblable_model_exits_3_and_still_writes_the_report(tmp_path, capsys):
    # the linkage can only place the slider 0.2 .. 0.4 m from the crank pivot: a 0.5 m rod
    # from the pivot to the slider cannot be fitted
    bad = tmp_path / "bad.cadmotion.toml"
    bad.write_text(SLIDER.read_text() + """
[[joints]]
name = "impossible_rod"
type = "distance"
parts = ["ground", "slider"]
points = [[0, 0, 0], [0.4, 0, 0]]
length = 0.5
""")
    report_path = tmp_path / "report.json"
    code = main(["check", str(bad), "--json", "--report", str(report_path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["status"] == "cannot-assemble"
    assert json.loads(report_path.read_text())["status"] == "cannot-assemble"


def test_errors_are_one_message_without_traceback_and_nothing_is_written(tmp_path):
    broken = tmp_path / "broken.cadmotion.toml"
    broken.write_text(SLIDER.read_text().replace('type = "prismatic"', 'type = "slidey"'))
    out = tmp_path / "out.csv"
    proc = subprocess.run([sys.executable, "-m", "cadmotion.plugin.cli", "run", str(broken), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "unknown joint type 'slidey'" in proc.stderr and str(broken) in proc.stderr
    assert not out.exists()


def test_unknown_output_extension_fails_before_computing_and_keeps_existing_files(tmp_path, capsys):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious")
    code = main(["run", str(SLIDER), "-o", str(keep), "-o", str(tmp_path / "out.xyz")])
    assert code == 1
    assert ".xyz" in capsys.readouterr().err
    assert keep.read_text() == "precious"


def test_equations_prints_the_joint_equations_and_jacobian_blocks(capsys):
    assert main(["equations", str(SLIDER), "--joint", "slide"]) == 0
    text = capsys.readouterr().out
    assert "slide: prismatic (5 equation(s))" in text
    assert "Φ0 = 1.0*y_j" in text  # the slider stays on the line y = 0 …
    assert "Φ1 = 1.0*z_j" in text  # … and z = 0
    assert "∂Φ/∂r_j (slider)" in text


def test_inspect_json_lists_parts_with_mass_and_joints(capsys):
    assert main(["inspect", str(SLIDER), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = {p["name"]: p for p in data["parts"]}
    assert names["rod"]["mass"] == 2.0 and names["rod"]["com"] == [0.15, 0, 0]
    assert {j["name"]: j["type"] for j in data["joints"]}["slide"] == "prismatic"


def test_python_api_check_assert_ok_reads_like_a_spec():
    import cadmotion

    report = cadmotion.check(SLIDER, t_end=1.0, steps=20)
    assert report.dof == 1 and report.ok
    report.assert_ok()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_keeps_the_frames_computed_so_far(tmp_path):
    import fcntl
    import os
    import pty
    import select
    import signal
    import struct
    import termios
    import time

    out = tmp_path / "partial.csv"
    # stderr on a terminal (80 columns: tqdm draws nothing at 0), so that the run shows its progress: Ctrl-C
    # once it has computed some frames
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "cadmotion.plugin.cli", "run", str(SLIDER), "--t-end", "1000",
                             "--steps", "2000000", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    err, frames, deadline = b"", 0, time.monotonic() + 600

    def read(wait):
        nonlocal err
        if select.select([master], [], [], wait)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process ended
                return False
            err += chunk
            return bool(chunk)
        return True

    while frames < 3 and proc.poll() is None and time.monotonic() < deadline:
        read(1.0)
        counts = re.findall(rb"(\d+)/2000000 ", err[-4096:])  # the bar counts steps
        frames = int(counts[-1]) if counts else 0
    assert frames >= 3, err.decode(errors="replace")
    proc.send_signal(signal.SIGINT)
    while read(1.0) and time.monotonic() < deadline:
        pass
    assert proc.wait(timeout=120) == 130, err.decode(errors="replace")
    os.close(master)
    assert b"interrupted" in err
    rows = list(csv.reader(out.open()))
    assert 2 < len(rows) - 1 < 2000001  # some frames, not all
    times = [float(r[0]) for r in rows[1:]]
    assert times == sorted(times) and times[0] == 0.0


def test_check_suggests_joints_to_relax_to_remove_redundancy():
    import cadmotion

    report = cadmotion.check(ROOT / "samples" / "four_bar.cadmotion.toml", t_end=0.1, steps=2)
    assert len(report.redundant) == 3
    # a planar four-bar: any one revolute made spherical leaves 1 of the 3 redundant equations
    assert any(s.endswith("-> spherical removes 2 redundant equations") for s in report.relaxations)
    assert all("removes" in s for s in report.relaxations)


ROTOR = """
units = "m"
gravity = [0, 0, -9.81]            # along the axis: gravity exerts no torque about it
[parts.ground]
fixed = true
[parts.rod]
mass = 1.0
com = [0.05, 0, 0]
inertia = [1e-5, 8.3e-4, 8.3e-4]
[[joints]]
name = "pivot"
type = "revolute"
parts = ["ground", "rod"]
origin = [0, 0, 0]
axis = [0, 0, 1]
[[drivers]]
joint = "pivot"
expression = "t**2"
"""


def test_run_inverse_writes_the_motor_torque_a_hand_computation_gives(tmp_path):
    """θ = t² about a vertical axis: τ = (I_com + m d²) θ̈ = (8.3e-4 + 0.05²) · 2 N m; the pivot
    carries the weight (fz = m g) and the centripetal pull m d θ̇² towards the axis."""
    model = tmp_path / "rotor.cadmotion.toml"
    model.write_text(ROTOR)
    out = tmp_path / "rotor.csv"
    assert main(["run", str(model), "--analysis", "inverse", "--t-end", "1", "--steps", "10", "-o", str(out),
                 "-q"]) == 0
    rows = list(csv.reader(out.open()))
    cols = {name: [float(r[k]) for r in rows[1:]] for k, name in enumerate(rows[0])}
    torque = 2 * (8.3e-4 + 0.05 ** 2)
    assert all(abs(abs(e) - torque) < 1e-9 for e in cols["pivot.driver.effort"])
    for k, t in enumerate(cols["t"]):
        pull = (cols["pivot.fx"][k] ** 2 + cols["pivot.fy"][k] ** 2) ** 0.5
        tangential = 0.05 * 2.0  # m d θ̈ keeps the com on its circle
        assert abs(pull - ((0.05 * (2 * t) ** 2) ** 2 + tangential ** 2) ** 0.5) < 1e-9
        assert abs(cols["pivot.fz"][k] - 9.81) < 1e-9


ASMT_GEARS = ROOT.parent / "shared" / "data" / "asmt-ondsel" / "Gears.asmt"


def _quat_rows_to_matrices(q):
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


@pytest.mark.skipif(not ASMT_GEARS.exists(), reason="shared test data not available")
def test_initial_pose_series_on_the_command_line_reproduces_the_stored_asmt_run(tmp_path):
    from cadmotion.importers.asmt import read_asmt_time_series

    ref = read_asmt_time_series(ASMT_GEARS)["parts"]["Part2"]["rotation"]
    worst = {}
    for pose in ("series", None):
        out = tmp_path / f"{pose}.csv"
        argv = ["run", str(ASMT_GEARS), "--t-end", "1", "--steps", "100", "-o", str(out), "-q"]
        argv += ["--initial-pose", pose] if pose else []
        assert main(argv) == 0
        rows = list(csv.reader(out.open()))
        header, data = rows[0], np.array(rows[1:], float)
        i = header.index("Part2.qw")
        worst[pose] = float(np.max(np.abs(_quat_rows_to_matrices(data[:, i:i + 4]) - ref)))
    # Gears.asmt's part blocks hold the last pose of a run: from them the 1:2 pair starts on
    # the other branch (half a turn of Part2); the stored series' first frame is OndselSolver's
    assert worst["series"] < 1e-8
    assert worst[None] > 0.1


def test_initial_pose_is_refused_for_files_without_a_stored_series(tmp_path, capsys):
    out = tmp_path / "out.csv"
    assert main(["run", str(SLIDER), "--initial-pose", "series", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "--initial-pose" in err and ".asmt" in err and str(SLIDER) in err
    assert not out.exists()


BALL_ON_CRANK = """
[parts.ground]
fixed = true
[parts.crank]
position = [0, 0, 0]
[parts.body]
position = [0.4, 0, 0]
[[joints]]
name = "pivot"
type = "revolute"
parts = ["ground", "crank"]
origin = [0, 0, 0]
axis = [0, 0, 1]
[[joints]]
name = "ball"
type = "spherical"
parts = ["crank", "body"]
origin = [0.4, 0, 0]
[[drivers]]
joint = "pivot"
expression = "2*t"
"""


def test_free_dof_minimal_runs_an_under_driven_model_that_is_refused_by_default(tmp_path, capsys):
    model = tmp_path / "ball.cadmotion.toml"
    model.write_text(BALL_ON_CRANK)
    out = tmp_path / "ball.csv"
    assert main(["run", str(model), "--t-end", "1", "--steps", "20", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "3 degree(s) of freedom free" in err and "--free-dof minimal" in err and str(model) in err
    assert not out.exists()

    assert main(["run", str(model), "--t-end", "1", "--steps", "20", "--free-dof", "minimal", "-o", str(out),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [note] = [e for e in report["events"] if e["kind"] == "free-dof"]
    assert "3 degree(s) of freedom free" in note["message"] and "minimally" in note["message"]
    rows = list(csv.reader(out.open()))
    header, data = rows[0], np.array(rows[1:], dtype=float)
    t = data[:, 0]
    col = {name: data[:, header.index(name)] for name in ("body.x", "body.y", "body.wz", "body.qw")}
    np.testing.assert_allclose(col["body.x"], 0.4 * np.cos(2 * t), atol=1e-9)  # carried by the crank pin
    np.testing.assert_allclose(col["body.y"], 0.4 * np.sin(2 * t), atol=1e-9)
    np.testing.assert_allclose(col["body.wz"], 0.0, atol=1e-12)  # and not turned with it
    np.testing.assert_allclose(np.abs(col["body.qw"]), 1.0, atol=1e-12)


def test_check_free_dof_minimal_checks_the_motion_that_the_default_reports_underdetermined(tmp_path, capsys):
    model = tmp_path / "ball.cadmotion.toml"
    model.write_text(BALL_ON_CRANK)
    assert main(["check", str(model), "--steps", "10", "--json"]) == 7
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "underdetermined" and "--free-dof minimal" in " ".join(report["messages"])

    assert main(["check", str(model), "--t-end", "1", "--steps", "10", "--free-dof", "minimal", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and report["motion"]["complete"]
    [note] = [e for e in report["events"] if e["kind"] == "free-dof"]
    assert "3 degree(s) of freedom free" in note["message"]
    assert report["ranges"]["pivot.angle"] == pytest.approx([0.0, 2.0], abs=1e-9)  # driven 2 rad/s for 1 s


def test_free_dof_minimal_is_refused_for_a_dynamic_or_inverse_run(tmp_path, capsys):
    model = tmp_path / "ball.cadmotion.toml"
    model.write_text(BALL_ON_CRANK)
    assert main(["run", str(model), "--analysis", "inverse", "--free-dof", "minimal", "-q"]) == 1
    assert "--free-dof minimal applies to the kinematic analysis" in capsys.readouterr().err


def test_check_and_equations_print_the_spanning_tree_and_the_cut_joint(capsys):
    """The four-bar's loop is cut at D (all four revolutes have 5 equations; D comes last)."""
    four_bar = ROOT / "samples" / "four_bar.cadmotion.toml"
    assert main(["equations", str(four_bar)]) == 0
    out = capsys.readouterr().out
    assert "spanning tree: 3 joint(s), 3 relative coordinate(s), depth 3" in out
    assert "B (revolute): crank -> coupler, 1 coordinate(s)" in out
    assert "cut joints (closure equations): D" in out
    main(["check", str(four_bar), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["tree"][-1] == "cut joints (closure equations): D"


def test_a_kinematic_run_whose_frames_break_their_continuity_exits_8_and_keeps_the_csv(tmp_path, capsys, monkeypatch):
    # A defect planted in the velocity analysis (every velocity and acceleration 10 % too large, the poses right):
    # the run must not report success. Its own continuity check sees the poses move less than the velocities say.
    import importlib

    kinematics_module = importlib.import_module("cadmotion.kernel.kinematics")
    honest = kinematics_module._quantities

    def quantities(model, Q, Qd, Qdd):
        return honest(model, Q, 1.1 * Qd, 1.1 * Qdd)

    monkeypatch.setattr(kinematics_module, "_quantities", quantities)
    out_csv = tmp_path / "sc.csv"
    code = main(["run", str(SLIDER), "--t-end", "1", "--steps", "50", "-o", str(out_csv), "--json"])
    out, err = capsys.readouterr()
    assert code == 8 and out_csv.exists()
    report = json.loads(out)
    assert report["status"] == "invariant-broken"
    (check,) = report["invariants"]["checks"]
    assert check["name"] == "continuity" and check["broken"]
    assert "continuity" in err and "INVARIANT BROKEN" in err
    assert main(["run", str(SLIDER), "--t-end", "1", "--steps", "50", "-o", str(out_csv), "-q",
                 "--accept-violations"]) == 0


def _parallelogram():
    """Model file text: crank = rocker = 0.1 m, coupler = ground = 0.3 m, the crank from 0.5 rad at 2π rad/s
    (change points at crank angles π and 2π)."""
    B = [float(0.1 * np.cos(0.5)), float(0.1 * np.sin(0.5)), 0.0]
    C = [B[0] + 0.3, B[1], 0.0]
    pins = [("A", "ground", "crank", [0.0, 0.0, 0.0]), ("B", "crank", "coupler", B), ("C", "coupler", "rocker", C),
            ("D", "rocker", "ground", [0.3, 0.0, 0.0])]
    text = ("parts.ground = {fixed = true}\nparts.crank = {}\n"
            f"parts.coupler = {{position = {B!r}}}\nparts.rocker = {{position = [0.3, 0, 0]}}\n")
    for name, i, j, origin in pins:
        text += (f'[[joints]]\nname = "{name}"\ntype = "revolute"\nparts = ["{i}", "{j}"]\norigin = {origin!r}\n'
                 "axis = [0, 0, 1]\n")
    return text + '[[drivers]]\njoint = "A"\nexpression = "2*pi*t"\n'


def test_frames_next_to_a_change_point_are_a_near_singular_warning_in_the_summary_and_report(tmp_path, capsys,
                                                                                            monkeypatch):
    # The parallelogram in 2,000 frames: the frame 3.8e-5 s after its second change point has angular
    # accelerations 2e-4 … 2e-3 rad/s² off (exact 0). The run says so as it says its other events — in the
    # summary and in the JSON report, with the estimated errors as CSV columns — and still exits 0: a warning.
    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "0")
    model = tmp_path / "parallelogram.cadmotion.toml"
    model.write_text(_parallelogram())
    out = tmp_path / "p.csv"
    assert main(["run", str(model), "--t-end", "1", "--steps", "1999", "-o", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    near = [e for e in report["events"] if e["kind"] == "near-singular"]
    assert near and all(set(e["items"]) == {"A", "B", "C", "D"} for e in near)
    assert any(abs(e["time"] - (2 * np.pi - 0.5) / (2 * np.pi)) < 1e-3 for e in near)
    assert report["status"] == "ok"
    assert re.search(r"near-singular at t = 0\.92\d* s: .*may be off by up to", captured.err)
    header = next(csv.reader(out.open()))
    assert "near_singular.acceleration_error" in header
