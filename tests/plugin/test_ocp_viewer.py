"""End to end in the real OCP CAD Viewer: cadmotion's animation played in headless Chromium.

The standalone viewer (``python -m ocp_viewer``) runs in a subprocess on a free port and
its page is opened in headless Chromium, driven over the Chrome DevTools protocol (a
small client over ``websockets``, which ocp_viewer itself depends on). From this
process the sample slider-crank is shown and animated exactly as a user would:
``ocp_vscode.set_port(N)`` then ``motion.animation(assy)``. In the page we then read
three-cad-viewer's own objects - the ``Viewer`` instance is found with
``Runtime.queryObjects`` on the prototype of the module's exported ``Viewer``, so the
page is not modified in any way - and check

* the viewer holds a position and a quaternion track for crank, rod and slider, running
  over the motion's duration;
* scrubbed with ``Animation.set_relative_time`` (sent from Python through the server,
  as ``save_as_gif`` does) to keyframe times, each moving node's three.js group has the
  local transform that ``motion.apply`` gives the cq node, its world transform is
  ``motion.pose`` (mm), and its triangles' world bounding box is that of the cq shape
  moved there: what is drawn is where cadmotion says the part is;
* the same for the sample inside a sub-assembly that is shifted and tilted about (1, 1, 0),
  with the crank's node turned over about the crank's long axis - the case in which a
  wrong parent frame or composition order (q * initial instead of initial * q) in
  ``ocp_tracks`` shows; the flat sample, all rotations about z, cannot tell them apart;
* played (the viewer's play control, real time), the crank's group turns, and at the
  mixer's clock its world transform is ``motion.pose`` at that time;
* the page logged no console error and threw no exception, and the server no traceback.

Skipped when ocp_vscode, ocp_viewer, websockets or a Chromium binary is missing.
"""

import contextlib
import importlib.util
import itertools
import json
import math
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")
ocp_vscode = pytest.importorskip("ocp_vscode")
pytest.importorskip("ocp_viewer")
ws_client = pytest.importorskip("websockets.sync.client")

from cadmotion.importers.cadquery import _loc_matrix, _matrix_loc, _shape_of  # noqa: E402
from cadmotion.plugin.cadquery import ocp_tracks, simulate  # noqa: E402

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if shutil.which(n)), None)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium / chrome binary on PATH"),
              # a second show() while the viewer keeps its camera says so; nothing to see headless
              pytest.mark.filterwarnings("ignore:reset_camera is set to KEEP")]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "cadquery_crank.py"
STEPS = 12                     # keyframes every 30 degrees of crank
SCRUB = (3, 6)                 # keyframe indices scrubbed to: t = 0.25 s, 0.5 s (crank 120, 210 deg)
MOVING = ("crank", "rod", "slider")
ATOL_MM = 2e-3                 # float32 in the browser, positions up to ~200 mm
ATOL_R = 2e-5


