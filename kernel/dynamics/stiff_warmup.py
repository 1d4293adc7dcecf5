"""The background warm-up's item for the stiff path's kernels (:mod:`.stiff_kernels`): compile them by running them.

:func:`compile_kernels` runs index-3 for two steps, and the stiffness estimate's tangent, on :data:`WARMUP_SPEC` with
the compiled kernels, so numba compiles each kernel for the argument types a run passes and caches it, then writes
the kernels' ready marker. :mod:`cadmotion.kernel.symbolic.warmup` calls it for the item
``module:<code cache>/stiff-kernels-<digest>.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..spec import ForceSpec, Frame, JointSpec, MechanismSpec, PartSpec

__all__ = ["WARMUP_SPEC", "compile_kernels"]

_AXES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))

#: two bodies on a revolute and a spherical joint, with one element of each kind the tangents cover (and a torque
#: expression), so every kernel meets its run's argument types (m, kg, kg m², N/m, N s/m, N m/rad, N m s/rad)
WARMUP_SPEC = MechanismSpec(
    name="stiff-kernels warm-up", source="<stiff-kernels warm-up>", gravity=(0.0, -9.81, 0.0),
    parts=(PartSpec("ground", fixed=True),
           PartSpec("b1", position=(0.1, 0.2, 0.0), mass=1.5, com=(0.3, 0.1, 0.05),
                    inertia=((0.02, 0.0, 0.0), (0.0, 0.03, 0.0), (0.0, 0.0, 0.04))),
           PartSpec("b2", position=(0.5, -0.1, 0.2), mass=2.0, com=(0.1, 0.0, -0.05),
                    inertia=((0.03, 0.0, 0.0), (0.0, 0.02, 0.0), (0.0, 0.0, 0.04)))),
    joints=(JointSpec("pivot", "revolute", ("ground", "b1"),
                      (Frame((0.0, 0.0, 0.0), _AXES), Frame((-0.1, -0.2, 0.0), _AXES))),
            JointSpec("ball", "spherical", ("b1", "b2"),
                      (Frame((0.4, 0.0, 0.1), _AXES), Frame((0.0, 0.3, -0.1), _AXES)))),
    forces=(ForceSpec("spring", "spring-damper", ("b1", "b2"), ((0.4, 0.5, 0.0), (0.3, 0.1, 0.2)),
                      params=(("stiffness", 80.0), ("damping", 3.5), ("free_length", 0.2))),
            ForceSpec("axis", "rotational-spring-damper", joint="pivot", params=(("stiffness", 5.0), ("damping", 0.7))),
            ForceSpec("torque", "torque", joint="pivot", expression="0.1*sin(t)"),
            ForceSpec("ball", "rotational-spring-damper", joint="ball", params=(("stiffness", 4.0), ("damping", 0.2))),
            ForceSpec("bushing", "bushing", ("b1", "b2"), ((0.3, 0.3, 0.1), (0.35, 0.2, 0.05)),
                      params=(("stiffness", 100.0), ("damping", 1.0), ("rotational_stiffness", 3.0),
                              ("rotational_damping", 0.1)))),
)


def compile_kernels(path):
    """Compile the kernels into numba's cache by running them on :data:`WARMUP_SPEC`, then write ``path``'s ready
    marker; True on success."""
    from ..model import compile_model
    from ..symbolic.codegen import write_marker
    from . import stiff_kernels
    from .forward import prepare
    from .index3 import Index3Formulation

    model = compile_model(WARMUP_SPEC)
    dyn, q0, v0, angles, refs = prepare(model)
    with stiff_kernels.using(stiff_kernels.compiled()):
        Index3Formulation(dyn, angles=angles, refs=refs).solve([0.0, 0.01], q0, v0, dt=0.005)
        dyn.forces.tangent(dyn.evaluate(q0, np.asarray(v0, float), 0.0, refs, with_gamma=False).bs, 0.0, refs)
    return write_marker(Path(path).with_suffix(".ready"))
