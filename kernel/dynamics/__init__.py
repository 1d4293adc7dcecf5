"""Dynamics: forward dynamics under forces, several formulations, inverse dynamics.

>>> from cadmotion.kernel import compile_model
>>> from cadmotion.kernel.dynamics import simulate, inverse_dynamics, FORMULATIONS
>>> motion = simulate(compile_model(spec), t_end=2.0, steps=200)           # doctest: +SKIP
>>> motion.extra["energy.total"], motion.extra["crank_pivot.tz"]            # doctest: +SKIP

Modules: :mod:`.mass` (mass matrix, velocity variables), :mod:`.forces` (gravity and
force elements), :mod:`.equations` (the constrained equations of motion),
:mod:`.formulations` (the solver contract and the registry), :mod:`.forward`
(:func:`simulate`), :mod:`.inverse`, :mod:`.energy`, :mod:`.outputs`.
"""

from .equations import Dynamics
from .formulations import FORMULATIONS, INTEGRATORS, DynamicsResult, Formulation, get_formulation
from .forward import simulate
from .inverse import inverse_dynamics

__all__ = ["simulate", "inverse_dynamics", "FORMULATIONS", "INTEGRATORS", "Formulation", "DynamicsResult",
           "Dynamics", "get_formulation"]
