"""Video writer (.gif, .mp4): read the files back and find the parts where the motion puts them.

The turntable motion (closed-form poses, see test_writers_motions) has a blue cylinder
sliding along x without turning: in each decoded frame the blue pixels' centroid must
move across the picture as the slider's frame origin moves, projected through the video's
camera, and the frame count must follow the frame rate.
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")

from cadmotion.errors import OutputError  # noqa: E402
from cadmotion.plugin.writers import check_outputs, write_outputs  # noqa: E402
from cadmotion.plugin.writers.scene import build_scene  # noqa: E402
from cadmotion.plugin.writers.video import fit_camera, frame_times, write_video  # noqa: E402

try:
    from .test_writers_motions import turntable
except ImportError:
    from test_writers_motions import turntable

SIZE = (480, 360)


@pytest.fixture(scope="module")
def motion():
    pytest.importorskip("cadquery")
    return turntable(nt=41, duration=2.0)


def blue_centroid(rgb):
    """Centroid (x, y) in pixels of the slider's blue (sRGB 0.1, 0.4, 0.9, shaded)."""
    r, g, b = (rgb[..., k].astype(int) for k in range(3))
    mask = (b > r + 60) & (b > g + 40)
    assert mask.sum() > 30, "the slider is not in the picture"
    ys, xs = np.nonzero(mask)
    return np.array([xs.mean(), ys.mean()])


def projected_slider(motion, t):
    scene = build_scene(motion)
    camera = fit_camera(scene, motion.spec.gravity, aspect=SIZE[0] / SIZE[1])  # what the writer uses
    x = np.interp(t, motion.time, motion.position[:, motion.part_index("slider"), 0])
    xy, _ = camera.project(np.array([x, 0.0, 0.0]), SIZE)
    return xy


def test_gif_frames_follow_the_frame_rate_and_the_slider(tmp_path, motion):
    from PIL import Image

    path = write_video(motion, tmp_path / "turntable.gif", fps=10, size=SIZE)
    times = frame_times(build_scene(motion), 10)
    assert len(times) == 21 and times[-1] == pytest.approx(2.0)
    with Image.open(path) as gif:
        assert gif.size == SIZE and gif.n_frames == 21
        frames = []
        for k in range(gif.n_frames):
            gif.seek(k)
            frames.append(np.asarray(gif.convert("RGB")))
    assert np.any(frames[0] != frames[5])
    # the slider moves by its stroke: compare the picture's displacement with the projection
    c0 = blue_centroid(frames[0])
    for k in (5, 10, 15, 20):
        moved = blue_centroid(frames[k]) - c0
        expected = projected_slider(motion, times[k]) - projected_slider(motion, times[0])
        np.testing.assert_allclose(moved, expected, atol=3.0)
    span = max(np.linalg.norm(projected_slider(motion, t) - projected_slider(motion, 0.0)) for t in times)
    assert span > 25  # a frozen picture would fail (the HTML page's view: ~37 px of stroke)


