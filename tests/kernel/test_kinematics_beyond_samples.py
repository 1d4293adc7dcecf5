"""Kinematic analysis beyond the samples it was written for: each case against an independent
reference computed here (a closed form, a geometric identity), never against cadmotion's own
output.  Found by ``benchmarks/kinematics_sweep.py``; each test failed on the code before its fix."""

import numpy as np
import pytest

from cadmotion.kernel import compile_model, kinematics

R, L = 0.1, 0.3  # slider-crank: crank and rod, m


def _crank_angle_from_slider(x):
    """θ ≥ 0 of the crank for the slider at x (law of cosines: L² = R² + x² − 2 R x cos θ)."""
    return np.arccos(np.clip((R**2 + x**2 - L**2) / (2 * R * x), -1.0, 1.0))


@pytest.mark.parametrize("theta0_deg", [30, 60, 120, 150])
@pytest.mark.parametrize("steps", [1, 2, 3])
def test_a_slider_pushed_near_dead_centre_and_back_in_few_frames_keeps_its_crank_on_its_side(slider_crank, theta0_deg,
                                                                                              steps):
    # The slider goes out to 1e-4 m short of dead centre (x = R + L) and back in 2 s, written
    # in 2, 3 or 4 frames. The continuous motion keeps the crank angle θ > 0 (it comes back to
    # θ0); θ < 0 is the mirror assembly with the same slider positions. Reference: θ from the
    # law of cosines on the positive side; allowance 1e-9 rad. Before the fix the last frame
    # read −θ0 (off by 2θ0, up to 5.2 rad with a wrong turn count) with no event at all: a
    # predictor carried past the dead centre converged on the mirror, and the jump test
    # (distance from the predictor) cannot see that.
    theta0 = np.radians(theta0_deg)
    _, xb = slider_crank(theta0, "0")
    stroke = R + L - xb - 1e-4
    spec, _ = slider_crank(theta0, f"{stroke!r}*(1 - (1 - t)**2)")
    motion = kinematics(compile_model(spec), t_end=2.0, steps=steps)
    assert motion.complete, motion.message
    x = xb + stroke * (1 - (1 - motion.time) ** 2)
    np.testing.assert_allclose(theta0 + motion.coordinate("pivot.angle"), _crank_angle_from_slider(x), atol=1e-9)
    np.testing.assert_allclose(motion.position[:, motion.part_index("slider"), 0], x, atol=1e-12)


