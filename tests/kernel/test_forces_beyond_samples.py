"""Force elements beyond their samples: what ``benchmarks/forces_sweep.py`` found wrong, each as a specification.

A disc of 0.05 kg m² (isotropic, its centre of mass on the joint) on a rotational spring of 5 N m/rad swings at
ω = 10 rad/s; a spin w0 about a joint axis the spring allows is the closed form θ(t) = (w0/ω) sin ωt about that axis.
"""
import math

import pytest

from cadmotion.errors import MechanismError
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

I_DISC, K_ROT = 0.05, 5.0
OMEGA = math.sqrt(K_ROT / I_DISC)


def _disc_on(build, joint, spin=(0.0, 0.0, 0.0), **spring):
    j = {"name": "hinge", "type": joint, "parts": ["ground", "disc"], "origin": [0, 0, 0], "axis": [0, 0, 1]}
    if joint == "universal":
        j["axis2"] = [1, 0, 0]
    data = {"gravity": [0, 0, 0],
            "parts": {"ground": {"fixed": True},
                      "disc": {"position": [0, 0, 0], "mass": 1.0, "com": [0, 0, 0], "inertia": [I_DISC] * 3}},
            "joints": [j],
            "forces": [{"name": "twist", "type": "rotational-spring-damper", "joint": "hinge", "stiffness": K_ROT,
                        **spring}]}
    if any(spin):
        data["initial_velocity"] = {"disc": {"angular_velocity": list(spin)}}
    return compile_model(build(data))


@pytest.mark.parametrize("joint", ["spherical", "universal"])
def test_a_3d_rotational_spring_refuses_a_preload_it_cannot_apply(build, joint):
    """A 3-D rotational spring has no axis to wind a preload about: taking one and ignoring it (as it did) hid a
    model error; the refusal names the element and the joint and says what to do."""
    with pytest.raises(MechanismError) as err:
        run(_disc_on(build, joint, preload=0.5), t_end=0.1, steps=1)
    text = f"{err.value}"
    assert "'twist'" in text and "'hinge'" in text and "preload" in text
    assert "revolute" in err.value.hint and "torque" in err.value.hint
    assert run(_disc_on(build, joint), t_end=0.1, steps=1)[0].complete  # without a preload: a spring as before