def test_mp4_has_the_frames_and_size(tmp_path, motion):
    ffmpeg = pytest.importorskip("imageio_ffmpeg")
    path = write_outputs(motion, [tmp_path / "turntable.mp4"])[0]
    reader = ffmpeg.read_frames(str(path))
    meta = next(reader)
    frames = [np.frombuffer(f, np.uint8).reshape(meta["size"][1], meta["size"][0], 3) for f in reader]
    assert tuple(meta["size"]) == (960, 720) and meta["fps"] == pytest.approx(25)
    assert len(frames) == len(frame_times(build_scene(motion), 25)) == 41  # at most one per output frame
    first, last = blue_centroid(frames[0]), blue_centroid(frames[len(frames) // 4])
    assert np.linalg.norm(first - last) > 20


def test_mp4_without_its_encoder_is_refused_before_computing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)      # import fails
    with pytest.raises(OutputError, match=r"(?s)imageio-ffmpeg.*cadmotion\[video\]"):
        check_outputs([tmp_path / "a.csv", tmp_path / "anim.mp4"])
    assert not list(tmp_path.iterdir())


def _crossing_bars():
    """Two bars seen from the page's view: A (red) runs left to right and away from the
    eye; B (blue), short and upright, crosses it where A is far, itself nearer. B's faces
    are farther on average than A's, so back-to-front drawing puts A over B there."""
    from cadmotion.plugin.writers.scene import Scene
    from cadmotion.plugin.writers.tessellate import bar_mesh

    probe = fit_camera(Scene("probe", [bar_mesh((0, 0, 0), (1, 0, 0), 0.1)], ["p"], np.array([0]),
                             [(1, 1, 1, 1)], np.array([False]), np.array([0.0]), np.zeros((1, 1, 3)),
                             np.array([[[1.0, 0, 0, 0]]]), True, ""))
    r, u, f = probe.right, probe.up, probe.forward            # directions only: the same for any scene
    a = bar_mesh(-0.5 * r - 0.6 * f, 0.5 * r + 0.6 * f, 0.06)      # depth -0.6 .. 0.6, 0.48 at B
    b_centre = 0.4 * r + 0.3 * f                                     # triangles' mean depth <= 0.2
    b = bar_mesh(b_centre - 0.15 * u, b_centre + 0.15 * u, 0.06)
    scene = Scene("bars", [a, b], ["A", "B"], np.array([0, 1]), [(0.9, 0.1, 0.1, 1.0), (0.1, 0.2, 0.9, 1.0)],
                  np.array([False, False]), np.array([0.0]), np.zeros((1, 2, 3)),
                  np.tile([1.0, 0, 0, 0], (1, 2, 1)), True, "")
    return scene, b_centre


def test_frames_are_drawn_with_a_depth_buffer():
    pytest.importorskip("vtkmodules")
    from cadmotion.plugin.writers.video_vtk import SUPERSAMPLE, VtkFrames

    scene, b_centre = _crossing_bars()
    camera = fit_camera(scene)
    rgb = VtkFrames(scene, camera, SIZE).render(scene.position[0], scene.quaternion[0])
    big = (SIZE[0] * SUPERSAMPLE, SIZE[1] * SUPERSAMPLE)
    assert rgb.shape == (big[1], big[0], 3)
    (x, y), _ = camera.project(b_centre, big)
    r, g, b = (int(v) for v in rgb[int(round(y)), int(round(x))])
    assert b > r + 60, f"at B's centre the picture shows {(r, g, b)}, not the nearer blue bar"


def test_the_video_looks_from_the_html_pages_view_with_z_up():
    """The page starts at azimuth -0.95, elevation 0.45 rad about Z (viewer.js reads the
    page's data): the video's eye is there too, and up on screen is Z."""
    from cadmotion.plugin.writers.html import _payload
    from cadmotion.plugin.writers.scene import Scene
    from cadmotion.plugin.writers.tessellate import box_mesh

    scene = Scene("box", [box_mesh((0, 0, 0), 1.0)], ["p"], np.array([0]), [(1, 1, 1, 1)], np.array([False]),
                  np.array([0.0]), np.zeros((1, 1, 3)), np.array([[[1.0, 0, 0, 0]]]), True, "")
    view = _payload(scene, None)["view"]
    camera = fit_camera(scene)
    back = -camera.forward
    assert math.atan2(back[1], back[0]) == pytest.approx(view["az"]) == pytest.approx(-0.95)
    assert math.asin(back[2]) == pytest.approx(view["el"]) == pytest.approx(0.45)
    assert camera.up[2] > 0 and abs(camera.right[2]) < 1e-12          # Z up on screen, horizon level
    js = (Path(__file__).resolve().parents[2] / "plugin" / "writers" / "viewer.js").read_text()
    assert "D.view" in js


def test_non_ascii_labels_are_drawn_with_a_font_that_has_their_glyphs():
    from PIL import Image, ImageFont

    from cadmotion.plugin.writers.video import draw_label, label_font_path

    font = ImageFont.truetype(label_font_path(), 18)
    for ch in "çøäßЖλ–":
        assert font.getmask(ch).getbbox() is not None, ch          # a glyph with ink, not an empty box
    a, b = Image.new("RGB", (300, 40), "white"), Image.new("RGB", (300, 40), "white")
    draw_label(a, "Peça ø3")
    draw_label(b, "Peca o3")
    assert np.any(np.asarray(a) != np.asarray(b))                   # the accents are drawn
