"""How far off is the motion? A run's global error, estimated from a companion run at a finer setting.

An integrator's tolerance bounds the error of each step, not of the motion: a motion that amplifies errors (a
tumbling arm, a pendulum released near its top, anything chaotic or near a bifurcation) carries every step's
error forward, multiplied, and a run can keep its energy, its joints and its step count while its parts end up
metres from where the equations take them. None of the checks of :mod:`.invariants` sees that: they bound what a
step may change, not what the steps' errors grow into. Measured (``benchmarks/urdf_peers.py sweep``, the Panda
arm tumbling for 2 s, against Pinocchio): RK4 at 8 ms 0.8 m off, index-3 generalized-α at 2 ms 0.5 m, BDF at
rtol 1e-6 up to 0.12 m, all reported as success.

The estimate
------------
Every dynamic run (:func:`.forward.run`) is run a second time from the same initial state, on the same
formulation and integrator, at a tenth of its tolerances (:data:`TOL_FACTOR`) or half its step
(:data:`STEP_FACTOR`), and the two motions are compared at the output frames. The global error e of a method
scales with its setting: for an error-controlled integrator e(c tol) ≈ c e(tol) (tolerance proportionality, what
scipy's and the compiled loops' error control aim at), for a fixed-step method of global order p (its local order
less one) e(c h) ≈ c^p e(h). With the companion at c < 1 the difference of the two runs is Δ = (1 − c^s) e, s = 1
or p, so

    e ≈ Δ / (1 − c^s)      (Δ · 10/9 at a tenth of the tolerances; Δ · 16/15 for RK4 at half the step).

The companion is finer, not coarser, although a coarser one would cost less (DOP853 needs 0.75 of the steps at
ten times the tolerance, against 1.33 at a tenth): e ≈ Δ / (c^s − 1) from a coarser run assumes its error is c^s
times the run's, and where the motion amplifies errors it is not — a pendulum released 1° below its top, 6 s,
DOP853 at rtol 1e-6: 9.5e-3 m off its closed form, estimated 2.1e-4 m from the run at 1e-5, 1.0e-2 m from the run
at 1e-7; RK4 at 8 ms on the Panda: 0.8 m off, 0.09 m from the run at 16 ms. A finer companion only needs to be
closer to the equations' motion than the run is. Closed loops cap a run's tolerances (:data:`.contract.LOOP_TOL`);
the companion takes a tenth of the capped ones. A fixed step is cut by the parts' turns
(:func:`.integrators.fixed_step`), so c is then the ratio of the two runs' step counts, and a companion that
took the run's steps gives no estimate.

Where the motion amplifies errors so much that the run and its companion are both far off (a chaotic motion at a
loose tolerance: the errors saturate at the size of the motion instead of scaling with the setting), they can be
closer to each other than to the equations' motion: the double pendulum sample at rtol = atol = 1e-4 over 10 s is
0.96 m off a run at 1e-12, and its companion at 1e-5 only 0.24 m from it. So an estimate that comes within
:data:`SECOND_LOOK` (4) of its allowance without passing it is taken again from a second companion one setting
finer still (a hundredth of the tolerances, a quarter of the step), and the larger of the two is kept; a run
comfortably inside or beyond its allowance pays for one companion only.

Measured on the pendulum released 1° below its top (6 s; ``tests/kernel/test_global_error.py``, the error against
the elliptic-function closed form in parentheses): RK4 at 20 ms 2.0e-3 m (2.0e-3), at 5 ms 2.0e-6 (1.9e-6);
DOP853 at rtol 1e-10 4.9e-7 (5.0e-7), 1e-8 1.2e-4 (1.1e-4), 1e-6 1.0e-2 (9.5e-3); BDF at rtol 1e-6 4.3e-2
(4.6e-2); generalized-α at 5 ms 3.8e-4 (3.5e-4). The estimate can fall short where the run's and the companion's
errors happen to agree: the absolute formulation's DOP853 at rtol 1e-6 and 1e-7 is 9.2e-6 and 9.9e-6 rad off on
the same pendulum, and the estimate reads 7.0e-7 m for 8.4e-6 m — an estimate, not a bound.

The error of a part at a frame is |Δr_c| + ρ θ, r_c its centre of mass (m), θ the angle (rad) between the two
runs' orientations and ρ = √(tr J / m) its radius of gyration (m, the reach of its mass: a turn θ moves its mass
by about ρ θ; 0 for a massless part).

The allowance
-------------
Part by part: with L its motion (m, the largest |r_c(t) − r_c(t0)| + ρ θ(t, t0) over the frames), ω the
motion's rate (1/s, :attr:`.invariants.InvariantReport.rate`) and T the span (s). A run that does not amplify
errors accumulates its steps' errors about linearly in time — the phase of an oscillation drifts, its
amplitude does not grow — so an error-controlled run is allowed what its tolerance warrants,

    A = max(min(ACCUMULATION (rtol L + atol) (1 + ω T / 2π), LOOSEST_SHARE L), VISIBLE_SHARE L + ACCUMULATION atol),

with :data:`ACCUMULATION` = 100 (two orders of magnitude over the tolerance per period of the motion, as the
step count's :data:`.invariants.STEP_FACTOR` over its estimate) and at most :data:`LOOSEST_SHARE` = 0.1 of the
motion however loose the tolerance, but never less than :data:`VISIBLE_SHARE` L (a thousandth of the part's
motion: what a drawing or an animation of it resolves). The floor keeps a chaotic motion run at a tight
tolerance from being called wrong for errors no one could see: the double pendulum sample over 10 s at rtol
1e-10 is 1.5e-6 m off a run at 1e-13 (on a 4.25 m motion), far beyond 1e-10 L per period and far below what
matters; the report still shows the estimate. A fixed-step run asks for no tolerance: it is allowed
:data:`FIXED_SHARE` L + ACCUMULATION atol (a hundredth of the part's motion; atol then the projection / Newton
tolerance) — what a fixed step chosen for speed may cost: the generalized-α step of 10 ms the automatic choice first
takes for the flyball governor without numba is 4.2e-3 m off a Radau run at 1e-11 on the slider's 0.44 m, 0.94 %
(and is then halved: "An automatic step", below). A tenth
(the share :data:`.invariants.STEP_ERROR_ALLOWED` allows a fixed step's phase) let the penalty formulation's RK4
stand 4.3 mm off on a tumbling arm; a hundredth still does (0.4 % of its metre), a thousandth would flag the
automatic choice's own step above.

Part by part, because one part's motion says nothing of another's accuracy: a finger sliding 6 m off the
Panda's hand (its limits left out) must not let the arm's links be 0.8 m off. Beyond it, ``motion.error`` is
broken at the first frame beyond, naming the part: the motion is not determined to the tolerance from there
on (tighten the tolerance or the step; a chaotic motion no setting determines for long — its statistics may
still be right).

An automatic step
-----------------
A fixed step the automatic choice took (:func:`.stiffness.default_method`: index-3 generalized-α where the compiled
Radau loop does not run) answers for its own accuracy: where its estimate comes within :data:`REFINE_SHARE` (a
quarter) of its allowance, or beyond, the step is halved as often as e ∝ h^p asks (:func:`refinement`; at most
:data:`MAX_HALVINGS` times), and the finer run is the result, estimated in turn. Each finer run is a companion
already run where there is one (:meth:`Rerun.solve`): a run halved once costs what its estimate did (the run, its
companion at half the step, and the second look at a quarter, which is the finer run's companion). Measured
(``tests/kernel/test_automatic_step.py``, two discs on a soft and a stiff spring against their closed form): over
8 s the 10 ms step was 2.4 times beyond its allowance and reported broken; halved twice it is 0.15 of it, the
estimate equal to the closed form's error to three digits. The flyball governor: 5 ms, 1.0e-3 m off on the
slider (0.24 of its allowance), in the time its estimate took before. A step the user sets is kept, and its
estimate reported.

An automatic tolerance
----------------------
The tolerances the automatic choice ran at (:data:`.forward.DEFAULT_RTOL`, or the choice's own) answer for
their run's accuracy too, but only where it is beyond its allowance: a run within it is as accurate as its
tolerance asks. They are then tightened tenfold as often as e ∝ tol asks for the estimate to come within
:data:`REFINE_SHARE` of the allowance (:func:`tightening`; at least once, at most :data:`MAX_TIGHTENINGS` times in
all), the run at the tighter tolerances — the companion already run for the first tenfold — being the result,
estimated in turn and judged against its own allowance. Where that allowance is set by the tolerance (the
tolerance term above the floor), it shrinks with it, and the run stays flagged, more accurate. Measured: the
pendulum above with the default made a hundred times looser (rtol 1e-6, ``tests/kernel/test_global_error.py``),
4.5 times beyond its allowance, is tightened twice, to 1.1e-4 m off the closed form (0.05 of its allowance);
a stiff spring between two bodies that the automatic choice runs on DOP853 without the compiled library,
5.1e-2 m off at rtol 1e-8 (17 times its allowance), ends at rtol 1e-10, 3.8e-4 m off a Radau run at 1e-11,
in 2.8 times the wall time. A tolerance the user sets is kept, and its estimate reported.

A formulation that holds the joints only approximately by design makes its own error beside the integrator's: the
penalty formulation's joints have a compliance 1/α, and the motion departs from the rigid joints' by an amount
first order in it. Its companion also takes ten times the penalty (:meth:`.contract.Formulation.finer_options`),
so that departure is in the estimate too. What it does not see: an error both runs share — the same wrong
equation (the model's), an event located to a time tolerance that does not scale with rtol.
``motion.error`` is skipped (``InvariantReport.skipped`` says why) when the run stopped early, when the
companion stopped where the run did not (the companion's reason given), when the companion would take more than
:data:`COMPANION_STEPS` times the run's steps (a finer setting can cost far more than its share: the penalty
formulation's four-bar at rtol 1e-10 on the numpy path takes 94 steps, its companion at 1e-11 with ten times the
penalty 10,725 — the penalty matrix's round-off, ten times larger, is then above the tolerance), when the run took
:data:`.conditioning.SLOW_STEPS` steps or more (a run of hours is not doubled unasked: its companion would take
more steps still), or when ``estimate_error=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from .conditioning import SLOW_STEPS
from .integrators import REGISTRY
from .invariants import Invariant
from .mass import rotation

__all__ = ["Companion", "Rerun", "companion_setting", "pose_error", "motion_sizes", "allowances", "check_global_error",
           "estimate_global_error", "TOL_FACTOR", "STEP_FACTOR", "ACCUMULATION", "LOOSEST_SHARE", "VISIBLE_SHARE",
           "FIXED_SHARE", "SECOND_LOOK", "COMPANION_STEPS", "REFINE_SHARE", "MAX_HALVINGS", "MAX_TIGHTENINGS",
           "refinement", "tightening", "supersede_step_error"]

#: the companion's tolerances are the run's divided by this (rtol and atol)
TOL_FACTOR = 10.0
#: the companion's step is the run's divided by this (fixed-step methods)
STEP_FACTOR = 2.0
#: the global error an error-controlled run may reach, per unit of rtol L + atol and of 1 + ω T / 2π
ACCUMULATION = 100.0
#: the share of a part's motion an error-controlled run's global error may reach however loose its tolerance
LOOSEST_SHARE = 0.1
#: a first estimate within this factor of its allowance (and not beyond) is looked at again from a second companion
#: one setting finer again (module docstring)
SECOND_LOOK = 4.0
#: the share of a part's motion below which an error-controlled run's global error is near enough, whatever its
#: tolerance warrants (the floor of its allowance)
VISIBLE_SHARE = 1e-3
#: the share of a part's motion a fixed-step run's global error may reach (it asks for no tolerance)
FIXED_SHARE = 1e-2
#: an automatic fixed step (:func:`.stiffness.default_method`) whose estimate comes within this share of its
#: allowance is made finer (:func:`refinement`): a model a little faster than the one it was measured on stays inside
REFINE_SHARE = 1.0 / SECOND_LOOK
#: ... by at most this many halvings (a step an eighth of the automatic one)
MAX_HALVINGS = 3
#: an automatic tolerance whose run is beyond its allowance is tightened by at most this many factors
#: :data:`TOL_FACTOR` (:func:`tightening`: the default rtol 1e-8 to 1e-10)
MAX_TIGHTENINGS = 2
#: a companion may take this many times the run's steps (and this many times 100 at least): where a finer setting
#: costs more (round-off or a stiffer approximation at it), it stops there and the estimate is left out, saying why
#: (the Python and scipy loops' steps; a compiled loop's, microseconds each, are not cut)
COMPANION_STEPS = 10


@dataclass(frozen=True)
class Companion:
    """The setting of a companion run and how its difference becomes the run's error.

    Attributes
    ----------
    rtol, atol : its tolerances (a fixed-step method's: the run's own, of its projections and Newton iterations)
    dt : its step (s; None for an error-controlled method)
    factor : the setting's factor c (< 1: finer than the run; a fixed step's, from the two runs' step counts)
    exponent : s, the error's exponent in the setting (1 for a tolerance, the global order p for a step)
    how : the setting in words, for the report
    depth : how many settings finer than the run (the formulation's own approximation is :data:`TOL_FACTOR` ** depth
        times finer too, :meth:`Rerun.companion`)
    """

    rtol: Optional[float]
    atol: Optional[float]
    dt: Optional[float]
    factor: float
    exponent: float
    how: str
    depth: int = 1

    @property
    def scale(self):
        """e / Δ: the run's error per unit of the two runs' difference (module docstring)."""
        return 1.0 / abs(self.factor ** self.exponent - 1.0)

    def kwargs(self):
        """The keyword arguments of the companion's :meth:`.contract.Formulation.solve` (bar the integrator)."""
        return dict(rtol=self.rtol, atol=self.atol, dt=self.dt)


