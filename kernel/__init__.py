"""The kinematic kernel: compile a mechanism description into arrays and solve it.

Only numpy, scipy and sympy are imported here, so the kernel also runs inside
FreeCAD's own Python.

>>> from cadmotion.kernel import compile_model, kinematics
>>> model = compile_model(spec)                       # doctest: +SKIP
>>> motion = kinematics(model, t_end=2.0, steps=200)  # doctest: +SKIP
"""

from .kinematics import AssemblyResult, Mobility, assemble, kinematics, mobility
from .model import Model, compile_model
from .motion import Motion
from .spec import (
    DriverSpec,
    ForceSpec,
    Frame,
    InitialVelocitySpec,
    JointSpec,
    MechanismSpec,
    PartSpec,
    TimeFunctionSpec,
)
from .symbolic.templates import COUPLER_TYPES, JOINT_TYPES
from .system import AngleState, System

__all__ = [
    "compile_model", "Model", "kinematics", "assemble", "mobility", "Mobility", "AssemblyResult",
    "Motion", "System", "AngleState", "JOINT_TYPES", "COUPLER_TYPES",
    "MechanismSpec", "PartSpec", "JointSpec", "DriverSpec", "TimeFunctionSpec", "ForceSpec",
    "Frame", "InitialVelocitySpec",
]
