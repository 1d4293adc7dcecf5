"""Single modules of scipy loaded from their files, without importing the packages above them.

``import scipy.linalg`` or ``import scipy.integrate`` costs a process 0.2–0.3 s of CPU each
(scipy ≥ 1.15 builds its array-API layer, which touches every lazily loaded numpy submodule;
scipy.integrate brings scipy.optimize). Some paths need one self-contained module only — the
LAPACK wrappers ``linalg/_flapack`` (:mod:`.lapack`), the DOP853 coefficients
``integrate/_ivp/dop853_coefficients`` (:mod:`.dynamics._dop853`) — which import numpy and nothing
of scipy. :func:`scipy_module` loads such a module from its file under its own name; it leaves
no entry in ``sys.modules``, so a later ``import`` of its package (a run that needs more of
scipy) loads the package whole, as usual.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["scipy_module"]


def scipy_module(relative):
    """The module at ``relative`` under scipy's folder (``"integrate/_ivp/dop853_coefficients"``,
    no suffix; a source or an extension module), loaded from its file; None where scipy or the
    file is not found. The normal import where the package is imported already."""
    name = "scipy." + relative.replace("/", ".")
    package = name.rpartition(".")[0]
    if package in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("scipy")  # locates scipy without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    stem = os.path.join(next(iter(spec.submodule_search_locations)), *relative.split("/"))
    for suffix in (*importlib.machinery.SOURCE_SUFFIXES, *importlib.machinery.EXTENSION_SUFFIXES):
        if os.path.exists(stem + suffix):
            module_spec = importlib.util.spec_from_file_location(name, stem + suffix)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            # an extension module of single-phase initialisation registers itself: leave that
            # entry to its package's own import (which gets the same compiled functions)
            if sys.modules.get(name) is module:
                del sys.modules[name]
            return module
    return None
