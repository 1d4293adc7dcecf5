"""A module imported on first attribute access (``sp = lazy("sympy")``).

The joint templates and parametrisations are written in sympy, but a run whose generated
code is cached only needs their names and sizes: with this, sympy (0.3 s to import) is
imported when an expression is actually built.
"""

from __future__ import annotations

import importlib

__all__ = ["lazy"]


class _Lazy:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self):
        return f"<module {self._name!r}, imported on first use>"


def lazy(name):
    """A stand-in for ``import name`` whose attributes import the module when first read."""
    return _Lazy(name)
