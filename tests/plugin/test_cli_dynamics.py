"""`cadmotion run --analysis dynamic` as users run it: what ran, what was checked, exit codes.

The broken case is a damped pendulum whose damper's work is deliberately left out of the
energy balance (the run's own answer is right, its bookkeeping is not): its energy falls by
exactly the work the damper did, and the run must say so and exit 8.
"""

import csv
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cadmotion.kernel.dynamics import FORMULATIONS
from cadmotion.plugin.check import EXIT_CODES
from cadmotion.plugin.cli import EXIT_INVARIANT, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
PENDULUM = ROOT / "samples" / "dynamics" / "double_pendulum.cadmotion.toml"

DAMPED = """
units = "m"
gravity = [0, -9.81, 0]

[parts.ground]
fixed = true

[parts.arm]
mass = 1.5
com = [0.3, 0.1, 0.0]
inertia = [0.02, 0.03, 0.04]

[[joints]]
name = "pivot"
type = "revolute"
parts = ["ground", "arm"]
origin = [0, 0, 0]
axis = [0, 0, 1]

[[forces]]
name = "damper"
type = "rotational-spring-damper"
joint = "pivot"
stiffness = 0.0
damping = 0.5

[initial_velocity.arm]
angular_velocity = [0, 0, 3.0]
"""


