"""Video frames drawn by VTK offscreen, with a depth buffer (used by :mod:`.video`).

VTK comes with the ``cad`` extra (cadquery); importing this module raises ImportError
without it, and :func:`~cadmotion.plugin.writers.video.write_video` then draws with
Pillow. Offscreen rendering needs no display: VTK picks EGL or OSMesa when there is no X
server. Each distinct mesh becomes one ``vtkPolyData`` shared by the actors of the parts
that use it; per frame only the actors' matrices (part poses, m, assembly frame) change.
Frames are rendered at twice the size and reduced (smooth edges), then labelled with
:func:`~cadmotion.plugin.writers.labels.draw_label`.
"""

from __future__ import annotations

import numpy as np
import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  (registers the OpenGL render window)
from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray, vtk_to_numpy
from vtkmodules.vtkCommonCore import vtkLogger, vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
from vtkmodules.vtkCommonMath import vtkMatrix4x4
from vtkmodules.vtkRenderingCore import (
    vtkActor,
    vtkPolyDataMapper,
    vtkRenderer,
    vtkRenderWindow,
    vtkWindowToImageFilter,
)

from ...kernel.motion import quat_to_matrix

__all__ = ["VtkFrames"]

SUPERSAMPLE = 2
BACKGROUND = (250 / 255, 250 / 255, 250 / 255)
AMBIENT, DIFFUSE = 0.35, 0.65


def _polydata(mesh):
    pts = vtkPoints()
    pts.SetData(numpy_to_vtk(np.ascontiguousarray(mesh.positions, np.float64), deep=True))
    tri = np.asarray(mesh.indices, np.int64).reshape(-1, 3)
    cells = vtkCellArray()
    offsets = np.arange(0, 3 * len(tri) + 1, 3, dtype=np.int64)
    cells.SetData(numpy_to_vtkIdTypeArray(offsets, deep=True),
                  numpy_to_vtkIdTypeArray(np.ascontiguousarray(tri.ravel()), deep=True))
    poly = vtkPolyData()
    poly.SetPoints(pts)
    poly.SetPolys(cells)
    return poly


class VtkFrames:
    """An offscreen VTK window showing ``scene`` through ``camera`` (a video ``Camera``)."""

    def __init__(self, scene, camera, size):
        self.scene, self.size = scene, (int(size[0]), int(size[1]))
        big = (self.size[0] * SUPERSAMPLE, self.size[1] * SUPERSAMPLE)
        # without an X server VTK warns "bad X server connection" before it falls back to EGL
        vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)
        self.window = vtkRenderWindow()
        self.window.SetOffScreenRendering(1)
        self.window.SetSize(*big)
        self.renderer = vtkRenderer()
        self.renderer.SetBackground(*BACKGROUND)
        self.window.AddRenderer(self.renderer)
        polys = [_polydata(m) for m in scene.meshes]
        self.actors = []
        for b, m in enumerate(scene.part_mesh):
            mapper = vtkPolyDataMapper()
            mapper.SetInputData(polys[m])
            actor = vtkActor()
            actor.SetMapper(mapper)
            prop = actor.GetProperty()
            prop.SetColor(*[float(c) for c in scene.part_color[b][:3]])
            prop.SetOpacity(float(scene.part_color[b][3]))
            prop.SetInterpolationToFlat()
            prop.SetAmbient(AMBIENT)
            prop.SetDiffuse(DIFFUSE)
            prop.SetSpecular(0.0)
            self.renderer.AddActor(actor)
            self.actors.append(actor)
        cam = self.renderer.GetActiveCamera()
        cam.SetPosition(*map(float, camera.eye))
        cam.SetFocalPoint(*map(float, camera.eye + camera.forward))
        cam.SetViewUp(*map(float, camera.up))
        cam.SetViewAngle(float(np.degrees(camera.fov)))
        cam.SetParallelProjection(False)

    def _pose(self, positions, quaternions):
        R = quat_to_matrix(quaternions)
        for b, actor in enumerate(self.actors):
            X = np.eye(4)
            X[:3, :3], X[:3, 3] = R[b], positions[b]
            M = vtkMatrix4x4()
            M.DeepCopy(X.ravel().tolist())
            actor.SetUserMatrix(M)

    def render(self, positions, quaternions):
        """RGB array (h, w, 3), uint8, of the parts at the given poses."""
        self._pose(positions, quaternions)
        self.renderer.ResetCameraClippingRange()
        self.window.Render()
        grab = vtkWindowToImageFilter()
        grab.SetInput(self.window)
        grab.SetInputBufferTypeToRGB()
        grab.ReadFrontBufferOff()
        grab.Update()
        img = grab.GetOutput()
        w, h, _ = img.GetDimensions()
        rgb = vtk_to_numpy(img.GetPointData().GetScalars()).reshape(h, w, -1)[::-1, :, :3]
        return np.ascontiguousarray(rgb, np.uint8)

    def images(self, times, labels, pose_at):
        """Yield a labelled Pillow image per time; ``pose_at(scene, t)`` gives the poses."""
        from PIL import Image

        from .labels import draw_label

        try:
            for t, label in zip(times, labels):
                image = Image.fromarray(self.render(*pose_at(self.scene, t))).resize(self.size, Image.LANCZOS)
                if label:
                    draw_label(image, label)
                yield image
        finally:
            self.window.Finalize()
