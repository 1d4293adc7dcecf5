"""Kinematic analysis beyond its samples: output-frame counts, tolerances, singular and locking
cases, drivers, spatial loops and files written by other tools. Every run is checked against a
reference computed here — a closed form, a geometric identity or a finite difference of the
closed form —, never against cadmotion's own output. Asserts nothing: prints a table per section,
each row a verdict:

* ``ok``     the run matches its reference within the allowance (and reports the expected events);
* ``event``  the run stopped or flagged an event where the reference says the motion goes on
  (a clear answer, but not the whole motion);
* ``flagged`` off its reference only at frames the run flagged ``near-singular`` (next to a singular
  configuration, with an estimate of their velocities' and accelerations' errors: a warning, not a
  wrong answer; section 1 only, where the parallelogram's change points are);
* ``near-event`` off its reference only at frames within 1 ms of an event the run reported (a
  frame next to a change point: its velocity and acceleration solves are ill-conditioned);
* ``WRONG``  a result off its reference, or an expected event missing: a wrong answer reported as
  success, the worst outcome.

Sections and cases (frames = steps + 1; "interval" = one output interval, the finest split of the
stepper is interval/256):

1. ``frames``: at 2, 3, 5, 10, 100 and 2,000 frames (2,000 runs the compiled frame loop, compiled in
   the run) and tol 1e-6, 1e-8, 1e-10, 1e-12:
   * ``slider-crank``: crank 0.1 m, rod 0.3 m, crank driven 20πt for 1 s (10 turns). Reference:
     x = R cos θ + √(L² − R² sin² θ) and its analytic θ-derivatives; the slider on +x (branch);
     the crank's joint angle must read 20π at the end (turns).
   * ``four-bar``: crank-rocker (0.1, 0.3, 0.25, ground 0.3 m), crank 20πt for 1 s from 90 deg (10
     turns). Reference: the rocker's pivot C from the intersection of the circles about B and D on
     the assembled side; its angle from the rocker's quaternion; ω and α by 5-point central
     differences of the closed form (steps 1e-4 and 1e-3 s).
   * ``parallelogram``: 0.1, 0.3, 0.1, 0.3 m from 0.5 rad, crank 2πt for 1 s: two change points
     (crank at π, 2π). Reference: the parallelogram branch, rocker angle = crank angle; both change
     points must be ``branch`` events within interval/256 after their times.
   * ``rsur``: samples/rsur_spatial (crank about z, ball, universal, rocker about y), crank 2πt for
     3 s (3 turns). Reference: the rocker angle ψ from |D + R_y(ψ) u − S(θ)| = ℓ, i.e.
     A cos ψ + B sin ψ = C (the root with ψ(0) = 0); ω, α by central differences.
   * ``gear``: samples/gear_pair (ratio −0.5), pinion 3 sin πt + 2t for 2 s. Reference: the gear's
     angle −½ f(t), ω and α from f′, f″.
   Allowances: positions and joint coordinates (turns counted) 10·tol + 1e-11 (m or rad);
   velocities 1e-7 and accelerations 1e-5 times the largest value of the reference. A
   ``near-singular`` event is expected of the parallelogram only: on the other cases it is a false
   alarm (``WRONG``); "flagged" counts the frames with an error estimate (``near_singular.*``), "off"
   those of them outside the allowances.
2. ``singular``:
   * ``toggle``: the four-bar crank-rocker driven at its rocker joint D by t (rad): the rocker's
     extreme, where crank and coupler are collinear (|C − A| = a + b), is at t* (closed form); a
     ``lockup``/``singular`` event in [t* − 0.01, t* + interval/256] and the crank angles of the
     frames before it from the circle intersection (1e-8 rad).
   * ``slider-dc``: the slider-crank driven at its slider, out to ``margin`` short of dead centre
     (x = R + L) and back in 2 s, from crank angles 30 and 120 deg, margins 1e-2, 1e-4, 1e-6, 0 m.
     Reference: θ > 0 from the law of cosines (1e-8 rad). Margin 0 reaches the dead centre itself,
     where the branch is not decided: an event is the right answer there (a frame at the dead
     centre itself within 1e-5 rad: θ² is proportional to the slider's residual, so θ to √tol).
   * ``slider-past``: the slider driven past dead centre (reaching it at t = 0.5 s): a lock-up
     event at 0.5 s (within interval/256), never a complete run.
   * ``redundant``: drivers that fix the same motion twice (crank and slider; two drivers on one
     joint): a DrivingError naming the drivers.
   * ``undriven``: the four-bar without drivers, and the slider-crank with an extra pendulum no
     driver reaches: a DrivingError naming the free motion; with free_dof="minimal" the pendulum
     stays put (1e-12 m).
3. ``drivers``: one body on one joint, 2 s, 3 and 50 frames: expression drivers (polynomial,
   sin, piecewise min/max), a revolute beyond ±π (7t: 14 rad, read from the joint angle and the
   quaternion), a prismatic; table drivers against the documented law (scipy CubicSpline,
   not-a-knot; natural for 2 rows; extrapolated by the end pieces past the table) built here from
   the table; a cylindrical joint's two coordinates at once. References: the function and its
   analytic derivatives. Allowances as in section 1.
4. ``spatial``: mobility (the Jacobian's rank) against Grübler's count for the RSUR (1, 1), an
   RSSR with spherical ends (2 by rank: the coupler's spin; Grübler 2), a Bennett linkage (1 by
   rank, Grübler −2); the RSSR driven at its crank with free_dof="minimal": the rocker angle against
   the closed form of the RSUR case (the spin does not move the rocker); the Bennett linkage driven
   at its first joint (0.5 rad/s, 2 s): each link's pose carries the next joint's origin where the
   Denavit–Hartenberg loop, closed by least squares in the script from the driven angle, puts it.
5. ``files``: `cadmotion check --no-interference` on every file of /work/shared/data (asmt, FCStd,
   STEP, URDF): exit code, time, and the first line of its verdict or error (no Python traceback
   allowed).

6. ``self-check``: the run's own continuity check (:mod:`cadmotion.kernel.kinematic_checks`): the
   crank-rocker on both assembly branches at 6 to 2,001 frames a turn; its own check must hold, a frame
   taken from the other branch (a valid pose the linkage cannot reach) must be flagged at each frame
   tried, and the check's figure for velocities and accelerations scaled by 1.001, 1.01 and 1.1 is shown.
   (Sections 1–4 count an ``invariant`` event as a wrong verdict: a false alarm of the check.)

Run: ``PYTHONPATH=... python benchmarks/kinematics_sweep.py [--quick] [--section N ...]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from cadmotion.errors import CadmotionError
from cadmotion.importers import load
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model, kinematics, mobility

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kernel"))
from test_kinematics_beyond_samples import rsur_rocker_angle, spliced  # noqa: E402  (the spec tests')
from test_mobility_and_events import bennett_frames, bennett_joint_origins  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
DATA = Path("/work/shared/data")
R, L = 0.1, 0.3


# ----------------------------------------------------------------------------- models and references


def _p(v):
    return [float(v[0]), float(v[1]), 0.0]


def slider_crank(theta0, expression, driven="pivot", extra=False):
    A = [R * np.cos(theta0), R * np.sin(theta0), 0.0]
    xb = float(A[0] + np.sqrt(L**2 - A[1] ** 2))
    parts = {"ground": {"fixed": True}, "crank": {}, "rod": {"position": A}, "slider": {"position": [xb, 0, 0]}}
    joints = [
        {"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
        {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": A, "axis": [0, 0, 1]},
        {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": [xb, 0, 0], "axis": [0, 0, 1]},
        {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": [xb, 0, 0], "axis": [1, 0, 0]},
    ]
    if extra:  # a pendulum hung on the ground that no driver reaches
        parts["pendulum"] = {"position": [0, -0.5, 0]}
        joints.append({"name": "hang", "type": "revolute", "parts": ["ground", "pendulum"], "origin": [0, -0.2, 0],
                       "axis": [0, 0, 1]})
    drivers = [{"joint": driven, "expression": expression}] if expression is not None else []
    return parse_model({"parts": parts, "joints": joints, "drivers": drivers}, source="<sweep>"), xb


def circle_meet(P, rp, Q, rq, side):
    """The intersection of circles (P, rp) and (Q, rq) (arrays (n, 2)) left (side +1) of P→Q."""
    e = np.linalg.norm(Q - P, axis=-1)
    u = (Q - P) / e[..., None]
    along = (rp**2 - rq**2 + e**2) / (2 * e)
    h = np.sqrt(np.maximum(rp**2 - along**2, 0.0))
    n = np.stack([-u[..., 1], u[..., 0]], axis=-1)
    return P + along[..., None] * u + side * h[..., None] * n


def four_bar(a, b, c, d, theta0, expression, driven="A", side=1):
    B = np.array([a * np.cos(theta0), a * np.sin(theta0)])
    D = np.array([d, 0.0])
    C = circle_meet(B[None], b, D[None], c, side)[0]
    spec = parse_model({
        "parts": {"ground": {"fixed": True}, "crank": {}, "coupler": {"position": _p(B)},
                  "rocker": {"position": _p(D)}},
        "joints": [
            {"name": "A", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
            {"name": "B", "type": "revolute", "parts": ["crank", "coupler"], "origin": _p(B), "axis": [0, 0, 1]},
            {"name": "C", "type": "revolute", "parts": ["coupler", "rocker"], "origin": _p(C), "axis": [0, 0, 1]},
            {"name": "D", "type": "revolute", "parts": ["rocker", "ground"], "origin": _p(D), "axis": [0, 0, 1]},
        ],
        "drivers": [{"joint": driven, "expression": expression}],
    }, source="<sweep>")
    return spec, C


def rocker_angle_four_bar(a, b, c, d, theta):
    """Rocker rotation (rad, about z, 0 at θ = θ(0)) of the four-bar with crank at θ (array), side +1."""
    B = np.stack([a * np.cos(theta), a * np.sin(theta)], axis=-1)
    D = np.broadcast_to([d, 0.0], B.shape)
    C = circle_meet(B, b, D, c, 1)
    ang = np.unwrap(np.arctan2(C[:, 1], C[:, 0] - d))
    return ang - ang[0]


def quat_angle(quat, axis):
    """Rotation angle (rad) about ``axis`` of unit quaternions (n, 4) (w, x, y, z) that turn about it; unwrapped."""
    return np.unwrap(2.0 * np.arctan2(quat[:, 1:] @ np.asarray(axis, float), quat[:, 0]))


def derivs(f, t, h1=1e-4, h2=1e-3):
    """f′ and f″ at the times t by 5-point central differences of f (vectorised)."""
    d1 = (-f(t + 2 * h1) + 8 * f(t + h1) - 8 * f(t - h1) + f(t - 2 * h1)) / (12 * h1)
    d2 = (-f(t + 2 * h2) + 16 * f(t + h2) - 30 * f(t) + 16 * f(t - h2) - f(t - 2 * h2)) / (12 * h2**2)
    return d1, d2


def rsur_psi(theta):
    """The RSUR sample's rocker angle ψ (rad, about +y, 0 at θ = 0) for crank angles θ (array), continuous:
    the closed form of the spec tests (``rsur_rocker_angle``), unwrapped."""
    return np.unwrap(rsur_rocker_angle(theta))


# ----------------------------------------------------------------------------- running


def run(model, t_end, steps, tol=1e-10, compiled=None, **kw):
    """(motion or None, error message or "", seconds)."""
    env = os.environ.get("CADMOTION_KINEMATICS_FAST")
    if compiled is not None:
        os.environ["CADMOTION_KINEMATICS_FAST"] = compiled
    t0 = time.perf_counter()
    try:
        return kinematics(model, t_end=t_end, steps=steps, tol=tol, **kw), "", time.perf_counter() - t0
    except CadmotionError as exc:
        return None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
    finally:
        if env is None:
            os.environ.pop("CADMOTION_KINEMATICS_FAST", None)
        else:
            os.environ["CADMOTION_KINEMATICS_FAST"] = env


def events_text(motion):
    return ",".join(f"{e.kind}@{e.time:.4g}" for e in motion.events) or "-"


def table(title, header, rows):
    print(f"\n== {title} ({len(rows)} runs)")
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    counts = {}
    for r in rows:
        counts[r[-1]] = counts.get(r[-1], 0) + 1
    print("verdicts:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return counts


def fmt(x):
    return f"{x:.1e}" if np.isfinite(x) else "nan"


# ----------------------------------------------------------------------------- section 1


def wrap(x):
    """Angles (rad) into (−π, π]."""
    return np.remainder(np.asarray(x) + np.pi, 2 * np.pi) - np.pi


def four_bar_kinematics(a, b, c, d, theta, w, al, side=1):
    """Rocker angle ψ (rad, of C − D from +x, continuous), ψ′ and ψ″ of the four-bar with the
    crank at θ (arrays), θ′ = w, θ″ = al: loop closure a e(θ) + b e(μ) = d e_x + c e(ψ),
    differentiated: [b e⊥(μ), −c e⊥(ψ)] [μ′, ψ′] = −a θ′ e⊥(θ), and the same matrix for μ″, ψ″."""
    theta, w, al = (np.broadcast_to(np.asarray(v, float), np.shape(theta)) for v in (theta, w, al))
    B = np.stack([a * np.cos(theta), a * np.sin(theta)], axis=-1)
    C = circle_meet(B, b, np.broadcast_to([d, 0.0], B.shape), c, side)
    mu = np.arctan2(C[:, 1] - B[:, 1], C[:, 0] - B[:, 0])
    psi = np.unwrap(np.arctan2(C[:, 1], C[:, 0] - d))

    def e(x):
        return np.stack([np.cos(x), np.sin(x)], axis=-1)

    def n(x):
        return np.stack([-np.sin(x), np.cos(x)], axis=-1)
    M = np.stack([b * n(mu), -c * n(psi)], axis=-1)  # (k, 2, 2)
    v = np.linalg.solve(M, (-a * w[:, None] * n(theta))[..., None])[..., 0]
    rhs = -a * al[:, None] * n(theta) + a * (w**2)[:, None] * e(theta) + b * (v[:, 0] ** 2)[:, None] * e(mu) \
        - c * (v[:, 1] ** 2)[:, None] * e(psi)
    acc = np.linalg.solve(M, rhs[..., None])[..., 0]
    return psi, v[:, 1], acc[:, 1]


def _frame_cases():
    """(name, model, t_end, reference, expected branch times); reference(t) -> dict with the
    part and axis compared, its rotation angle (rad, from its initial pose) or x (m), their rates,
    and the joint coordinates {name: value at t} whose turns are checked."""
    cases = []

    spec, _ = slider_crank(0.0, "20*pi*t")

    def ref_sc(t):
        w = 20 * np.pi
        th = w * t
        s, c = np.sin(th), np.cos(th)
        Dq = np.sqrt(L**2 - R**2 * s**2)
        x1 = -R * s - R**2 * s * c / Dq
        x2 = -R * c - R**2 * (c**2 - s**2) / Dq - R**4 * s**2 * c**2 / Dq**3
        return dict(part="slider", kind="x", value=R * c + Dq, rate=x1 * w, acc=x2 * w**2,
                    coords={"pivot.angle": th, "slide.disp": R * c + Dq - (R + L)})
    cases.append(("slider-crank", compile_model(spec), 1.0, ref_sc, []))

    a, b, c, d = 0.1, 0.3, 0.25, 0.3
    spec, _ = four_bar(a, b, c, d, np.pi / 2, "20*pi*t")

    def ref_fb(t):
        psi, w, al = four_bar_kinematics(a, b, c, d, np.pi / 2 + 20 * np.pi * t, 20 * np.pi, 0.0)
        psi0 = four_bar_kinematics(a, b, c, d, np.array([np.pi / 2]), 0.0, 0.0)[0][0]
        psi = psi - psi0
        return dict(part="rocker", kind="z", value=psi, rate=w, acc=al,
                    coords={"A.angle": 20 * np.pi * t, "D.angle": -psi})
    cases.append(("four-bar", compile_model(spec), 1.0, ref_fb, []))

    spec, _ = four_bar(0.1, 0.3, 0.1, 0.3, 0.5, "2*pi*t")

    def ref_par(t):
        return dict(part="rocker", kind="z", value=2 * np.pi * t, rate=2 * np.pi + 0 * t, acc=0 * t,
                    coords={"A.angle": 2 * np.pi * t, "D.angle": -2 * np.pi * t})
    cases.append(("parallelogram", compile_model(spec), 1.0, ref_par,
                  [(k * np.pi - 0.5) / (2 * np.pi) for k in (1, 2)]))

    spec = load(SAMPLES / "rsur_spatial.cadmotion.toml")

    def psi_at(t):
        t = np.atleast_1d(t)
        fine = np.linspace(0.0, 3.0, 3001)
        cont = np.interp(t, fine, rsur_psi(2 * np.pi * fine))
        raw = rsur_psi(2 * np.pi * t)
        return raw + 2 * np.pi * np.round((cont - raw) / (2 * np.pi))

    def ref_rsur(t):
        w, al = derivs(psi_at, t)
        psi = psi_at(t)
        return dict(part="rocker", kind="y", value=psi, rate=w, acc=al,
                    coords={"crank_pivot.angle": 2 * np.pi * t, "rocker_pivot.angle": psi})
    cases.append(("rsur", compile_model(spec), 3.0, ref_rsur, []))

    spec = load(SAMPLES / "gear_pair.cadmotion.toml")

    def ref_gear(t):
        f, f1, f2 = 3 * np.sin(np.pi * t) + 2 * t, 3 * np.pi * np.cos(np.pi * t) + 2, -3 * np.pi**2 * np.sin(np.pi * t)
        return dict(part="gear", kind="z", value=-0.5 * f, rate=-0.5 * f1, acc=-0.5 * f2,
                    coords={"pinion_shaft.angle": f, "gear_shaft.angle": -0.5 * f})
    cases.append(("gear", compile_model(spec), 2.0, ref_gear, []))
    return cases


AXES = {"x": 0, "y": 1, "z": 2}


class motion_frames:
    """The frames ``keep`` of a motion, with the attributes :func:`compare` reads."""

    def __init__(self, motion, keep):
        self._m, self._keep = motion, keep
        for name in ("time", "position", "quaternion", "velocity", "acceleration", "angular_velocity",
                     "angular_acceleration"):
            setattr(self, name, getattr(motion, name)[keep])

    def part_index(self, name):
        return self._m.part_index(name)

    def coordinate(self, name):
        return self._m.coordinate(name)[self._keep]


def flagged_frames(motion):
    """(nt,) bool: the frames the run flagged near a singular configuration (an error estimate in ``extra``)."""
    out = np.zeros(len(motion.time), bool)
    for name in ("near_singular.velocity_error", "near_singular.acceleration_error"):
        if name in motion.extra:
            out |= np.asarray(motion.extra[name]) > 0
    return out


def compare(motion, ref, t_end, away=None, skip=None):
    """(position error (m or rad, angles modulo a turn), velocity and acceleration errors over
    the reference's largest values on a fine grid, joint-coordinate error (turns counted)); with
    ``away`` (s) only at the frames that far from every event, without the frames ``skip`` (nt,) bool."""
    r = ref(motion.time)
    if away is not None or skip is not None:
        keep = np.ones(len(motion.time), bool) if skip is None else ~skip
        for e in motion.events if away is not None else ():
            keep &= np.abs(motion.time - e.time) > away
        motion = motion_frames(motion, keep)
        r = ref(motion.time)
    fine = ref(np.linspace(0.0, t_end, 2001))
    k = motion.part_index(r["part"])
    i = AXES[r["kind"]] if r["kind"] != "x" else 0
    if r["kind"] == "x":
        pe = np.abs(motion.position[:, k, 0] - r["value"]).max()
        v, acc = motion.velocity[:, k, 0], motion.acceleration[:, k, 0]
    else:
        axis = np.zeros(3)
        axis[i] = 1.0
        pe = np.abs(wrap(quat_angle(motion.quaternion[:, k], axis) - r["value"])).max()
        v, acc = motion.angular_velocity[:, k, i], motion.angular_acceleration[:, k, i]
    ve = np.abs(v - r["rate"]).max() / max(np.abs(fine["rate"]).max(), 1e-300)
    ae = np.abs(acc - r["acc"]).max() / max(np.abs(fine["acc"]).max(), 1.0)
    ce = max(np.abs(motion.coordinate(name) - value).max() for name, value in r["coords"].items())
    return pe, ve, ae, ce


def section_frames(quick):
    frames = [2, 3, 10, 2000] if quick else [2, 3, 5, 10, 100, 2000]
    tols = [1e-6, 1e-10] if quick else [1e-6, 1e-8, 1e-10, 1e-12]
    rows = []
    for name, model, t_end, ref, branch_times in _frame_cases():
        for nf in frames:
            for tol in tols:
                motion, err, sec = run(model, t_end, nf - 1, tol, compiled="compile" if nf >= 1500 else None)
                if motion is None:
                    rows.append((name, nf, tol, "-", "-", "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
                    continue
                pe, ve, ae, ce = compare(motion, ref, t_end)
                flagged = [e.time for e in motion.events if e.kind == "branch"]
                finest = t_end / (nf - 1) / 256
                events_ok = len(flagged) == len(branch_times) and all(
                    tc <= te_ <= tc + finest + 1e-12 for tc, te_ in zip(branch_times, flagged))
                # a near-singular event is a warning where the case has change points, a false alarm elsewhere
                warned = branch_times and any(e.kind == "near-singular" for e in motion.events)
                others = [e for e in motion.events if e.kind != "branch" and not (warned and e.kind == "near-singular")]
                allow = 10 * tol + 1e-11

                def within(pe, ve, ae, ce):
                    return pe <= allow and ve <= 1e-7 and ae <= 1e-5 and ce <= allow
                flagged = flagged_frames(motion)
                alone = np.eye(len(flagged), dtype=bool)[flagged]  # each flagged frame by itself
                off = sum(not within(*compare(motion, ref, t_end, skip=~one)) for one in alone)
                good = within(pe, ve, ae, ce) and events_ok
                verdict = "ok" if good and motion.complete and not others else (
                    "event" if (not motion.complete and motion.events) else "WRONG")
                if verdict == "WRONG" and events_ok and flagged.any() and motion.complete and not others \
                        and within(*compare(motion, ref, t_end, skip=flagged)):
                    verdict = "flagged"  # off only at frames the run flagged near-singular
                if verdict == "WRONG" and events_ok and motion.events and within(*compare(motion, ref, t_end, 1e-3)):
                    verdict = "near-event"  # off only at frames within 1 ms of a reported event
                rows.append((name, nf, tol, fmt(pe), fmt(ve), fmt(ae), fmt(ce), events_text(motion),
                             f"{int(flagged.sum())}/{off}", f"{sec:.2f}", verdict))
    return table("1. output frames and tolerance",
                 ["case", "frames", "tol", "pos err", "vel rel", "acc rel", "coord err", "events", "flagged/off", "s",
                  "verdict"], rows)


# ----------------------------------------------------------------------------- section 2


def section_singular(quick):
    rows = []
    frames = [2, 3, 10, 100] if quick else [2, 3, 5, 10, 100, 2000]
    # toggle: the four-bar sample's rocker driven at D
    a, b, c, d = 0.1, 0.3, 0.25, 0.3
    base = load(SAMPLES / "four_bar.cadmotion.toml")
    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = replace(base, drivers=(DriverSpec("rocker", TimeFunctionSpec("t"), joint="D"),))
    C0 = np.array([0.261506227481982, 0.24701868244594594])
    phi0 = np.arctan2(C0[1], C0[0] - d)
    phi_ext = np.pi - np.arccos((c**2 + d**2 - (a + b) ** 2) / (2 * c * d))
    t_star = -(phi_ext - phi0)
    model = compile_model(spec)
    for nf in frames:
        motion, err, sec = run(model, 1.0, nf - 1, compiled="compile" if nf >= 1500 else None)
        if motion is None:
            rows.append(("toggle", nf, "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
            continue
        stop = [e.time for e in motion.events if e.kind in ("lockup", "singular")]
        # crank angles before the stop: C from the rocker angle, B on the circle about A (side of B0)
        phi = phi0 - motion.time
        C = np.stack([d + c * np.cos(phi), c * np.sin(phi)], axis=-1)
        B = circle_meet(np.zeros_like(C), a, C, b, 1)
        B0 = np.array([0.0, 0.1])
        if np.abs(B[0] - B0).max() > 1e-9:
            B = circle_meet(np.zeros_like(C), a, C, b, -1)
        theta = np.unwrap(np.arctan2(B[:, 1], B[:, 0]))
        crank = np.pi / 2 + motion.coordinate("A.angle")
        perr = np.abs(crank - theta).max()
        finest = 1.0 / (nf - 1) / 256
        ok = bool(stop) and t_star - 0.01 <= stop[0] <= t_star + finest + 1e-12 and not motion.complete and perr < 1e-8
        rows.append(("toggle", nf, f"t*={t_star:.5f}", fmt(perr), events_text(motion), f"{sec:.2f}",
                     "ok" if ok else "WRONG"))
    # slider driven towards dead centre and back
    margins = [1e-2, 1e-4, 0.0] if quick else [1e-2, 1e-4, 1e-6, 0.0]
    for th0 in (30, 120):
        theta0 = np.radians(th0)
        _, xb = slider_crank(theta0, "0", driven="slide")
        for margin in margins:
            stroke = R + L - xb - margin
            model = compile_model(slider_crank(theta0, f"{stroke!r}*(1 - (1 - t)**2)", driven="slide")[0])
            for nf in frames:
                if nf >= 1500 and margin == 0.0:
                    continue
                motion, err, sec = run(model, 2.0, nf - 1, compiled="compile" if nf >= 1500 else None)
                if motion is None:
                    rows.append((f"slider-dc {th0}deg", nf, f"margin {margin:g}", "-", err[:60], f"{sec:.2f}",
                                 "WRONG"))
                    continue
                x = xb + stroke * (1 - (1 - motion.time) ** 2)
                theta = np.arccos(np.clip((R**2 + x**2 - L**2) / (2 * R * x), -1, 1))
                gap = np.abs(theta0 + motion.coordinate("pivot.angle") - theta)
                perr = gap.max()
                # near-singular: frames next to the dead centre flagged (a warning; positions are checked here)
                said = [e for e in motion.events if e.kind != "near-singular"]
                if margin == 0.0 and said:
                    # at the dead centre itself the drivers do not decide whether the crank returns or goes on:
                    # either, once an event says so; the frames before the event are checked
                    perr = gap[motion.time < min(e.time for e in said) - 1e-9].max(initial=0.0)
                if perr < 1e-8 and motion.complete and not said:
                    verdict = "ok"
                elif said and perr < (1e-5 if margin == 0.0 else 1e-8):  # frames before the event right
                    # (a frame at the dead centre itself is found to √tol: θ² ∝ the slider's residual)
                    verdict = "ok" if margin == 0.0 else "event"
                else:
                    verdict = "WRONG"
                rows.append((f"slider-dc {th0}deg", nf, f"margin {margin:g}", fmt(perr), events_text(motion),
                             f"{sec:.2f}", verdict))
    # slider past dead centre: it reaches x = R + L at t = 0.5 s
    _, xb = slider_crank(np.radians(60), "0", driven="slide")
    model = compile_model(slider_crank(np.radians(60), f"{2 * (R + L - xb)!r}*t", driven="slide")[0])
    for nf in frames:
        motion, err, sec = run(model, 1.0, nf - 1, compiled="compile" if nf >= 1500 else None)
        if motion is None:
            rows.append(("slider-past", nf, "t*=0.5", "-", err[:60], f"{sec:.2f}", "WRONG"))
            continue
        stop = [e.time for e in motion.events if e.kind in ("lockup", "singular")]
        finest = 1.0 / (nf - 1) / 256
        ok = (not motion.complete) and stop and 0.5 - finest - 1e-9 <= stop[0] <= 0.5 + finest + 1e-9
        rows.append(("slider-past", nf, "t*=0.5", "-", events_text(motion), f"{sec:.2f}", "ok" if ok else "WRONG"))
    # redundant drivers
    sc = load(SAMPLES / "slider_crank.cadmotion.toml")
    cases = {
        "crank+slider": sc.drivers + (DriverSpec("slide_drive", TimeFunctionSpec("0.01*t"), joint="slide"),),
        "two on pivot": sc.drivers + (DriverSpec("again", TimeFunctionSpec("t**2"), joint="crank_pivot"),),
    }
    for name, drivers in cases.items():
        motion, err, sec = run(compile_model(replace(sc, drivers=drivers)), 1.0, 10)
        names = [dr.name for dr in drivers]
        ok = motion is None and "over-determine" in err and all(n in err for n in names[1:])
        rows.append(("redundant", name, "-", "-", err[:90] or events_text(motion), f"{sec:.2f}",
                     "ok" if ok else "WRONG"))
    # undriven freedom
    fb = replace(base, drivers=())
    motion, err, sec = run(compile_model(fb), 1.0, 10)
    rows.append(("undriven", "four-bar", "-", "-", err[:110] or events_text(motion), f"{sec:.2f}",
                 "ok" if motion is None and "free" in err else "WRONG"))
    spec, _ = slider_crank(0.0, "2*pi*t", extra=True)
    model = compile_model(spec)
    motion, err, sec = run(model, 1.0, 10)
    named = "hang" in err or "pendulum" in err
    rows.append(("undriven", "extra pendulum", "-", "-", err[:110] or events_text(motion), f"{sec:.2f}",
                 "ok" if motion is None and named else ("event" if motion is None else "WRONG")))
    motion, err, sec = run(model, 1.0, 10, free_dof="minimal")
    if motion is not None:
        k = motion.part_index("pendulum")
        still = np.abs(motion.position[:, k] - motion.position[0, k]).max()
        th = 2 * np.pi * motion.time
        x = R * np.cos(th) + np.sqrt(L**2 - (R * np.sin(th)) ** 2)
        xerr = np.abs(motion.position[:, motion.part_index("slider"), 0] - x).max()
        rows.append(("free_dof=minimal", "extra pendulum", f"slider {fmt(xerr)}", fmt(still), events_text(motion),
                     f"{sec:.2f}", "ok" if still < 1e-12 and xerr < 1e-9 else "WRONG"))
    else:
        rows.append(("free_dof=minimal", "extra pendulum", "-", "-", err[:90], f"{sec:.2f}", "WRONG"))
    return table("2. singular and locking cases, redundant and missing drivers",
                 ["case", "frames", "setting", "pos err", "events / error", "s", "verdict"], rows)


# ----------------------------------------------------------------------------- section 3


def one_body(joint_type, drivers, axis=(0, 0, 1)):
    return parse_model({
        "parts": {"ground": {"fixed": True}, "body": {"position": [0.2, 0, 0]}},
        "joints": [{"name": "j", "type": joint_type, "parts": ["ground", "body"], "origin": [0, 0, 0],
                    "axis": list(axis)}],
        "drivers": drivers,
    }, source="<sweep>")


def section_drivers(quick):
    from scipy.interpolate import CubicSpline

    rows = []
    frames = [3, 50] if quick else [2, 3, 50, 2000]
    exprs = {
        "polynomial": ("0.3*t**3 - 0.5*t**2 + 2*t", lambda t: (0.3 * t**3 - 0.5 * t**2 + 2 * t,
                                                                 0.9 * t**2 - t + 2, 1.8 * t - 1)),
        "sin": ("1.5*sin(3*t) + 0.2", lambda t: (1.5 * np.sin(3 * t) + 0.2, 4.5 * np.cos(3 * t),
                                                 -13.5 * np.sin(3 * t))),
        "piecewise": ("min(t, 0.55) + max(t - 1.27, 0)**3",
                      lambda t: (np.minimum(t, 0.55) + np.maximum(t - 1.27, 0) ** 3,
                                 (t < 0.55) * 1.0 + 3 * np.maximum(t - 1.27, 0) ** 2, 6 * np.maximum(t - 1.27, 0))),
        "beyond pi": ("7*t", lambda t: (7 * t, 7 + 0 * t, 0 * t)),
    }
    tab = [[0, 0], [0.5, 0.2], [1.0, 0.1], [1.5, 0.4], [2.0, 0.3]]
    tables = {"table 5 rows": tab, "table 2 rows": [[0, 0.1], [2.0, 0.5]], "table 3 rows": tab[::2],
              "table past end": [[0, 0], [0.7, 0.3], [1.2, 0.2], [1.6, 0.5]]}
    for name, rows_t in tables.items():
        data = np.asarray(rows_t, float)
        sp = CubicSpline(data[:, 0], data[:, 1], bc_type="natural" if len(data) == 2 else "not-a-knot")
        exprs[name] = (rows_t, (lambda s: lambda t: (s(t), s(t, 1), s(t, 2)))(sp))
    for kind, jtype, measure in (("revolute", "revolute", "angle"), ("prismatic", "prismatic", "disp")):
        for name, (law, f) in exprs.items():
            if kind == "prismatic" and name == "beyond pi":
                continue
            key = "table" if isinstance(law, list) else "expression"
            model = compile_model(one_body(jtype, [{"joint": "j", key: law}]))
            for nf in frames:
                motion, err, sec = run(model, 2.0, nf - 1, compiled="compile" if nf >= 1500 else None)
                if motion is None:
                    rows.append((kind, name, nf, "-", "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
                    continue
                t = motion.time
                v, v1, v2 = f(t)
                k = motion.part_index("body")
                if kind == "revolute":
                    got = quat_angle(motion.quaternion[:, k], [0, 0, 1])
                    pe = max(np.abs(wrap(got - v)).max(), np.abs(motion.coordinate("j.angle") - v).max())
                    ve = np.abs(motion.angular_velocity[:, k, 2] - v1).max()
                    ae = np.abs(motion.angular_acceleration[:, k, 2] - v2).max()
                else:
                    pe = max(np.abs(motion.position[:, k, 2] - 0.0 - v).max(),
                             np.abs(motion.coordinate("j.disp") - v).max())
                    ve = np.abs(motion.velocity[:, k, 2] - v1).max()
                    ae = np.abs(motion.acceleration[:, k, 2] - v2).max()
                ve /= max(1.0, np.abs(v1).max())
                ae /= max(1.0, np.abs(v2).max())
                good = pe < 1e-9 and ve < 1e-7 and ae < 1e-5 and motion.complete
                rows.append((kind, name, nf, fmt(pe), fmt(ve), fmt(ae), events_text(motion), f"{sec:.2f}",
                             "ok" if good else "WRONG"))
    # a cylindrical joint's two coordinates
    model = compile_model(one_body("cylindrical", [{"joint": "j", "coordinate": "angle", "expression": "5*t"},
                                                   {"joint": "j", "coordinate": "disp", "expression": "0.1*t**2"}]))
    for nf in frames:
        motion, err, sec = run(model, 2.0, nf - 1, compiled="compile" if nf >= 1500 else None)
        if motion is None:
            rows.append(("cylindrical", "angle 5t, disp 0.1t^2", nf, "-", "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
            continue
        t = motion.time
        k = motion.part_index("body")
        ang = quat_angle(motion.quaternion[:, k], [0, 0, 1])
        # the part's frame origin (0.2, 0, 0) turns about z and rises with the slide
        pos = np.stack([0.2 * np.cos(5 * t), 0.2 * np.sin(5 * t), 0.1 * t**2], axis=-1)
        pe = max(np.abs(wrap(ang - 5 * t)).max(), np.abs(motion.position[:, k] - pos).max(),
                 np.abs(motion.coordinate("j.angle") - 5 * t).max(),
                 np.abs(motion.coordinate("j.disp") - 0.1 * t**2).max())
        ve = max(np.abs(motion.angular_velocity[:, k, 2] - 5).max() / 5,
                 np.abs(motion.velocity[:, k, 2] - 0.2 * t).max())
        ae = np.abs(motion.acceleration[:, k, 2] - 0.2).max()
        good = pe < 1e-9 and ve < 1e-7 and ae < 1e-5 and motion.complete
        rows.append(("cylindrical", "angle 5t, disp 0.1t^2", nf, fmt(pe), fmt(ve), fmt(ae), events_text(motion),
                     f"{sec:.2f}", "ok" if good else "WRONG"))
    return table("3. drivers", ["joint", "driver", "frames", "pos err", "vel rel", "acc rel", "events", "s", "verdict"],
                 rows)


# ----------------------------------------------------------------------------- section 4


def rssr_spec():
    """The RSUR sample with its universal joint made spherical: R-S-S-R, the coupler free to spin."""
    spec = load(SAMPLES / "rsur_spatial.cadmotion.toml")
    joints = tuple(replace(j, type="spherical") if j.name == "cross" else j for j in spec.joints)
    return replace(spec, joints=joints)


def bennett_spec(a=0.3, alpha=0.5, drivers=()):
    frames = bennett_frames(a, alpha)
    parts = ["ground", "l1", "l2", "l3"]
    joints = [{"name": f"j{k}", "type": "revolute", "parts": [parts[k], parts[(k + 1) % 4]],
               "origin": [float(v) for v in frames[k][:3, 3]], "axis": [float(v) for v in frames[k][:3, 2]]}
              for k in range(4)]
    return parse_model({"parts": {"ground": {"fixed": True}, "l1": {}, "l2": {}, "l3": {}}, "joints": joints,
                        "drivers": list(drivers)}, source="<sweep>")


def section_spatial(quick):
    rows = []
    rsur = load(SAMPLES / "rsur_spatial.cadmotion.toml")
    for name, spec, rank_dof, grubler in (("rsur", replace(rsur, drivers=()), 1, 1),
                                          ("rssr", replace(rssr_spec(), drivers=()), 2, 2),
                                          ("bennett", bennett_spec(), 1, -2)):
        mob = mobility(compile_model(spec))
        ok = mob.dof == rank_dof and mob.gruebler == grubler
        rows.append((name, "mobility", f"rank dof {mob.dof} (ref {rank_dof})",
                     f"Grübler {mob.gruebler} (ref {grubler})",
                     f"redundant {len(mob.redundant)}", "-", "ok" if ok else "WRONG"))
    model = compile_model(rssr_spec())
    for nf in ([3, 101] if quick else [2, 3, 11, 101, 2001]):
        motion, err, sec = run(model, 3.0, nf - 1, free_dof="minimal")
        if motion is None:
            rows.append(("rssr", f"{nf} frames, free_dof=minimal", "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
            continue
        k = motion.part_index("rocker")
        psi = rsur_psi(2 * np.pi * motion.time)
        got = quat_angle(motion.quaternion[:, k], [0, 1, 0])
        fine = rsur_psi(2 * np.pi * np.linspace(0, 3, 3001))
        psi += 2 * np.pi * np.round((np.interp(motion.time, np.linspace(0, 3, 3001), fine) - psi) / (2 * np.pi))
        pe = np.abs(got - psi).max()
        rows.append(("rssr", f"{nf} frames, free_dof=minimal", "rocker angle", fmt(pe), events_text(motion),
                     f"{sec:.2f}", "ok" if pe < 1e-8 and motion.complete else "WRONG"))
    # the Bennett linkage driven at its first joint (0.5 rad/s for 2 s): each link carries the next joint's origin
    # where the Denavit–Hartenberg loop, closed in the script, puts it
    model = compile_model(bennett_spec(drivers=[{"joint": "j0", "expression": "0.5*t"}]))
    for nf in ([3, 101] if quick else [2, 3, 11, 101, 2001]):
        motion, err, sec = run(model, 2.0, nf - 1)
        if motion is None:
            rows.append(("bennett", f"{nf} frames", "-", "-", err[:60], f"{sec:.2f}", "WRONG"))
            continue
        want = bennett_joint_origins(0.7 + 0.5 * motion.time)
        pe = 0.0
        for k, link in enumerate(("l1", "l2", "l3")):
            X0 = motion.pose(link, motion.time[0])
            local = np.linalg.solve(X0, np.r_[want[k, 0], 1.0])
            got = np.array([(motion.pose(link, t) @ local)[:3] for t in motion.time])
            pe = max(pe, float(np.abs(got - want[k]).max()))
        rows.append(("bennett", f"{nf} frames, j0 at 0.5 rad/s", "joint origins (m)", fmt(pe), events_text(motion),
                     f"{sec:.2f}", "ok" if pe < 1e-8 and motion.complete else "WRONG"))
    return table("4. spatial loops", ["case", "run", "quantity", "error / value", "events", "s", "verdict"], rows)


# ----------------------------------------------------------------------------- section 5


def section_files(quick):
    rows = []
    files = (sorted(DATA.glob("asmt-*/*.asmt")) + sorted(DATA.glob("fcstd-*/*.FCStd"))
             + sorted(DATA.glob("step-*/*.st*p")) + sorted(DATA.glob("urdf-*/*.urdf")))
    if quick:
        files = files[:5]
    env = dict(os.environ)
    for f in files:
        t0 = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-m", "cadmotion.plugin.cli", "check", str(f), "--no-interference"],
                                 capture_output=True, text=True, timeout=600, env=env)
            rc, text = out.returncode, (out.stdout + out.stderr)
        except subprocess.TimeoutExpired:
            rc, text = "timeout", ""
        sec = time.perf_counter() - t0
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln.lower() or "verdict" in ln.lower() or "ok" in ln.lower()),
                     lines[0] if lines else "")
        crashed = "Traceback" in text or rc == "timeout"
        rows.append((f.parent.name + "/" + f.name, rc, first[:110], f"{sec:.1f}", "WRONG" if crashed else "ok"))
    return table("5. files written by other tools (cadmotion check)", ["file", "exit", "first line", "s", "verdict"],
                 rows)


def section_self_check(quick):
    from cadmotion.kernel.kinematic_checks import check_continuity

    rows = []
    # the crank-rocker on its two assembly branches, one turn in 1 s; every frame k in turn taken from the other
    # branch (a valid pose the linkage cannot reach): the run's continuity check must flag each one; the runs
    # themselves must pass it; velocities and accelerations scaled by 1 + ε must be flagged from ε on
    for nf in ([11, 31, 101, 1001] if quick else [6, 11, 31, 101, 1001, 2001]):
        t0 = time.perf_counter()
        runs = [run(compile_model(four_bar(0.1, 0.3, 0.25, 0.3, 0.5, "2*pi*t", side=side)[0]), 1.0, nf - 1)[0]
                for side in (1, -1)]
        own = [m.invariants.checks[0].max_drift if m.invariants.checks else float("nan") for m in runs]
        false_alarm = any(m.invariants.broken for m in runs)
        ks = range(1, nf) if nf <= 101 else range(1, nf, (nf - 1) // 100)
        checks = [check_continuity(spliced(runs[0], runs[1], k), 1e-10) for k in ks]
        unchecked = sum(c is None for c, _ in checks)
        flagged = sum(c is not None and c.broken for c, _ in checks)
        scaled = {}
        for eps in (1e-3, 1e-2, 1e-1):
            wrong = spliced(runs[0], runs[0], 0)
            for name in ("velocity", "angular_velocity", "acceleration", "angular_acceleration"):
                getattr(wrong, name)[:] *= 1 + eps
            c, _ = check_continuity(wrong, 1e-10)
            scaled[eps] = "-" if c is None else f"{c.max_drift:.2g}"
        verdict = "WRONG" if false_alarm else ("ok" if flagged + unchecked == len(checks) else "missed")
        rows.append(("crank-rocker", nf, f"{own[0]:.2g} / {own[1]:.2g}", f"{flagged}/{len(checks) - unchecked}",
                     unchecked, " ".join(f"{v}" for v in scaled.values()), f"{time.perf_counter() - t0:.2f}", verdict))
    return table("6. the run's own continuity check",
                 ["case", "frames", "own check (× allowance)", "other-branch frames flagged", "unchecked (coarse)",
                  "v, a × 1.001 / 1.01 / 1.1 (× allowance)", "s", "verdict"], rows)


SECTIONS = {1: section_frames, 2: section_singular, 3: section_drivers, 4: section_spatial, 5: section_files,
            6: section_self_check}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer frame counts, tolerances and files")
    parser.add_argument("--section", type=int, action="append", choices=sorted(SECTIONS))
    args = parser.parse_args(argv)
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())
    totals = {}
    for n in args.section or sorted(SECTIONS):
        for k, v in SECTIONS[n](args.quick).items():
            totals[k] = totals.get(k, 0) + v
    print("\nall sections:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))


if __name__ == "__main__":
    main()
