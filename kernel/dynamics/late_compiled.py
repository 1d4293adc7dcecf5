"""A numpy run that goes on in the compiled loop once its library is ready (issue 15 item 1).

A run does not wait for numba: when the parametrisation's compiled library (:mod:`.fast`) has
no ready marker, the run starts on the numpy equations and the background warm-up compiles
the library — by default when the process exits, so that a short first run is not slowed by
a compile it would not live to use. A long run would then pay the numpy path to its end. The
:class:`LateSwitch` of such a run, asked at its recorded frames:

1. predicts the wall time left on numpy from the pace so far (wall seconds per simulated
   second since the start, times the simulated time left); where that exceeds
   :data:`EARLY_WARMUP_S`, it starts the warm-up at once
   (:func:`cadmotion.kernel.symbolic.codegen.start_warmup_now`), once;
2. at most every :data:`CHECK_EVERY_S` of wall time, looks for the library's ready marker (a
   stat and a read of one small file); when it is there, the formulation sets up its compiled
   right-hand side (:meth:`.contract.Formulation._late_fast`) and the run goes on from that
   frame's accepted state in the compiled loop of the same integrator, as it does after a
   singular configuration is crossed (:meth:`.contract.Formulation.solve`); an integrator
   without a compiled loop (RK45, RK23, BDF, LSODA, or where the loop does not apply) restarts
   its own loop there on the compiled right-hand side.

The states before and after the switch are states of the same equations (the compiled and
numpy right-hand sides agree to round-off), so the switch is a restart of the integrator at an
accepted step: within the run's tolerance of a run that never switched. The run's notes say
when it switched.
"""

from __future__ import annotations

import time

__all__ = ["LateSwitch", "CHECK_EVERY_S", "EARLY_WARMUP_S", "predicted_wall_left"]

#: wall seconds between two looks for the compiled library's ready marker
CHECK_EVERY_S = 1.0
#: a run predicted to spend more wall seconds than this on numpy starts the compile at once: the
#: library takes 132 s on 2 idle cores (:func:`.library.compile_module`), longer beside a running
#: integration, and the compiled loop then finishes the rest 10–50× faster
EARLY_WARMUP_S = 300.0


def predicted_wall_left(wall_spent, t0, t, t_end):
    """Wall seconds left at the pace so far: ``wall_spent`` s for the simulated span t0 → t,
    scaled to t → t_end (s); infinite before any simulated time has passed."""
    if not t > t0:
        return float("inf")
    return wall_spent / (t - t0) * (t_end - t)


class LateSwitch:
    """Watches a numpy run whose compiled library was not ready when it started (see the
    module docstring). ``form`` is the :class:`.contract.Formulation`, ``times`` the run's
    output times (s); ``clock`` returns wall seconds."""

    def __init__(self, form, times, integrator, rtol, atol, clock=time.perf_counter):
        self.form = form
        self.times = times
        self.integrator = integrator
        self.rtol, self.atol = rtol, atol
        self.clock = clock
        self.wall_start = self.last_look = clock()
        self.warmup_started = False

    def due(self, t):
        """At a recorded frame at t (s), after its step was accepted: True when the run goes on
        in the compiled loop from here (the formulation's compiled right-hand side is then set
        up); False to go on with numpy."""
        now = self.clock()
        if not self.warmup_started and predicted_wall_left(now - self.wall_start, self.times[0], t,
                                                           self.times[-1]) > EARLY_WARMUP_S:
            from ..symbolic.codegen import start_warmup_now

            start_warmup_now()
            self.warmup_started = True
        if now - self.last_look < CHECK_EVERY_S:
            return False
        self.last_look = now
        return self.form._late_fast(self.times, self.rtol, self.atol, self.integrator)