def companion_setting(integrator, rtol, atol, dt, depth=1):
    """The companion of a run (module docstring): the tolerances ``rtol``, ``atol`` the integrator ran at divided by
    :data:`TOL_FACTOR` ** ``depth``, or the step ``dt`` (s) of a fixed-step method by :data:`STEP_FACTOR` ** depth."""
    info = REGISTRY[integrator]
    if info.fixed_step:  # (its tolerances, the projection's and Newton's, kept)
        c = STEP_FACTOR ** -depth
        return Companion(rtol, atol, dt * c, c, max(info.error_order - 1, 1), f"the step {dt * c:.3g} s", depth)
    rtol, atol, c = float(np.max(rtol)), float(np.max(atol)), TOL_FACTOR ** -depth
    return Companion(rtol * c, atol * c, None, c, 1.0, f"rtol {rtol * c:.3g}, atol {atol * c:.3g}", depth)


def refinement(check, integrator, halved=0):
    """How many times to halve an automatic fixed step of ``integrator`` already halved ``halved`` times, for its
    estimate ``check`` (``motion.error``) to come within :data:`REFINE_SHARE` of its allowance: as many halvings as
    e ∝ h^p asks (p the global order), at least one, at most :data:`MAX_HALVINGS` in all; 0 where the step stands
    (within the share, or halved as far as it goes)."""
    ratio = check.max_drift / check.allowed if check.allowed > 0 else np.inf
    if ratio <= REFINE_SHARE or halved >= MAX_HALVINGS:
        return 0
    order = max(REGISTRY[integrator].error_order - 1, 1)
    need = np.log2(ratio / REFINE_SHARE) / order if np.isfinite(ratio) else np.inf
    return int(min(max(np.ceil(need), 1), MAX_HALVINGS - halved))


