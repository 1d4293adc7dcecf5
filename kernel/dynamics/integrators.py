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

from dataclasses import dataclass

__all__ = ["Integrator", "REGISTRY", "names", "get"]


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
               "classical fixed-step Runge-Kutta of order 4, step --dt; compiled loop when the model allows"),
    Integrator("generalized-alpha", "index3", False, True, False, 3,
               "index-3 generalised-alpha (Chung-Hulbert, rho_inf 0.9), fixed step --dt, Newton per step"),
    Integrator("HHT", "index3", False, True, False, 3,
               "index-3 Hilber-Hughes-Taylor alpha method, fixed step --dt, Newton per step"),
)}


def names(*, family=None, **flags):
    """The registry's names, in its order, of the given ``family`` and with the given flags
    (e.g. ``names(family="scipy")``, ``names(explicit=True)``)."""
    return tuple(n for n, i in REGISTRY.items()
                 if (family is None or i.family == family) and all(getattr(i, k) == v for k, v in flags.items()))


def get(name):
    """The :class:`Integrator` called ``name``, or None."""
    return REGISTRY.get(name)