def _four_bar(build, a, b, c, d, theta0, expression, mode=1):
    """Planar four-bar: ground pivots A = (0, 0) and D = (d, 0), crank a, coupler b, rocker c (m),
    assembled at crank angle ``theta0`` (rad) with C on the ``mode`` side (+1 left of B→D)."""
    B = np.array([a * np.cos(theta0), a * np.sin(theta0)])
    D = np.array([d, 0.0])
    e = np.linalg.norm(D - B)
    u = (D - B) / e
    along = (b * b - c * c + e * e) / (2 * e)
    C = B + along * u + mode * np.sqrt(max(b * b - along * along, 0.0)) * np.array([-u[1], u[0]])

    def p(v):
        return [float(v[0]), float(v[1]), 0.0]

    return build({
        "parts": {"ground": {"fixed": True}, "crank": {}, "coupler": {"position": p(B)}, "rocker": {"position": p(D)}},
        "joints": [
            {"name": "A", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
            {"name": "B", "type": "revolute", "parts": ["crank", "coupler"], "origin": p(B), "axis": [0, 0, 1]},
            {"name": "C", "type": "revolute", "parts": ["coupler", "rocker"], "origin": p(C), "axis": [0, 0, 1]},
            {"name": "D", "type": "revolute", "parts": ["rocker", "ground"], "origin": p(D), "axis": [0, 0, 1]},
        ],
        "drivers": [{"joint": "A", "expression": expression}],
    })


@pytest.mark.parametrize("steps", [1, 3, 100])
def test_a_parallelogram_driven_through_its_change_points_flags_each_and_keeps_the_parallelogram(build, steps):
    # Crank = rocker = 0.1 m, coupler = ground = 0.3 m, crank at 2π rad/s from 0.5 rad: at crank
    # angles π and 2π every pivot is on one line, where the parallelogram and the crossed
    # (anti-parallelogram) branches meet; the drivers cannot say which follows. Each passage
    # must be a `branch` event within the finest split (1/256 of a frame interval) after the
    # change time t = (kπ − 0.5)/(2π); the branch kept is reported: the parallelogram one,
    # whose rocker turns with the crank (D measures the ground from the rocker: −crank
    # angle), 1e-9 rad. Before the fix both passages were silent.
    spec = _four_bar(build, 0.1, 0.3, 0.1, 0.3, 0.5, "2*pi*t")
    motion = kinematics(compile_model(spec), t_end=1.0, steps=steps)
    assert motion.complete, motion.message
    changes = [(k * np.pi - 0.5) / (2 * np.pi) for k in (1, 2)]
    branch = [e.time for e in motion.events if e.kind == "branch"]
    finest = 1.0 / steps / 2**8
    assert len(branch) == 2, motion.events
    for t_change, t_event in zip(changes, branch):
        assert t_change <= t_event <= t_change + finest + 1e-12
    np.testing.assert_allclose(motion.coordinate("D.angle"), -motion.coordinate("A.angle"), atol=1e-9)


@pytest.mark.parametrize("turns", [1, 8])
def test_the_compiled_frame_loop_flags_the_change_points_too(build, monkeypatch, turns):
    # The same parallelogram in 2,000 frames, which the compiled frame loop takes (at least
    # 1,500 frames, compiled in the run here). Its frames near the change points keep a
    # reciprocal condition number above its hand-back margin, so it passed both change points
    # silently before the fix; the loop must hand back the frame across which det Φq changes sign
    # to the stepper, which flags it. At 8 turns a second the change points are 125 frames apart,
    # two in each of the loop's 256-frame calls (a check of the calls' ends alone sees none).
    # Reference as above (the change times, the parallelogram branch).
    pytest.importorskip("numba")
    from cadmotion.kernel.kinematics_fast import CompiledFrames

    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "compile")
    done = []
    original = CompiledFrames.run

    def counted(self, k0, k1, *args, **kwargs):
        k = original(self, k0, k1, *args, **kwargs)
        done.append(k - k0)
        return k

    monkeypatch.setattr(CompiledFrames, "run", counted)
    motion = kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.1, 0.3, 0.5, f"{2 * turns}*pi*t")), t_end=1.0,
                        steps=2000)
    assert sum(done) > 1000  # most frames were the compiled loop's
    assert motion.complete, motion.message
    branch = [e.time for e in motion.events if e.kind == "branch"]
    changes = [(k * np.pi - 0.5) / (2 * turns * np.pi) for k in range(1, 2 * turns + 1)]
    assert len(branch) == len(changes), motion.events
    for t_change, t_event in zip(changes, branch):
        assert t_change <= t_event <= t_change + 1.0 / 2000 / 2**8 + 1e-12
    np.testing.assert_allclose(motion.coordinate("D.angle"), -motion.coordinate("A.angle"), atol=1e-9)


