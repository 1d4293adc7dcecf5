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

import importlib

#: public name -> the submodule that defines it, imported on first use: a model file that only
#: names a contact pair (importers/contacts.py reads :mod:`.contacts`) does not import the
#: integrators, scipy.integrate and sympy with the package
_EXPORTS = {"Dynamics": "equations", "FORMULATIONS": "formulations", "INTEGRATORS": "formulations",
            "DynamicsResult": "formulations", "Formulation": "formulations", "get_formulation": "formulations",
            "simulate": "forward", "inverse_dynamics": "inverse"}

__all__ = ["simulate", "inverse_dynamics", "FORMULATIONS", "INTEGRATORS", "Formulation", "DynamicsResult",
           "Dynamics", "get_formulation"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
