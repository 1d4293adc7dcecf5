"""``cadmotion batch``: real runs over a folder of models (no mocks), and motion.apply.

The runs use few output steps: the first kinematics call of a process compiles numba
code (cached on disk afterwards), and every local batch starts fresh worker processes.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cadmotion.plugin import batch
from cadmotion.plugin.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FAST = ["--steps", "8", "--t-end", "0.5"]


def _four_bar(steps=None):
    text = (SAMPLES / "four_bar.cadmotion.toml").read_text()
    return text if steps is None else text.replace("steps = 200", f"steps = {steps}")


def _hinge_step(path):
    """A two-part STEP assembly (base, arm) written by CadQuery, in mm."""
    cq = pytest.importorskip("cadquery")
    assy = cq.Assembly(name="hinge")
    assy.add(cq.Workplane().box(100, 20, 10), name="base", color=cq.Color(0.5, 0.5, 0.5))
    assy.add(cq.Workplane().box(80, 10, 10).translate((40, 0, 0)), name="arm",
             loc=cq.Location((0, 0, 20)), color=cq.Color(0.8, 0.2, 0.2))
    assy.export(str(path))


HINGE_SIDECAR = """\
step = "hinge.step"
[parts.base]
fixed = true
[[joints]]
name = "pivot"
type = "revolute"
parts = ["base", "arm"]
origin = [0, 0, 0.02]
axis = [0, 0, 1]
[[drivers]]
joint = "pivot"
expression = "2*t"
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """IN_DIR with two samples, a broken model, a nested folder, a STEP with and one without sidecar."""
    root = tmp_path_factory.mktemp("batch")
    src = root / "in"
    (src / "nested" / "sub").mkdir(parents=True)
    shutil.copy(SAMPLES / "slider_crank.cadmotion.toml", src)
    shutil.copy(SAMPLES / "four_bar.cadmotion.toml", src)
    (src / "broken.cadmotion.toml").write_text(_four_bar().replace('type = "revolute"', 'type = "screwy"', 1))
    (src / "nested" / "sub" / "linkage.cadmotion.toml").write_text(_four_bar())
    _hinge_step(src / "nested" / "hinge.step")
    (src / "nested" / "hinge.cadmotion.toml").write_text(HINGE_SIDECAR)
    (src / "orphan.step").write_text("ISO-10303-21;\nEND-ISO-10303-21;\n")
    (src / ".hidden").mkdir()
    shutil.copy(SAMPLES / "four_bar.cadmotion.toml", src / ".hidden")
    return root


@pytest.fixture(scope="module")
def first_run(tree):
    """The batch run every other check reads: (in_dir, out_dir, exit code, stderr, seconds)."""
    src, out = tree / "in", tree / "out"
    import contextlib
    import io

    err = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(err):
        rc = main(["batch", str(src), "-o", str(out), "--to", "glb,html,csv", "--jobs", "2", *FAST])
    return src, out, rc, err.getvalue(), time.perf_counter() - t0


def _report(out):
    report = json.loads((out / "report.json").read_text())
    return report, {it["name"]: it for it in report["items"]}


def _temporaries(folder):
    return [p for p in Path(folder).rglob("*") if ".tmp" in p.name]


# ----------------------------------------------------------------------------- a full run

def test_every_model_runs_and_writes_readable_outputs(first_run):
    src, out, rc, err, _ = first_run
    assert rc == 1                                      # the broken model failed
    for name in ["slider_crank", "four_bar", "nested/sub/linkage", "nested/hinge"]:
        assert (out / f"{name}.csv").read_text().startswith("t,"), name
        assert (out / f"{name}.glb").read_bytes()[:4] == b"glTF", name
        assert (out / f"{name}.html").read_text()[:15].lower() == "<!doctype html>", name
        header = (out / f"{name}.csv").read_text().splitlines()
        assert len(header) == 1 + 9                     # --steps 8 -> 9 frames
    assert not (out / "broken.csv").exists() and not (out / "orphan.csv").exists()
    assert not (out / ".hidden").exists() and not _temporaries(out)