def tightening(check, tightened=0):
    """How many factors :data:`TOL_FACTOR` to tighten an automatic error-controlled run's tolerances, already
    tightened ``tightened`` times, whose estimate ``check`` (``motion.error``) is beyond its allowance: as many as
    e ∝ tol asks for it to come within :data:`REFINE_SHARE` of the allowance, at least one, at most
    :data:`MAX_TIGHTENINGS` in all; 0 where the run stands (within its allowance, or tightened as far as it goes).
    A run within its allowance is not tightened: it is as accurate as its tolerance asks (an automatic fixed step,
    chosen for speed, is kept within a share of it, :func:`refinement`)."""
    ratio = check.max_drift / check.allowed if check.allowed > 0 else np.inf
    if ratio <= 1.0 or tightened >= MAX_TIGHTENINGS:
        return 0
    need = np.log(ratio / REFINE_SHARE) / np.log(TOL_FACTOR) if np.isfinite(ratio) else np.inf
    return int(min(max(np.ceil(need), 1), MAX_TIGHTENINGS - tightened))


def _frame_poses(motion, bodies, idx):
    """(r_c (nt, k, 3) m, quaternions (nt, k, 4)) of the bodies at every frame of a motion."""
    q = np.asarray(motion.quaternion)[:, idx]
    A = rotation(q)
    return np.asarray(motion.position)[:, idx] + (A @ bodies.com[None, :, :, None])[..., 0], q


