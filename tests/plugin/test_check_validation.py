"""The validation samples (samples/validation): a clean mechanism, one that locks at its
toggle position and one whose parts collide, checked against hand-computed times.

The models read their parts from STEP files (made by samples/validation/make_geometry.py).
"""

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics
from cadmotion.plugin.interference import find_interference

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "validation"

# collide: the bar's leading face (y = +10 mm) meets the post (radius 10 mm, axis at
# (120, 80) mm) when the axis is 20 mm from the face: R sin(phi - theta) = 20 mm, theta = t
R_POST, PHI_POST = math.hypot(120.0, 80.0), math.atan2(80.0, 120.0)
T_COLLIDE = PHI_POST - math.asin(20.0 / R_POST)
# toggle: the slider, pushed at 20 mm/s from x0, stops where crank and rod line up, x = r + l
X0_SLIDER = 50 * math.cos(math.pi / 3) + math.sqrt(150**2 - (50 * math.sin(math.pi / 3)) ** 2)
T_TOGGLE = (200.0 - X0_SLIDER) / 20.0


def run(name, **kw):
    spec = load(SAMPLES / f"{name}.cadmotion.toml")
    steps = kw.pop("steps", int(spec.setting("steps")))
    motion = kinematics(compile_model(spec), t_end=spec.setting("t_end"), steps=steps)
    return spec, motion, find_interference(motion, spec, **kw)


def test_samples_read_their_parts_from_the_step_files():
    for name, parts in (("clean", {"ground", "crank", "coupler", "rocker"}),
                        ("toggle", {"ground", "crank", "rod", "slider"}),
                        ("collide", {"ground", "post", "bar"})):
        spec = load(SAMPLES / f"{name}.cadmotion.toml")
        assert {p.name for p in spec.parts} == parts
        assert all(p.shape is not None for p in spec.parts)


def test_clean_four_bar_moves_a_full_turn_without_locking_or_colliding():
    spec, motion, report = run("clean", near=0.007)
    assert motion.complete and not [e for e in motion.events if e.kind in ("lockup", "singular")]
    crank = motion.coordinate("A.angle")
    assert crank[-1] - crank[0] == pytest.approx(2 * np.pi)
    assert not report.collides and not report.static
    # the closest parts that are not joined: the coupler passes over the ground rail, the
    # layers 6 mm apart (z 6..12 mm against -6..0 mm)
    (close,) = report.near
    assert set(close.parts) == {"ground", "coupler"}
    assert close.min_distance == pytest.approx(0.006, abs=1e-9)
    assert report.stats["pairs_excluded"] == 4  # the four joints


def test_toggle_slider_crank_locks_at_the_dead_centre_time():
    spec, motion, report = run("toggle", steps=1000)
    assert not motion.complete
    stop = [e for e in motion.events if e.kind in ("lockup", "singular")]
    assert stop, motion.events
    assert T_TOGGLE - 0.01 <= stop[0].time <= T_TOGGLE + 0.005
    assert motion.time[-1] <= T_TOGGLE + 1e-9
    # up to there the slider has moved 20 mm/s and nothing collided
    slide = motion.coordinate("slide.disp")
    np.testing.assert_allclose(slide, 0.02 * motion.time, atol=1e-9)
    assert not report.collides


def test_collide_bar_meets_the_post_at_the_computed_time():
    spec, motion, report = run("collide")
    assert motion.complete
    assert report.collides
    (hit,) = report.collisions
    assert set(hit.parts) == {"bar", "post"}
    assert hit.first_time == pytest.approx(T_COLLIDE, abs=1e-6)
    assert hit.kind == "penetration" and hit.depth > 0.001 and hit.moving
    # the bar is pinned to the ground plate it lies on: excluded; the post stands on the
    # plate: touching, but both fixed, so static (not a collision)
    assert report.stats["pairs_excluded"] == 1
    assert [set(p.parts) for p in report.static] == [{"ground", "post"}]
    # independent of the output steps
    _, _, coarse = run("collide", steps=7)
    assert coarse.collisions[0].first_time == pytest.approx(T_COLLIDE, abs=1e-6)


def test_collide_checked_with_the_joint_reports_the_bar_resting_on_the_plate():
    spec, motion, report = run("collide", exclude_jointed=False)
    pinned = report.pair("ground", "bar")
    assert pinned.joints == ("pivot",) and pinned.kind == "contact" and pinned.first_time == 0.0


