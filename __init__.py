"""cadmotion: mechanism simulation for CAD assemblies.

``cadmotion.kernel`` compiles a :class:`~cadmotion.kernel.spec.MechanismSpec` into array
models and solves kinematics; ``cadmotion.importers`` reads model files and CAD files into
that spec; ``cadmotion.plugin`` holds the command line and writers.
"""

__version__ = "0.1.0"


def load(path, **options):
    """Read any supported model or CAD file into a MechanismSpec (see :mod:`cadmotion.importers`)."""
    from .importers import load as _load

    return _load(path, **options)


def check(source, t_end=None, steps=None, **options):
    """Validate a mechanism (a file path or a MechanismSpec); returns a CheckReport.

    ``report.dof``, ``report.redundant``, ``report.collisions``, ``report.assert_ok()``.
    """
    from .plugin.check import check as _check

    return _check(source, t_end=t_end, steps=steps, **options)