@pytest.mark.parametrize("steps", [1, 3])
def test_joint_angles_count_the_turns_made_between_two_output_frames(steps):
    # The gear-pair sample (ratio −0.5), the pinion driven by f = 3 sin πt + 2t for 2 s: between
    # frames the pinion swings forward past a turn and back. Reference: pinion angle f(t),
    # gear angle −f/2 (1e-9 rad). Before the fix, written at 0 and 2 s only, the pinion read
    # 22.85 rad instead of 4 and the gear −11.4 instead of −2 (3 and 1 turns off, no event):
    # the turns were counted from the trapezoidal integral of the two frames' rates, though
    # the stepper had followed the motion in sub-steps.
    from pathlib import Path

    from cadmotion.importers import load

    model = compile_model(load(Path(__file__).resolve().parents[2] / "samples" / "gear_pair.cadmotion.toml"))
    motion = kinematics(model, t_end=2.0, steps=steps)
    f = 3 * np.sin(np.pi * motion.time) + 2 * motion.time
    np.testing.assert_allclose(motion.coordinate("pinion_shaft.angle"), f, atol=1e-9)
    np.testing.assert_allclose(motion.coordinate("gear_shaft.angle"), -0.5 * f, atol=1e-9)


def rsur_rocker_angle(theta):
    """The RSUR sample's rocker angle ψ (rad, about +y, 0 at θ = 0) for crank angles θ: the
    coupler's two joint centres keep their distance ℓ, |D + R_y(ψ) u − S(θ)| = ℓ, i.e.
    A cos ψ + B sin ψ = C, the root through ψ(0) = 0 (independent of the coupler's spin)."""
    D = np.array([0.3, 0.0, 0.2])
    P0 = np.array([0.18898135325302362, 0.0, 0.3008705114216741])
    u = P0 - D
    ell2 = float(np.sum((P0 - np.array([0.08, 0.0, 0.0])) ** 2))
    S = np.stack([0.08 * np.cos(theta), 0.08 * np.sin(theta), 0 * theta], axis=-1)
    w = D - S
    A = 2 * (w[:, 0] * u[0] + w[:, 2] * u[2])
    B = 2 * (w[:, 0] * u[2] - w[:, 2] * u[0])
    C = ell2 - u @ u - np.sum(w * w, axis=1) - 2 * w[:, 1] * u[1]
    roots = np.arctan2(B, A)[None] + np.array([[1.0], [-1.0]]) * np.arccos(np.clip(C / np.hypot(A, B), -1, 1))
    return roots[int(np.argmin(np.abs(np.angle(np.exp(1j * roots[:, 0])))))]


@pytest.mark.parametrize("steps", [1, 2])
def test_an_rssr_with_its_coupler_spin_moved_minimally_keeps_its_assembly_over_few_frames(steps):
    # The RSUR sample with its universal joint made spherical (R-S-S-R: the coupler free to
    # spin, 2 DOF by rank), the crank driven 2πt for 3 s, the spin moved minimally. Reference:
    # the rocker angle from the closed form above, compared modulo a turn (1e-9 rad). Before
    # the fix, written in 2 or 3 frames, the run raised numpy's LinAlgError (not a cadmotion
    # error); with that mended it ended on the mirror assembly, 3.0 rad off, with no event.
    from dataclasses import replace
    from pathlib import Path

    from cadmotion.importers import load

    spec = load(Path(__file__).resolve().parents[2] / "samples" / "rsur_spatial.cadmotion.toml")
    spec = replace(spec, joints=tuple(replace(j, type="spherical") if j.name == "cross" else j for j in spec.joints))
    motion = kinematics(compile_model(spec), t_end=3.0, steps=steps, free_dof="minimal")
    assert motion.complete, motion.message
    q = motion.quaternion[:, motion.part_index("rocker")]
    psi = 2 * np.arctan2(q[:, 2], q[:, 0])
    gap = np.remainder(psi - rsur_rocker_angle(2 * np.pi * motion.time) + np.pi, 2 * np.pi) - np.pi
    np.testing.assert_allclose(gap, 0.0, atol=1e-9)