def test_report_has_status_timings_dof_and_errors(first_run):
    src, out, rc, err, _ = first_run
    report, items = _report(out)
    assert sorted(items) == ["broken", "four_bar", "nested/hinge", "nested/sub/linkage", "orphan", "slider_crank"]
    assert report["exit_code"] == 1 and report["interrupted"] is False
    assert report["counts"] == dict(ok=4, partial=0, failed=1, skipped=1, interrupted=0)
    fb = items["four_bar"]
    assert fb["status"] == "ok" and fb["dof"] == 1 and fb["dof_driven"] == 0 and fb["frames"] == 9
    assert set(fb["timings"]) == {"load", "compile", "solve", "write", "total"}
    assert fb["outputs"] == ["four_bar.glb", "four_bar.html", "four_bar.csv"]
    assert len(fb["input_hash"]) == 64
    broken = items["broken"]
    assert broken["status"] == "failed" and broken["stage"] == "load"
    assert "unknown joint type 'screwy'" in broken["message"] and broken["outputs"] == []
    orphan = items["orphan"]
    assert orphan["status"] == "skipped" and orphan["reason"] == "no mates"
    hinge = items["nested/hinge"]                       # the STEP file and its sidecar: one item
    assert hinge["model"] == "nested/hinge.cadmotion.toml"
    assert hinge["inputs"] == ["nested/hinge.cadmotion.toml", "nested/hinge.step"]
    assert hinge["status"] == "ok" and hinge["dof"] == 1
    # the summary table on stderr names every item
    assert "4 ok, 1 failed, 1 skipped" in err
    assert all(name in err for name in items) and "unknown joint type" in err


def test_rerun_skips_unchanged_items_and_force_redoes_them(first_run, tmp_path):
    src0, out0, *_ = first_run
    src, out = tmp_path / "in", tmp_path / "out"
    shutil.copytree(src0, src)
    shutil.copytree(out0, out)
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.glb")}
    with open(src / "four_bar.cadmotion.toml", "a") as fh:      # one input changes
        fh.write("# edited\n")
    rc = main(["batch", str(src), "-o", str(out), "--to", "glb,csv", "-q", *FAST])
    report, items = _report(out)
    assert rc == 1
    assert {n: it["status"] for n, it in items.items()} == {
        "broken": "failed", "four_bar": "ok", "nested/hinge": "skipped", "nested/sub/linkage": "skipped",
        "orphan": "skipped", "slider_crank": "skipped"}
    assert items["slider_crank"]["reason"] == "unchanged" and items["slider_crank"]["previous"] == "ok"
    for p, t in mtimes.items():
        assert (p.stat().st_mtime_ns == t) == (p.name != "four_bar.glb"), p
    # a format not written before makes the item run again
    rc = main(["batch", str(src), "-o", str(out), "--to", "csv,json", "-q", *FAST])
    _, items = _report(out)
    assert items["slider_crank"]["status"] == "ok" and (out / "slider_crank.json").is_file()
    rc = main(["batch", str(src), "-o", str(out), "--to", "csv,json", "-q", "--force", *FAST])
    report, items = _report(out)
    assert report["counts"]["ok"] == 4 and report["counts"]["skipped"] == 1     # only the orphan


def _batch(args):
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["batch", *map(str, args)])
    return rc, err.getvalue()


def _csv(path):
    lines = Path(path).read_text().splitlines()
    return lines[0].split(","), np.array([[float(v) for v in line.split(",")] for line in lines[1:]])


def test_dynamic_batch_runs_every_dynamics_sample_as_run_does(tmp_path):
    """--analysis dynamic over samples/dynamics: every sample runs, none breaks an invariant
    (energy balance, constraint drift: the kernel's conservation checks), and an item's
    CSV is the one `cadmotion run` writes with the same flags."""
    out = tmp_path / "out"
    flags = ["--analysis", "dynamic", "--t-end", "0.04", "--steps", "4", "--rtol", "1e-7", "--atol", "1e-9"]
    rc, err = _batch([SAMPLES / "dynamics", "-o", out, "--to", "csv", "--jobs", "2", *flags])
    report, items = _report(out)
    samples = sorted(p.name[:-len(".cadmotion.toml")] for p in (SAMPLES / "dynamics").glob("*.cadmotion.toml"))
    assert sorted(items) == samples and len(samples) >= 8
    assert rc == 0 and report["counts"]["ok"] == len(samples), err
    assert report["options"]["analysis"] == "dynamic" and report["options"]["rtol"] == 1e-7
    for name, item in items.items():
        assert item["invariants_broken"] == [] and item["formulation"] and item["integrator"], name
        header, rows = _csv(out / f"{name}.csv")
        assert np.allclose(rows[:, 0], np.linspace(0, 0.04, 5)), name
    single = tmp_path / "double_pendulum.csv"
    assert main(["run", str(SAMPLES / "dynamics" / "double_pendulum.cadmotion.toml"), "-o", str(single), "-q",
                 *flags]) == 0
    assert single.read_text() == (out / "double_pendulum.csv").read_text()


