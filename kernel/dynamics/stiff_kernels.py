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
  compiles the kernels for the next run (:func:`compile_kernels`). A cache that cannot be written keeps no
  machine code: the twins, and no warm-up.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, NamedTuple

__all__ = ["StiffKernels", "choose", "compiled", "twins", "using", "marker_module", "compile_kernels", "PREFIX"]

#: the name of the (never written) module file whose ``.ready`` marker says the kernels are compiled
PREFIX = "stiff-kernels"


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
    from .library import compiled_or_warm_up, compiles_in_run

    if not HAVE_NUMBA:
        return twins()
    from ..symbolic.codegen import default_backend

    if default_backend() != "numba":
        return twins()
    if compiles_in_run() or compiled_or_warm_up(marker_module()):
        return compiled()
    return twins()


def marker_module():
    """The path whose ``.ready`` sibling marks the kernels compiled: in the code cache beside the other generated
    modules' markers, named by the digest that names numba's cache folder (:mod:`cadmotion.kernel.numba_cache`:
    the kernels' sources and numba's version), so an edit or an upgrade is a new marker; None where numba's folder
    cannot be written (no machine code is kept: the twins, without a warm-up)."""
    from ..cache_folder import cache_dir
    from ..numba_cache import configure, sources_digest

    return None if configure() is None else cache_dir() / f"{PREFIX}-{sources_digest()}.py"


#: the small model :func:`compile_kernels` runs: two bodies on a revolute and a spherical joint, with one
#: element of each kind the tangents cover (and a torque expression), so every kernel meets its run's types
WARMUP_MODEL = {
    "gravity": [0, -9.81, 0],
    "parts": {"ground": {"fixed": True},
              "b1": {"position": [0.1, 0.2, 0.0], "mass": 1.5, "com": [0.3, 0.1, 0.05],
                     "inertia": [0.02, 0.03, 0.04]},
              "b2": {"position": [0.5, -0.1, 0.2], "mass": 2.0, "com": [0.1, 0.0, -0.05],
                     "inertia": [0.03, 0.02, 0.04]}},
    "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "b1"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
               {"name": "ball", "type": "spherical", "parts": ["b1", "b2"], "origin": [0.5, 0.2, 0.1]}],
    "forces": [{"name": "spring", "type": "spring-damper", "parts": ["b1", "b2"],
                "points": [[0.4, 0.5, 0], [0.3, 0.1, 0.2]],
                "stiffness": 80.0, "damping": 3.5, "free_length": 0.2},
               {"name": "axis", "type": "rotational-spring-damper", "joint": "pivot", "stiffness": 5.0, "damping": 0.7},
               {"name": "torque", "type": "torque", "joint": "pivot", "expression": "0.1*sin(t)"},
               {"name": "ball", "type": "rotational-spring-damper", "joint": "ball", "stiffness": 4.0, "damping": 0.2},
               {"name": "bushing", "type": "bushing", "parts": ["b1", "b2"],
                "points": [[0.3, 0.3, 0.1], [0.35, 0.2, 0.05]],
                "stiffness": 100.0, "damping": 1.0, "rotational_stiffness": 3.0, "rotational_damping": 0.1}],
}


def compile_kernels(path):
    """Compile the kernels into numba's cache by running index-3 on :data:`WARMUP_MODEL` with them for two steps
    and taking the stiffness estimate's tangent (so they meet the argument types a run passes), then write
    ``path``'s ready marker (the background warm-up, :mod:`..symbolic.warmup`); True on success."""
    import numpy as np

    from ...importers.modelfile import parse_model
    from ..model import compile_model
    from ..symbolic.codegen import write_marker
    from .forward import prepare
    from .index3 import Index3Formulation

    model = compile_model(parse_model(WARMUP_MODEL, source="<stiff-kernels warm-up>"))
    dyn, q0, v0, angles, refs = prepare(model)
    with using(compiled()):
        Index3Formulation(dyn, angles=angles, refs=refs).solve([0.0, 0.01], q0, v0, dt=0.005)
        dyn.forces.tangent(dyn.evaluate(q0, np.asarray(v0, float), 0.0, refs, with_gamma=False).bs, 0.0, refs)
    return write_marker(Path(path).with_suffix(".ready"))