def _turn(qa, qb):
    """The angle (rad) between two arrays of unit quaternions, elementwise over the last axis
    (4 arcsin(|qa ∓ qb| / 2), the sign that makes it the shorter: exact to round-off near 0)."""
    s = np.sign(np.sum(qa * qb, axis=-1, keepdims=True))
    s = np.where(s == 0, 1.0, s)
    return 4.0 * np.arcsin(np.clip(np.linalg.norm(qa - s * qb, axis=-1) / 2.0, 0.0, 1.0))


def _gyration(bodies):
    """ρ = √(tr J / m) (m) per body; 0 for a massless one."""
    tr = np.trace(bodies.inertia, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.sqrt(np.where(bodies.mass > 0, tr / np.where(bodies.mass > 0, bodies.mass, 1.0), 0.0))
    return np.nan_to_num(rho)


def pose_error(a, b, bodies):
    """(nt, k) m: |Δr_c| + ρ θ of each moving part between motions ``a`` and ``b`` at their common frames (the
    first min(a.nt, b.nt))."""
    n = min(a.nt, b.nt)
    ra, qa = _frame_poses(a, bodies, [a.part_index(name) for name in bodies.names])
    rb, qb = _frame_poses(b, bodies, [b.part_index(name) for name in bodies.names])
    return np.linalg.norm(ra[:n] - rb[:n], axis=-1) + _gyration(bodies)[None] * _turn(qa[:n], qb[:n])


def motion_sizes(motion, bodies):
    """(k,) m: each moving part's motion, the largest |r_c(t) − r_c(t0)| + ρ θ(t, t0) over the frames."""
    r, q = _frame_poses(motion, bodies, [motion.part_index(name) for name in bodies.names])
    d = np.linalg.norm(r - r[:1], axis=-1) + _gyration(bodies)[None] * _turn(q, q[:1])
    return np.max(np.where(np.isfinite(d), d, 0.0), axis=0, initial=0.0)


def allowances(sizes, *, rtol, atol, fixed_step, rate, span):
    """(k,) m: the global error each part may reach (module docstring, "The allowance")."""
    if fixed_step:
        return FIXED_SHARE * sizes + ACCUMULATION * atol
    visible = VISIBLE_SHARE * sizes + ACCUMULATION * atol
    warranted = ACCUMULATION * (rtol * sizes + atol) * (1.0 + rate * span / (2 * np.pi))
    return np.maximum(np.minimum(warranted, LOOSEST_SHARE * sizes), visible)


def check_global_error(motion, companion_motion, companion, bodies, *, rtol, atol, fixed_step, rate):
    """``motion.error``: the run's global error estimated from its companion, against its allowance, part by part
    (module docstring). ``rtol``, ``atol`` the tolerances the run ran at (for a fixed-step run atol is the
    projection / Newton tolerance), ``rate`` ω (1/s)."""
    t = np.asarray(motion.time, float)
    est = companion.scale * pose_error(motion, companion_motion, bodies)
    sizes = motion_sizes(motion, bodies)
    allowed = allowances(sizes, rtol=float(np.max(rtol)), atol=float(np.max(atol)), fixed_step=fixed_step,
                         rate=rate, span=float(t[-1] - t[0]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isfinite(est), est / allowed[None], np.inf)
    k, b = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    bad = np.flatnonzero(np.any(~(ratio <= 1.0), axis=1))
    description = (f"the global error of {bodies.names[b]}'s pose (|Δr_c| + ρ θ, m; it moves {sizes[b]:.3g} m), "
                   f"estimated from the same run at {companion.how} (×{companion.scale:.3g} of their difference)")
    return Invariant("motion.error", description, "m", float(est[k, b]), float(t[k]), float(allowed[b]),
                     float(t[bad[0]]) if bad.size else None, float(sizes[b]))


@dataclass(frozen=True)
class Rerun:
    """What it takes to run a motion again at a finer setting.

    Attributes
    ----------
    model : the compiled Model (the companion's frames become a Motion of it)
    make_form : ``make_form(factor)`` builds the run's formulation afresh at its initial state, its own approximation
        ``factor`` times finer (:meth:`.contract.Formulation.finer_options`)
    finer_options : ``finer_options(factor)``, those options by name (for the report), or None
    times : the output times (s)
    q0, v0 : the initial state
    integrator : the integrator the run took
    solved : the runs made so far, by their setting (:meth:`solve`)
    """

    model: object
    make_form: Callable
    finer_options: Optional[Callable]
    times: np.ndarray
    q0: np.ndarray
    v0: np.ndarray
    integrator: str
    solved: dict = field(default_factory=dict, compare=False)

    def companion(self, result, depth):
        """The :class:`Companion` of ``result`` (a run of this motion) ``depth`` settings finer:
        :func:`companion_setting` at the tolerances it ran at and its step, ``how`` naming the formulation's own
        finer options."""
        rtol, atol = result.ran_tolerances(result.rtol, result.atol)
        companion = companion_setting(self.integrator, rtol, atol, result.dt, depth)
        finer = self._finer(depth)
        if finer:
            named = ", ".join(f"{k} {v:.3g}" for k, v in finer.items())
            companion = replace(companion, how=f"{companion.how} with {named}")
        return companion

    def solve(self, companion, *, max_steps=None):
        """(formulation, :class:`~.contract.DynamicsResult`): the motion run again at ``companion``'s setting on
        ``make_form(TOL_FACTOR ** companion.depth)``, or the run made before at the same setting and options where it
        succeeded (a companion at a quarter of the step is the next companion of a run at half the step)."""
        setting = companion.kwargs()
        key = (tuple(sorted(self._finer(companion.depth).items())),
               tuple((name, None if value is None else tuple(np.ravel(value).tolist()))  # per-component tolerances too
                     for name, value in sorted(setting.items())))
        found = self.solved.get(key)
        if found is None or not found[1].success:
            form = self.make_form(TOL_FACTOR ** companion.depth)
            found = form, form.solve(self.times, self.q0, self.v0, integrator=self.integrator, max_steps=max_steps,
                                     **setting)
            self.solved[key] = found
        return found

    def _finer(self, depth):
        """The formulation's options ``TOL_FACTOR ** depth`` times finer, by name ({} for none)."""
        return self.finer_options(TOL_FACTOR ** depth) if self.finer_options is not None else {}


def estimate_global_error(report, rerun, result, motion, bodies):
    """Run the companion of a run (module docstring; the second one where the first's estimate comes within
    :data:`SECOND_LOOK` of its allowance) and add ``motion.error`` to its :class:`~.invariants.InvariantReport`
    (or say in ``report.skipped`` why there is none).

    ``rerun`` is how the run is run again (:class:`Rerun`); ``result`` and ``motion`` are the run's
    (:class:`~.contract.DynamicsResult`, Motion); ``bodies`` its moving parts' mass properties."""
    if not motion.complete or motion.nt < 2 or not len(bodies.names):
        report.skipped.append("motion.error: " + ("no moving part" if motion.nt >= 2 and motion.complete
                                                  else "the run stopped early"))
        return
    if result.nsteps >= SLOW_STEPS:
        report.skipped.append(f"motion.error: the run took {result.nsteps} steps; a companion at a tenth of its "
                              f"tolerances would take more (it is left to you: run again at a tenth of them and "
                              f"compare)")
        return
    rtol, atol = result.ran_tolerances(result.rtol, result.atol)
    check = None
    for depth in (1, 2):
        found = _companion_check(rerun, result, motion, bodies, rtol, atol, depth, report.rate)
        if isinstance(found, str):  # why there is no estimate at this depth
            if check is None:
                report.skipped.append(f"motion.error: {found}")
            break
        check = found if check is None or found.max_drift / found.allowed > check.max_drift / check.allowed else check
        if check.broken or check.max_drift * SECOND_LOOK <= check.allowed:
            break
    if check is not None:
        report.checks.append(check)
        supersede_step_error(report)


def supersede_step_error(report):
    """A fixed-step run's ``steps.error`` (C N (h ω)^q, an a-priori bound of its accumulated error, :mod:`.invariants`)
    yields to its ``motion.error`` (that error measured, from the same run at a finer step) where the measurement is
    within its allowance: the bound is then taken out of the checks and ``report.skipped`` says why. The bound charges
    the fastest rate it finds (a stiff transient's acceleration over the motion's velocity, a mode carrying a
    millionth of the energy) at full amplitude: the automatic index-3 step on a stiff bushing, without numba, was
    flagged at 98,000 times its allowance while 1.0e-3 m off a Radau run, 0.07 of the motion's allowance."""
    checks = {c.name: c for c in report.checks}
    bound, measured = checks.get("steps.error"), checks.get("motion.error")
    if bound is None or measured is None or measured.broken or not bound.broken:
        return
    report.checks.remove(bound)
    report.skipped.append(f"steps.error: its bound C N (h ω)^q = {bound.max_drift:.3g} (allowed {bound.allowed:g}) "
                          f"yields to motion.error, the error measured from the same run at a finer step "
                          f"({measured.max_drift:.3g} m, allowed {measured.allowed:.3g} m)")


def _companion_check(rerun, result, motion, bodies, rtol, atol, depth, rate):
    """``motion.error`` from the companion at ``depth`` (:meth:`Rerun.companion`), or why there is none (str)."""
    from ...errors import CadmotionError
    from ..kinematics import _motion

    fixed = REGISTRY[rerun.integrator].fixed_step
    companion = rerun.companion(result, depth)
    budget = COMPANION_STEPS * max(result.nsteps, 100)
    try:
        other = rerun.solve(companion, max_steps=budget)[1]
    except (CadmotionError, ArithmeticError, np.linalg.LinAlgError, ValueError) as exc:
        return f"the companion run at {companion.how} failed: {exc}"
    if not other.success and other.nsteps > budget:
        return (f"the companion run at {companion.how} would take more than {COMPANION_STEPS:g} times the run's "
                f"{result.nsteps} steps (stopped at t = {other.t_fail:.6g} s of {rerun.times[-1]:.6g} s): the finer "
                f"setting costs far more than the run (round-off, or a stiffer approximation at it); run again at "
                f"a tenth of the tolerances yourself to compare")
    if not other.success or len(other.t) < len(rerun.times):
        return f"the companion run at {companion.how} stopped: {other.message or 'before the end'}"
    if fixed:  # the steps it took, not the step asked (the parts' turns cut the steps)
        factor = other.nsteps / max(result.nsteps, 1)
        if abs(factor - 1.0) < 0.05:
            return f"the companion run at {companion.how} took the run's steps ({other.nsteps}), set by the turns"
        companion = replace(companion, factor=1.0 / factor)
    zeros = np.zeros_like(other.q)
    measures = other.measures if other.measures is not None else np.zeros((len(other.t), 0))
    twin = _motion(rerun.model, other.t, other.q, zeros, zeros, measures, [])
    return check_global_error(motion, twin, companion, bodies, rtol=rtol, atol=atol, fixed_step=fixed, rate=rate)
