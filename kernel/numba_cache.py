"""numba, with its machine-code cache in a folder named after cadmotion's compiled sources.

numba keys a cached function on its own file's contents only. A function that calls a jitted
function of another module keeps the callee's old machine code when only the callee's file
changes: after the contact kernels (``dynamics/_contact_kernels.py``) changed and the right-hand
side that calls them (``dynamics/_kernels.py``) did not, the cached right-hand side went on
computing the old contact forces — in a git checkout, and for a user whose upgrade leaves the old
``__pycache__`` behind. Every cadmotion module that compiles with numba therefore imports numba
from here, which first points ``numba.config.CACHE_DIR`` at a folder named by a digest of numba's
version and of every kernel source that uses numba (:func:`sources_digest`): a change to any of
them is a new, empty folder, never stale code.

The folder is ``<code cache>/numba/<digest>`` (the code cache: ``$CADMOTION_CACHE`` or
``~/.cache/cadmotion/codegen``), or ``$NUMBA_CACHE_DIR/cadmotion-<digest>`` when the user points
numba's cache somewhere. Where it cannot be written (a read-only cache), numba keeps its own
places and cadmotion says so once. Old digests' folders are left for the user to delete.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path

import numba

from .cache_folder import cache_dir

__all__ = ["numba", "sources_digest", "numba_cache_folder", "configure", "configured_digest"]

_KERNEL = Path(__file__).resolve().parent
_configured = None
_configured_digest = None


def sources_digest():
    """A digest (16 hex digits) of numba's version and of the text of every ``.py`` file under
    cadmotion's ``kernel`` folder that uses numba."""
    h = hashlib.sha256(numba.__version__.encode())
    for path in sorted(_KERNEL.rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            h.update(path.relative_to(_KERNEL).as_posix().encode() + b"\0" + text)
    return h.hexdigest()[:16]


def numba_cache_folder(digest=None):
    """The folder numba's cache of cadmotion's compiled code goes to (see the module), named by ``digest``
    (default: :func:`sources_digest`)."""
    digest = digest or sources_digest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user) / f"cadmotion-{digest}"
    return cache_dir() / "numba" / digest


def configure():
    """Point numba's cache at :func:`numba_cache_folder` (once per process); the folder, or None
    where it cannot be written (numba then keeps its own places)."""
    global _configured, _configured_digest
    if _configured is None:
        _configured_digest = sources_digest()
        folder = numba_cache_folder(_configured_digest)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            warnings.warn(f"numba's cache folder {folder} cannot be written ({exc}); numba caches compiled code "
                          f"in its default places", RuntimeWarning, stacklevel=2)
            _configured = False
        else:
            numba.config.CACHE_DIR = str(folder)
            _configured = folder
    return _configured or None


def configured_digest():
    """The digest naming the folder :func:`configure` pointed numba at in this process (the sources as they were
    when it ran: a file read and hashed once, not at every call)."""
    configure()
    return _configured_digest


configure()
