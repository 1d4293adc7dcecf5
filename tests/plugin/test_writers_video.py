"""Video writer (.gif, .mp4): read the files back and find the parts where the motion puts them.

The turntable motion (closed-form poses, see test_writers_motions) has a blue cylinder
sliding along x without turning: in each decoded frame the blue pixels' centroid must
move across the picture as the slider's frame origin moves, projected through the video's
camera, and the frame count must follow the frame rate.
"""

import sys
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
    assert span > 40  # a frozen picture would fail


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