def test_an_undriven_part_is_named_with_the_joint_that_would_drive_it(build):
    # A crank-driven slider-crank plus a pendulum hung on the ground by joint `hang`, which no
    # driver reaches. Reference: the pendulum is the only part free with the drivers held, and
    # `hang` the only joint whose coordinate moves with it. Before the fix the error said only
    # "the drivers leave 1 degree(s) of freedom free (mechanism mobility 2, 1 driver(s))".
    from cadmotion.errors import DrivingError

    z = [0, 0, 1]
    data = {"parts": {"ground": {"fixed": True}, "crank": {}, "rod": {"position": [R, 0, 0]},
                      "slider": {"position": [R + L, 0, 0]}, "pendulum": {"position": [0, -0.5, 0]}},
            "joints": [
                {"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0], "axis": z},
                {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": [R, 0, 0], "axis": z},
                {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": [R + L, 0, 0], "axis": z},
                {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": [R + L, 0, 0],
                 "axis": [1, 0, 0]},
                {"name": "hang", "type": "revolute", "parts": ["ground", "pendulum"], "origin": [0, -0.2, 0],
                 "axis": z}],
            "drivers": [{"joint": "pivot", "expression": "2*pi*t"}]}
    with pytest.raises(DrivingError) as err:
        kinematics(compile_model(build(data)), t_end=1.0, steps=10)
    message = str(err.value)
    assert "pendulum can move" in message and "joints hang " in message
    assert "crank" not in message.split("free")[1] and "slide" not in message.split("free")[1]


def test_a_model_whose_parts_are_all_fixed_has_no_freedom_and_does_not_crash(build):
    # A FreeCAD robot arm whose joints are all deactivated imports as parts fixed where they
    # are, with no constraint at all (fcstd-robot-arm-6dof/Simple_robot_arm.FCStd): `cadmotion
    # check` ended in a ValueError traceback from the empty Jacobian. Reference: nothing can move,
    # so 0 DOF by rank and by Grübler, and a motion that keeps every part where it is.
    from cadmotion.kernel import mobility

    model = compile_model(build({"parts": {"base": {"fixed": True}, "link": {"fixed": True, "position": [0, 0, 1]}},
                                 "joints": [], "drivers": []}))
    mob = mobility(model)
    assert (mob.dof, mob.gruebler, mob.dof_driven) == (0, 0, 0)
    motion = kinematics(model, t_end=1.0, steps=4)
    assert motion.complete
    np.testing.assert_array_equal(motion.position[:, motion.part_index("link")], [[0, 0, 1]] * 5)


@pytest.mark.parametrize("bad", ["abc", "1e3", True, [1.0], float("nan")])
def test_a_table_driver_entry_that_is_not_a_finite_number_is_refused_naming_the_driver_and_row(build, bad):
    # A driver table [[t, value], ...] whose second row's value is not a finite number. Before the
    # fix "abc" raised a bare ValueError and [1.0] a TypeError (no file, driver or row named),
    # while "1e3" and True were silently taken as 1000 and 1.
    from cadmotion.errors import ModelFileError

    data = {"parts": {"g": {"fixed": True}, "b": {}},
            "joints": [{"name": "j", "type": "revolute", "parts": ["g", "b"], "origin": [0, 0, 0], "axis": [0, 0, 1]}],
            "drivers": [{"joint": "j", "table": [[0.0, 0.0], [1.0, bad], [2.0, 0.5]]}]}
    with pytest.raises(ModelFileError, match=r"<test>: \[\[drivers\]\] #1: .*table row 2 value.* must be a number"):
        build(data)


# ---------------------------------------------------------------------------------------------- the run checks itself
def spliced(motion, other, k):
    """``motion`` with frame ``k`` taken from ``other`` (the same times): every pose, velocity and acceleration;
    its own copies of the arrays and no events (the kinematics sweep uses it too)."""
    import dataclasses

    arrays = {}
    for name in ("position", "quaternion", "velocity", "angular_velocity", "acceleration", "angular_acceleration"):
        a = getattr(motion, name).copy()
        a[k] = getattr(other, name)[k]
        arrays[name] = a
    return dataclasses.replace(motion, events=[], **arrays)


def test_a_crank_rocker_run_checks_its_frames_continuity_and_keeps_it(build):
    # A Grashof crank-rocker (crank 0.1, coupler 0.3, rocker 0.25, ground 0.3 m) turned once in 1 s, on either
    # assembly branch: each run's frames are one motion, and its own check says so with a margin of 100.
    for mode in (1, -1):
        motion = kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.25, 0.3, 0.5, "2*pi*t", mode)), t_end=1.0,
                            steps=100)
        assert motion.complete, motion.message
        (check,) = motion.invariants.checks
        assert check.name == "continuity" and not check.broken and check.max_drift < 1e-2, check.line()
        assert not [e for e in motion.events if e.kind == "invariant"]


