"""Readers that turn model files and CAD files into a MechanismSpec.

Only the reader a file needs is imported, so ``import cadmotion.importers`` stays light
(OCP loads only when a CAD file is read).
"""

from pathlib import Path

from ..errors import CadImportError

__all__ = ["load", "READERS", "from_cadquery"]

#: file suffix -> (module, function)
READERS = {
    ".toml": ("modelfile", "read_model_file"),
    ".step": ("step", "read_step_model"),
    ".stp": ("step", "read_step_model"),
    ".fcstd": ("fcstd", "read_fcstd"),
    ".asmt": ("asmt", "read_asmt"),
    ".urdf": ("urdf", "read_urdf"),
}


def load(path, **options):
    """Read ``path`` into a :class:`~cadmotion.kernel.spec.MechanismSpec`, by its suffix.

    A STEP file with a sidecar ``<name>.cadmotion.toml`` is read through the sidecar.
    """
    import importlib

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".step", ".stp"):
        sidecar = path.with_name(path.stem + ".cadmotion.toml")
        if sidecar.is_file():
            path, suffix = sidecar, ".toml"
    if suffix not in READERS:
        raise CadImportError(
            f"unknown file type {suffix or '(no suffix)'!r}",
            where=str(path),
            hint="cadmotion reads " + ", ".join(sorted(READERS)),
        )
    module, function = READERS[suffix]
    try:
        reader = getattr(importlib.import_module(f".{module}", __name__), function)
    except CadImportError as exc:           # a reader that needs the cad extra: name the file
        raise CadImportError(exc.message, where=str(path), hint=exc.hint) from exc
    return reader(path, **options)


def from_cadquery(assy, joints=None, drivers=None, **options):
    """A MechanismSpec of a live ``cq.Assembly`` (see :mod:`cadmotion.importers.cadquery`)."""
    from .cadquery import from_cadquery as _from_cadquery

    return _from_cadquery(assy, joints, drivers, **options)
