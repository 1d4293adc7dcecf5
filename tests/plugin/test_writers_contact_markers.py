"""The animations mark active contacts: a red cube on the contact's point while it touches.

References are closed forms: a ball dropped from h0 = 1 m (restitution e = 0.8) hits the floor at
t1 = sqrt(2 h0 / g), then at t_(k+1) = t_k + 2 e^k t1 (it leaves the k-th impact at e^k g t1); a box resting on an incline touches it at
its four foot corners from the first frame on.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run
from cadmotion.plugin.writers import write_outputs
from cadmotion.plugin.writers.scene import build_scene

try:
    from .test_writers_gltf import accessor, channels_of, node_of, read_glb
    from .test_writers_html import chromium, embedded_data, needs_chromium, status
except ImportError:
    from test_writers_gltf import accessor, channels_of, node_of, read_glb
    from test_writers_html import chromium, embedded_data, needs_chromium, status

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
G, H0, E, DT, T_END = 9.81, 1.0, 0.8, 0.01, 3.0


def impact_times(t_end):
    t1 = math.sqrt(2 * H0 / G)
    times, t, k = [], t1, 1
    while t < t_end:
        times.append(t)
        t += 2 * E ** k * t1
        k += 1
    return times


@pytest.fixture(scope="module")
def ball():
    motion, _ = run(compile_model(read_model_file(SAMPLES / "bouncing_ball_unilateral.cadmotion.toml")),
                    T_END, round(T_END / DT))
    return motion


@pytest.fixture(scope="module")
def block():
    motion, _ = run(compile_model(read_model_file(SAMPLES / "block_on_incline_unilateral.cadmotion.toml")), 0.5, 10)
    return motion


def test_a_bouncing_balls_marker_shows_at_the_frames_nearest_its_impacts_on_the_floor(ball, tmp_path):
    frames = sorted({round(t / DT) for t in impact_times(T_END)})
    assert len(frames) >= 4
    scene = build_scene(ball)
    assert scene.markers == ["ball_floor"]
    assert np.flatnonzero(scene.marker_visible[:, 0]).tolist() == frames
    path = tmp_path / "ball.glb"
    write_outputs(ball, [path])
    doc, data = read_glb(path)
    node = node_of(doc, "contact ball_floor")
    channels = channels_of(doc, node)
    assert channels["scale"]["interpolation"] == "STEP"
    scale = accessor(doc, data, channels["scale"]["output"])
    assert np.flatnonzero(scale[:, 0] == 1.0).tolist() == frames and set(np.unique(scale)) == {0.0, 1.0}
    where = accessor(doc, data, channels["translation"]["output"])[frames]
    # within half a frame of an impact at ≤ 4.5 m/s, the point is on the floor below the ball to 2 cm
    assert np.allclose(where[:, :2], 0.0, atol=1e-9) and np.all(np.abs(where[:, 2]) < 0.02)


def test_a_resting_boxs_four_corners_are_marked_from_the_first_frame(block, tmp_path):
    scene = build_scene(block)
    assert sorted(scene.markers) == sorted(f"foot_{p}" for p in ("front_left", "front_right", "back_left",
                                                                 "back_right"))
    assert scene.marker_visible.all()
    page = tmp_path / "block.html"
    write_outputs(block, [page])
    data = embedded_data(page.read_text(encoding="utf-8"))
    assert sum(bool(p.get("marker")) for p in data["parts"]) == 4
    assert len(data["parts"]) == len(block.parts) + 4


def test_a_kinematic_or_contact_free_motion_has_no_markers(ball):
    from cadmotion.kernel.motion import Motion

    plain = Motion(**{**ball.__dict__, "extra": {}, "events": []})
    assert build_scene(plain).markers == []


@needs_chromium
def test_the_browser_draws_the_markers_of_the_active_contacts(block, ball, tmp_path):
    """The page plays on its own: whatever frame it shows, it draws the box's four corner markers,
    and the ball's marker exactly when that frame is one nearest an impact."""
    impacts = {round(t / DT) for t in impact_times(T_END)}
    for motion, name, drawn in ((block, "block", lambda k: 4), (ball, "ball", lambda k: int(k in impacts))):
        page = tmp_path / f"{name}.html"
        write_outputs(motion, [page])
        st = status(chromium(tmp_path, page.as_uri(), "--dump-dom", budget=500).stdout)
        assert st.get("status") == "ok", st
        assert st.get("markers") == str(drawn(int(st["frame"]))), st
