"""Video of a motion (``.gif``, ``.mp4``), drawn offscreen without a GPU.

Each frame is a flat-shaded orthographic view of the parts' triangles (the meshes of
:func:`~cadmotion.plugin.writers.scene.build_scene`, tessellated once per distinct shape),
drawn back to front (painter's algorithm) with Pillow at twice the size and reduced, so
edges are smooth. The camera is fixed over the whole animation and fitted to it:

* the view direction is the axis along which the motion and the parts extend least (the
  normal of a planar mechanism), tilted by ``TILT`` towards the other two axes so that
  depth shows;
* "up" on screen is against gravity when the model has gravity, else the axis along
  which the scene extends most.

Frames are taken at ``fps`` over the motion's own time (slow or fast motions play in
real time), interpolated between output frames, never more images than output frames.
``.gif`` is written by Pillow; ``.mp4`` (H.264) needs the ``imageio-ffmpeg`` wheel,
which bundles ffmpeg (``pip install "cadmotion[video]"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import OutputError
from ...kernel.motion import quat_to_matrix, slerp
from .atomic import atomic_path
from .scene import build_scene

__all__ = ["write_video", "Camera", "fit_camera", "check_video_backend", "VIDEO_EXTENSIONS"]

VIDEO_EXTENSIONS = (".gif", ".mp4")
#: radians the view is turned away from the scene's thinnest axis
TILT = 0.45
#: unit vector towards the light, in camera axes (right, up, towards the viewer)
LIGHT = np.array([-0.35, 0.55, 0.76])
AMBIENT = 0.35
BACKGROUND = (250, 250, 250)
SUPERSAMPLE = 2


@dataclass(frozen=True)
class Camera:
    """An orthographic camera: screen x = right·X, screen y = up·X, depth = -forward·X.

    ``centre`` (m) maps to the image centre, ``half_height`` (m) to half the image height.
    """

    right: np.ndarray
    up: np.ndarray
    forward: np.ndarray      # from the viewer into the scene
    centre: np.ndarray
    half_height: float

    def project(self, points, size):
        """Pixel coordinates (x right, y down) and depth (m, larger = farther) of (..., 3) points."""
        w, h = size
        rel = np.asarray(points, float) - self.centre
        scale = 0.5 * h / self.half_height
        x = 0.5 * w + scale * (rel @ self.right)
        y = 0.5 * h - scale * (rel @ self.up)
        return np.stack([x, y], axis=-1), rel @ self.forward


def _world_points(scene, frame_pose):
    """Vertices of every part at one pose: list of (part index, (n, 3) array)."""
    positions, quaternions = frame_pose
    out = []
    R = quat_to_matrix(quaternions)
    for b, m in enumerate(scene.part_mesh):
        mesh = scene.meshes[m]
        out.append(mesh.positions.astype(float) @ R[b].T + positions[b])
    return out


def fit_camera(scene, gravity=None, aspect=4 / 3):
    """A camera that sees every part at every frame of ``scene`` (see the module docstring)."""
    samples = []
    for k in np.unique(np.linspace(0, len(scene.time) - 1, min(len(scene.time), 12)).astype(int)):
        samples.extend(_world_points(scene, (scene.position[k], scene.quaternion[k])))
    pts = np.concatenate(samples) if samples else np.zeros((1, 3))
    centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    extent = pts - centre
    _, _, axes = np.linalg.svd(extent - extent.mean(axis=0), full_matrices=False)
    thin, wide = axes[-1], axes[0]
    g = np.asarray(gravity if gravity is not None else (0.0, 0.0, 0.0), float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else wide
    # look along the thinnest axis, from the side that has "up" to the left-top, tilted
    forward = -thin
    side = np.cross(forward, up)
    if np.linalg.norm(side) < 1e-6:                 # looking along "up": take another up
        up = wide if abs(np.dot(wide, forward)) < 0.9 else axes[1]
        side = np.cross(forward, up)
    side /= np.linalg.norm(side)
    up_perp = np.cross(side, forward)
    forward = np.cos(TILT) * forward + np.sin(TILT) * (0.6 * side - 0.8 * up_perp)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, up)
    if np.linalg.norm(right) < 1e-6:
        right = side
    right /= np.linalg.norm(right)
    cam_up = np.cross(right, forward)
    sx, sy = extent @ right, extent @ cam_up
    centre = centre + right * 0.5 * (sx.min() + sx.max()) + cam_up * 0.5 * (sy.min() + sy.max())
    half_w, half_h = 0.5 * float(np.ptp(sx)), 0.5 * float(np.ptp(sy))
    half_height = max(half_h, half_w / aspect, 1e-6) * 1.08
    return Camera(right, cam_up, forward, centre, half_height)


def _pose_at(scene, t):
    """Part positions and quaternions at time ``t`` (linear / spherical interpolation)."""
    times = scene.time
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1))
    if k >= len(times) - 1 or times[k + 1] <= times[k]:
        return scene.position[k], scene.quaternion[k]
    s = (t - times[k]) / (times[k + 1] - times[k])
    pos = (1 - s) * scene.position[k] + s * scene.position[k + 1]
    quat = np.array([slerp(scene.quaternion[k, b], scene.quaternion[k + 1, b], s)
                     for b in range(len(scene.part_names))])
    return pos, quat


def frame_times(scene, fps):
    """Times (s) of the video frames: ``fps`` per second of motion, at most one per output frame."""
    t0, t1 = float(scene.time[0]), float(scene.time[-1])
    n = int(round((t1 - t0) * fps)) + 1
    n = max(1, min(n, len(scene.time)))
    return np.linspace(t0, t1, n) if n > 1 else np.array([t0])


def render_frame(scene, camera, t, size=(960, 720), label=None):
    """One RGB image (Pillow) of the scene at time ``t``."""
    from PIL import Image, ImageDraw

    big = (size[0] * SUPERSAMPLE, size[1] * SUPERSAMPLE)
    image = Image.new("RGB", big, BACKGROUND)
    draw = ImageDraw.Draw(image)
    light = LIGHT @ np.stack([camera.right, camera.up, -camera.forward])   # to world axes
    polys, depths, colours = [], [], []
    for b, X in enumerate(_world_points(scene, _pose_at(scene, t))):
        mesh = scene.meshes[scene.part_mesh[b]]
        tri = X[mesh.indices.reshape(-1, 3)]                              # (m, 3, 3)
        normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        length = np.linalg.norm(normal, axis=1)
        keep = (length > 0) & (normal @ camera.forward < 0)              # front faces only
        if not keep.any():
            continue
        tri, normal = tri[keep], normal[keep] / length[keep, None]
        xy, depth = camera.project(tri, big)
        shade = AMBIENT + (1 - AMBIENT) * np.clip(normal @ light, 0.0, 1.0)
        rgb = np.asarray(scene.part_color[b][:3], float)
        polys.append(xy)
        depths.append(depth.mean(axis=1))
        colours.append(np.clip(np.outer(shade, rgb) * 255.0, 0, 255).astype(np.uint8))
    if polys:
        xy = np.concatenate(polys)
        order = np.argsort(-np.concatenate(depths), kind="stable")       # farthest first
        rgb = np.concatenate(colours)
        for i in order:
            (ax, ay), (bx, by), (cx, cy) = xy[i]
            colour = tuple(int(v) for v in rgb[i])
            draw.polygon([(ax, ay), (bx, by), (cx, cy)], fill=colour, outline=colour)
    image = image.resize(size, Image.LANCZOS)
    if label:
        ImageDraw.Draw(image).text((10, 8), label, fill=(40, 40, 40))
    return image


def check_video_backend(ext):
    """OutputError before any computing when ``.mp4`` is asked for without imageio-ffmpeg."""
    if ext == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise OutputError("writing .mp4 needs the imageio-ffmpeg package (it bundles ffmpeg)",
                              hint='pip install "cadmotion[video]", or write a .gif') from None


def write_video(motion, path, *, scene=None, fps=25, size=(960, 720), complete=None):
    """Write ``motion`` as ``.gif`` or ``.mp4`` (by the extension); returns ``path``.

    Parameters
    ----------
    motion : Motion (with ``motion.spec`` for shapes and colours)
    path : target file, written atomically
    scene : a :class:`~.scene.Scene` already built for the motion (saves tessellating again)
    fps : frames per second of motion time
    size : (width, height) in pixels; even numbers for ``.mp4``
    complete : False marks an interrupted run in the frames' label (default ``motion.complete``)
    """
    from pathlib import Path

    path = Path(path)
    ext = path.suffix.lower()
    if ext not in VIDEO_EXTENSIONS:
        raise OutputError(f"not a video extension: {ext!r}", where=str(path), hint="use .gif or .mp4")
    check_video_backend(ext)
    if fps <= 0:
        raise OutputError(f"fps must be positive, got {fps!r}", where=str(path))
    if scene is None:
        scene = build_scene(motion, complete=motion.complete if complete is None else complete)
    complete = scene.complete if complete is None else complete
    gravity = getattr(getattr(motion, "spec", None), "gravity", None)
    camera = fit_camera(scene, gravity, aspect=size[0] / size[1])
    times = frame_times(scene, fps)
    note = "" if complete else "  (run stopped early)"
    frames = (render_frame(scene, camera, t, size, label=f"{scene.name}  t = {t:.3f} s{note}") for t in times)
    with atomic_path(path) as tmp:
        if ext == ".gif":
            first = next(frames)
            first.save(tmp, format="GIF", save_all=True, append_images=list(frames),
                       duration=max(int(round(1000.0 / fps)), 20), loop=0)
        else:
            import imageio_ffmpeg

            writer = imageio_ffmpeg.write_frames(str(tmp), size, fps=fps, codec="libx264",
                                                 pix_fmt_out="yuv420p", macro_block_size=2,
                                                 output_params=["-f", "mp4"])
            writer.send(None)
            for image in frames:
                writer.send(np.ascontiguousarray(np.asarray(image, np.uint8)))
            writer.close()
    return path
