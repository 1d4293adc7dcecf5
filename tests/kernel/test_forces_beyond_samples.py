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


# ---------------------------------------------------------------------------- fixed steps on stiff springs
def _block_on_springs(build, stiff, soft=None):
    """A 1 kg block on a rail on a spring ``stiff`` (N/m) stretched 1 mm, at rest; with ``soft``: two blocks
    thrown at 0.5 m/s, the first on ``soft`` to the ground, the second on ``stiff`` to the first."""
    rail = {"type": "prismatic", "origin": [0, 0, 0], "axis": [1, 0, 0]}
    body = {"mass": 1.0, "com": [0, 0, 0], "inertia": [0.01] * 3}
    if soft is None:
        return compile_model(build({
            "gravity": [0, 0, 0],
            "parts": {"ground": {"fixed": True}, "a": {"position": [1e-3, 0, 0], **body}},
            "joints": [{"name": "ra", "parts": ["ground", "a"], **rail}],
            "forces": [{"name": "k", "type": "spring-damper", "parts": ["ground", "a"],
                        "points": [[-1, 0, 0], [1e-3, 0, 0]], "stiffness": stiff, "free_length": 1.0}]}))
    return compile_model(build({
        "gravity": [0, 0, 0],
        "parts": {"ground": {"fixed": True}, "a": {"position": [0, 0, 0], **body}, "b": {"position": [1, 0, 0], **body}},
        "joints": [{"name": "ra", "parts": ["ground", "a"], **rail}, {"name": "rb", "parts": ["ground", "b"], **rail}],
        "forces": [{"name": "soft", "type": "spring-damper", "parts": ["ground", "a"], "points": [[-1, 0, 0], [0, 0, 0]],
                    "stiffness": soft},
                   {"name": "stiff", "type": "spring-damper", "parts": ["a", "b"], "points": [[0, 0, 0], [1, 0, 0]],
                    "stiffness": stiff}],
        "initial_velocity": {"a": {"velocity": [0.5, 0, 0]}, "b": {"velocity": [0.5, 0, 0]}}}))


FIXED_STEP = [("RK4", None), ("generalized-alpha", "index3"), ("HHT", "index3")]


@pytest.mark.parametrize("integrator, formulation", FIXED_STEP)
def test_a_fixed_step_that_does_not_resolve_a_stiff_spring_is_flagged(build, integrator, formulation):
    """k = 1e6 N/m on 1 kg (ω = 1000 rad/s) stepped at h = 1.2 ms (h ω = 1.2, five steps a period) for 0.1 s: the
    answer is off by more than a tenth of its amplitude (phase, numerical damping) while the energy check, whose
    allowance grows with the same (h ω)^q, passed it. ``steps.error`` = C N (h ω)^q (C the method's error constant)
    is far above its allowance, and says what step would do."""
    omega = 1000.0
    motion, result = run(_block_on_springs(build, omega ** 2), t_end=0.12, steps=100, integrator=integrator,
                         formulation=formulation, dt=1.2e-3)
    x = motion.position[:, motion.parts.index("a"), 0]
    assert np.max(np.abs(x - 1e-3 * np.cos(omega * motion.time))) > 1e-4  # the premise: off by > 10 %
    broken = {c.name: c for c in result.invariants.broken}
    assert "steps.error" in broken
    check = broken["steps.error"]
    assert check.max_drift > 10 * check.allowed
    assert "smaller step" in check.message() and "variable-step" in check.message()
    assert any(e.kind == "invariant" and e.items == ("steps.error",) for e in motion.events)


@pytest.mark.parametrize("integrator, formulation", FIXED_STEP)
def test_a_fixed_step_that_resolves_the_spring_is_not_flagged(build, integrator, formulation):
    """The same spring at h ω = 0.02: right to 1e-3 of its amplitude, and ``steps.error`` stays within its allowance."""
    omega = 1000.0
    motion, result = run(_block_on_springs(build, omega ** 2), t_end=0.02, steps=100, integrator=integrator,
                         formulation=formulation, dt=2e-5)
    x = motion.position[:, motion.parts.index("a"), 0]
    assert np.max(np.abs(x - 1e-3 * np.cos(omega * motion.time))) < 1e-6
    checks = {c.name: c for c in result.invariants.checks}
    assert result.invariants.ok and checks["steps.error"].max_drift < checks["steps.error"].allowed


@pytest.mark.parametrize("integrator", ["generalized-alpha", "HHT"])
def test_a_stiff_mode_the_motion_does_not_excite_does_not_flag_a_right_run(build, integrator):
    """Two blocks thrown together, a soft spring (100 N/m) to the ground and a stiff one (1e6 N/m) between them: the
    stiff mode (ω ≈ 1414 rad/s) carries ~1e-9 of the energy. The implicit methods step over it at h = T/40 of the
    slow mode (h ω_stiff ≈ 22) and stay within 5 % of the 2-DOF modal solution; ``steps.error`` charges the slow
    mode only (charging the stiff one, C N (h ω)^3 ≈ 2e5, flagged this right run)."""
    k1, k2 = 100.0, 1e6
    K = np.array([[k1 + k2, -k2], [-k2, k2]])
    lam, U = np.linalg.eigh(K)  # unit masses
    w = np.sqrt(lam)
    slow = 2 * math.pi / w[0]
    motion, result = run(_block_on_springs(build, k2, soft=k1), t_end=2 * slow, steps=80, integrator=integrator,
                         formulation="index3", dt=slow / 40)
    eta = np.sin(np.outer(motion.time, w)) * ((U.T @ [0.5, 0.5]) / w)
    expected = eta @ U.T
    x = np.column_stack([motion.position[:, motion.parts.index("a"), 0],
                         motion.position[:, motion.parts.index("b"), 0] - 1.0])
    assert np.max(np.abs(x - expected)) < 0.05 * np.max(np.abs(expected))
    checks = {c.name: c for c in result.invariants.checks}
    assert not [c.name for c in result.invariants.broken if c.name != "motion.error"]
    assert checks["steps.error"].max_drift < checks["steps.error"].allowed
    # the global error estimate sees the slow mode's phase error at h = T/40 (2-3 % of the motion, beyond a fixed
    # step's hundredth), within a factor 2 of the modal solution's
    true = float(np.max(np.abs(x - expected)))
    assert true / 2 < checks["motion.error"].max_drift < 2 * true
