"""A model whose mass data make it (nearly) impossible to integrate is diagnosed before the run starts
(:mod:`cadmotion.kernel.dynamics.conditioning`): refused when the mass on the joints' motion is singular, warned of when
an error-controlled run would take very many steps — naming the joints and the figures — and a small but legitimate
inertia is not flagged."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

from cadmotion.errors import MechanismError, SolverError
from cadmotion.importers.urdf import read_urdf
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import simulate
from cadmotion.kernel.dynamics.conditioning import ConditioningWarning, diagnose
from cadmotion.kernel.dynamics.forward import prepare

# iCub's neck in small: a neck pitching about y, and a head that is a point mass (1.34 kg, inertia 0, as iCub's file
# writes it) on the axis of its own yaw joint; both joints damped by 1 N m s/rad. The reader gives the head a 1 mm
# sphere's inertia, 0.4 · 1.34 kg · (1 mm)² = 5.36e-7 kg m²: the head's yaw decays at c / I = 1.9e6 1/s.
HEAD = ('<link name="torso"/>'
        '<link name="neck"><inertial><origin xyz="0.03 0 0.05"/><mass value="0.5"/>'
        '<inertia ixx="1e-3" iyy="1e-3" izz="1e-3"/></inertial></link>'
        '<link name="head"><inertial><origin xyz="0 0.06 0.08"/><mass value="1.34"/>'
        '<inertia ixx="0" iyy="0" izz="0"/></inertial></link>'
        '<joint name="neck_pitch" type="revolute"><parent link="torso"/><child link="neck"/><axis xyz="0 1 0"/>'
        '<dynamics damping="1"/></joint>'
        '<joint name="neck_yaw" type="revolute"><parent link="neck"/><child link="head"/><origin xyz="0 0 0.1"/>'
        '<axis xyz="0 0.6 0.8"/><dynamics damping="1"/></joint>')

# a light pendulum: 10 g at 5 cm, its own inertia 1e-7 kg m², a damper of 1e-5 N m s/rad — small figures, a
# well-posed model (its rate 1e-5 / 2.5e-5 = 0.4 1/s)
SMALL = ('<link name="base"/>'
         '<link name="bob"><inertial><origin xyz="0.05 0 0"/><mass value="0.01"/>'
         '<inertia ixx="1e-7" iyy="1e-7" izz="1e-7"/></inertial></link>'
         '<joint name="j" type="revolute"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>'
         '<dynamics damping="1e-5"/></joint>')


def _model(tmp_path, body, **parts):
    path = tmp_path / "robot.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="r">\n{body}\n</robot>\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's note on the head's 1 mm sphere
        spec = read_urdf(path, gravity=(0.0, 0.0, -9.81))
    spec = replace(spec, parts=tuple(replace(p, **parts[p.name]) if p.name in parts else p for p in spec.parts))
    return compile_model(spec)


def test_a_point_mass_on_its_own_damped_joint_axis_is_named_before_an_explicit_run_starts(tmp_path):
    # DOP853 at the tolerances the user asked for would need 0.5 s × 1.9e6 / 3 = 3.1e5 steps for stability alone
    # (on main the run set off and stopped at t = 3.3e-3 s with "the accelerations are not finite", naming nothing)
    model = _model(tmp_path, HEAD)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConditioningWarning)  # the warning comes before the first step
        with pytest.raises(ConditioningWarning) as err:
            simulate(model, t_end=0.5, steps=10, rtol=1e-10, atol=1e-12)
    text = str(err.value)
    assert "the motion of 'neck_yaw'" in text and "1.87e+06 1/s" in text
    assert "the motion of joint 'neck_yaw' (moving 'head') carries an inertia of 5.36e-07" in text
    assert "3.1e+05 steps" in text and "--integrator Radau" in text and "mass properties" in text


def test_the_same_motion_carrying_a_negligible_inertia_is_refused_naming_the_joint(tmp_path):
    # the head given 1e-18 kg m² by a spec (no reader's rule between): M_r's condition is 2.7e16, beyond any
    # integrator — refused before anything is integrated, whatever the method (on main: no error)
    model = _model(tmp_path, HEAD, head=dict(inertia=tuple(map(tuple, 1e-18 * np.eye(3)))))
    for kwargs in (dict(rtol=1e-10, atol=1e-12), dict(integrator="Radau"), dict()):
        with pytest.raises(MechanismError) as err:
            simulate(model, t_end=0.5, steps=10, **kwargs)
        text = str(err.value)
        assert "singular on the motion the joints allow" in text and "joint 'neck_yaw'" in text
        assert "give the parts their mass properties" in text and "make the joint fixed" in text


def test_a_tolerance_no_step_can_meet_over_the_accelerations_round_off_is_refused(tmp_path):
    # the head's accelerations carry round-off δ > 0; at atol 1e-30 a step would have to be shorter than
    # 10 · 1e-30 / δ, below the round-off of t: the run could not make progress (on main: it set off)
    model = _model(tmp_path, HEAD)
    dyn, q0, v0, _, refs = prepare(model)
    noise = diagnose(dyn, q0, v0, 0.0, refs, span=0.5, atol=1e-30, mass=False).noise
    assert noise > 0
    with pytest.raises(SolverError, match="round-off of t; the run cannot make progress"):
        simulate(model, t_end=0.5, steps=10, integrator="Radau", rtol=1e-10, atol=1e-30)


def test_a_small_but_legitimate_inertia_is_measured_and_not_flagged(tmp_path):
    model = _model(tmp_path, SMALL)
    dyn, q0, v0, _, refs = prepare(model)
    diag = diagnose(dyn, q0, v0, 0.0, refs, span=0.5, atol=1e-12)
    # one freedom: M_r is 1×1, (m r² + I) / (1 + r²) in the orthonormal basis of [v_c, ω] (|v_c| = r |ω|)
    assert diag.ndof == 1 and diag.joints == ("j",) and diag.condition == pytest.approx(1.0)
    assert diag.inertia_min == pytest.approx((0.01 * 0.05**2 + 1e-7) / (1 + 0.05**2), rel=1e-9)
    assert not diag.singular and not diag.slow
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConditioningWarning)
        motion = simulate(model, t_end=0.5, steps=10, rtol=1e-10, atol=1e-12)
    assert motion.complete and not [e for e in motion.events if e.kind == "conditioning"]
