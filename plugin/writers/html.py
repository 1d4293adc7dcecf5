"""One self-contained HTML page: an animated 3-D view of the motion and its plots.

No network access is needed or made: the page embeds its own small renderer
(``viewer.js``, plain JavaScript: WebGL with flat shading and one directional light, or a
2-D canvas painter's-algorithm fallback when WebGL is unavailable), the meshes and the
keyframes (base64 float32 in a JSON block) and the plots as inline SVG.

Contacts of a dynamic run are marked by a small red cube on the contact's point, shown while the
contact is active and at the frame nearest each of its impacts.

Controls: Play/Pause (or the space bar), a time scrubber, a speed selector; drag to orbit,
wheel to zoom, double-click to reset the view. ``?renderer=2d`` forces the fallback.

For tests and tools the viewer reports on the ``<html>`` element: ``data-status``
(``ok``/``error``), ``data-error``, ``data-renderer`` (``webgl``/``2d``), ``data-frame`` (the
keyframe index on screen) and ``data-frames-seen`` (distinct keyframes drawn so far).
"""

from __future__ import annotations

import base64
import html as _html
import json
from pathlib import Path

import numpy as np

from .atomic import atomic_write
from .plots import svg_text
from .scene import MARKER_COLOR, VIEW_AZIMUTH, VIEW_DISTANCE, VIEW_ELEVATION, VIEW_FOV, build_scene

__all__ = ["write_html", "html_page"]

_VIEWER_JS = Path(__file__).with_name("viewer.js")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:10px 16px 4px}h1{font-size:20px;margin:0 0 4px}
.info{color:#555;font-size:13px}
#cm-partial{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;margin:6px 16px;font-size:14px}
#cm-error{display:none;background:#f8d7da;border:1px solid #d9838c;padding:6px 10px;margin:6px 16px}
#cm-view{margin:0 16px;border:1px solid #ccd;background:#edf0f5}
#cm-canvas{display:block;width:100%;height:62vh;min-height:260px;touch-action:none;cursor:grab}
#cm-controls{display:flex;gap:10px;align-items:center;padding:8px 16px;font-size:14px}
#cm-scrub{flex:1}#cm-time{font-variant-numeric:tabular-nums;min-width:190px}
#cm-plots{padding:8px 16px}#cm-plots svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:13px;margin:8px 16px}td,th{border:1px solid #ccc;padding:2px 6px}
.swatch{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;border:1px solid #888}
"""


def _b64(array, dtype):
    return base64.b64encode(np.ascontiguousarray(array, dtype).tobytes()).decode("ascii")


def _payload(scene, motion):
    center, radius = scene.bounds()
    payload = {
        "name": scene.name,
        "complete": scene.complete,
        "message": scene.message,
        "time": [float(t) for t in scene.time],
        "meshes": [{"p": _b64(m.positions, np.float32), "i": _b64(m.indices, np.uint32)}
                   for m in scene.meshes],
        "parts": [{"name": n, "mesh": int(scene.part_mesh[b]), "color": list(scene.part_color[b]),
                   "animated": bool(scene.animated[b])} for b, n in enumerate(scene.part_names)],
        "pos": _b64(scene.position, np.float32),
        "quat": _b64(scene.quaternion, np.float32),
        "center": [float(c) for c in center],
        "radius": float(radius),
        "view": {"az": VIEW_AZIMUTH, "el": VIEW_ELEVATION, "fov": VIEW_FOV, "dist": VIEW_DISTANCE},
    }
    if scene.markers:
        # contact markers are drawn as parts after the real ones, shown only at frames where
        # their contact is active (``shown``: uint8, (nt, parts + markers))
        nt, nm = len(scene.time), len(scene.markers)
        identity = np.broadcast_to([1.0, 0.0, 0.0, 0.0], (nt, nm, 4))
        payload["parts"] += [{"name": f"contact {n}", "mesh": scene.marker_mesh, "color": list(MARKER_COLOR),
                              "animated": True, "marker": True} for n in scene.markers]
        payload["pos"] = _b64(np.concatenate([scene.position, scene.marker_position], axis=1), np.float32)
        payload["quat"] = _b64(np.concatenate([scene.quaternion, identity], axis=1), np.float32)
        shown = np.concatenate([np.ones((nt, len(scene.part_names)), bool), scene.marker_visible], axis=1)
        payload["shown"] = _b64(shown, np.uint8)
    return payload


def html_page(motion, *, plot=None, cache=None, complete=None, scene=None):
    """The page as a string (see the module docstring)."""
    scene = scene if scene is not None else build_scene(motion, cache=cache, complete=complete)
    esc = _html.escape
    data = json.dumps(_payload(scene, motion), separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c")  # cannot close the <script> block
    svg = svg_text(motion, plot, complete=scene.complete)
    t = scene.time
    info = (f"{len(scene.part_names)} parts, {len(t)} frames, "
            f"t = {t[0]:.6g} to {t[-1]:.6g} s, renderer: <span id='cm-renderer'>starting</span>")
    shown = 16
    legend = "".join(
        f"<span class='swatch' style='background:rgb({int(255 * c[0])},{int(255 * c[1])},{int(255 * c[2])})'>"
        f"</span>{esc(n)}" for n, c in zip(scene.part_names[:shown], scene.part_color[:shown]))
    if len(scene.part_names) > shown:
        legend += f" … and {len(scene.part_names) - shown} more"
    partial = ""
    if not scene.complete:
        partial = (f"<div id='cm-partial'><b>Partial run.</b> {esc(scene.message or 'The run stopped early.')}"
                   " The frames shown are valid up to the last one.</div>")
    events = ""
    if motion.events:
        rows = "".join(f"<tr><td>{ev.time:.6g}</td><td>{esc(ev.kind)}</td><td>{esc(ev.message)}</td></tr>"
                       for ev in motion.events)
        events = ("<h2 style='font-size:16px;margin:8px 16px'>Events</h2>"
                  f"<table><tr><th>t (s)</th><th>kind</th><th>message</th></tr>{rows}</table>")
    speeds = "".join(f"<option value='{s}'{' selected' if s == 1 else ''}>{s}x</option>"
                     for s in (0.1, 0.25, 0.5, 1, 2, 4))
    js = _VIEWER_JS.read_text(encoding="utf-8")
    return f"""<!DOCTYPE html>
<html lang="en" data-status="loading">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="cadmotion">
<title>{esc(scene.name)} — cadmotion</title>
<style>{_CSS}</style>
</head>
<body>
<header><h1>{esc(scene.name)}</h1><div class="info">{info}</div><div class="info">{legend}</div></header>
{partial}<div id="cm-error"></div>
<div id="cm-view"><canvas id="cm-canvas"></canvas></div>
<div id="cm-controls"><button id="cm-play" type="button">Pause</button>
<input id="cm-scrub" type="range" aria-label="time"><span id="cm-time"></span>
<label>speed <select id="cm-speed">{speeds}</select></label></div>
<div class="info" style="padding:0 16px">Drag to orbit, wheel to zoom, double-click to reset the view. Z is up.</div>
<div id="cm-plots">{svg}</div>
{events}
<script id="cadmotion-data" type="application/json">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def write_html(motion, path, *, plot=None, cache=None, complete=None, scene=None):
    """Write the page to ``path`` (atomically)."""
    page = html_page(motion, plot=plot, cache=cache, complete=complete, scene=scene)
    with atomic_write(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
