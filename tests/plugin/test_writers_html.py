"""HTML player: self-contained, and it really runs in a headless Chromium.

The viewer reports on the <html> element (data-status, data-renderer, data-frame,
data-frames-seen); ``--dump-dom`` after some virtual time shows them. The browser tests
are skipped when no Chromium binary is installed.
"""

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cadmotion.plugin.writers import write_outputs
from cadmotion.plugin.writers.html import html_page

try:
    from .test_writers_motions import turntable
except ImportError:
    from test_writers_motions import turntable

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed")


SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"


def chromium(tmp_path, url, *args, budget=3000):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=800,600",
           f"--virtual-time-budget={budget}", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def status(dom):
    tag = re.search(r"<html[^>]*>", dom).group(0)
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "turntable.html"
    write_outputs(turntable(nt=31), [path], plot="slider")
    return path


def embedded_data(text):
    block = re.search(r'<script id="cadmotion-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(block.group(1))


def test_page_is_self_contained(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)
    assert "fetch(" not in text and "XMLHttpRequest" not in text and "import(" not in text
    assert "<svg" in text and "<canvas" in text
    assert 'type="range"' in text and "cm-speed" in text and "cm-play" in text


def test_page_embeds_meshes_and_keyframes_of_the_motion(page):
    m = turntable(nt=31)
    data = embedded_data(page.read_text(encoding="utf-8"))
    assert data["time"] == m.time.tolist()
    pos = np.frombuffer(base64.b64decode(data["pos"]), np.float32).reshape(31, 3, 3)
    assert np.allclose(pos, m.position, atol=1e-7)
    quat = np.frombuffer(base64.b64decode(data["quat"]), np.float32).reshape(31, 3, 4)
    assert np.allclose(np.abs(np.einsum("kbi,kbi->kb", quat, m.quaternion)), 1.0, atol=1e-6)
    assert [p["name"] for p in data["parts"]] == ["base", "crank", "slider"]
    assert data["parts"][1]["color"] == [0.9, 0.3, 0.1, 1.0]


def test_names_cannot_break_out_of_the_data_block(tmp_path):
    m = turntable(nt=3, with_shapes=False)
    m.parts[1] = "</script><script>alert(1)</script>"
    with pytest.warns(UserWarning):
        text = html_page(m)
    assert text.count("<script") == 2
    assert embedded_data(text)["parts"][1]["name"] == m.parts[1]


def test_partial_run_shows_a_banner(tmp_path):
    m = turntable(nt=3, complete=False)
    text = html_page(m)
    assert "Partial run" in text and "singular at t=1.2" in text


@needs_chromium
@pytest.mark.parametrize("query, renderer", [("", "webgl"), ("?renderer=2d", "2d")])
def test_page_plays_in_headless_chromium(tmp_path, page, query, renderer):
    # a loaded machine may paint a single frame in the virtual-time budget: give it more
    for budget in (3000, 8000, 20000):
        run = chromium(tmp_path, page.as_uri() + query, "--dump-dom", budget=budget)
        assert run.returncode == 0, run.stderr[-2000:]
        st = status(run.stdout)
        if int(st.get("frames-seen", 0)) >= 2:
            break
    assert st.get("status") == "ok", st
    if renderer == "2d" or st["renderer"] == "2d":      # WebGL may be missing: fallback is fine
        assert st["renderer"] == "2d"
    assert int(st["frames-seen"]) >= 2                  # the frame index advanced: the scene moves


@needs_chromium
def test_the_player_time_stays_inside_the_run(tmp_path, page):
    # The player advances its time by the animation frames' timestamps and, where those stall (a headless browser
    # under virtual time), by timers on performance.now(); the two clocks differ, and a frame stamped before the
    # last tick ran the time backwards, below the run's start (t = -4.5 s on this 1.6 s page, at some virtual-time
    # budgets). Made certain here: every animation frame is stamped earlier than the one before. Reference: the
    # run's own span.
    data = embedded_data(page.read_text())
    t0, t1 = data["time"][0], data["time"][-1]
    backwards = ("<script>(function () { var raf = window.requestAnimationFrame.bind(window), start = null;"
                 " window.requestAnimationFrame = function (cb) { return raf(function (ts) {"
                 " if (start === null) start = ts; cb(2 * start - ts); }); }; })();</script>")
    skewed = tmp_path / "skewed.html"
    skewed.write_text(page.read_text().replace("<head>", "<head>" + backwards, 1))
    for target in (page, skewed):
        dom = chromium(tmp_path, target.as_uri(), "--dump-dom", budget=3000).stdout
        shown = [float(t) for t in re.findall(r'id="cm-time">t = (-?[0-9.]+) s', dom)]
        assert shown and all(t0 - 1e-9 <= t <= t1 + 1e-9 for t in shown), (target.name, shown, t0, t1)


@needs_chromium
def test_viewer_reports_script_errors(tmp_path, page):
    broken = tmp_path / "broken.html"
    text = page.read_text(encoding="utf-8")
    broken.write_text(re.sub(r'"pos":"[^"]*"', '"pos":"%%%"', text), encoding="utf-8")
    st = status(chromium(tmp_path, broken.as_uri(), "--dump-dom", budget=500).stdout)
    assert st.get("status") == "error" and st.get("error")


@needs_chromium
def test_screenshot_shows_the_parts_in_their_colours(tmp_path, page):
    import matplotlib.image

    shot = tmp_path / "shot.png"
    chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", budget=1500)
    img = matplotlib.image.imread(shot)[..., :3]
    view = img[80:440, 20:760]                           # the 3-D view of an 800 x 600 window
    background = np.array([237, 240, 245]) / 255
    drawn = np.abs(view - background).max(axis=-1) > 0.05
    assert drawn.mean() > 0.01
    r, g, b = view[..., 0], view[..., 1], view[..., 2]
    assert ((r > g + 0.2) & (r > b + 0.2)).sum() > 50      # the orange-red crank
    assert ((b > r + 0.2) & (b > g + 0.1)).sum() > 50      # the blue slider


def test_the_slider_crank_sample_slider_is_not_hidden_inside_another_part():
    """samples/slider_crank has no CAD: parts are drawn as placeholder blocks. The slider has
    one joint point (the wrist pin, where the rod's end pad is): its block must stick out of
    every other part at every frame, or the viewer shows no slider."""
    import warnings
    from pathlib import Path

    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.kernel.motion import quat_to_matrix
    from cadmotion.plugin.writers.scene import build_scene

    sample = Path(__file__).resolve().parents[2] / "samples" / "slider_crank.cadmotion.toml"
    motion = kinematics(compile_model(load(sample)), t_end=1.0, steps=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # "drawn as sticks"
        scene = build_scene(motion)

    def world_box(b, k):
        pts = np.asarray(scene.meshes[scene.part_mesh[b]].positions, float)
        pts = pts @ quat_to_matrix(scene.quaternion[k, b]).T + scene.position[k, b]
        return pts.min(axis=0), pts.max(axis=0)

    s = scene.part_names.index("slider")
    for k in range(len(scene.time)):
        lo, hi = world_box(s, k)
        for b in range(len(scene.part_names)):
            if b != s:
                olo, ohi = world_box(b, k)
                inside = np.all(lo >= olo - 1e-12) and np.all(hi <= ohi + 1e-12)
                assert not inside, f"slider inside {scene.part_names[b]} at t = {scene.time[k]}"


@needs_chromium
def test_the_slider_crank_samples_slider_shows_in_the_browser(tmp_path):
    """The page of samples/slider_crank in headless Chromium: the green slider (0.3, 0.7, 0.3)
    is on the screenshot, not hidden inside the rod's end."""
    import warnings

    import matplotlib.image

    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics

    sample = SAMPLES_DIR / "slider_crank.cadmotion.toml"
    motion = kinematics(compile_model(load(sample)), t_end=1.0, steps=10)
    page = tmp_path / "slider_crank.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # "drawn as sticks"
        write_outputs(motion, [page])
    shot = tmp_path / "shot.png"
    chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", budget=1500)
    view = matplotlib.image.imread(shot)[80:440, 20:760, :3]
    r, g, b = view[..., 0], view[..., 1], view[..., 2]
    assert ((g > r + 0.15) & (g > b + 0.15)).sum() > 30     # the slider's green
    assert ((b > r + 0.2) & (b > g + 0.1)).sum() > 30       # and the rod's blue, for scale
