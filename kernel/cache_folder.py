"""The code cache's folder: ``$CADMOTION_CACHE``, else ``~/.cache/cadmotion/codegen``
(``$XDG_CACHE_HOME`` for ``~/.cache``). Generated code, drivers' derivatives and numba's machine
code (:mod:`.numba_cache`) live below it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir():
    """Folder holding generated code (``$CADMOTION_CACHE`` or ``~/.cache/cadmotion/codegen``)."""
    root = os.environ.get("CADMOTION_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cadmotion" / "codegen"
