"""Compile the numba code of joint templates into the cache, in the background, for later runs.

    python -m cadmotion.kernel.symbolic.warmup revolute:euler-parameters prismatic:euler-parameters

:func:`cadmotion.kernel.symbolic.codegen.generated` starts this when a run had to start on
the numpy code because the numba code was not compiled yet: the user's run does not wait
for numba, and the next run finds the machine code in numba's cache. For each
``TEMPLATE:PARAMETRIZATION`` it derives (or reads) the numba source, calls every function
once on arrays of the kinematic solver's types (float64, C order, two axes; markers and
parameters read-only) so numba
compiles and caches them, then writes the template's ``.ready`` marker.

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


def _locked(template_name, parametrization):
    """Take the template's warm-up lock; None when another warm-up holds it."""
    import os

    from .codegen import ready_marker, warming

    lock = ready_marker(template_name, parametrization).with_suffix(".lock")
    if warming(template_name, parametrization):
        return None
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.exists():  # a crashed warm-up's leftover
            lock.unlink()
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return None
    return lock


def main(argv=None):
    """Compile the library code of the templates named in ``argv`` (``TEMPLATE[:PARAMETRIZATION]``
    each), skipping those another process is compiling; returns the number that failed."""
    argv = sys.argv[1:] if argv is None else argv
    failures = 0
    for item in argv:
        name, _, par = item.partition(":")
        par = par or "euler-parameters"
        lock = _locked(name, par)
        if lock is None:
            continue  # another process compiles it
        try:
            ok = compile_template(name, par)
        except Exception:  # a background helper: a failure only means the runs stay on numpy
            ok = False
        finally:
            lock.unlink(missing_ok=True)
        failures += not ok
    return failures


if __name__ == "__main__":
    sys.exit(main())
