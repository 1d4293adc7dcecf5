"""glTF 2.0 animation: ``.glb`` (binary container) and ``.gltf`` (JSON, embedded buffer).

Layout of the file
------------------
- Units are metres. glTF is Y-up while cadmotion's assembly frame is Z-up: node 0,
  the root (named ``<mechanism> (Z-up to Y-up)``), rotates everything by -90 degrees
  about x (quaternion x, y, z, w = -sqrt(1/2), 0, 0, sqrt(1/2)), mapping the assembly's
  +Z onto glTF's +Y. Its children, one node per part in ``motion.parts`` order (nodes
  1..nb, named after the parts), carry poses in the assembly frame.
- Each distinct shape is tessellated once and stored once (POSITION, NORMAL, indices);
  parts sharing a shape share those accessors. A mesh is made per (shape, colour) pair,
  since a glTF primitive names its material.
- Materials: ``pbrMetallicRoughness`` with the part colour (sRGB in the spec, converted
  to linear for ``baseColorFactor`` as glTF requires), metallic 0, roughness 0.6,
  double sided; alpha < 1 gives ``alphaMode: BLEND``.
- One animation ``motion``: all samplers share one input accessor (the output times,
  float32 s, shifted so that the first is 0 if the run starts before 0); per moving
  part a ``translation`` (VEC3) and a ``rotation`` (VEC4, x, y, z, w, sign-continuous)
  channel with LINEAR interpolation. Parts whose pose never changes get a fixed node
  transform and no channel.
- Contacts of a dynamic run that are active at some frame, or have an impact, get a marker node
  each after the parts (``contact <name>``, a small red cube, :func:`.scene.contact_tracks`): a
  LINEAR ``translation`` channel on the contact's point and a STEP ``scale`` channel, 1 while the
  contact is active and at the frame nearest each impact, else 0.
- The binary buffer holds all mesh data first, then the keyframes. The file therefore
  grows with the number of frames by exactly ``nt * (4 + 28 * n_moving + 24 * n_markers)``
  bytes of keyframe data (plus a few bytes of JSON numbers).
- ``asset.extras`` holds ``complete``, ``message`` and ``frames`` of the run.
"""

from __future__ import annotations

import base64
import json
import math
import struct

import numpy as np

from .atomic import atomic_write
from .scene import MARKER_COLOR, build_scene, srgb_to_linear

__all__ = ["gltf_document", "write_glb", "write_gltf", "Z_UP_TO_Y_UP"]

#: root node rotation (x, y, z, w): -90 degrees about x
Z_UP_TO_Y_UP = (-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))

_FLOAT, _UINT16, _UINT32 = 5126, 5123, 5125
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
_TRIANGLES = 4


class _Buffer:
    """Binary buffer under construction: bufferViews and accessors appended together."""

    def __init__(self):
        self.chunks = []
        self.length = 0
        self.views = []
        self.accessors = []

    def view(self, data, target=None):
        data = np.ascontiguousarray(data)
        raw = data.tobytes()
        pad = (-self.length) % 4
        if pad:
            self.chunks.append(b"\0" * pad)
            self.length += pad
        view = {"buffer": 0, "byteOffset": self.length, "byteLength": len(raw)}
        if target is not None:
            view["target"] = target
        self.chunks.append(raw)
        self.length += len(raw)
        self.views.append(view)
        return len(self.views) - 1

    def accessor(self, view, component, count, type_, *, offset=0, minmax=None):
        acc = {"bufferView": view, "componentType": component, "count": int(count), "type": type_}
        if offset:
            acc["byteOffset"] = int(offset)
        if minmax is not None:
            acc["min"] = [float(x) for x in np.atleast_1d(minmax[0])]
            acc["max"] = [float(x) for x in np.atleast_1d(minmax[1])]
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def data(self):
        pad = (-self.length) % 4
        return b"".join(self.chunks) + b"\0" * pad


