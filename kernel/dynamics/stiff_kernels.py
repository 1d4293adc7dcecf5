"""Which code evaluates the stiff path's equations: the compiled kernels once they are compiled, numpy until then.

Index-3's residual and Newton matrix (:mod:`.index3_kernels`) and the force elements' tangent stiffness and
damping (:mod:`.force_jacobians`) are numba kernels. Each has a numpy twin over the same arrays, with the same
signature (:mod:`.index3_numpy`, :mod:`.force_jacobians_numpy`), equal to it to round-off (tests hold them equal).
Compiling the kernels took 10–12 s of a 16 s first run of the flyball governor (2 cores, 2026-11-30), and the
whole run takes 6.5 s on the twins, so a run does not wait for the compile (issue 15 item 1), as it does not
wait for the compiled library (:mod:`.library`). :func:`choose` picks:

- without numba (FreeCAD's Python) or with ``CADMOTION_BACKEND=numpy``: the twins;
- with ``CADMOTION_DYNAMICS_FAST=compile`` or ``CADMOTION_BACKEND=numba``: the kernels, compiled in the run
  where they are not cached (:func:`.library.compiles_in_run`);
- otherwise the kernels if they have been compiled (their ready marker, :func:`marker_module`, holds this
  numba's version; its name holds the digest of the kernels' sources), else the twins,
  and the background warm-up (:mod:`cadmotion.kernel.symbolic.warmup`, started when the process exits)
  compiles the kernels for the next run (:func:`.stiff_warmup.compile_kernels`). A cache that cannot be written keeps no
  machine code: the twins, and no warm-up.

A long run does not stay on the twins to its end (≈ 3 times the kernels' time a step on the governor): where the
run on the twins is predicted to outlast :data:`EARLY_WARMUP_S`, it starts the warm-up at once and goes on with the
kernels from the first output frame after they are ready (:class:`LateKernels`; the run's notes say from when). The
two evaluate the same equations to round-off, so the run is the one it would have been on either.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, NamedTuple

__all__ = ["StiffKernels", "choose", "compiled", "twins", "using", "kernels_ready", "marker_module", "PREFIX",
           "LateKernels", "EARLY_WARMUP_S"]

#: the name of the (never written) module file whose ``.ready`` marker says the kernels are compiled
PREFIX = "stiff-kernels"
#: a run predicted to spend more wall seconds than this on the twins starts compiling the kernels at once: they
#: compile in 15–20 s on 2 cores beside the run, and then take the rest about three times faster
EARLY_WARMUP_S = 30.0


class StiffKernels(NamedTuple):
    """The functions the stiff path calls: ``index3`` (a module with ``body_kinematics``, ``residual``,
    ``body_blocks``, ``element_blocks``) and the force elements' tangents; ``compiled`` says whether they are
    the numba kernels (index-3 then also evaluates the forces with the compiled library's kernels)."""

    compiled: bool
    index3: object
    spring_tangent: Callable
    axis_tangent: Callable
    ball_tangent: Callable
    bushing_tangent: Callable


def twins():
    """The numpy twins (:mod:`.index3_numpy`, :mod:`.force_jacobians_numpy`)."""
    from . import force_jacobians_numpy as fn
    from . import index3_numpy

    return StiffKernels(False, index3_numpy, fn.spring_tangent, fn.axis_tangent, fn.ball_tangent, fn.bushing_tangent)


def compiled():
    """The numba kernels (:mod:`.index3_kernels`, :mod:`.force_jacobians`); compiled on first call where they
    are not cached."""
    from . import force_jacobians as fj
    from . import index3_kernels

    return StiffKernels(True, index3_kernels, fj.spring_tangent, fj.axis_tangent, fj.ball_tangent, fj.bushing_tangent)


_forced = []


@contextmanager
def using(kernels):
    """Within the block, :func:`choose` answers ``kernels`` (the warm-up's compile, tests comparing the two)."""
    _forced.append(kernels)
    try:
        yield kernels
    finally:
        _forced.pop()


def choose():
    """The kernels a run uses now (see the module docstring): a stat and a read of one small file."""
    from ._frames import HAVE_NUMBA

    if _forced:
        return _forced[-1]
    if not HAVE_NUMBA:
        return twins()
    from ..symbolic.codegen import default_backend, request_module_warmup
    from .library import compiles_in_run

    if default_backend() != "numba":
        return twins()
    if compiles_in_run() or kernels_ready():
        return compiled()
    path = marker_module()
    if path is not None:  # compiled by the warm-up before the library (seconds, not minutes)
        request_module_warmup(path, first=True)
    return twins()


def kernels_ready():
    """True when the kernels have been compiled: their ready marker holds this numba's version."""
    from .library import module_ready

    return module_ready(marker_module())


def marker_module():
    """The path whose ``.ready`` sibling marks the kernels compiled: in the code cache beside the other generated
    modules' markers, named by the digest that names numba's cache folder (:mod:`cadmotion.kernel.numba_cache`:
    the kernels' sources and numba's version), so an edit or an upgrade is a new marker; None where numba's folder
    cannot be written (no machine code is kept: the twins, without a warm-up)."""
    from ..cache_folder import cache_dir
    from ..numba_cache import configure, configured_digest

    return None if configure() is None else cache_dir() / f"{PREFIX}-{configured_digest()}.py"


class LateKernels:
    """Watches a run on the twins that numba could speed up (see the module docstring); ``times`` are its output
    times (s), ``clock`` returns wall seconds. :meth:`due` is asked at each output frame."""

    def __init__(self, times, clock=time.perf_counter):
        from .late_compiled import CHECK_EVERY_S

        self.times = times
        self.clock = clock
        self.every = CHECK_EVERY_S
        self.wall_start = self.last_look = clock()
        self.warmup_started = False

    @classmethod
    def watch(cls, kernels, times):
        """A watch for a run on ``kernels``, or None where there is nothing to wait for: the kernels themselves,
        no numba, no cache to compile into, or no warm-up (``CADMOTION_WARMUP=0``)."""
        import os

        from ._frames import HAVE_NUMBA

        if kernels.compiled or _forced or not HAVE_NUMBA or os.environ.get("CADMOTION_WARMUP", "1") == "0":
            return None
        return cls(times) if marker_module() is not None else None

    def due(self, t):
        """At the output frame at t (s): True when the run goes on with the compiled kernels from here (they are
        ready); starts the warm-up first where the run is predicted to outlast :data:`EARLY_WARMUP_S`."""
        from .late_compiled import predicted_wall_left

        now = self.clock()
        if not self.warmup_started:
            if predicted_wall_left(now - self.wall_start, self.times[0], t, self.times[-1]) <= EARLY_WARMUP_S:
                return False
            from ..symbolic.codegen import request_module_warmup, start_warmup_now

            request_module_warmup(marker_module(), first=True)
            start_warmup_now()
            self.warmup_started = True
        if now - self.last_look < self.every:
            return False
        self.last_look = now
        return kernels_ready()