def run_cli(args, capsys):
    code = main(["run", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def rows(path):
    return list(csv.reader(Path(path).open()))


def test_dynamic_run_reports_what_ran_and_what_was_checked(tmp_path, capsys):
    out_csv = tmp_path / "p.csv"
    code, out, err = run_cli([PENDULUM, "--analysis", "dynamic", "--t-end", 2, "--steps", 20, "-o", out_csv, "--json"],
                             capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["status"] == "ok" and report["exit_code"] == 0 and report["analysis"] == "dynamic"
    # the double pendulum's joints form an open tree: joint coordinates (kernel/dynamics/tree.py relative_fits)
    assert report["formulation"] == "semi-recursive" and report["integrator"] == "DOP853"
    assert report["rtol"] == 1e-8 and report["atol"] == 1e-10
    assert report["counters"]["steps"] > 0 and report["counters"]["evaluations"] > report["counters"]["steps"]
    inv = report["invariants"]
    assert inv["ok"] is True
    assert [c["name"] for c in inv["checks"]] == ["energy", "violation.position", "violation.velocity", "steps",
                                                  "motion.error"]
    assert all(c["max_drift"] <= c["allowed"] and c["broken"] is False for c in inv["checks"])
    assert any(e["kind"] == "stats" for e in report["events"])
    assert report["outputs"] == [str(out_csv)] and len(rows(out_csv)) == 22
    compiled = " (compiled loop)" if report["compiled_loop"] else ""
    assert f"ran: semi-recursive / DOP853{compiled}, rtol 1e-08, atol 1e-10:" in err
    assert "checked: energy:" in err and "motion.error:" in err and "not checked: momentum" in err


def test_a_dynamic_run_can_leave_out_the_global_error_estimate_and_says_so(capsys):
    code, out, err = run_cli([PENDULUM, "--analysis", "dynamic", "--t-end", 1, "--steps", 10, "--json",
                              "--no-error-estimate"], capsys)
    assert code == 0, err
    inv = json.loads(out)["invariants"]
    assert "motion.error" not in [c["name"] for c in inv["checks"]]
    assert any(s.startswith("motion.error: not asked for") for s in inv["skipped"])
    code, out, err = run_cli([PENDULUM, "--no-error-estimate"], capsys)
    assert code != 0 and "--no-error-estimate applies to dynamic runs" in err


@pytest.mark.skipif(not __import__("cadmotion.kernel.dynamics.fast", fromlist=["available"]).available(),
                    reason="the stiff choice is Radau only where it runs compiled")
def test_the_stiff_choice_reports_the_tolerances_it_ran_at(capsys):
    """No tolerance given on a stiff model: the summary and the report say rtol = atol = 1e-8, the
    automatic Radau's own, not the explicit default's 1e-10."""
    code, out, err = run_cli([ROOT / "samples" / "dynamics" / "flyball_governor.cadmotion.toml", "--analysis",
                              "dynamic", "--t-end", 1, "--steps", 10, "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert (report["formulation"], report["integrator"]) == ("projection", "Radau")
    assert report["rtol"] == 1e-8 and report["atol"] == 1e-8
    assert "ran: projection / Radau (compiled loop), rtol 1e-08, atol 1e-08:" in err


def test_index3_summary_names_the_integrator_that_ran(capsys):
    code, out, err = run_cli([PENDULUM, "--analysis", "dynamic", "--t-end", 1, "--steps", 10, "--formulation",
                              "index3", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["integrator"] == "generalized-alpha" and report["compiled_loop"] is False
    assert "ran: index3 / generalized-alpha, dt 0.001 s:" in err and "DOP853" not in err


@pytest.fixture
def leaky(monkeypatch):
    """The damper's work left out of the Motion's energy balance (the frames are right)."""
    from cadmotion.kernel.dynamics import forward

    honest = forward.to_motion

    def to_motion(dyn, result, *args, **kw):
        return honest(dyn, replace(result, work=np.zeros_like(result.work)), *args, **kw)

    monkeypatch.setattr(forward, "to_motion", to_motion)


def test_a_broken_energy_balance_exits_8_keeps_the_csv_and_says_so(tmp_path, capsys, leaky):
    model = tmp_path / "damped.cadmotion.toml"
    model.write_text(DAMPED)
    out_csv, report_file = tmp_path / "d.csv", tmp_path / "report.json"
    code, out, err = run_cli([model, "--analysis", "dynamic", "--t-end", 2, "--steps", 40, "-o", out_csv, "--json",
                              "--report", report_file], capsys)
    assert code == EXIT_INVARIANT == 8
    assert len(rows(out_csv)) == 42  # every frame is written
    report = json.loads(out)
    assert json.loads(report_file.read_text()) == report
    assert report["status"] == "invariant-broken" and report["exit_code"] == 8 and report["complete"] is True
    (energy,) = [c for c in report["invariants"]["checks"] if c["broken"]]
    assert energy["name"] == "energy"
    # the energy the balance misses is the damper's work: E(0) − E(t) at its largest
    header, data = rows(out_csv)[0], np.array(rows(out_csv)[1:], float)
    E = data[:, header.index("energy.total")]
    assert energy["max_drift"] == pytest.approx(E[0] - E.min(), rel=1e-6)
    (event,) = [e for e in report["events"] if e["kind"] == "invariant"]
    assert event["time"] == energy["first_time"] and event["items"] == ["energy"]
    assert "complete but SUSPECT: 1 invariant(s) broken (energy)" in err
    assert f"INVARIANT BROKEN at t = {event['time']:.6g} s" in err and "energy: " in err and "BROKEN" in err
    assert "(suspect: see above)" in err and "--accept-violations" in err

    code, out, err = run_cli([model, "--analysis", "dynamic", "--t-end", 2, "--steps", 40, "--json",
                              "--accept-violations"], capsys)
    report = json.loads(out)
    assert code == 0 and report["exit_code"] == 0 and report["status"] == "invariant-broken"
    assert report["accept_violations"] is True and "accepted (--accept-violations)" in err


@pytest.mark.parametrize("args, words", [
    (["--rtol", "0"], "rtol (--rtol) = 0.0: the tolerance must be positive"),
    (["--rtol", "1"], "rtol (--rtol) = 1.0: the tolerance must be below 1"),
    (["--atol=-1e-9"], "atol (--atol)"),
    (["--atol", "nan"], "atol (--atol)"),
    (["--dt", "0"], "dt must be a positive step in seconds (--dt)"),
    (["--dt", "5"], "dt (--dt) = 5 s is larger than the span 2 s"),
    (["--formulation", "index3", "--integrator", "RK45"], "does not run the integrator 'RK45'"),
    (["--formulation", "nope"], "unknown formulation 'nope'"),
    (["--option", "gamma=1"], "formulation 'projection' has no option(s) gamma"),
    (["--formulation", "baumgarte", "--option", "alpha=fast"], "option 'alpha' must be like its default 10.0"),
    (["--formulation", "baumgarte", "--option", "compiled_loop=1"], "option 'compiled_loop' must be like its default"),
])
def test_bad_settings_exit_1_naming_the_flag_and_write_nothing(tmp_path, capsys, args, words):
    out_csv = tmp_path / "p.csv"
    code, out, err = run_cli([PENDULUM, "--analysis", "dynamic", "--t-end", 2, "-o", out_csv, *args], capsys)
    assert code == 1 and words in err and err.startswith("cadmotion: error:")
    assert not out_csv.exists()


FOUR_BAR = ROOT / "samples" / "dynamics" / "four_bar.cadmotion.toml"


def _steps(err):
    return int(err.split("ran: ")[1].split(" steps")[0].rsplit(" ", 1)[1])


def test_formulation_options_come_from_the_model_file_and_the_command_line(tmp_path, capsys):
    """The recursive formulation's Baumgarte parameters (1/s). With α = β the closure gap obeys
    Φ̈ + 2α Φ̇ + α² Φ = 0, a double eigenvalue −α: at α = 10⁴ an explicit method is held to steps
    below its stability limit (DOP853: |h λ| ≲ 6.1), so 0.05 s takes at least 0.05 · 10⁴ / 6.1 ≈ 82
    steps, where the default α = β = 10 takes a few (5 measured)."""
    stiff = tmp_path / "four_bar_stiff.cadmotion.toml"
    stiff.write_text(FOUR_BAR.read_text() + "\n[formulation.recursive]\nalpha = 1e4\nbeta = 1e4\n")
    t_end = 0.05
    held = t_end * 1e4 / 6.1
    base = ["--analysis", "dynamic", "--formulation", "recursive", "--t-end", t_end, "--steps", 2]
    code, _, err = run_cli([FOUR_BAR, *base], capsys)
    assert code == 0 and _steps(err) < 30
    code, _, err = run_cli([stiff, *base], capsys)
    assert code == 0 and _steps(err) >= held
    code, _, err = run_cli([FOUR_BAR, *base, "--option", "alpha=1e4", "--option", "beta=1e4"], capsys)
    assert code == 0 and _steps(err) >= held
    code, _, err = run_cli([stiff, *base, "--option", "alpha=10", "--option", "beta=10"], capsys)  # the flag wins
    assert code == 0 and _steps(err) < 30
    # the model's table applies to its formulation only: a projection run ignores it
    code, _, err = run_cli([stiff, "--analysis", "dynamic", "--t-end", t_end, "--steps", 2], capsys)
    assert code == 0 and _steps(err) < 30


@pytest.mark.parametrize("table, words", [
    ("[formulation.recursiv]\nalpha = 1.0\n", ["there is no formulation 'recursiv'", "formulations: projection"]),
    ("[formulation.recursive]\ngamma = 1.0\n", ["formulation 'recursive' has no option(s) gamma", "alpha, beta"]),
    ("[formulation]\nalpha = 1.0\n", ["unknown key 'alpha'", "[formulation.alpha]"]),
])
def test_bad_formulation_tables_are_errors_naming_the_model(tmp_path, capsys, table, words):
    model = tmp_path / "four_bar_bad.cadmotion.toml"
    model.write_text(FOUR_BAR.read_text() + "\n" + table)
    code, _, err = run_cli([model, "--analysis", "dynamic", "--formulation", "recursive", "--t-end", 0.1], capsys)
    assert code == 1 and all(w in err for w in words), err


def test_an_option_flag_needs_a_dynamic_run_and_a_key_value(capsys):
    code, _, err = run_cli([FOUR_BAR, "--option", "alpha=1"], capsys)
    assert code == 1 and "--option" in err and "--analysis dynamic" in err
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(FOUR_BAR), "--analysis", "dynamic", "--option", "alpha"])
    assert exit_.value.code == 2 and "expected KEY=VALUE" in capsys.readouterr().err


def test_an_error_with_json_still_prints_a_report(capsys):
    code, out, err = run_cli([PENDULUM, "--analysis", "dynamic", "--rtol", "0", "--json"], capsys)
    report = json.loads(out)
    assert code == 1 and report["status"] == "error" and report["exit_code"] == 1 and "rtol" in report["message"]


def test_run_exit_codes_do_not_clash_with_check():
    assert EXIT_INVARIANT not in set(EXIT_CODES.values()) | {0, 1, 2, 130}


def test_formulations_lists_every_formulation_and_integrator_on_one_line(capsys):
    assert main(["formulations"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines if line.startswith("  ")]
    from cadmotion.kernel.dynamics.forward import describe_methods

    integrators = [n for n, _ in describe_methods()[1]]
    assert names == list(FORMULATIONS) + integrators
    assert set(integrators) >= {"DOP853", "RK45", "Radau", "BDF", "LSODA", "RK4", "generalized-alpha", "HHT"}
    assert main(["formulations", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    index3 = {f["name"]: f for f in data["formulations"]}["index3"]
    assert data["default"] == "projection" and index3["default_integrator"] == "generalized-alpha"
    assert data["open_tree_default"] == "semi-recursive" and data["deep_tree_default"] == "recursive"


def test_run_help_points_at_the_formulations_command_and_names_the_methods():
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]
    # argparse wraps lines at hyphens too ("semi-" / "recursive"): join those back
    text = " ".join(run.format_help().split()).replace("semi- recursive", "semi-recursive")
    assert "--help-formulations" not in text and "`cadmotion formulations`" in text
    for name in list(FORMULATIONS) + ["DOP853", "Radau", "BDF", "LSODA", "RK4", "generalized-alpha", "HHT"]:
        assert name in text
    assert "--accept-violations" in text and "--json" in text and "--report FILE" in text


def test_building_the_parser_does_not_import_the_dynamics():
    code = ("import sys; from cadmotion.plugin.cli import build_parser; build_parser(); "
            "print('cadmotion.kernel.dynamics' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
