"""Atomic file replacement: write to a temporary file beside the target, then rename.

Nothing already on disk is destroyed by a failed write: the target is replaced only
by ``os.replace`` of a complete temporary file in the same directory (the same file
system, so the rename is atomic on POSIX and Windows). If writing fails, the temporary
file is removed and the old target, if any, is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ...errors import OutputError

__all__ = ["atomic_write", "atomic_path", "check_writable_dir"]


def check_writable_dir(directory, target=None):
    """Raise :class:`OutputError` unless ``directory`` exists and accepts new files.

    Parameters
    ----------
    directory : path of the folder that will hold the file.
    target : the file the caller wants to write, for the message.
    """
    directory = Path(directory)
    where = str(target if target is not None else directory)
    if not directory.exists():
        raise OutputError(f"folder {str(directory)!r} does not exist", where=where,
                          hint="create the folder first or choose another output path")
    if not directory.is_dir():
        raise OutputError(f"{str(directory)!r} is not a folder", where=where,
                          hint="choose an output path inside an existing folder")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"folder {str(directory)!r} is not writable", where=where,
                          hint="check its permissions or choose another output path")


def _umask_mode():
    # tempfile creates files 0600; give the result the permissions a plain open() would.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success rename it to ``path``.

    For libraries that write by file name (OCCT's STEP writer, matplotlib). The
    temporary name keeps the target's suffix so such libraries pick the right format.

    Raises
    ------
    OutputError
        If the folder is missing or not writable, or the rename fails.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    check_writable_dir(directory, path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix,
                                   dir=directory)
    except OSError as err:
        raise OutputError(f"cannot create a file in {str(directory)!r}: {err.strerror}",
                          where=str(path), hint="check the folder's permissions") from err
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except OSError as err:
        raise OutputError(f"cannot write {str(path)!r}: {err.strerror or err}",
                          where=str(path), hint="check free space and permissions") from err
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_write(path, mode="wb", *, encoding="utf-8", newline=None):
    """Open a temporary file beside ``path`` for writing; rename it onto ``path`` on success.

    Usage::

        with atomic_write("out.csv", "w", encoding="utf-8", newline="") as f:
            f.write(...)

    Text modes default to UTF-8. The data is flushed and fsync'ed before the rename. On any exception the temporary
    file is deleted and ``path`` keeps its previous content.
    """
    if "w" not in mode:
        raise ValueError(f"atomic_write needs a write mode, got {mode!r}")
    with atomic_path(path) as tmp:
        text = "b" not in mode
        with open(tmp, mode, encoding=encoding if text else None, newline=newline if text else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
