"""The analysis step of ``cadmotion run``, shared with ``cadmotion batch``.

:func:`run_analysis` turns a compiled model into a Motion for one of the three analyses
of ``--analysis``; :func:`outcome` says what the run's status and exit code are. Both
commands call these two, so a flag means the same in ``run`` and in ``batch``.

Units: ``t_end``, ``dt`` in s; ``atol`` in the coordinates' units (m, m/s, rad/s).
"""

from __future__ import annotations

import warnings

__all__ = ["ANALYSES", "DYNAMICS_OPTIONS", "run_analysis", "outcome", "broken_invariants", "EXIT_INVARIANT",
           "EXIT_STOPPED", "EXIT_INTERRUPTED"]

ANALYSES = ("kinematic", "dynamic", "inverse")
#: the ``--`` options of a dynamic run, as keyword names of the kernel's ``forward.run``
DYNAMICS_OPTIONS = ("formulation", "integrator", "rtol", "atol", "dt")

#: exit codes of ``cadmotion run``: an invariant broken, the motion stopped early, interrupted
EXIT_INVARIANT = 8
EXIT_STOPPED, EXIT_INTERRUPTED = 4, 130


def run_analysis(model, analysis, t_end, steps, *, progress=None, formulation=None, integrator=None,
                 rtol=None, atol=None, dt=None, free_dof="refuse"):
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
    if analysis == "dynamic":
        from ..kernel.dynamics.forward import run as run_dynamics

        options = {k: v for k, v in dict(formulation=formulation, integrator=integrator, rtol=rtol, atol=atol,
                                         dt=dt).items() if v is not None}
        motion, result = run_dynamics(model, t_end, steps, **options)
        if dt is not None and result.dt is None:
            warnings.warn(f"--dt is used by the fixed-step integrators (RK4, generalized-alpha, HHT); "
                          f"{result.integrator} chose its own steps from --rtol and --atol", stacklevel=2)
        return motion, result
    from ..kernel import kinematics

    motion = kinematics(model, t_end=t_end, steps=steps, progress=progress, free_dof=free_dof)
    if analysis == "inverse":
        from ..kernel.dynamics import inverse_dynamics

        motion = inverse_dynamics(model, motion)
    return motion, None


def broken_invariants(result):
    """The invariants a dynamic run broke (empty for the other analyses)."""
    invariants = getattr(result, "invariants", None)
    return list(invariants.broken) if invariants is not None else []


def outcome(motion, result, accept_violations=False):
    """``(exit code, status)`` of a run: interrupted 130, stopped 4, invariant-broken 8
    (0 with ``accept_violations``), ok 0."""
    if any(e.kind == "interrupted" for e in motion.events):
        return EXIT_INTERRUPTED, "interrupted"
    if not motion.complete:
        return EXIT_STOPPED, "stopped"
    if broken_invariants(result):
        return (0 if accept_violations else EXIT_INVARIANT), "invariant-broken"
    return 0, "ok"
