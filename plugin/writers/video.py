"""Video of a motion (``.gif``, ``.mp4``), drawn offscreen without a GPU.

Each frame shows the parts' triangles (the meshes of
:func:`~cadmotion.plugin.writers.scene.build_scene`) from the HTML page's initial view:
Z up, perspective, the eye at the azimuth, elevation and distance of
:data:`~cadmotion.plugin.writers.scene.VIEW_AZIMUTH` and its companions, aimed at the
centre of the scene's bounds, fixed over the whole animation. Frames are drawn by VTK
(installed with the ``cad`` extra) offscreen with a depth buffer, so parts that cross or
interpenetrate hide each other correctly; without VTK they are drawn flat-shaded by Pillow
back to front (painter's algorithm, which can get crossing faces wrong). The label is set
in DejaVu Sans (matplotlib's font), so non-ASCII names are drawn.

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
from .labels import draw_label, label_font_path  # noqa: F401  (label_font_path: public here too)
from .scene import build_scene

__all__ = ["write_video", "Camera", "fit_camera", "check_video_backend", "VIDEO_EXTENSIONS"]

VIDEO_EXTENSIONS = (".gif", ".mp4")
#: unit vector towards the light, in camera axes (right, up, towards the viewer)
LIGHT = np.array([-0.35, 0.55, 0.76])
AMBIENT = 0.35
BACKGROUND = (250, 250, 250)
SUPERSAMPLE = 2


@dataclass(frozen=True)
class Camera:
    """A perspective camera at ``eye`` looking along ``forward``, ``up`` on screen.

    ``fov`` is the vertical field of view (rad). ``centre`` is the point aimed at (m);
    ``half_height`` (m) the half height of the view at the distance of ``centre``.
    """

    right: np.ndarray
    up: np.ndarray
    forward: np.ndarray      # from the viewer into the scene
    centre: np.ndarray
    half_height: float
    eye: np.ndarray = None
    fov: float = None

    def project(self, points, size):
        """Pixel coordinates (x right, y down) and depth (m along ``forward``, larger = farther)."""
        w, h = size
        rel = np.asarray(points, float) - self.eye
        depth = rel @ self.forward
        f = 0.5 * h / np.tan(0.5 * self.fov)
        safe = np.where(np.abs(depth) > 1e-12, depth, 1e-12)
        x = 0.5 * w + f * (rel @ self.right) / safe
        y = 0.5 * h - f * (rel @ self.up) / safe
        return np.stack([x, y], axis=-1), depth


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
    """The HTML page's initial camera for ``scene`` (see the module docstring).

    ``gravity`` and ``aspect`` are accepted for compatibility; the view is the page's
    whatever they are (Z up, as the assembly frame and the page).
    """
    from .scene import VIEW_AZIMUTH, VIEW_DISTANCE, VIEW_ELEVATION, VIEW_FOV

    centre, radius = scene.bounds()
    ce = np.cos(VIEW_ELEVATION)
    back = np.array([ce * np.cos(VIEW_AZIMUTH), ce * np.sin(VIEW_AZIMUTH), np.sin(VIEW_ELEVATION)])
    dist = radius / np.sin(0.5 * VIEW_FOV) * VIEW_DISTANCE
    eye = centre + dist * back
    forward = -back
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return Camera(right, up, forward, centre, float(dist * np.tan(0.5 * VIEW_FOV)), eye=eye, fov=VIEW_FOV)


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
        draw_label(image, label)
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
    labels = [f"{scene.name}  t = {t:.3f} s{note}" for t in times]
    try:
        from .video_vtk import VtkFrames
    except ImportError:                        # no VTK (installed without the cad extra)
        frames = (render_frame(scene, camera, t, size, label=lab) for t, lab in zip(times, labels))
    else:
        frames = VtkFrames(scene, camera, size).images(times, labels, _pose_at)
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