def test_check_statuses_of_the_samples():
    from cadmotion import check

    assert check(SAMPLES / "clean.cadmotion.toml").status == "ok"
    locked = check(SAMPLES / "toggle.cadmotion.toml")
    assert locked.status == "locks" and locked.exit_code == 4
    collided = check(SAMPLES / "collide.cadmotion.toml")
    assert collided.status == "collides" and collided.exit_code == 5
    (c,) = collided.collisions
    assert set(c["parts"]) == {"bar", "post"}
    assert c["first_time"] == pytest.approx(T_COLLIDE, abs=1e-6)


def _with_check_table(tmp_path, table):
    """The collide sample with a [check] table, beside its STEP file."""
    text = (SAMPLES / "collide.cadmotion.toml").read_text().replace('step = "collide.step"',
                                                                    f'step = "{SAMPLES / "collide.step"}"')
    path = tmp_path / "collide_checked.cadmotion.toml"
    path.write_text(text + "\n[check]\n" + table + "\n")
    return path


def test_contacts_by_design_are_ignored_from_the_model_file_or_the_command_line(tmp_path, capsys):
    from cadmotion import check
    from cadmotion.plugin.cli import main

    allowed = check(_with_check_table(tmp_path, 'ignore = [["b?r", "po*"]]'))  # globs
    assert allowed.status == "ok" and allowed.collisions == []
    assert check(SAMPLES / "collide.cadmotion.toml", ignore=[("post", "bar")]).status == "ok"
    assert main(["check", str(SAMPLES / "collide.cadmotion.toml"), "--ignore", "bar,post"]) == 0
    # a pattern that matches nothing is an error, so a renamed part cannot switch a check off
    stale = check(_with_check_table(tmp_path, 'ignore = [["bar", "pillar"]]'))
    assert stale.status == "error" and any("'pillar' matches none" in m for m in stale.messages)
    capsys.readouterr()


def test_clearance_from_the_model_file_and_the_command_line_overriding_it(tmp_path):
    """A 5 mm clearance makes the bar 'collide' earlier: when the post axis is 10 + 10 + 5 mm
    from the bar's face, R sin(phi - theta) = 25 mm."""
    from cadmotion import check

    early = PHI_POST - math.asin(25.0 / R_POST)
    path = _with_check_table(tmp_path, "clearance = 5.0")  # mm, the file's unit
    (c,) = check(path).collisions
    assert c["first_time"] == pytest.approx(early, abs=1e-6)
    (c,) = check(path, clearance=0.0).collisions
    assert c["first_time"] == pytest.approx(T_COLLIDE, abs=1e-6)


def test_a_bad_check_table_names_the_key(tmp_path):
    from cadmotion.errors import ModelFileError

    for table, message in [("clearence = 1", "unknown key"), ("ignore = [\"bar\"]", r"list of \[part_a, part_b\]"),
                           ("clearance = -1", "must not be negative")]:
        with pytest.raises(ModelFileError, match=message):
            load(_with_check_table(tmp_path, table))


def test_check_proposes_a_contact_fitted_to_the_cad_faces_and_tells_declared_contacts_apart(tmp_path):
    """The bar's flat side (y = 10 mm in its frame) first hits the round post (R 10, 20 mm high):
    the proposal is a cylinder–plane contact with those numbers; declared, the pair is a contact,
    no longer a collision, and the contact loads into the dynamics."""
    from cadmotion import check

    collided = check(SAMPLES / "collide.cadmotion.toml")
    text = collided.proposed_contacts
    assert 'parts = ["post", "bar"]' in text
    assert "{ cylinder = [10, 20], center = [0, 0, 10]" in text
    assert "plane = { point = [" in text and ", 10, 10], normal = [0, 1, 0] }" in text
    declared = _with_check_table(tmp_path, "").read_text().replace("\n[check]\n", "\n") + "\n" + text + "\n"
    path = tmp_path / "collide_declared.cadmotion.toml"
    path.write_text(declared)
    [contact] = load(path).contacts
    assert contact.shapes[0][0] == "cylinder" and contact.shapes[1][0] == "plane"
    report = check(path)
    assert report.status == "ok" and report.collisions == [] and not report.proposed_contacts
    [touch] = report.contacts
    assert touch["contact"] == "post_bar" and touch["first_time"] == pytest.approx(T_COLLIDE, abs=1e-6)
