"""Compliant contacts in the compiled right-hand side (:mod:`cadmotion.kernel.dynamics._contact_kernels`).

The reference is the numpy implementation of :mod:`cadmotion.kernel.dynamics.contacts` (whose force
law the closed-form tests of test_contacts.py check): at random states near touch, the compiled ẏ,
step limit and recorded impact speeds equal the numpy ones to round-off, with the broad phase on
and off; the broad phase skips the pairs that are apart; the compiled DOP853 loop runs the contact
models and meets the closed forms.
"""

import dataclasses
import math

import numpy as np
import pytest

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import _contact_kernels as CK
from cadmotion.kernel.dynamics import _kernels as K
from cadmotion.kernel.dynamics import contacts as C
from cadmotion.kernel.dynamics import simulate
from cadmotion.kernel.dynamics.forward import prepare
from cadmotion.kernel.dynamics.formulations import get_formulation
from cadmotion.kernel.dynamics.mass import body_state
from cadmotion.kernel.spec import ContactSpec

pytest.importorskip("numba")
G = 9.81


def _model():
    """A ball on a floor and one on a box, a box (corners) and a cylinder (rims) on the floor, two balls
    touching, a box resting on a box (corners), two boxes crossed edge on edge, a ball in a pipe (a bore) and
    one on a cylinder's side: every primitive pair, with friction, one contact in the damping form."""
    law = {"method": "compliant", "stiffness": 1e6, "exponent": 1.5, "restitution": 0.7,
           "friction": {"static": 0.5, "dynamic": 0.3}, "stiction_velocity": 1e-2}
    parts = {"floor": {"fixed": True},
             "ball": {"position": [0, 0, 0.05], "mass": 1.0, "inertia": [1e-3] * 3},
             "ball3": {"position": [0.1, 0, 0.05], "mass": 0.5, "inertia": [5e-4] * 3},
             "ball2": {"position": [0.5, 0, 0.15], "mass": 0.5, "inertia": [5e-4] * 3},
             "block": {"position": [0.5, 0, 0.05], "mass": 2.0, "inertia": [4e-3] * 3},
             "disc": {"position": [-0.5, 0, 0.1], "orientation": [math.sqrt(0.5), math.sqrt(0.5), 0, 0],
                      "mass": 2.0, "inertia": [0.01125, 0.01125, 0.01]},
             "top": {"position": [0.5, 0, 0.15], "mass": 1.0, "inertia": [2e-3] * 3},
             "ridge": {"position": [2, 0, 0], "orientation": [math.cos(math.pi / 8), math.sin(math.pi / 8), 0, 0],
                       "fixed": True},
             "cross": {"position": [2, 0, 0.1 * math.sqrt(2)], "mass": 1.0, "inertia": [2e-3] * 3,
                       "orientation": [math.cos(math.pi / 8), 0, math.sin(math.pi / 8), 0]},
             "pipe": {"position": [-2, 0, 0], "fixed": True},
             "pipe_ball": {"position": [-2, 0, -0.08], "mass": 0.3, "inertia": [5e-5] * 3},
             "post_ball": {"position": [-2, 0.13, 0], "mass": 0.3, "inertia": [5e-5] * 3}}
    plane = {"plane": {"normal": [0, 0, 1]}}
    contacts = [
        dict(law, name="ball_floor", parts=["ball", "floor"], shape=[{"sphere": 0.05}, plane]),
        dict(law, name="balls", parts=["ball", "ball3"], shape=[{"sphere": 0.05}, {"sphere": 0.05}]),
        dict(law, name="ball_block", parts=["ball2", "block"],
             shape=[{"sphere": 0.05}, {"box": [0.2, 0.1, 0.1], "center": [0, 0, 0]}]),
        dict(law, name="block_floor", parts=["block", "floor"], shape=[{"box": [0.2, 0.1, 0.1]}, plane]),
        {**{k: v for k, v in law.items() if k != "restitution"}, "damping": 5e5, "name": "disc_floor",
         "parts": ["disc", "floor"], "shape": [{"cylinder": [0.1, 0.05]}, plane]},
        dict(law, name="boxes", parts=["top", "block"], shape=[{"box": [0.1, 0.08, 0.1]}, {"box": [0.2, 0.1, 0.1]}]),
        dict(law, name="crossed", parts=["cross", "ridge"],
             shape=[{"box": [0.1, 0.6, 0.1]}, {"box": [0.6, 0.1, 0.1]}]),
        dict(law, name="in_pipe", parts=["pipe_ball", "pipe"],
             shape=[{"sphere": 0.02}, {"cylinder": [0.1, 1.0], "axis": [1, 0, 0], "inside": True}]),
        dict(law, name="on_post", parts=["post_ball", "pipe"],
             shape=[{"sphere": 0.02}, {"cylinder": [0.11, 1.0], "axis": [1, 0, 0]}]),
    ]
    data = {"units": "m", "gravity": [0, 0, -G], "parts": parts, "contacts": contacts}
    return compile_model(parse_model(data, source="primitives (test)"))


