"""Exceptions raised by cadmotion.

Every error says what was wrong, where (file, part, joint, time) and what to do.
All derive from :class:`CadmotionError`, so a front end can catch one type and
print ``str(err)`` without a traceback.
"""

__all__ = [
    "CadmotionError",
    "ModelFileError",
    "ExpressionError",
    "CadImportError",
    "MechanismError",
    "AssemblyError",
    "DrivingError",
    "SingularityError",
    "SolverError",
    "OutputError",
]


class CadmotionError(Exception):
    """Base class of every error cadmotion raises on purpose."""

    def __init__(self, message, *, where=None, hint=None):
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(self._compose())

    def _compose(self):
        text = self.message
        if self.where:
            text = f"{self.where}: {text}"
        if self.hint:
            text = f"{text}\n  hint: {self.hint}"
        return text


class ModelFileError(CadmotionError):
    """A model file (TOML) is malformed or names things that do not exist."""


class ExpressionError(CadmotionError):
    """A time expression uses syntax or names outside the whitelist."""


class CadImportError(CadmotionError):
    """A CAD file (STEP, FCStd, asmt, ...) cannot be read or is inconsistent."""



class MechanismError(CadmotionError):
    """The mechanism description is inconsistent (unknown part, bad joint data)."""


class AssemblyError(CadmotionError):
    """The parts cannot be placed so that every joint holds."""


class DrivingError(CadmotionError):
    """The drivers leave the mechanism under- or over-determined."""


class SingularityError(CadmotionError):
    """The motion reached a singular configuration (lock-up, toggle, Euler-angle singularity)."""

    def __init__(self, message, *, time=None, **kw):
        self.time = time
        super().__init__(message, **kw)


class SolverError(CadmotionError):
    """A numerical solver failed (no convergence, step size collapse, NaN)."""

    def __init__(self, message, *, time=None, **kw):
        self.time = time
        super().__init__(message, **kw)


class OutputError(CadmotionError):
    """An output cannot be written (unknown extension, unwritable folder)."""
