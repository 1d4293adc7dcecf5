"""Force elements beyond their samples: what ``benchmarks/forces_sweep.py`` found wrong, each as a specification.

A disc of 0.05 kg m² (isotropic, its centre of mass on the joint) on a rotational spring of 5 N m/rad swings at
ω = 10 rad/s; a spin w0 about a joint axis the spring allows is the closed form θ(t) = (w0/ω) sin ωt about that axis.
"""
import math

import numpy as np
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


def _rotation_vectors(motion):
    q = motion.quaternion[:, motion.parts.index("disc")]
    q = q * np.where(q[:, :1] < 0, -1.0, 1.0)
    s = np.linalg.norm(q[:, 1:], axis=1)
    return q[:, 1:] * (2.0 * np.arctan2(s, q[:, 0]) / np.where(s > 0, s, 1.0))[:, None]


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


def test_a_3d_rotational_spring_on_a_universal_joint_is_relaxed_at_the_initial_pose(build):
    """The universal joint's two frames differ by its cross axis (here z and x): measured between them, the spring
    was wound by that rotation at the start and spun a disc that should rest up to 16 rad/s."""
    motion, result = run(_disc_on(build, "universal"), t_end=1.0, steps=50, integrator="DOP853", rtol=1e-10,
                         atol=1e-12)
    assert motion.complete and result.invariants.ok
    assert np.max(np.abs(_rotation_vectors(motion))) < 1e-9
    assert np.max(np.abs(motion.angular_velocity)) < 1e-9


@pytest.mark.parametrize("joint, axis", [("universal", (0, 0, 1)), ("universal", (1, 0, 0)),
                                         ("spherical", (1 / 3, 2 / 3, 2 / 3))])
def test_a_small_twist_of_a_3d_rotational_spring_swings_at_its_closed_form_frequency(build, joint, axis):
    """Spun at 0.01 rad/s about an axis its joint allows (the universal joint's first axis, fixed in the ground, or
    its cross axis, fixed in the disc), the disc turns about that axis by (w0/ω) sin ωt, ω = √(k/I)."""
    w0, n = 0.01, np.array(axis, float)
    motion, _ = run(_disc_on(build, joint, spin=tuple(w0 * n)), t_end=2 * math.pi / OMEGA, steps=40,
                    integrator="DOP853", rtol=1e-11, atol=1e-13)
    expected = (w0 / OMEGA) * np.sin(OMEGA * motion.time)[:, None] * n
    np.testing.assert_allclose(_rotation_vectors(motion), expected, atol=1e-6 * w0 / OMEGA)
