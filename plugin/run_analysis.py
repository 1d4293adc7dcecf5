"""The run service: one way from a mechanism to a Motion for every front end.

``cadmotion run``, ``batch`` and ``check``, the FreeCAD workbench and the CadQuery API all
run an analysis through this module, so a setting means the same everywhere:
:func:`time_span` the span (arguments, else the model's ``[simulation]``, else 1 s and 100
intervals), :func:`run_spec` the whole run of a spec (``--drive`` and gravity overrides,
compile, span, analysis), :func:`run_analysis` the analysis of a compiled model for one of
the three analyses of ``--analysis``, and :func:`outcome` the run's status and exit code.

Units: ``t_end``, ``dt`` in s; ``atol`` in the coordinates' units (m, m/s, rad/s).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .blas_threads import single_blas_thread

__all__ = ["ANALYSES", "DYNAMICS_OPTIONS", "DEFAULT_T_END", "DEFAULT_STEPS", "time_span", "with_overrides",
           "run_spec", "RunResult",
           "run_analysis", "outcome", "broken_invariants", "run_invariants", "EXIT_INVARIANT", "EXIT_STOPPED",
           "EXIT_INTERRUPTED"]

ANALYSES = ("kinematic", "dynamic", "inverse")
#: the ``--`` options of a dynamic run, as keyword names of the kernel's ``forward.run``
DYNAMICS_OPTIONS = ("formulation", "integrator", "rtol", "atol", "dt")

#: the span of a run when neither the caller nor the model's ``[simulation]`` gives one (s, intervals)
DEFAULT_T_END, DEFAULT_STEPS = 1.0, 100

#: exit codes of ``cadmotion run``: an invariant broken, the motion stopped early, interrupted
EXIT_INVARIANT = 8
EXIT_STOPPED, EXIT_INTERRUPTED = 4, 130


@dataclass
class RunResult:
    """What :func:`run_spec` gives: the spec as run (overrides applied), its compiled model,
    the Motion (``motion.spec`` set) and the dynamics' result (None for other analyses)."""

    spec: object
    model: object
    motion: object
    result: object = None


def time_span(spec, t_end=None, steps=None):
    """``(t_end, steps)`` of a run: the arguments, else the model's ``[simulation]`` settings,
    else :data:`DEFAULT_T_END` s and :data:`DEFAULT_STEPS` intervals (frames at
    ``linspace(0, t_end, steps + 1)``). A value that is not a number, a non-positive end
    time or fewer than one interval is an error naming the model and where to fix it."""
    from ..errors import CadmotionError

    given_t, given_n = t_end is not None, steps is not None
    t_end = t_end if given_t else spec.setting("t_end", DEFAULT_T_END)
    steps = steps if given_n else spec.setting("steps", DEFAULT_STEPS)
    where = str(getattr(spec, "source", "") or getattr(spec, "name", "")) or None
    hint = "pass --t-end/--steps" + ("" if given_t and given_n else ", or fix [simulation] in the model file")
    try:
        t_end, n = float(t_end), float(steps)
    except (TypeError, ValueError):
        raise CadmotionError(f"t_end = {t_end!r}, steps = {steps!r} are not numbers", where=where, hint=hint) from None
    if not (t_end > 0 and t_end < float("inf")) or not n >= 1 or n != int(n):
        raise CadmotionError(f"the end time must be positive and steps a whole number of at least 1, got "
                             f"t_end = {t_end:g} s, steps = {steps!r}", where=where, hint=hint)
    return t_end, int(n)


def with_overrides(spec, drive=(), gravity=None):
    """``spec`` with the command line's overrides: ``drive`` (``"NAME=EXPRESSION"`` texts, as
    ``--drive``, adding or replacing drivers) and ``gravity`` (m/s², assembly frame; None
    keeps the model's). The one place every front end applies them."""
    from ..importers.drive_option import with_drivers, with_gravity

    return with_gravity(with_drivers(spec, list(drive)), gravity)


def run_spec(spec, analysis="kinematic", *, t_end=None, steps=None, parametrization="euler-parameters", drive=(),
             gravity=None, progress=None, free_dof="refuse", formulation=None, integrator=None, rtol=None,
             atol=None, dt=None, solver_options=None, resolve_penetration=False):
    """Run one analysis of a mechanism description; returns a :class:`RunResult`.

    ``drive`` and ``gravity`` override the spec (:func:`with_overrides`); ``t_end``/``steps``
    as :func:`time_span`; the rest as :func:`run_analysis`. ``motion.spec`` is the spec run.
    """
    from ..kernel import compile_model

    spec = with_overrides(spec, drive, gravity)
    t_end, steps = time_span(spec, t_end, steps)
    model = compile_model(spec, parametrization)
    motion, result = run_analysis(model, analysis, t_end, steps, progress=progress, formulation=formulation,
                                  integrator=integrator, rtol=rtol, atol=atol, dt=dt, free_dof=free_dof,
                                  solver_options=solver_options, resolve_penetration=resolve_penetration)
    if getattr(motion, "spec", None) is None:
        motion.spec = spec
    return RunResult(spec, model, motion, result)