# ----------------------------------------------------------------------------- helpers
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what, predicate, timeout, interval=0.1):
    """Poll ``predicate`` until it returns something truthy; returns it."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            value = predicate()
        except Exception as exc:  # noqa: BLE001 - not up yet
            last = exc
        else:
            if value:
                return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last error: {last!r})")


class CDP:
    """A minimal Chrome DevTools protocol client on one page target.

    A reader thread files responses by id and everything else (events) into ``events``.
    """

    def __init__(self, url):
        self._stack = contextlib.ExitStack()
        self._ws = self._stack.enter_context(ws_client.connect(url, max_size=None, open_timeout=20))
        self._ids = itertools.count(1)
        self._pending = {}
        self.events = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        with contextlib.suppress(Exception):
            for raw in self._ws:
                msg = json.loads(raw)
                if "id" in msg:
                    box = self._pending.pop(msg["id"], None)
                    if box is not None:
                        box.put(msg)
                else:
                    self.events.append(msg)

    def call(self, method, timeout=30, **params):
        mid = next(self._ids)
        box = self._pending[mid] = queue.Queue()
        self._ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        msg = box.get(timeout=timeout)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def evaluate(self, expression, by_value=True):
        r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=by_value)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page exception: {r['exceptionDetails']}")
        return r["result"].get("value") if by_value else r["result"]

    def call_on(self, object_id, function, *args):
        r = self.call("Runtime.callFunctionOn", objectId=object_id, functionDeclaration=function,
                      arguments=[{"value": a} for a in args], returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page exception: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self):
        self._stack.close()


def _terminate(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _load_sample():
    spec = importlib.util.spec_from_file_location("cadquery_crank_sample_ocp", SAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Evaluated in the page: the one three-cad-viewer Viewer that draws, and what we read off it.
# `groups` are the viewer's ObjectGroups by path ("/slider_crank/crank"); positions are
# taken relative to the root group, i.e. in the model's frame.
READ_STATE = """function(paths) {
  const v = this[0];
  const root = v.rendered.nestedGroup.rootGroup;
  root.updateMatrixWorld(true);
  const rootInv = root.matrixWorld.clone().invert();
  const out = {viewers: this.length, time: v.clipAction ? v.clipAction.time : null, groups: {}};
  for (const path of paths) {
    const g = v.rendered.nestedGroup.groups[path];
    if (!g) { out.groups[path] = null; continue; }
    const M = rootInv.clone().multiply(g.matrixWorld);
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    let n = 0;
    g.traverse((o) => {
      if (!o.isMesh || o.isLineSegments2 || !o.geometry || !o.geometry.attributes.position) return;
      const Mo = rootInv.clone().multiply(o.matrixWorld);
      const pos = o.geometry.attributes.position;
      const p = o.position.clone();
      for (let i = 0; i < pos.count; i++) {
        p.fromBufferAttribute(pos, i).applyMatrix4(Mo);
        const a = p.toArray();
        for (let k = 0; k < 3; k++) { lo[k] = Math.min(lo[k], a[k]); hi[k] = Math.max(hi[k], a[k]); }
        n++;
      }
    });
    out.groups[path] = {position: g.position.toArray(), quaternion: g.quaternion.toArray(),
                        matrix: M.toArray(), bbox: [lo, hi], vertices: n};
  }
  return out;
}"""


# ----------------------------------------------------------------------------- scenarios
def _flat(sample):
    """The sample as it is: parts directly under the root, turning about z."""
    return sample.build_assembly, sample.JOINTS, sample.FIXED


NESTED_LOC = ((5.0, -3.0, 2.0), (1.0, 1.0, 0.0), 35.0)      # shift mm, axis, degrees


def _nested(sample):
    """The sample inside a shifted sub-assembly tilted 35 degrees about (1, 1, 0), with the
    crank's node turned over about the crank's long axis: the parent frame matters for
    every track, and initial * q differs from q * initial for the crank."""

    def build():
        inner = sample.build_assembly()
        crank = inner.objects["crank"]
        crank.loc = crank.loc * cq.Location(cq.Vector(0, 0, 0), cq.Vector(1, 0, 0), 180)
        outer = cq.Assembly(name="top")
        shift, axis, angle = NESTED_LOC
        outer.add(inner, name=inner.name, loc=cq.Location(cq.Vector(*shift), cq.Vector(*axis), angle))
        return outer

    shift, axis, angle = NESTED_LOC
    X = _loc_matrix(cq.Location(cq.Vector(*shift), cq.Vector(*axis), angle))
    R, d = X[:3, :3], X[:3, 3]
    joints = [dict(j, origin=list(R @ j["origin"] + d), axis=list(R @ j["axis"]),
                   parts=[f"slider_crank/{p}" for p in j["parts"]]) for j in sample.JOINTS]
    return build, joints, [f"slider_crank/{p}" for p in sample.FIXED]


SCENARIOS = {"flat": _flat, "nested": _nested}


class Session:
    """The page and what it shows now."""

    def __init__(self, cdp, proto, port, server_log, sample):
        self.cdp, self._proto, self.port, self.server_log, self.sample = cdp, proto, port, server_log, sample
        self.motions = {}
        self.shown = {}
        self.current = None

    def viewers(self):
        """An array handle of every three-cad-viewer Viewer in the page (there is one)."""
        return self.cdp.call("Runtime.queryObjects", prototypeObjectId=self._proto)["objects"]["objectId"]

    def read(self, paths):
        return self.cdp.call_on(self.viewers(), READ_STATE, list(paths))

    def simulate(self, name):
        if name not in self.motions:
            build, joints, fixed = SCENARIOS[name](self.sample)
            motion = simulate(build(), joints, self.sample.DRIVERS, fixed=fixed, t_end=1.0, steps=STEPS)
            assert motion.complete
            self.motions[name] = (build, motion)
        return self.motions[name]

    def show(self, name):
        """Show scenario ``name`` and send its animation, as a user does; wait until the page has it."""
        if self.current == name:
            return self.shown[name]
        build, motion = self.simulate(name)
        assy = build()
        anim = motion.animation(assy)            # ocp_vscode.show(assy), then the tracks
        assert anim is not None
        tracks = ocp_tracks(motion, assy)
        assert [tuple(t) for t in anim.tracks] == [tuple(t) for t in tracks]
        names = sorted(p.replace("/", "|") + (".position" if a == "t" else ".quaternion") for p, a, *_ in tracks)

        def loaded():
            state = self.cdp.call_on(self.viewers(), """function() {
                const v = this[0];
                return v && v.animation && v.clipAction ? {
                    tracks: v.animation.tracks.map((t) => [t.name, Array.from(t.times)]),
                    mode: v.state.get("animationMode"), duration: v.animation.duration,
                    groups: Object.keys(v.rendered.nestedGroup.groups)} : null;
            }""")
            return state if state and sorted(n for n, _ in state["tracks"]) == names else None

        state = _wait(f"the {name} animation to reach the viewer", loaded, 20)
        self.current = name
        self.shown[name] = dict(motion=motion, build=build, anim=anim, tracks=tracks,
                                paths=sorted({p for p, *_ in tracks}), loaded=state)
        return self.shown[name]


# ----------------------------------------------------------------------------- fixture
@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    """The viewer server and a headless Chromium on its page; ocp_vscode pointed at it."""
    tmp = tmp_path_factory.mktemp("ocp_viewer")
    port = _free_port()
    # HOME in a temp folder: the server registers its port in ~/.ocpvscode and reads
    # ~/.ocpvscode_standalone; neither should be the user's.
    env = dict(os.environ, HOME=str(tmp))
    env.pop("OCP_PORT", None)
    log = open(tmp / "server.log", "w")
    chrome_log = open(tmp / "chromium.log", "w")
    server = subprocess.Popen([sys.executable, "-u", "-m", "ocp_viewer", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    profile = tmp / "chromium-profile"
    chrome = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--remote-debugging-port=0",
                               f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check",
                               "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                               "--window-size=1280,900", "about:blank"],
                              stdout=subprocess.DEVNULL, stderr=chrome_log, env=env)
    cdp = None
    comms = ocp_vscode.comms.comms
    saved = (comms._port, comms.host, comms._resolved)
    try:
        # Simulate while both start (each takes seconds).
        sample = _load_sample()
        session = Session(None, None, port, tmp / "server.log", sample)
        session.simulate("flat")

        active = profile / "DevToolsActivePort"
        devtools = _wait("Chromium's DevTools port", lambda: int(active.read_text().split()[0]), 30)
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{devtools}/json/list", timeout=5))
        page = next(t for t in targets if t["type"] == "page")
        cdp = CDP(page["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Page"):
            cdp.call(f"{domain}.enable")

        _wait("the viewer server", lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/viewer",
                                                                   timeout=2).status == 200, 40)
        cdp.call("Page.navigate", url=f"http://127.0.0.1:{port}/viewer")
        # The page's websocket registers the browser with the server ("L:"), which
        # prints this; a model sent before that is dropped ("No browser registered").
        _wait("the page to register with the server",
              lambda: "Browser as viewer client registered" in session.server_log.read_text(), 40)
        _wait("the splash to render", lambda: cdp.evaluate("!!document.querySelector('canvas')"), 20)

        # The module the page imported (same URL, so the same module instance).
        proto = cdp.evaluate("import('./static/js/three-cad-viewer.esm.js').then(m => m.Viewer.prototype)",
                             by_value=False)["objectId"]
        session.cdp, session._proto = cdp, proto
        ocp_vscode.set_port(port)
        yield session
    finally:
        comms._port, comms.host, comms._resolved = saved
        if cdp is not None:
            cdp.close()
        _terminate(chrome)
        _terminate(server, signal.SIGINT)      # SIGINT: the server's atexit unregisters its port
        log.close()
        chrome_log.close()


def _key(path):
    """The assembly key of a node path: "/slider_crank/crank" -> "crank"."""
    return path.split("/", 2)[2]


def _quat_xyzw_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _pose_mm(motion, key, t):
    X = motion.pose(key, t)
    X[:3, 3] *= 1e3
    return X


def _scrub_and_check(viewer, shown):
    """Scrub to the SCRUB keyframes; every moving node must be where cadmotion puts it.

    Returns {path: [model-frame matrix at each scrubbed time]}."""
    motion, anim, paths = shown["motion"], shown["anim"], shown["paths"]
    duration = float(motion.time[-1])
    seen = {}
    for k in SCRUB:
        t = float(motion.time[k])
        anim.set_relative_time(t / duration)         # Python -> server -> page, as save_as_gif does
        state = _wait(f"the viewer to reach t = {t:.3f} s",
                      lambda: (s := viewer.read(paths)) and s["time"] == pytest.approx(t, abs=1e-6) and s, 10)
        moved = motion.apply(shown["build"](), t)
        for path in paths:
            key, got = _key(path), state["groups"][path]
            node = moved.objects[key]
            # 1. the node's own transform (in its parent) is the location motion.apply gives the cq node
            L = _loc_matrix(node.loc)
            np.testing.assert_allclose(got["position"], L[:3, 3], atol=ATOL_MM, err_msg=f"{path} t={t}")
            np.testing.assert_allclose(_quat_xyzw_matrix(got["quaternion"]), L[:3, :3], atol=ATOL_R,
                                       err_msg=f"{path} t={t}")
            # 2. in the model frame it is the part's pose from the motion (mm)
            M = np.array(got["matrix"]).reshape(4, 4).T          # three.js is column major
            X = _pose_mm(motion, key, t)
            np.testing.assert_allclose(M[:3, :3], X[:3, :3], atol=ATOL_R, err_msg=f"{path} t={t}")
            np.testing.assert_allclose(M[:3, 3], X[:3, 3], atol=ATOL_MM, err_msg=f"{path} t={t}")
            # 3. and the triangles drawn are the cq shape placed there
            bb = cq.Shape.cast(_shape_of(node.obj)).moved(_matrix_loc(X)).BoundingBox()
            assert got["vertices"] > 0
            np.testing.assert_allclose(got["bbox"], [[bb.xmin, bb.ymin, bb.zmin], [bb.xmax, bb.ymax, bb.zmax]],
                                       atol=1e-2, err_msg=f"{path} t={t}")
            seen.setdefault(path, []).append(M)
    for path, (M1, M2) in seen.items():
        assert not np.allclose(M1, M2, atol=1e-3), f"{path} did not move"
    return seen


def _turn_about(M1, M2, axis):
    """Angle in degrees (0..360) of the rotation from M1 to M2 about the world ``axis``."""
    R = M2[:3, :3] @ M1[:3, :3].T
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    angle = math.degrees(math.acos(np.clip((np.trace(R) - 1) / 2, -1, 1)))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return angle if w @ axis >= 0 else 360 - angle


# ----------------------------------------------------------------------------- tests
def test_the_viewer_holds_our_tracks(viewer):
    shown = viewer.show("flat")
    loaded, motion = shown["loaded"], shown["motion"]
    assert shown["paths"] == [f"/slider_crank/{n}" for n in MOVING]
    assert {f"/slider_crank/{n}" for n in MOVING} <= set(loaded["groups"])
    names = sorted(name for name, _ in loaded["tracks"])
    assert names == sorted(f"|slider_crank|{n}.{a}" for n in MOVING for a in ("position", "quaternion"))
    for _, times in loaded["tracks"]:
        np.testing.assert_allclose(times, motion.time, atol=1e-6)   # float32 in three.js
    assert loaded["mode"] == "animation"
    assert loaded["duration"] == pytest.approx(motion.time[-1])
    assert viewer.read([])["viewers"] == 1


def test_scrubbed_poses_are_where_cadmotion_puts_the_parts(viewer):
    shown = viewer.show("flat")
    seen = _scrub_and_check(viewer, shown)
    t1, t2 = (float(shown["motion"].time[k]) for k in SCRUB)
    crank = seen["/slider_crank/crank"]
    assert _turn_about(*crank, (0, 0, 1)) == pytest.approx(360 * (t2 - t1), abs=1e-3)   # 90 degrees
    slider = seen["/slider_crank/slider"]
    assert slider[1][0, 3] - slider[0][0, 3] < -10          # crank 120 -> 210 deg: the slider runs back


def test_playing_turns_the_crank_with_the_motion(viewer):
    shown = viewer.show("flat")
    motion, cdp, crank = shown["motion"], viewer.cdp, "/slider_crank/crank"
    cdp.call_on(viewer.viewers(), "function() { this[0].controlAnimation('play'); }")
    try:
        first = _wait("the animation clock to run", lambda: (s := viewer.read([crank]))["time"] > 0 and s, 10)
        second = _wait("the animation clock to advance",
                       lambda: (s := viewer.read([crank]))["time"] != first["time"] and s, 10)
    finally:
        cdp.call_on(viewer.viewers(), "function() { this[0].controlAnimation('pause'); }")
    mats = []
    for state in (first, second):
        # the crank turns uniformly about a fixed axis, so three.js's slerp between
        # keyframes and the motion's agree at any time, not only at keyframes
        M = np.array(state["groups"][crank]["matrix"]).reshape(4, 4).T
        X = _pose_mm(motion, "crank", state["time"])
        np.testing.assert_allclose(M[:3, :3], X[:3, :3], atol=1e-4, err_msg=f"t={state['time']}")
        np.testing.assert_allclose(M[:3, 3], X[:3, 3], atol=ATOL_MM, err_msg=f"t={state['time']}")
        mats.append(M)
    assert not np.allclose(mats[0][:3, :3], mats[1][:3, :3], atol=1e-6)


def test_nested_tilted_assembly_with_a_turned_over_node(viewer):
    """Parent frames and composition order, which the flat sample cannot tell apart:
    everything under a tilted sub-assembly, the crank's node turned over."""
    shown = viewer.show("nested")
    assert shown["paths"] == [f"/top/slider_crank/{n}" for n in MOVING]
    seen = _scrub_and_check(viewer, shown)
    t1, t2 = (float(shown["motion"].time[k]) for k in SCRUB)
    shift, axis, angle = NESTED_LOC
    R = _loc_matrix(cq.Location(cq.Vector(*shift), cq.Vector(*axis), angle))[:3, :3]
    crank = seen["/top/slider_crank/crank"]
    assert _turn_about(*crank, R @ (0, 0, 1)) == pytest.approx(360 * (t2 - t1), abs=1e-3)


def test_no_errors_in_the_page_or_the_server(viewer):
    viewer.show("flat")
    cdp = viewer.cdp
    cdp.evaluate("1")                  # a round trip, so that earlier events are in
    errors = []
    for e in list(cdp.events):
        method, p = e["method"], e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif method == "Runtime.exceptionThrown":
            errors.append(json.dumps(p["exceptionDetails"])[:500])
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            errors.append(f"{p['entry'].get('source')}: {p['entry']['text']} {p['entry'].get('url', '')}")
    assert errors == []
    logs = [e for e in cdp.events if e["method"] == "Runtime.consoleAPICalled"]
    assert any("Handling message" in str(a.get("value")) for e in logs for a in e["params"]["args"])
    server = viewer.server_log.read_text()
    assert "Traceback" not in server and "No browser registered" not in server, server