@pytest.mark.parametrize("k", [1, 37, 99])
def test_a_frame_taken_on_the_other_assembly_branch_breaks_the_continuity_check(build, k):
    # The reference: the crank-rocker's other assembly (the rocker mirrored about the line B–D) satisfies every
    # joint at every frame, so a frame taken from it is a valid pose — but the linkage cannot get there without
    # coming apart. A run whose frame k came from the other branch must say that its parts jump at t_k.
    from cadmotion.kernel.kinematic_checks import check_continuity

    runs = [kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.25, 0.3, 0.5, "2*pi*t", mode)), t_end=1.0,
                       steps=100) for mode in (1, -1)]
    check, _ = check_continuity(spliced(runs[0], runs[1], k), tol=1e-10)
    assert check.broken and check.part in ("coupler", "rocker"), check.line()
    assert check.first_time == pytest.approx(runs[0].time[k]), check.message()
    assert "jump to another assembly branch" in check.message()


def test_velocities_ten_percent_off_break_the_continuity_check(slider_crank):
    # The frames' velocities are what the positions integrate: a velocity analysis 10 % off (a time derivative of
    # a driver missing, a rate read in the wrong unit) cannot be the motion the poses describe. Reference: the
    # slider-crank's poses themselves; the run's velocities and accelerations scaled by 1.1.
    from cadmotion.kernel.kinematic_checks import check_continuity

    spec, _ = slider_crank(0.5, "2*pi*t", driven="pivot")
    motion = kinematics(compile_model(spec), t_end=1.0, steps=100)
    assert motion.complete and not motion.invariants.broken, motion.message
    wrong = spliced(motion, motion, 0)
    for name in ("velocity", "angular_velocity", "acceleration", "angular_acceleration"):
        getattr(wrong, name)[:] *= 1.1
    check, _ = check_continuity(wrong, tol=1e-10)
    assert check.broken and check.max_drift > 2, check.line()


def test_a_driver_with_kinks_moves_the_parts_continuously_and_is_not_flagged(build):
    # min(t, 0.55) + max(t − 1.27, 0)³: the crank's velocity jumps from 1 to 0 rad/s at t = 0.55 s and its
    # acceleration has a kink at 1.27 s, inside frame intervals. The motion is continuous; its kinks are not jumps
    # (the rule allows half the jump in v times h, which bounds what a kink anywhere in an interval leaves).
    motion = kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.25, 0.3, 0.5,
                                                "min(t, 0.55) + max(t - 1.27, 0)**3")), t_end=2.0, steps=37)
    (check,) = motion.invariants.checks
    assert motion.complete and not check.broken, check.line()


def test_frames_too_coarse_to_follow_the_motion_are_reported_not_checked(build):
    # Three frames of a whole turn (π rad a frame): the Hermite rule's series does not hold there; the run says so
    # instead of checking (or passing) them.
    motion = kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.25, 0.3, 0.5, "2*pi*t")), t_end=1.0, steps=2)
    assert motion.complete and motion.invariants.checks == []
    assert any("too coarse" in s and "2 of 2" in s for s in motion.invariants.skipped), motion.invariants.skipped