def _strictly_increasing(t32):
    """Keyframe times as glTF requires them: strictly increasing float32 (ties nudged by 1 ulp)."""
    if len(t32) < 2 or np.all(np.diff(t32) > 0):
        return t32
    t32 = t32.copy()
    up = np.float32(np.inf)
    for k in range(1, len(t32)):
        if t32[k] <= t32[k - 1]:
            t32[k] = np.nextafter(t32[k - 1], up)
    return t32


def _material(rgba):
    r, g, b, a = rgba
    lin = [float(x) for x in srgb_to_linear([r, g, b])] + [float(a)]
    mat = {"pbrMetallicRoughness": {"baseColorFactor": lin, "metallicFactor": 0.0,
                                    "roughnessFactor": 0.6},
           "doubleSided": True}
    if a < 1.0:
        mat["alphaMode"] = "BLEND"
    return mat


def gltf_document(scene):
    """The glTF JSON (dict) and binary buffer (bytes) of a :class:`Scene`."""
    buf = _Buffer()
    # --- geometry: once per distinct mesh
    geometry = []
    for mesh in scene.meshes:
        pos = mesh.positions.astype(np.float32)
        nrm = mesh.normals.astype(np.float32)
        nv = len(pos)
        idx = mesh.indices.astype(np.uint16 if nv < 65535 else np.uint32).reshape(-1)
        a_pos = buf.accessor(buf.view(pos, _ARRAY_BUFFER), _FLOAT, nv, "VEC3",
                             minmax=(pos.min(axis=0), pos.max(axis=0)))
        a_nrm = buf.accessor(buf.view(nrm, _ARRAY_BUFFER), _FLOAT, nv, "VEC3")
        a_idx = buf.accessor(buf.view(idx, _ELEMENT_ARRAY_BUFFER),
                             _UINT16 if idx.dtype == np.uint16 else _UINT32, len(idx), "SCALAR")
        geometry.append((a_pos, a_nrm, a_idx))

    materials, material_index = [], {}
    meshes, mesh_index = [], {}
    nm = len(scene.markers)
    nodes = [{"name": f"{scene.name} (Z-up to Y-up)", "rotation": list(Z_UP_TO_Y_UP),
              "children": list(range(1, len(scene.part_names) + nm + 1))}]
    for b, name in enumerate(scene.part_names):
        rgba = scene.part_color[b]
        if rgba not in material_index:
            material_index[rgba] = len(materials)
            materials.append(_material(rgba))
        g = int(scene.part_mesh[b])
        key = (g, material_index[rgba])
        if key not in mesh_index:
            a_pos, a_nrm, a_idx = geometry[g]
            mesh_index[key] = len(meshes)
            meshes.append({"name": name if not scene.meshes[g].placeholder else f"{name} (placeholder)",
                           "primitives": [{"attributes": {"POSITION": a_pos, "NORMAL": a_nrm},
                                           "indices": a_idx, "material": key[1],
                                           "mode": _TRIANGLES}]})
        w, x, y, z = scene.quaternion[0, b]
        nodes.append({"name": name, "mesh": mesh_index[key],
                      "translation": [float(v) for v in scene.position[0, b]],
                      "rotation": [float(x), float(y), float(z), float(w)]})
    if nm:
        materials.append(_material(MARKER_COLOR))
        a_pos, a_nrm, a_idx = geometry[scene.marker_mesh]
        meshes.append({"name": "contact marker", "primitives": [
            {"attributes": {"POSITION": a_pos, "NORMAL": a_nrm}, "indices": a_idx,
             "material": len(materials) - 1, "mode": _TRIANGLES}]})
        for i, name in enumerate(scene.markers):
            shown = float(scene.marker_visible[0, i])
            nodes.append({"name": f"contact {name}", "mesh": len(meshes) - 1,
                          "translation": [float(v) for v in scene.marker_position[0, i]],
                          "scale": [shown, shown, shown]})

    doc = {
        "asset": {"version": "2.0", "generator": "cadmotion",
                  "extras": {"complete": scene.complete, "message": scene.message,
                             "frames": int(len(scene.time)), "units": "m",
                             "up": "assembly Z-up; root node rotates -90 deg about x to glTF Y-up"}},
        "scene": 0,
        "scenes": [{"name": scene.name, "nodes": [0]}],
        "nodes": nodes,
        "meshes": meshes,
        "materials": materials,
    }

    # --- keyframes, after all mesh data
    moving = np.flatnonzero(scene.animated)
    if (len(moving) or nm) and len(scene.time):
        t = scene.time - min(0.0, float(scene.time[0]))
        t32 = _strictly_increasing(t.astype(np.float32))
        a_time = buf.accessor(buf.view(t32), _FLOAT, len(t32), "SCALAR",
                              minmax=(t32.min(), t32.max()))
        nt = len(t32)
        trans = np.ascontiguousarray(scene.position[:, moving].transpose(1, 0, 2), np.float32)
        rot = np.ascontiguousarray(scene.quaternion[:, moving][..., [1, 2, 3, 0]].transpose(1, 0, 2),
                                   np.float32)
        v_trans, v_rot = buf.view(trans), buf.view(rot)
        samplers, channels = [], []
        for i, b in enumerate(moving):
            a_tr = buf.accessor(v_trans, _FLOAT, nt, "VEC3", offset=i * nt * 12)
            a_rot = buf.accessor(v_rot, _FLOAT, nt, "VEC4", offset=i * nt * 16)
            for path, acc in (("translation", a_tr), ("rotation", a_rot)):
                channels.append({"sampler": len(samplers), "target": {"node": int(b) + 1, "path": path}})
                samplers.append({"input": a_time, "output": acc, "interpolation": "LINEAR"})
        if nm:
            # a marker sits on its contact's point and is shown (scale 1) while the contact is active
            marks = np.ascontiguousarray(scene.marker_position.transpose(1, 0, 2), np.float32)
            sizes = np.repeat(scene.marker_visible.T.astype(np.float32)[..., None], 3, axis=-1)
            v_marks, v_sizes = buf.view(marks), buf.view(np.ascontiguousarray(sizes))
            for i in range(nm):
                node = len(scene.part_names) + 1 + i
                for path, view, how in (("translation", v_marks, "LINEAR"), ("scale", v_sizes, "STEP")):
                    acc = buf.accessor(view, _FLOAT, nt, "VEC3", offset=i * nt * 12)
                    channels.append({"sampler": len(samplers), "target": {"node": node, "path": path}})
                    samplers.append({"input": a_time, "output": acc, "interpolation": how})
        doc["animations"] = [{"name": "motion", "channels": channels, "samplers": samplers}]

    data = buf.data()
    doc["accessors"] = buf.accessors
    doc["bufferViews"] = buf.views
    doc["buffers"] = [{"byteLength": len(data)}]
    return doc, data


def glb_bytes(doc, data):
    """Pack a glTF document and its buffer into a GLB container (header + JSON + BIN chunks)."""
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * ((-len(text)) % 4)
    data = data + b"\0" * ((-len(data)) % 4)
    total = 12 + 8 + len(text) + 8 + len(data)
    return b"".join([struct.pack("<4sII", b"glTF", 2, total),
                     struct.pack("<I4s", len(text), b"JSON"), text,
                     struct.pack("<I4s", len(data), b"BIN\0"), data])


def write_glb(motion, path, *, cache=None, complete=None, scene=None):
    """Write ``motion`` as a binary glTF (``.glb``) to ``path``, atomically."""
    scene = scene if scene is not None else build_scene(motion, cache=cache, complete=complete)
    doc, data = gltf_document(scene)
    with atomic_write(path, "wb") as f:
        f.write(glb_bytes(doc, data))
    return path


def write_gltf(motion, path, *, cache=None, complete=None, scene=None):
    """Write ``motion`` as a JSON glTF (``.gltf``) with the buffer embedded as a base64 data URI."""
    scene = scene if scene is not None else build_scene(motion, cache=cache, complete=complete)
    doc, data = gltf_document(scene)
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(data).decode("ascii")
    with atomic_write(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
    return path
