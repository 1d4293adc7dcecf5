"""Parts that start inside each other are moved apart on request (``resolve_penetration``).

References are closed forms: a free ball sunk 1 mm into the floor is lifted straight up by 1 mm;
a pendulum bob (pivot at the origin, arm L, sphere r) started into a wall x = w turns about its
pivot, the only motion its revolute allows, to sin θ = (w − r) / L; a ball on a slide parallel to
the floor cannot leave it, which is an error naming the pair.
"""

import math

import numpy as np
import pytest

from cadmotion.errors import MechanismError
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run
from cadmotion.kernel.dynamics.penetration import MARGIN, resolve_initial_penetration
from cadmotion.plugin.run_analysis import run_analysis

R, L, W = 0.05, 1.0, 0.6


def ball_on_floor(z, method="unilateral", joint=None):
    model = {"units": "m", "gravity": [0, 0, -9.81],
             "parts": {"floor": {"fixed": True},
                       "ball": {"position": [0.2, 0.1, z], "mass": 1.0, "inertia": [1e-3] * 3}},
             "contacts": [{"name": "ball_floor", "parts": ["ball", "floor"], "method": method,
                           "shape": [{"sphere": R}, {"plane": {}}]}]}
    if method == "compliant":
        model["contacts"][0].update(stiffness=1e7, exponent=1.5, restitution=0.5)
    if joint:
        model["joints"] = [{"name": "slide", "type": "prismatic", "parts": ["floor", "ball"],
                            "origin": [0.2, 0.1, z], "axis": [1, 0, 0]}]
    return compile_model(parse_model(model, source="ball"))


def pendulum_into_wall(theta):
    bob = [L * math.sin(theta), 0.0, -L * math.cos(theta)]
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, -9.81],
        "parts": {"ground": {"fixed": True},
                  "bob": {"position": bob, "mass": 1.0, "inertia": [1e-3] * 3}},
        "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "bob"], "origin": [0, 0, 0],
                    "axis": [0, 1, 0]}],
        "contacts": [{"name": "bob_wall", "parts": ["bob", "ground"],
                      "shape": [{"sphere": R}, {"plane": {"point": [W, 0, 0], "normal": [-1, 0, 0]}}]}]},
        source="pendulum"))


@pytest.mark.parametrize("method", ["unilateral", "compliant"])
def test_a_ball_sunk_into_the_floor_is_lifted_straight_out_by_its_depth(method):
    moved, separated = resolve_initial_penetration(ball_on_floor(R - 1e-3, method))
    x, y, z = moved.q0[:3]
    assert (x, y) == pytest.approx((0.2, 0.1), abs=1e-12)
    assert z == pytest.approx(R + MARGIN, abs=1e-12)
    [s] = separated
    assert (s.contact, s.parts, s.depth) == ("ball_floor", ("ball", "floor"), pytest.approx(1e-3, rel=1e-9))


def test_a_pendulum_started_into_a_wall_turns_about_its_pivot_to_touch_it():
    moved, [s] = resolve_initial_penetration(pendulum_into_wall(math.radians(40)))
    x, _, z = moved.q0[:3]
    theta = math.atan2(x, -z)
    assert math.hypot(x, z) == pytest.approx(L, abs=1e-10)
    assert L * math.sin(theta) + R == pytest.approx(W - MARGIN, abs=1e-10)
    assert s.depth == pytest.approx(L * math.sin(math.radians(40)) + R - W, rel=1e-9)


def test_parts_that_start_apart_or_touching_are_left_alone():
    model = ball_on_floor(R)
    assert resolve_initial_penetration(model) == (model, [])


def test_a_ball_its_slide_holds_inside_the_floor_is_an_error_naming_the_pair():
    with pytest.raises(MechanismError, match=r"ball_floor \(ball / floor\) still 0.001 m inside"):
        resolve_initial_penetration(ball_on_floor(R - 1e-3, joint=True))


def test_without_the_request_the_run_refuses_and_with_it_the_ball_rests_on_the_floor():
    model = ball_on_floor(R - 1e-3)
    with pytest.raises(MechanismError, match="start interpenetrating by 0.001 m.*"):
        run(model, 0.1, 5)
    motion, result = run_analysis(model, "dynamic", 0.1, 5, resolve_penetration=True)
    assert "moved apart" in result.notes[0] and "ball_floor (ball / floor): 0.001 m" in result.notes[0]
    z = np.asarray(motion.position).reshape(motion.nt, len(motion.parts), 3)[:, motion.parts.index("ball"), 2]
    assert np.allclose(z, R + MARGIN, atol=1e-9)