def test_no_error_estimate_skips_the_companion_run_and_is_a_different_input(tmp_path):
    """A dynamic batch checks each run's global error (motion.error) by default; --no-error-estimate
    leaves that check out, as `cadmotion run --no-error-estimate` does, and an item run both ways is
    run again (the setting changes its result), never skipped as unchanged."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    shutil.copy(SAMPLES / "dynamics" / "double_pendulum.cadmotion.toml", src)
    flags = ["--to", "csv", "--jobs", "1", "--analysis", "dynamic", "--t-end", "0.1", "--steps", "5"]
    rc, err = _batch([src, "-o", out, *flags])
    report, items = _report(out)
    assert rc == 0, err
    assert "motion.error" in items["double_pendulum"]["invariants_checked"]
    rc, err = _batch([src, "-o", out, *flags, "--no-error-estimate"])
    report, items = _report(out)
    assert rc == 0 and items["double_pendulum"]["status"] == "ok", err
    checked = items["double_pendulum"]["invariants_checked"]
    assert "motion.error" not in checked and "violation.position" in checked
    assert report["options"]["estimate_error"] is False


def test_no_error_estimate_is_refused_outside_dynamic_batches(tmp_path):
    with pytest.raises(Exception, match="--no-error-estimate applies to dynamic runs"):
        batch.run_batch(SAMPLES, tmp_path / "o", "csv", estimate_error=False)
    assert not (tmp_path / "o").exists()


def test_drive_applies_to_every_model_and_a_failed_item_does_not_stop_the_others(tmp_path):
    """--drive crank_pivot=pi*t: the slider-crank's crank turns pi*t from its initial angle
    (the driver's own definition); the four-bar has no such joint and fails, naming it."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    shutil.copy(SAMPLES / "slider_crank.cadmotion.toml", src)
    shutil.copy(SAMPLES / "four_bar.cadmotion.toml", src)
    rc, err = _batch([src, "-o", out, "--to", "csv", "--jobs", "1", "--t-end", "0.5", "--steps", "5",
                      "--drive", "crank_pivot=pi*t"])
    report, items = _report(out)
    assert rc == 1 and items["slider_crank"]["status"] == "ok"
    assert items["four_bar"]["status"] == "failed" and "crank_pivot" in items["four_bar"]["message"]
    header, rows = _csv(out / "slider_crank.csv")
    qw, qz = rows[:, header.index("crank.qw")], rows[:, header.index("crank.qz")]
    turned = np.unwrap(2 * np.arctan2(qz, qw)) - 2 * np.arctan2(qz[0], qw[0])
    assert np.allclose(turned, np.pi * rows[:, 0], atol=1e-9)


def test_analysis_options_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(Exception, match="expected NAME=EXPRESSION"):
        batch.run_batch(SAMPLES / "dynamics", tmp_path / "o", "csv", drive=["crank"])
    with pytest.raises(Exception, match="unknown formulation 'nope'"):
        batch.run_batch(SAMPLES / "dynamics", tmp_path / "o", "csv", analysis="dynamic", formulation="nope")
    assert not (tmp_path / "o").exists()


def test_free_dof_minimal_runs_an_undriven_model_that_the_default_refuses(tmp_path):
    """The four-bar without its driver (1 DOF free): refused by default, held in place
    with --free-dof minimal, and the two settings are different inputs (no stale skip)."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    text = (SAMPLES / "four_bar.cadmotion.toml").read_text()
    (src / "loose.cadmotion.toml").write_text(text[:text.index("[[drivers]]")])
    rc, _ = _batch([src, "-o", out, "--to", "csv", "--jobs", "1", "--steps", "5"])
    _, items = _report(out)
    assert rc == 1 and "1 degree(s) of freedom free" in items["loose"]["message"]
    rc, _ = _batch([src, "-o", out, "--to", "csv", "--jobs", "1", "--steps", "5", "--free-dof", "minimal"])
    _, items = _report(out)
    assert rc == 0 and items["loose"]["status"] == "ok"
    assert any(e["kind"] == "free-dof" for e in items["loose"]["events"])
    header, rows = _csv(out / "loose.csv")
    for name in ("crank.x", "coupler.y", "rocker.qz"):
        assert np.ptp(rows[:, header.index(name)]) < 1e-12  # nothing drives it: it stays
    with pytest.raises(Exception, match="applies to the kinematic analysis"):
        batch.run_batch(src, tmp_path / "o", "csv", analysis="inverse", free_dof="minimal")


def test_input_hash_covers_model_step_file_and_options(tree):
    items, skipped = batch.find_models(tree / "in")
    hinge = next(it for it in items if it.name == "nested/hinge")
    opts = batch.BatchOptions(formats=(".csv",), steps=8)
    base = batch.input_hash(hinge, opts)
    assert batch.input_hash(hinge, batch.BatchOptions(formats=(".glb",), steps=8)) == base   # formats: per output
    assert batch.input_hash(hinge, batch.BatchOptions(formats=(".csv",), steps=9)) != base
    moved = tree / "moved"
    shutil.copytree(tree / "in" / "nested", moved / "nested")
    step = moved / "nested" / "hinge.step"
    copy = next(it for it in batch.find_models(moved)[0] if it.name == "nested/hinge")
    assert batch.input_hash(copy, opts) == base          # same content elsewhere: same hash
    step.write_bytes(step.read_bytes() + b"\n")
    assert batch.input_hash(copy, opts) != base          # the STEP file the sidecar names


def test_find_models_names_and_exclusions(tmp_path):
    (tmp_path / "a" / "out").mkdir(parents=True)
    for rel in ["arm.cadmotion.toml", "arm.FCStd", "b.asmt", "a/c.cadmotion.toml", "a/out/d.cadmotion.toml",
                "e.stp", "notes.toml"]:
        (tmp_path / rel).write_text("x")
    items, skipped = batch.find_models(tmp_path, exclude=[tmp_path / "a" / "out"])
    assert [it.name for it in items] == ["a/c", "arm", "arm.FCStd", "b"]
    assert [s["name"] for s in skipped] == ["e"]


# ----------------------------------------------------------------------------- bad input

def _error(capsys, argv):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("cadmotion: error:") and "Traceback" not in err, err
    return err


def test_bad_input_gives_one_clear_message_and_destroys_nothing(tmp_path, capsys):
    src = tmp_path / "in"
    src.mkdir()
    out = tmp_path / "out"
    assert "does not exist" in _error(capsys, ["batch", str(tmp_path / "nope"), "-o", str(out)])
    assert "no models" in _error(capsys, ["batch", str(src), "-o", str(out)])
    (src / "lonely.step").write_text("x")
    assert "1 STEP file(s) without a sidecar" in _error(capsys, ["batch", str(src), "-o", str(out)])
    shutil.copy(SAMPLES / "four_bar.cadmotion.toml", src)
    err = _error(capsys, ["batch", str(src), "-o", str(out), "--to", "glb,xlsx"])
    assert "'xlsx'" in err and all(f in err for f in ["csv", "json", "glb", "gltf", "html", "step", "png", "svg"])
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    assert "not a folder" in _error(capsys, ["batch", str(src), "-o", str(blocker), "--to", "csv"])
    assert "cannot create the output folder" in _error(capsys, ["batch", str(src), "-o", str(blocker / "o")])
    assert blocker.read_text() == "keep me" and not out.exists()
    # an output that would replace an input (STEP written next to its sidecar)
    (src / "lonely.cadmotion.toml").write_text(_four_bar())
    assert "would replace an input" in _error(capsys, ["batch", str(src), "-o", str(src), "--to", "step"])
    assert (src / "lonely.step").read_text() == "x"


# ----------------------------------------------------------------------------- interruption

def _slow_tree(root):
    src = root / "in"
    src.mkdir()
    (src / "a_fast.cadmotion.toml").write_text(_four_bar(8))
    (src / "b_slow.cadmotion.toml").write_text(_four_bar(100_000))    # ~30 s if not stopped
    (src / "c_fast.cadmotion.toml").write_text(_four_bar(8))
    (src / "d_fast.cadmotion.toml").write_text(_four_bar(8))
    return src


def _wait_for(predicate, timeout=60):
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _finished(out, name):
    try:
        state = json.loads((out / batch.STATE_FILE).read_text())
    except (OSError, ValueError):
        return False
    return state["items"].get(name, {}).get("status") == "ok"


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT")
def test_ctrl_c_keeps_finished_items_and_writes_nothing_half_way(tmp_path):
    src, out = _slow_tree(tmp_path), tmp_path / "out"
    code = "import sys; from cadmotion.plugin.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "batch", str(src), "-o", str(out), "--to", "csv,json",
                             "--jobs", "1"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(lambda: _finished(out, "a_fast"))
        time.sleep(0.3)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)                  # as a terminal's Ctrl-C: the whole group
        err = proc.communicate(timeout=30)[1]
        stopped = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert stopped < 10 and "Traceback" not in err and "INTERRUPTED" in err
    report, items = _report(out)
    assert report["interrupted"] is True and report["exit_code"] == 130
    assert items["a_fast"]["status"] == "ok"
    assert {items[n]["status"] for n in ["b_slow", "c_fast", "d_fast"]} == {"interrupted"}
    assert sorted(p.name for p in out.iterdir()) == [batch.STATE_FILE, "a_fast.csv", "a_fast.json", "report.json"]


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_worker_that_dies_fails_only_its_item(tmp_path):
    import multiprocessing

    src, out = _slow_tree(tmp_path), tmp_path / "out"

    def killer():
        _wait_for(lambda: _finished(out, "a_fast"))
        time.sleep(0.3)                                     # b_slow is running now
        for proc in multiprocessing.active_children():
            os.kill(proc.pid, signal.SIGKILL)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    rc = main(["batch", str(src), "-o", str(out), "--to", "csv", "--jobs", "1", "-q"])
    thread.join(5)
    report, items = _report(out)
    assert rc == 1
    assert {n: it["status"] for n, it in items.items()} == {
        "a_fast": "ok", "b_slow": "failed", "c_fast": "ok", "d_fast": "ok"}
    assert "worker process died" in items["b_slow"]["message"]


# ----------------------------------------------------------------------------- Dask

def test_dask_scheduler_runs_the_same_jobs(tmp_path):
    distributed = pytest.importorskip("distributed")
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "four_bar.cadmotion.toml").write_text(_four_bar(8))
    (src / "broken.cadmotion.toml").write_text(_four_bar(8).replace('type = "revolute"', 'type = "screwy"', 1))
    # the four-bar driven at its rocker: it locks up at the end of the rocker's swing -> partial
    (src / "locks.cadmotion.toml").write_text(
        _four_bar(20).replace('joint = "A"', 'joint = "D"').replace('expression = "2*pi*t"', 'expression = "3*t"'))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        rc = main(["batch", str(src), "-o", str(out), "--to", "csv,json", "--scheduler", address, "-q"])
    report, items = _report(out)
    assert rc == 1 and report["scheduler"] == address
    assert {n: it["status"] for n, it in items.items()} == {"four_bar": "ok", "broken": "failed", "locks": "partial"}
    assert (out / "four_bar.csv").read_text().startswith("t,")
    assert json.loads((out / "four_bar.json").read_text())["complete"] is True
    locks = json.loads((out / "locks.json").read_text())
    assert locks["complete"] is False and items["locks"]["frames"] == len(locks["time"]) < 21
    assert "lock-up" in items["locks"]["message"]
    # without the failing model, a partial run gives exit code 4, like `cadmotion run`
    (src / "broken.cadmotion.toml").unlink()
    assert main(["batch", str(src), "-o", str(out), "--to", "csv,json", "-q"]) == 4


# ----------------------------------------------------------------------------- motion.apply

def test_apply_motion_places_cadquery_nodes_at_their_poses():
    cq = pytest.importorskip("cadquery")
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.plugin.cadquery_apply import apply_motion, matrix_from_location

    motion = kinematics(compile_model(load(SAMPLES / "slider_crank.cadmotion.toml")), t_end=1.0, steps=20)
    assy = cq.Assembly(name="sc", loc=cq.Location((5, 6, 7)))        # mm; placements include the root's loc
    assy.add(cq.Workplane().box(300, 10, 10), name="ground")
    assy.add(cq.Workplane().box(100, 10, 5).translate((50, 0, 0)), name="crank")
    sub = cq.Assembly(name="linkage", loc=cq.Location((1, 2, 3), (0, 0, 1), 30))
    sub.add(cq.Workplane().box(300, 8, 4).translate((150, 0, 0)), name="rod")
    sub.add(cq.Workplane().box(30, 20, 20), name="slider")
    assy.add(sub)
    t = float(motion.time[14])              # a frame: poses between frames are interpolated per part
    placed = apply_motion(motion, assy, t, length_scale=1000.0)
    assert placed == {"ground": "sc/ground", "crank": "sc/crank", "rod": "sc/linkage/rod",
                      "slider": "sc/linkage/slider"}
    # cadquery composes the locations itself: root loc * linkage loc * rod loc
    world = {name.split("/")[-1]: matrix_from_location(loc) for _, name, loc, _ in assy}
    for part in motion.parts:
        X = motion.pose(part, t)
        X[:3, 3] *= 1000.0
        np.testing.assert_allclose(world[part], X, atol=1e-9)
    np.testing.assert_allclose(matrix_from_location(assy.loc)[:3, 3], [5, 6, 7])    # not moved
    # the crank pin (x = 100 mm on the crank) is where the rod starts, and it has moved
    assert np.linalg.norm(world["rod"][:3, 3] - [100, 0, 0]) > 10
    crank_tip = world["crank"] @ [100, 0, 0, 1]
    rod_start = world["rod"] @ [0, 0, 0, 1]
    np.testing.assert_allclose(crank_tip, rod_start, atol=1e-6)


def test_a_kernel_motion_is_applied_through_the_cadquery_front_end_in_the_assemblys_unit():
    """The kernel's Motion knows nothing of CadQuery: plugin.cadquery.apply moves the nodes,
    scaling metres to the unit named (mm by default, as CadQuery models are drawn)."""
    cq = pytest.importorskip("cadquery")
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.plugin.cadquery import apply
    from cadmotion.plugin.cadquery_apply import matrix_from_location

    motion = kinematics(compile_model(load(SAMPLES / "slider_crank.cadmotion.toml")), t_end=1.0, steps=20)
    t = float(motion.time[7])
    for unit, per_metre in ((None, 1000.0), ("mm", 1000.0), ("m", 1.0)):
        assy = cq.Assembly(name="sc")
        for part in motion.parts:
            assy.add(cq.Workplane().box(1, 1, 1), name=part)
        assert apply(motion, assy, t, length_unit=unit) is assy
        for part in motion.parts:
            X = motion.pose(part, t)
            X[:3, 3] *= per_metre
            np.testing.assert_allclose(matrix_from_location(assy.objects[part].loc), X, atol=1e-9,
                                       err_msg=f"{part}, unit {unit}")


def test_apply_motion_reports_missing_ambiguous_and_unmatched_parts():
    cq = pytest.importorskip("cadquery")
    from cadmotion.errors import OutputError
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.plugin.cadquery_apply import apply_motion

    motion = kinematics(compile_model(load(SAMPLES / "slider_crank.cadmotion.toml")), t_end=0.2, steps=2)
    assy = cq.Assembly(name="top")
    assy.add(cq.Workplane().box(1, 1, 1), name="crank")
    for group in ("g1", "g2"):
        g = cq.Assembly(name=group)
        g.add(cq.Workplane().box(1, 1, 1), name="rod")
        assy.add(g)
    with pytest.warns(UserWarning) as record:
        assert apply_motion(motion, assy, 0.1) == {"crank": "top/crank"}
    text = " ".join(str(w.message) for w in record)
    assert "several nodes" in text and "rod" in text and "slider" in text
    with pytest.raises(OutputError, match="no part of the motion"):
        apply_motion(motion, cq.Assembly(name="empty"), 0.1)
    with pytest.raises(OutputError, match="length_scale"):
        apply_motion(motion, assy, 0.1, length_scale=0)


def test_apply_motion_moves_a_root_named_like_a_part_and_its_children_with_it():
    cq = pytest.importorskip("cadquery")
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.plugin.cadquery_apply import apply_motion, matrix_from_location

    motion = kinematics(compile_model(load(SAMPLES / "four_bar.cadmotion.toml")), t_end=0.5, steps=5)
    assy = cq.Assembly(cq.Workplane().box(0.1, 0.01, 0.01), name="crank", loc=cq.Location((1, 0, 0)))
    assy.add(cq.Workplane().box(0.3, 0.01, 0.01), name="coupler", loc=cq.Location((0, 0.5, 0)))
    with pytest.warns(UserWarning, match="rocker"):
        assert apply_motion(motion, assy, 0.2) == {"crank": "crank", "coupler": "crank/coupler"}
    world = {name.split("/")[-1]: matrix_from_location(loc) for _, name, loc, _ in assy}
    for part in ("crank", "coupler"):
        np.testing.assert_allclose(world[part], motion.pose(part, 0.2), atol=1e-12)
