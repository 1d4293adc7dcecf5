"""The integrators the dynamics runs, in one registry (as ``scipy.integrate._ivp`` lists its methods).

Each :class:`Integrator` says what the formulations and the run's self-checks need to know of it:
its family (``scipy``: an error-controlled ``scipy.integrate.OdeSolver``, stepped one step at a time;
``fixed``: a fixed-step method on the index-1 equations; ``index3``: a fixed-step Newton method on the
index-3 equations), whether it is explicit (its step is also bounded by stability on stiff models),
whether it is a one-step method (a state projected after a step can be handed back to it), whether it
takes an analytic Jacobian of the right-hand side, the exponent q of its local error estimate
(:mod:`.invariants` derives the allowances of the energy balance from it) and a one-line summary
(``cadmotion formulations``). A formulation names the integrators it runs (``Formulation.integrators``);
a pair it does not run is an error (:meth:`.contract.Formulation.check_integrator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Integrator", "REGISTRY", "names", "get", "ROTATION_PER_STEP", "MAX_ROTATION_CUT", "rotation_step_limit",
           "fixed_step"]

#: rad, the most one part may turn relative to another in one step of an error-controlled integrator,
#: at the rates of the step's start. A joint angle, an angle driver's or an axis element's angle is
#: kept continuous over turns by choosing, at every accepted step, the multiple of 2π nearest the
#: last one, which needs less than half a turn per step (a quarter turn leaves the rates room to
#: double within the step); an output frame inside a step takes the winding of its end. A part
#: spinning steadily needs few steps for accuracy (in relative coordinates its motion is exact), so
#: the error control alone lets a step turn it by several turns, and the angles written out lose
#: them (DOP853 at rtol 1e-3 on a rod spinning at 10 rad/s: 5 turns lost in 2 s, measured).
ROTATION_PER_STEP = math.pi / 2
#: a fixed-step integrator's step (RK4's dt) is cut for :data:`ROTATION_PER_STEP` into at most this many
#: (a run that blows up, its rates growing without bound, still ends in bounded time)
MAX_ROTATION_CUT = 64


@dataclass(frozen=True)
class Integrator:
    """What the dynamics knows of one integrator (see the module docstring)."""

    name: str
    family: str            # "scipy", "fixed" or "index3"
    explicit: bool
    one_step: bool
    jacobian: bool         # takes the right-hand side's analytic Jacobian (``jac=``)
    error_order: int       # the local error scales as h^error_order
    summary: str
    #: C of a fixed-step method's local error C (h ω)^q on an oscillation at ω (1/s): the leading term of its
    #: amplification factor's error (RK4: R(z) − e^z = z⁵/120 + …; the trapezoid-like index-3 methods' phase
    #: error per step (h ω)³/12); 1 for the error-controlled ones (unused)
    error_constant: float = 1.0

    @property
    def fixed_step(self):
        """Whether the step is the user's ``dt`` (no error control)."""
        return self.family != "scipy"


REGISTRY = {i.name: i for i in (
    Integrator("DOP853", "scipy", True, True, False, 8,
               "explicit Runge-Kutta of order 8 (Dormand-Prince), error control; compiled loop when the model "
               "allows"),
    Integrator("RK45", "scipy", True, True, False, 5, "explicit Runge-Kutta of order 5(4) (Dormand-Prince), error "
                                                      "control"),
    Integrator("RK23", "scipy", True, True, False, 3, "explicit Runge-Kutta of order 3(2) (Bogacki-Shampine), error "
                                                      "control"),
    Integrator("Radau", "scipy", False, True, True, 4,
               "implicit Runge-Kutta Radau IIA of order 5, error control: for stiff models; compiled loop with the "
               "analytic Jacobian when the model allows"),
    Integrator("BDF", "scipy", False, False, True, 2,
               "implicit variable-order backward differentiation (orders 1-5), error control: for stiff models"),
    Integrator("LSODA", "scipy", False, False, True, 2,
               "Adams/BDF with automatic stiffness switching (ODEPACK), error control"),
    Integrator("RK4", "fixed", True, True, False, 5,
               "classical fixed-step Runge-Kutta of order 4, step --dt; compiled loop when the model allows",
               1.0 / 120.0),
    Integrator("generalized-alpha", "index3", False, True, False, 3,
               "index-3 generalised-alpha (Chung-Hulbert, rho_inf 0.9), fixed step --dt, Newton per step",
               1.0 / 12.0),
    Integrator("HHT", "index3", False, True, False, 3,
               "index-3 Hilber-Hughes-Taylor alpha method, fixed step --dt, Newton per step", 1.0 / 12.0),
)}


def names(*, family=None, **flags):
    """The registry's names, in its order, of the given ``family`` and with the given flags
    (e.g. ``names(family="scipy")``, ``names(explicit=True)``)."""
    return tuple(n for n, i in REGISTRY.items()
                 if (family is None or i.family == family) and all(getattr(i, k) == v for k, v in flags.items()))


def get(name):
    """The :class:`Integrator` called ``name``, or None."""
    return REGISTRY.get(name)


def rotation_step_limit(v):
    """The largest step (s) at the parts' velocities ``v`` (nv,) = [v_c, ω] per moving part (m/s,
    rad/s, world): no two parts turn relative to each other by more than :data:`ROTATION_PER_STEP`
    (relative rate ≤ 2 max |ω|); inf when nothing turns, or when the rates are not finite (the run fails
    its own way)."""
    v = np.asarray(v, dtype=float)
    if v.size == 0:
        return math.inf
    w = float(np.max(np.linalg.norm(v.reshape(-1, 6)[:, 3:], axis=1)))
    return ROTATION_PER_STEP / (2.0 * w) if 0.0 < w < math.inf else math.inf


def fixed_step(dt, limit):
    """The step (s) of a fixed-step integrator asked for ``dt`` where :func:`rotation_step_limit` is
    ``limit``: dt, cut to the limit but to no less than dt / :data:`MAX_ROTATION_CUT` (a limit that is not a
    number, from rates that are not finite, leaves dt)."""
    return max(limit, dt / MAX_ROTATION_CUT) if limit < dt else dt