def _form(model, activation=True):
    dyn, q0, v0, angles, refs = prepare(model, 0.0)
    form = get_formulation("projection")(dyn, angles=angles, refs=refs, activation=activation)
    assert form._fast is not None, "the compiled right-hand side must take compliant contacts"
    return form, q0, v0


def _random_states(model, q0, v0, n, seed):
    """States near the initial (touching) pose: positions moved by up to 2 mm and 0.02 rad,
    velocities up to 0.5 m/s and 5 rad/s, impact speeds 0 or a few m/s."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = q0.copy().reshape(-1, 7)
        q[:, :3] += rng.uniform(-2e-3, 2e-3, size=(len(q), 3))
        q[:, 3:] += rng.uniform(-1e-2, 1e-2, size=(len(q), 4))
        q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1)[:, None]
        v = rng.uniform(-0.5, 0.5, size=v0.shape) * np.tile([1, 1, 1, 10, 10, 10], len(v0) // 6)
        state = np.where(rng.uniform(size=None) < 0.5, 0.0, rng.uniform(0.5, 3.0))
        yield q.ravel(), v, state


def _points_model():
    """A rock given as the vertices of a tessellation (``mesh``: spheres of radius 0) lying on the
    floor and touching a box, a ball and a standing post: the points against each shape they are
    built for."""
    rng = np.random.default_rng(7)
    rock = rng.normal(size=(40, 3))
    rock = 0.05 * rock / np.linalg.norm(rock, axis=1)[:, None] * rng.uniform(0.8, 1.0, size=(40, 1))
    rock[:, 2] -= rock[:, 2].min() + 0.05  # the lowest vertex on the floor (the rock's origin 5 cm up)
    x, y, z = rock.T
    block_x = x.max() + 0.05  # the box's face on the rock's furthest vertex in +x
    reach = 0.05 ** 2 - x ** 2 - z ** 2
    ball_y = np.max(y[reach >= 0] + np.sqrt(reach[reach >= 0]))  # the ball on the rock's vertex nearest it
    parts = {"floor": {"fixed": True},
             "rock": {"position": [0, 0, 0.05], "mass": 1.0, "inertia": [1e-3] * 3},
             "block": {"position": [float(block_x), 0, 0.05], "mass": 2.0, "inertia": [4e-3] * 3},
             "ball": {"position": [0, float(ball_y), 0.05], "mass": 0.5, "inertia": [5e-4] * 3},
             # a post (R 3 cm, axis z) whose side passes through the rock's furthest vertex in −x: every
             # vertex is at least R from its axis
             "post": {"position": [float(x.min()) - 0.03, 0, 0.05], "mass": 1.0, "inertia": [1e-3] * 3}}
    data = {"units": "m", "gravity": [0, 0, -G], "parts": parts}
    spec = parse_model(data, source="points (test)")
    law = dict(method="compliant", restitution=0.7, friction=(0.5, 0.3),
               params=(("stiffness", 1e6), ("exponent", 1.5), ("stiction_velocity", 1e-2)))
    points = ("points", tuple(rock.ravel()))
    contacts = (ContactSpec(name="rock_floor", parts=("rock", "floor"), shapes=(points, ("plane", (0, 0, 0, 0, 0, 1))),
                            **law),
                ContactSpec(name="rock_block", parts=("rock", "block"),
                            shapes=(points, ("box", (0.1, 0.1, 0.1, 0, 0, 0))), **law),
                ContactSpec(name="rock_ball", parts=("ball", "rock"), shapes=(("sphere", (0.05, 0, 0, 0)), points),
                            **law),
                ContactSpec(name="rock_post", parts=("rock", "post"),
                            shapes=(points, ("cylinder", (0.03, 0.2, 0, 0, 0, 0, 0, 1))), **law))
    return compile_model(dataclasses.replace(spec, contacts=contacts))


def _check_against_numpy(form, model, q, v):
    """Assert that the compiled ẏ, step limit and recorded impact speeds at (q, v), with the impact speeds of
    ``dyn.forces.contact_state``, are the numpy implementation's (which evaluates every point); returns the
    number of points in touch."""
    fast, dyn = form._fast, form.dyn
    contacts = dyn.forces.contacts
    state = dyn.forces.contact_state(form.refs)
    y = np.concatenate([q, v, [0.0]])
    compiled = fast(0.0, y)
    form._fast = None
    reference = form.rhs(0.0, y)
    form._fast = fast
    assert np.max(np.abs(compiled - reference)) <= 1e-12 * max(np.max(np.abs(reference)), 1.0)
    bs = body_state(model, dyn.mass, q, v)
    limit = K.contact_step_limit(y, fast.df, fast.di, fast.dd, fast.ws)
    assert limit == pytest.approx(dyn.forces.step_limit(bs, form.refs), rel=1e-12)
    expected = state.copy()
    contacts.accept(bs, expected)
    fast(0.0, y)
    K.accept_refs(fast.df, fast.di, fast.dd, fast.ws)
    recorded = np.empty_like(expected)
    recorded[fast._ct_order] = fast._ct_state
    np.testing.assert_allclose(recorded, expected, rtol=1e-12, atol=0)
    return int(np.sum(contacts.geometry(bs)[1] > 0))


@pytest.mark.parametrize("activation", [True, False])
@pytest.mark.parametrize("build", [_model, _points_model], ids=["primitives", "mesh points"])
def test_compiled_contacts_give_the_numpy_accelerations_step_limit_and_impact_speeds(build, activation):
    model = build()
    form, q0, v0 = _form(model, activation)
    touching = 0
    for q, v, speed in _random_states(model, q0, v0, 40, seed=3):
        form.dyn.forces.contact_state(form.refs)[:] = speed
        touching += _check_against_numpy(form, model, q, v)
    assert touching > 40  # the states did test forces, not only zeros


def _row_of_balls(n, gap):
    """n free balls (R = 5 cm) in a row along x, ``gap`` m apart, every pair declared: n(n − 1)/2 sphere pairs."""
    parts = {f"b{i}": {"position": [i * (0.1 + gap), 0, 0], "mass": 1.0, "inertia": [1e-3] * 3} for i in range(n)}
    contacts = [{"name": f"c{i}_{j}", "parts": [f"b{i}", f"b{j}"], "shape": [{"sphere": 0.05}, {"sphere": 0.05}],
                 "method": "compliant", "stiffness": 1e6, "damping": 1e4}
                for i in range(n) for j in range(i + 1, n)]
    data = {"units": "m", "parts": parts, "contacts": contacts,
            "initial_velocity": {"b0": {"velocity": [1.0, 0, 0]}}}
    return compile_model(parse_model(data, source="row of balls (test)"))


def _counts(form, y):
    """(evaluations, points evaluated, points in touch, features tested, box pairs' least-overlap axes computed) of
    one compiled evaluation at y."""
    before = form._fast.contact_stats.copy()
    form._fast(0.0, y)
    return tuple(int(c) for c in form._fast.contact_stats - before)


def test_the_broad_phase_evaluates_only_the_pairs_that_are_close():
    # 6 balls 1 cm apart, 15 declared pairs: no bounding spheres (the balls themselves) meet
    for activation, apart, pressed in ((True, (1, 0, 0, 0, 0), (1, 5, 5, 5, 0)),
                                       (False, (1, 15, 0, 0, 0), (1, 15, 5, 0, 0))):
        form, q0, v0 = _form(_row_of_balls(6, 0.01), activation)
        assert _counts(form, np.concatenate([q0, v0, [0.0]])) == apart
        # the neighbours pressed 0.1 mm into each other: only those 5 pairs evaluated (with the broad phase; each
        # ball against the other's cube, its one feature)
        q = q0.copy().reshape(-1, 7)
        q[:, 0] = np.arange(6) * (0.1 - 1e-4)
        assert _counts(form, np.concatenate([q.ravel(), v0, [0.0]])) == pressed


def test_boxes_apart_are_skipped_and_the_step_limit_is_still_the_numpy_one():
    # 3 free cubes (0.1 m) in a row 1 cm apart, every pair declared (3 × 160 box–box points), moving and turning
    # at random: the broad phase skips the far pair (2 cm apart, bounding spheres 0.087 m) — its corner and
    # edge points' limits are bounded by ½ g / V — and the compiled limit and accelerations equal numpy's
    parts = {f"c{i}": {"position": [i * 0.11, 0, 0], "mass": 1.0, "inertia": [1.7e-3] * 3} for i in range(3)}
    contacts = [{"name": f"c{i}_{j}", "parts": [f"c{i}", f"c{j}"], "shape": [{"box": [0.1] * 3}, {"box": [0.1] * 3}],
                 "method": "compliant", "stiffness": 1e6, "damping": 1e4} for i in range(3) for j in range(i + 1, 3)]
    model = compile_model(parse_model({"units": "m", "parts": parts, "contacts": contacts}, source="cubes (test)"))
    form, q0, v0 = _form(model)
    fast, dyn = form._fast, form.dyn
    rng = np.random.default_rng(5)
    for _ in range(20):
        v = rng.uniform(-1, 1, size=v0.shape) * np.tile([1, 1, 1, 10, 10, 10], 3)
        y = np.concatenate([q0, v, [0.0]])
        points = _counts(form, y)[1]
        assert points < 3 * 160  # the far pair skipped
        bs = body_state(model, dyn.mass, q0, v)
        limit = K.contact_step_limit(y, fast.df, fast.di, fast.dd, fast.ws)
        assert limit == pytest.approx(dyn.forces.step_limit(bs, form.refs), rel=1e-12)
        compiled = fast(0.0, y)
        form._fast = None
        reference = form.rhs(0.0, y)
        form._fast = fast
        assert np.max(np.abs(compiled - reference)) <= 1e-12 * max(np.max(np.abs(reference)), 1.0)


def test_a_row_of_balls_moves_the_same_with_and_without_the_broad_phase():
    # Newton's cradle-like chain of impacts along 6 balls: momentum is conserved, and skipping the far
    # pairs changes nothing (their forces are exactly zero)
    model = _row_of_balls(6, 0.01)
    runs = [simulate(model, t_end=0.5, steps=50, rtol=1e-8, atol=1e-10, options={"activation": a})
            for a in (True, False)]
    for m in runs:
        assert m.complete, m.message
        p = m.velocity[:, :, 0].sum(axis=1)  # total momentum (unit masses), N s
        assert np.max(np.abs(p - 1.0)) < 1e-8
    assert np.array_equal(runs[0].position, runs[1].position)


# ---------------------------------------------------------------------------- the broad phase by feature
def _boxes_on_base(sizes, gap, speed=1.0, restitution=0.8):
    """Free boxes (1 kg, edge lengths ``sizes[i]`` m) in a row along x, ``gap`` m apart, resting on a fixed
    4 × 0.4 × 0.1 m base box (its top face at z = 0.05), the first pushed at ``speed`` m/s along the row,
    frictionless: every pair declared (``pairs = "all"``), 160 box–box points a pair."""
    parts, shape, x = {"base": {"fixed": True}}, {"base": {"box": [4.0, 0.4, 0.1]}}, 0.0
    for i, (a, b, c) in enumerate(sizes):
        x += 0.0 if i == 0 else 0.5 * (sizes[i - 1][0] + a) + gap
        parts[f"box{i}"] = {"position": [x, 0.0, 0.05 + c / 2], "mass": 1.0,
                            "inertia": [(b * b + c * c) / 12, (a * a + c * c) / 12, (a * a + b * b) / 12]}
        shape[f"box{i}"] = {"box": [a, b, c]}
    data = {"units": "m", "gravity": [0, 0, -G], "parts": parts,
            "initial_velocity": {"box0": {"velocity": [speed, 0, 0]}},
            "contacts": [{"name": "row", "pairs": "all", "shape": shape, "method": "compliant", "stiffness": 1e7,
                          "exponent": 1.5, "restitution": restitution}]}
    return compile_model(parse_model(data, source=f"{len(sizes)} boxes on a base (test)"))


def _lifted(q0, box, dz):
    """y at rest with the position of part ``box`` (its index among the moving parts) raised by dz m."""
    q = q0.copy().reshape(-1, 7)
    q[box, 2] += dz
    return q.ravel()


@pytest.mark.parametrize("dz, points", [(1e-6, 0), (1e-3, 0), (1e-9, 4), (0.0, 4), (-1e-4, 4)])
def test_a_box_over_a_box_is_evaluated_only_at_the_corners_near_touch(dz, points):
    # a cube over a 4 m base box: their bounding spheres (2 m) always meet; the features decide. Its bottom face
    # dz above the base's top: 1 µm or more is apart (every gap above the test's round-off tolerance, 2.3e-8 m
    # for a corner against the base's half lengths): no point evaluated; within the tolerance or pressed in,
    # its 4 bottom corners (each 4 bottom edges against the base's box are near too, but none of the base's
    # edges, 0.15 m aside, meets the cube's box, so no edge–edge point). 40 features tested: its 8 corners
    # and 12 edges against the base's box, the base's 12 edges against its box, the base's 8 corners.
    model = _boxes_on_base([(0.1, 0.1, 0.1)], 0.02)
    form, q0, v0 = _form(model)
    y = np.concatenate([_lifted(q0, 0, dz), v0, [0.0]])
    n_eval, n_points, n_touch, n_features, _ = _counts(form, y)
    assert (n_eval, n_points, n_features) == (1, points, 40)
    assert n_touch == (4 if dz < 0 else 0)
    # and the forces, step limit and impact speeds are the numpy implementation's (every declared point)
    assert _check_against_numpy(form, model, y[:len(q0)], v0) == n_touch


@pytest.mark.parametrize("x, dy, dz, touching, axes", [
    # aligned: the patch's 4 vertices, each a corner of both cubes, counted once (b's corners yield to a's, which
    # carry them); both pairs' axes are still computed (a corner yields only where the pair's axis is a face normal)
    (0.1 - 1e-4, 0.0, 0.0, 4, 2),
    (0.1 - 1e-4, 1e-6, 0.0, 4, 2),   # offset sideways 1 µm: the patch's corners, 2 of b's, 2 of a's
    (0.1 - 1e-4, 0.03, 0.02, 4, 2),  # offset both ways: one corner of each and two edge crossings
    (0.3, 0.0, 0.0, 0, 0),           # apart: no corner in or on the other box, no edges crossing
])
@pytest.mark.parametrize("activation", [True, False])
def test_a_box_pairs_least_overlap_axis_is_computed_once_an_evaluation(x, dy, dz, touching, axes, activation,
                                                                        monkeypatch):
    # equal cubes face to face, b's centre at (x, dy, dz) from a's, pressed 0.1 mm: every corner in or on the other
    # box and every overlapping edge crossing is measured with the boxes' least-overlap axis, which belongs to the
    # pair of boxes: computed once per box taken as S (its corners; the first box also its edges), on the
    # compiled right-hand side with the broad phase or every point evaluated, and on the numpy path
    data = {"units": "m", "parts": {"a": {"fixed": True},
                                    "b": {"position": [0.3, 0.0, 0.0], "mass": 1.0, "inertia": [1.7e-3] * 3}},
            "contacts": [{"name": "faces", "parts": ["b", "a"], "method": "compliant", "stiffness": 1e7,
                          "exponent": 1.5, "damping": 0.0, "shape": [{"box": [0.1] * 3}, {"box": [0.1] * 3}]}]}
    model = compile_model(parse_model(data, source="cubes face to face (test)"))
    form, q0, v0 = _form(model, activation)
    q = q0.copy()
    q[:3] = x, dy, dz
    _, _, n_touch, _, n_axes = _counts(form, np.concatenate([q, v0, [0.0]]))
    assert (n_touch, n_axes) == (touching, axes)
    rows = []
    least_overlap = C._least_overlap
    monkeypatch.setattr(C, "_least_overlap", lambda *args: rows.append(len(args[4])) or least_overlap(*args))
    delta = form.dyn.forces.contacts.geometry(body_state(model, form.dyn.mass, q, v0))[1]
    assert (np.sum(delta > 0), sum(rows)) == (touching, axes)


def _random_pose_model():
    """Two free boxes of unequal sides (one offset from its com), a ball against one of them, against a sphere
    and against a slanted cylinder, and the boxes against a post: every shape pair with features, at random
    poses in a 0.34 m cube (many overlapping deep, many apart)."""
    law = {"method": "compliant", "stiffness": 1e6, "exponent": 1.5, "restitution": 0.7,
           "friction": {"static": 0.5, "dynamic": 0.3}, "stiction_velocity": 1e-2}
    box_a, box_b = {"box": [0.2, 0.1, 0.15]}, {"box": [0.1, 0.3, 0.12], "center": [0.01, 0, 0]}
    parts = {name: {"position": [0.0, 0.0, 0.3 * k], "mass": 1.0, "inertia": [1e-3] * 3}
             for k, name in enumerate(("a", "b", "ball", "post"))}
    contacts = [dict(law, name="boxes", parts=["a", "b"], shape=[box_a, box_b]),
                dict(law, name="ball_box", parts=["ball", "a"], shape=[{"sphere": 0.05}, box_a]),
                dict(law, name="balls", parts=["ball", "b"], shape=[{"sphere": 0.05}, {"sphere": 0.04}]),
                dict(law, name="ball_post", parts=["ball", "post"],
                     shape=[{"sphere": 0.05}, {"cylinder": [0.05, 0.2], "axis": [1, 1, 0.3]}]),
                dict(law, name="box_post", parts=["a", "post"], shape=[box_a, {"box": [0.05, 0.05, 0.4]}])]
    return compile_model(parse_model({"units": "m", "parts": parts, "contacts": contacts}, source="random poses (test)"))


def test_the_points_skipped_by_their_features_exert_no_force_at_random_poses():
    # the numpy implementation evaluates every point: at random poses and velocities, from deep overlaps to
    # apart, the compiled accelerations, step limit and impact speeds with the broad phase equal it, while the
    # broad phase evaluates a fraction of the points
    model = _random_pose_model()
    form, q0, v0 = _form(model)
    contacts = form.dyn.forces.contacts
    rng = np.random.default_rng(11)
    touching = evaluated = 0
    for _ in range(150):
        q = q0.copy().reshape(-1, 7)
        q[:, :3] = rng.uniform(-0.17, 0.17, size=(len(q), 3))
        quat = rng.normal(size=(len(q), 4))
        q[:, 3:] = quat / np.linalg.norm(quat, axis=1)[:, None]
        q = q.ravel()
        v = rng.uniform(-1, 1, size=v0.shape) * np.tile([1, 1, 1, 10, 10, 10], len(v0) // 6)
        form.dyn.forces.contact_state(form.refs)[:] = np.where(rng.uniform(size=contacts.n) < 0.5, 0.0,
                                                               rng.uniform(0.5, 3.0, size=contacts.n))
        evaluated += _counts(form, np.concatenate([q, v, [0.0]]))[1]
        touching += _check_against_numpy(form, model, q, v)
    # forces were tested, not only zeros (the deep overlaps' edge crossings deeper than the boxes' least overlap
    # are not points in touch: 269 here)
    assert touching > 200
    assert evaluated < 0.2 * 150 * contacts.n


def _solve(model, t_end, activation, steps=50):
    """(Motion-like result, points evaluated per evaluation): projection / DOP853 1e-8 / 1e-10 on the compiled
    right-hand side, with the broad phase on or off."""
    form, q0, v0 = _form(model, activation)
    result = form.solve(np.linspace(0.0, t_end, steps + 1), q0, v0, integrator="DOP853", rtol=1e-8, atol=1e-10)
    assert result.success, result.message
    stats = form._fast.contact_stats
    return result, stats[1] / stats[0]


def test_boxes_resting_on_a_box_move_the_same_with_and_without_the_broad_phase():
    # a cube pushed into a larger box (20 mm away) while both rest on a base: the cube's top front corners hit
    # the box's back face (equal boxes side by side, with coplanar faces, are in test_contact_pairs.py and
    # benchmarks/contact_pairs.py). Skipped points exert exactly zero force and the step limit is every point's, so the
    # runs are the same to the last bit; frictionless, the base takes no momentum along x
    model = _boxes_on_base([(0.1, 0.1, 0.1), (0.1, 0.12, 0.12)], 0.02)
    (on, per_eval_on), (off, per_eval_off) = (_solve(model, 0.04, a) for a in (True, False))
    assert np.array_equal(on.q, off.q) and np.array_equal(on.v, off.v)
    assert per_eval_off == 3 * 160 and per_eval_on < 40  # 8 corners on the base, a few more at the impact
    v = on.v.reshape(len(on.t), 2, 6)
    assert np.max(np.abs(v[:, :, 0].sum(axis=1) - 1.0)) < 1e-6
    assert v[-1, 1, 0] > 0.5  # the box was hit


def test_a_fast_box_crossing_the_broad_phase_in_one_step_still_gets_its_impact():
    # no gravity: a cube (0.1 m) at 50 m/s toward a fixed 0.3 m cube 0.2 m away. Far, the pair's bounding spheres are
    # apart, then its corners' features; nothing limits a step of the free flight but the step limit's bound of
    # the skipped points (½ g / V). The restitution form's exact ξ(e) gives the cube, face on (its 4 leading
    # corners alike), a rebound speed e v; the run is the same to the last bit without the broad phase
    e, speed = 0.8, 50.0
    data = {"units": "m", "parts": {"wall": {"fixed": True, "position": [0.4, 0, 0]},
                                    "cube": {"position": [0.0, 0.0, 0.0], "mass": 1.0, "inertia": [1.7e-3] * 3}},
            "initial_velocity": {"cube": {"velocity": [speed, 0, 0]}},
            "contacts": [{"name": "hit", "parts": ["cube", "wall"], "shape": [{"box": [0.1] * 3}, {"box": [0.3] * 3}],
                          "method": "compliant", "stiffness": 1e9, "exponent": 1.5, "restitution": e}]}
    model = compile_model(parse_model(data, source="fast cube (test)"))
    t_end = 0.2 / speed + 2e-3  # the flight to the wall and 2 ms after
    (on, per_eval), (off, _) = (_solve(model, t_end, a, steps=4) for a in (True, False))
    assert np.array_equal(on.q, off.q) and np.array_equal(on.v, off.v)
    assert on.v[-1, 0] == pytest.approx(-e * speed, rel=1e-3)
    assert np.max(np.abs(on.v[-1, 1:])) < 1e-6 * speed  # face on: no sideways motion, no spin
    assert per_eval < 0.25 * 160


def test_compiled_kernel_constants_are_the_numpy_ones():
    assert (CK.MIN_IMPACT_SPEED, CK.STEPS_PER_CONTACT, CK.TOUCH_STEP) == (
        C.MIN_IMPACT_SPEED, C.STEPS_PER_CONTACT, C.TOUCH_STEP)
    assert (CK.PLANE, CK.BOX, CK.RIM, CK.CYL, CK.BORE, CK.EDGE, CK.CORNER, CK.SECOND, CK.EDGE_PARALLEL,
            CK.EDGE_MARGIN, CK.FACE_PREFERENCE) == (C.PLANE, C.BOX, C.RIM, C.CYL, C.BORE, C.EDGE, C.CORNER, C.SECOND,
                                                    C.EDGE_PARALLEL, C.EDGE_MARGIN, C.FACE_PREFERENCE)


def test_contact_models_run_in_the_compiled_dop853_loop():
    model = _row_of_balls(3, 0.01)
    dyn, q0, v0, angles, refs = prepare(model, 0.0)
    form = get_formulation("projection")(dyn, angles=angles, refs=refs)
    assert form.runs_compiled("DOP853", np.linspace(0, 1, 11), 1e-8, 1e-10)
    assert not form.runs_compiled("Radau", np.linspace(0, 1, 11), 1e-8, 1e-10)  # its Jacobian has no contacts


# ---------------------------------------------------------------------------- the chain drive sample
def _chain_generator():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "samples" / "dynamics" / "make_chain_drive.py"
    spec = importlib.util.spec_from_file_location("make_chain_drive", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chain_drive_generator_lays_the_chain_on_the_pitch_polygons():
    import tomllib

    mk = _chain_generator()
    n = 60
    data = tomllib.loads(mk.chain_drive_toml(n))
    r = mk.pitch_radius()
    assert r == pytest.approx(mk.PITCH / (2 * math.sin(math.pi / mk.TEETH)), rel=1e-15)
    links = [data["parts"][f"link{k}"] for k in range(n)]
    rollers = np.array([p["position"][:2] for p in links])
    # every link is one pitch long: its joint at the next roller
    assert np.allclose(np.linalg.norm(np.roll(rollers, -1, axis=0) - rollers, axis=1), mk.PITCH, rtol=0, atol=1e-12)
    pins = {j["name"]: np.array(j["origin"][:2]) for j in data["joints"] if j["name"].startswith("pin")}
    assert all(np.allclose(pins[f"pin{k}"], rollers[k], atol=1e-15) for k in range(n))
    # z/2 + 1 rollers on each pitch circle, the rest on the two straight spans at y = ±r
    centre_b = data["parts"]["sprocket_b"]["position"][0]
    on_a = np.isclose(np.linalg.norm(rollers, axis=1), r, atol=1e-12) & (rollers[:, 0] <= 1e-12)
    on_b = np.isclose(np.linalg.norm(rollers - [centre_b, 0], axis=1), r, atol=1e-12) & (rollers[:, 0] >= centre_b - 1e-12)
    assert on_a.sum() == on_b.sum() == mk.TEETH // 2 + 1
    assert np.all(np.isclose(np.abs(rollers[~(on_a | on_b), 1]), r, atol=1e-12))
    # every roller against every tooth: 2 z N contact points, none touching at the start
    spec = parse_model(data, source="chain drive (test)")
    assert len(spec.contacts) == 2 * mk.TEETH * n
    model = compile_model(spec)
    dyn, q0, v0, angles, refs = prepare(model, 0.0)  # refuses parts that start inside each other
    bs = body_state(model, dyn.mass, q0, v0)
    delta = dyn.forces.contacts.geometry(bs)[1]
    # a seated roller is CLEARANCE from its two teeth
    assert np.max(delta) == pytest.approx(-mk.CLEARANCE, abs=1e-12)
    assert np.sum(np.isclose(delta, -mk.CLEARANCE, atol=1e-12)) == 2 * 2 * (mk.TEETH // 2 + 1)


def test_chain_drive_generator_refuses_a_chain_too_short_for_its_sprockets():
    mk = _chain_generator()
    with pytest.raises(ValueError, match="at least 26"):
        mk.chain_drive_toml(24)
    mk.chain_drive_toml(26)


def test_chain_drive_generator_writes_unilateral_contacts_on_request_and_compliant_ones_by_default():
    import tomllib

    mk = _chain_generator()
    compliant = mk.chain_drive_toml(26)
    assert compliant == mk.chain_drive_toml(26, method="compliant")
    unilateral = tomllib.loads(mk.chain_drive_toml(26, method="unilateral"))
    laws = {(c["method"], c["restitution"], c["friction"]) for c in unilateral["contacts"]}
    assert laws == {("unilateral", mk.RESTITUTION, mk.FRICTION)}
    spec = parse_model(unilateral, source="chain drive (test)")
    assert len(spec.contacts) == 2 * mk.TEETH * 26 and {c.method for c in spec.contacts} == {"unilateral"}
    # the rest of the model is the compliant one's
    assert {k: v for k, v in unilateral.items() if k != "contacts"} == \
        {k: v for k, v in tomllib.loads(compliant).items() if k != "contacts"}
    with pytest.raises(ValueError, match="unknown contact method"):
        mk.chain_drive_toml(26, method="hertz")


def test_chain_drive_moves_the_same_with_and_without_the_broad_phase_and_balances_its_energy():
    import tomllib

    mk = _chain_generator()
    model = compile_model(parse_model(tomllib.loads(mk.chain_drive_toml(32)), source="chain drive (test)"))
    runs = [simulate(model, t_end=0.004, steps=8, rtol=1e-6, atol=1e-8, options={"activation": a},
                     estimate_error=False) for a in (True, False)]  # (compared with each other)
    for m in runs:
        assert m.complete, m.message
    assert np.array_equal(runs[0].position, runs[1].position)  # the skipped pairs' forces are exactly zero
    ex = runs[0].extra
    E = ex["energy.kinetic"] + ex["energy.potential"]
    W = ex["work.nonconservative"]  # the driver's work, the brake's and the contacts' losses
    assert W[-1] > 0  # the driver puts energy in
    assert np.max(np.abs(E - E[0] - W)) <= 1e-6 * np.max(np.abs(W))
    # the teeth have taken up the chain: sprocket B turns the driver's way
    wb = runs[0].angular_velocity[-1, runs[0].parts.index("sprocket_b"), 2]
    assert wb < 0
