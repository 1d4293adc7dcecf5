"""Compile the numba code of joint templates (and of compiled right-hand sides) into the cache,
in the background, for later runs.

    python -m cadmotion.kernel.symbolic.warmup revolute:euler-parameters prismatic:euler-parameters
    python -m cadmotion.kernel.symbolic.warmup module:/path/to/cache/dynamics-<digest>.py

:func:`cadmotion.kernel.symbolic.codegen.generated` starts this when a run had to start on
the numpy code because the numba code was not compiled yet: the user's run does not wait
for numba, and the next run finds the machine code in numba's cache. For each
``TEMPLATE:PARAMETRIZATION`` it derives (or reads) the numba source, calls every function
once on arrays of the kinematic solver's types (float64, C order, two axes; markers and
parameters read-only) so numba
compiles and caches them, then writes the template's ``.ready`` marker. For ``module:PATH``
(written by a dynamics run that started on numpy,
:func:`cadmotion.kernel.dynamics.library.compile_module`, or a kinematic run,
:func:`cadmotion.kernel.kinematics_fast.compile_module`) it compiles the module's entry points
for the argument types the run passes, then writes ``PATH`` with the suffix ``.ready``.

Two of these may run at once on one cache: numba and the marker replace files atomically,
so the later one only repeats work. A template that fails to compile gets no marker (the
runs stay on numpy); nothing is printed, the exit code is the number of failures.
"""

from __future__ import annotations

import sys

import numpy as np


def _sample(shape_rows, cols, rng):
    """Float64 (rows, cols) array away from zero (the generated code divides by some terms)."""
    return np.ascontiguousarray(rng.uniform(0.2, 0.8, size=(shape_rows, cols)))


def compile_template(template_name, parametrization):
    """Compile (or load) every numba function of one template; True when the marker is written."""
    from .codegen import generated, mark_ready
    from .parametrization import get_parametrization
    from .templates import TEMPLATES

    template = TEMPLATES[template_name]
    code = generated(template_name, parametrization, "numba")
    if code.path is None:  # read-only cache: numba could not keep the machine code
        return False
    rng = np.random.default_rng(0)
    nqb = get_parametrization(parametrization).nqb
    Q = _sample(1, template.n_slots * nqb, rng)
    QD = _sample(1, template.n_slots * nqb, rng)
    M = _sample(1, template.n_slots * 12, rng)
    S = _sample(1, len(template.params), rng)
    F = _sample(1, 3, rng)
    W = _sample(1, len(template.angle_terms), rng)
    for frozen in (M, S):  # the compiled model's markers and parameters are read-only arrays,
        frozen.flags.writeable = False  # a type of their own for numba
    for fn in (code.phi, code.jac, code.phit):
        fn(Q, M, S, F, W)
    code.gamma(Q, QD, M, S, F, W)
    code.angles(Q, M)
    code.measures(Q, M)
    return mark_ready(template_name, parametrization)


def _locked(marker):
    """Take the warm-up lock beside ready ``marker``; None when another warm-up holds it."""
    import os

    from .codegen import marker_busy

    lock = marker.with_suffix(".lock")
    if marker_busy(marker):
        return None
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.exists():  # a crashed warm-up's leftover
            lock.unlink()
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return None
    return lock


def _job(item):
    """(ready marker, compile function) of one command-line item."""
    from pathlib import Path

    from .codegen import ready_marker

    kind, _, rest = item.partition(":")
    if kind == "module":  # compiled dynamics (dynamics.library, .fast_tree, .stiff_kernels), a kinematic step
        path = Path(rest)
        if path.name.startswith("kinematics-"):
            from ..kinematics_fast import compile_module as compile_fn
        elif path.name.startswith("stiff-kernels"):  # index-3 and the force tangents (dynamics.stiff_kernels)
            from ..dynamics.stiff_warmup import compile_kernels as compile_fn
        else:
            from ..dynamics.library import compile_module
            from ..dynamics.fast_tree import PREFIX, compile_tree_module

            compile_fn = compile_tree_module if path.name.startswith(PREFIX) else compile_module
        return path.with_suffix(".ready"), lambda: compile_fn(path)
    par = rest or "euler-parameters"
    return ready_marker(kind, par), lambda: compile_template(kind, par)


def main(argv=None):
    """Compile the items named in ``argv``: ``TEMPLATE[:PARAMETRIZATION]`` (a joint template's
    library code) or ``module:PATH`` (a generated dynamics module), skipping those another
    process is compiling; returns the number that failed."""
    argv = sys.argv[1:] if argv is None else argv
    failures = 0
    for item in argv:
        marker, job = _job(item)
        lock = _locked(marker)
        if lock is None:
            continue  # another process compiles it
        try:
            ok = job()
        except Exception:  # a background helper: a failure only means the runs stay on numpy
            ok = False
        finally:
            lock.unlink(missing_ok=True)
        failures += not ok
    return failures


if __name__ == "__main__":
    sys.exit(main())