# ------------------------------------------------------------------ frames next to a singular configuration
def _parallelogram_run(build, monkeypatch, path, tol):
    """The parallelogram (crank = rocker = 0.1 m, coupler = ground = 0.3 m) from 0.5 rad at 2π rad/s, 2,000 frames
    over 1 s, on the numpy stepper (``path`` "0") or the compiled frame loop ("compile")."""
    if path == "compile":
        pytest.importorskip("numba")
    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", path)
    return kinematics(compile_model(_four_bar(build, 0.1, 0.3, 0.1, 0.3, 0.5, "2*pi*t")), t_end=1.0, steps=1999,
                      tol=tol)


@pytest.mark.parametrize("tol", [1e-6, 1e-10])
@pytest.mark.parametrize("path", ["0", "compile"])
def test_every_parallelogram_frame_whose_accelerations_are_off_is_flagged_near_singular(build, monkeypatch, path, tol):
    # Reference: on the parallelogram branch every link's angular acceleration is exactly 0 (the crank turns at a
    # constant rate, the coupler translates, the rocker turns with the crank). Next to the change points (crank at
    # π and 2π) the kept rows' smallest singular value goes to 0, and a pose converged to round-off is fixed only
    # to ε/σ along the near-null direction: the frame 3.8e-5 s after the second change point read 2e-4 … 2e-3
    # rad/s², with only the change points' `branch` events. Every frame off by more than 1e-5 rad/s² (the
    # kinematics sweep's allowance) must carry the run's own estimate of its error, at least the error itself, and
    # lie in a stretch reported as a `near-singular` event within 2 ms of a change point, naming the four pins.
    motion = _parallelogram_run(build, monkeypatch, path, tol)
    assert motion.complete, motion.message
    off = np.abs(motion.angular_acceleration).max(axis=(1, 2))
    estimate = motion.extra.get("near_singular.acceleration_error", np.zeros(motion.nt))
    assert (off > 1e-5).any()  # what the warning is about: this grid has such frames
    bad = np.flatnonzero(off > 1e-5)
    np.testing.assert_array_less(off[bad], estimate[bad], err_msg=f"frames at t = {motion.time[bad]}")
    flagged = np.flatnonzero(estimate > 0)
    assert np.all(estimate[flagged] >= off[flagged])
    changes = np.array([(k * np.pi - 0.5) / (2 * np.pi) for k in (1, 2)])
    near = [e for e in motion.events if e.kind == "near-singular"]
    assert 1 <= len(near) <= 2, motion.events
    for e in near:
        assert np.min(np.abs(changes - e.time)) < 2e-3
        assert set(e.items) == {"A", "B", "C", "D"} and "may be off by up to" in e.message
    assert np.min(np.abs(changes[:, None] - motion.time[flagged][None]), axis=0).max() < 2e-3
    assert [e.time for e in motion.events if e.kind == "branch"] != []  # the change points themselves, as before


@pytest.mark.parametrize("case", ["slider_crank", "four_bar", "rsur_spatial", "gear_pair", "gripper/gripper",
                                  "crank-rocker"])
def test_regular_mechanisms_have_no_near_singular_frames(build, case):
    # The samples and the kinematics sweep's crank-rocker (10 turns in 1,000 frames) stay far from any singular
    # configuration: no frame of theirs may be flagged (the run's largest velocity and acceleration errors there
    # are at round-off).
    from pathlib import Path

    from cadmotion.importers import load

    if case == "crank-rocker":
        model, t_end, steps = compile_model(_four_bar(build, 0.1, 0.3, 0.25, 0.3, np.pi / 2, "20*pi*t")), 1.0, 999
    else:
        path = Path(__file__).resolve().parents[2] / "samples" / f"{case}.cadmotion.toml"
        model, t_end, steps = compile_model(load(path)), 2.0, 200
    motion = kinematics(model, t_end=t_end, steps=steps)
    assert motion.complete, motion.message
    assert not [e for e in motion.events if e.kind == "near-singular"], motion.events
    assert not [k for k in motion.extra if k.startswith("near_singular.")]