def run_analysis(model, analysis, t_end, steps, *, progress=None, formulation=None, integrator=None,
                 rtol=None, atol=None, dt=None, free_dof="refuse", solver_options=None, resolve_penetration=False):
    """Solve ``model`` from t = 0 to ``t_end`` s with ``steps`` output intervals.

    Parameters
    ----------
    model : a compiled :class:`~cadmotion.kernel.model.Model`
    analysis : ``"kinematic"`` (driven motion), ``"dynamic"`` (motion under forces) or
        ``"inverse"`` (driven motion plus driver efforts and joint reactions)
    progress : ``progress(k, nt)`` called per frame of a kinematic or inverse run; it may
        raise to stop the run
    formulation, integrator, rtol, atol, dt : the dynamic run's settings (None: the
        kernel's choice); ignored by the other analyses
    free_dof : ``"refuse"`` (default) or ``"minimal"``: what a kinematic run does with
        degrees of freedom its drivers leave free (see :func:`~cadmotion.kernel.kinematics`);
        the other analyses accept only ``"refuse"``
    solver_options : further keyword arguments of the kernel's solver, for the API front
        ends: :func:`~cadmotion.kernel.kinematics` (kinematic and inverse runs) or
        :func:`~cadmotion.kernel.dynamics.forward.run` (dynamic runs)
    resolve_penetration : a dynamic run whose declared contacts start with parts inside each
        other first moves them apart (:mod:`~cadmotion.kernel.dynamics.penetration`) and says so in
        the result's notes, instead of refusing

    Returns
    -------
    (Motion, result)
        ``result`` is the dynamics' :class:`DynamicsResult` (formulation and integrator
        that ran, counters, invariants), None for the other analyses.
    """
    if analysis not in ANALYSES:
        from ..errors import CadmotionError

        raise CadmotionError(f"unknown analysis {analysis!r}", hint="use one of " + ", ".join(ANALYSES))
    if free_dof != "refuse" and analysis != "kinematic":
        from ..errors import CadmotionError

        raise CadmotionError(f"--free-dof {free_dof} applies to the kinematic analysis, not to {analysis}",
                             hint="a dynamic run moves free coordinates by the forces; inverse dynamics "
                                  "needs every degree of freedom driven")
    if resolve_penetration and analysis != "dynamic":
        from ..errors import CadmotionError

        raise CadmotionError(f"--resolve-penetration applies to the dynamic analysis, not to {analysis}",
                             hint="contacts act in dynamic runs only")
    with single_blas_thread():  # small matrices: BLAS threads only fight over the cores
        return _solve(model, analysis, t_end, steps, progress=progress, free_dof=free_dof,
                      solver_options=solver_options, resolve_penetration=resolve_penetration,
                      settings=dict(formulation=formulation, integrator=integrator, rtol=rtol, atol=atol, dt=dt))


def _solve(model, analysis, t_end, steps, *, progress, free_dof, solver_options, resolve_penetration, settings):
    """:func:`run_analysis` once its arguments are checked; ``settings`` the dynamic run's formulation,
    integrator, rtol, atol and dt (None: the kernel's choice)."""
    if analysis == "dynamic":
        from ..kernel.dynamics.forward import run as run_dynamics

        separated = []
        if resolve_penetration:
            from ..kernel.dynamics.penetration import resolve_initial_penetration

            model, separated = resolve_initial_penetration(model)

        options = dict(solver_options or {})
        options.update({k: v for k, v in settings.items() if v is not None})
        motion, result = run_dynamics(model, t_end, steps, **options)
        if separated:
            result.notes.insert(0, "parts that started inside each other were moved apart (least change of the "
                                   "pose, joints kept): " + "; ".join(s.message() for s in separated))
        if settings["dt"] is not None and result.dt is None:
            warnings.warn(f"--dt is used by the fixed-step integrators (RK4, generalized-alpha, HHT); "
                          f"{result.integrator} chose its own steps from --rtol and --atol", stacklevel=3)
        return motion, result
    if analysis == "inverse":
        from ..kernel.dynamics import inverse_dynamics

        # it runs the kinematics itself, after checking that the drivers fix every freedom (the kinematics'
        # error for a free one names no coordinate and offers --free-dof minimal, which inverse refuses)
        return inverse_dynamics(model, t_end=t_end, steps=steps, progress=progress, free_dof=free_dof,
                                **(solver_options or {})), None
    from ..kernel import kinematics

    return kinematics(model, t_end=t_end, steps=steps, progress=progress, free_dof=free_dof,
                      **(solver_options or {})), None


def run_invariants(motion, result):
    """The run's checks of itself: a dynamic run's (``result.invariants``), else the kinematics'
    (``motion.invariants``: inverse runs take their motion from it), or None."""
    invariants = getattr(result, "invariants", None)
    return invariants if invariants is not None else getattr(motion, "invariants", None)


def broken_invariants(result, motion=None):
    """The invariants a run broke: a dynamic run's (``result``), else a kinematic or inverse run's (``motion``)."""
    invariants = run_invariants(motion, result)
    return list(invariants.broken) if invariants is not None else []


def outcome(motion, result, accept_violations=False):
    """``(exit code, status)`` of a run: interrupted 130, stopped 4, invariant-broken 8
    (0 with ``accept_violations``), ok 0."""
    if any(e.kind == "interrupted" for e in motion.events):
        return EXIT_INTERRUPTED, "interrupted"
    if not motion.complete:
        return EXIT_STOPPED, "stopped"
    if broken_invariants(result, motion):
        return (0 if accept_violations else EXIT_INVARIANT), "invariant-broken"
    return 0, "ok"
