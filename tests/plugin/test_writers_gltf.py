"""glTF 2.0 writer: read the file back byte by byte and check it against the motion.

The GLB container is parsed here (header, JSON chunk, BIN chunk) without a glTF library,
following the glTF 2.0 specification: little-endian, chunks padded to 4 bytes, accessors
reading typed elements from bufferViews.
"""

import base64
import json
import math
import struct
import time

import numpy as np
import pytest

from cadmotion.kernel.motion import quat_to_matrix
from cadmotion.plugin.writers import write_outputs
from cadmotion.plugin.writers.scene import build_scene
from cadmotion.plugin.writers.tessellate import MeshCache, tessellate

try:
    from .test_writers_motions import carousel, shapes, turntable
except ImportError:
    from test_writers_motions import carousel, shapes, turntable

COMPONENTS = {5123: np.uint16, 5125: np.uint32, 5126: np.float32}
WIDTH = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}


def read_glb(path):
    raw = path.read_bytes()
    magic, version, length = struct.unpack_from("<4sII", raw, 0)
    assert (magic, version, length) == (b"glTF", 2, len(raw))
    json_len, json_type = struct.unpack_from("<I4s", raw, 12)
    assert json_type == b"JSON" and json_len % 4 == 0
    doc = json.loads(raw[20:20 + json_len])
    bin_len, bin_type = struct.unpack_from("<I4s", raw, 20 + json_len)
    assert bin_type == b"BIN\0" and bin_len % 4 == 0
    data = raw[28 + json_len:28 + json_len + bin_len]
    assert 28 + json_len + bin_len == len(raw)
    return doc, data


def accessor(doc, data, index):
    acc = doc["accessors"][index]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype = np.dtype(COMPONENTS[acc["componentType"]])
    width = WIDTH[acc["type"]]
    start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    assert start % dtype.itemsize == 0
    nbytes = acc["count"] * width * dtype.itemsize
    assert acc.get("byteOffset", 0) + nbytes <= view["byteLength"]
    assert view["byteOffset"] + view["byteLength"] <= doc["buffers"][0]["byteLength"] <= len(data)
    values = np.frombuffer(data, dtype, acc["count"] * width, start)
    return values.reshape(acc["count"], width) if width > 1 else values


def node_of(doc, name):
    return next(i for i, n in enumerate(doc["nodes"]) if n["name"] == name)


def channels_of(doc, node):
    anim = doc["animations"][0]
    return {c["target"]["path"]: anim["samplers"][c["sampler"]] for c in anim["channels"]
            if c["target"]["node"] == node}


@pytest.fixture(scope="module")
def turntable_glb(tmp_path_factory):
    m = turntable(nt=21)
    path = tmp_path_factory.mktemp("gltf") / "turntable.glb"
    write_outputs(m, [path])
    return m, read_glb(path)


def test_glb_root_node_turns_z_up_into_y_up(turntable_glb):
    _, (doc, _) = turntable_glb
    root = doc["nodes"][doc["scenes"][doc["scene"]]["nodes"][0]]
    x, y, z, w = root["rotation"]
    R = quat_to_matrix([w, x, y, z])
    assert np.allclose(R @ [0, 0, 1], [0, 1, 0]) and np.allclose(R @ [0, 1, 0], [0, 0, -1])
    assert [doc["nodes"][c]["name"] for c in root["children"]] == ["base", "crank", "slider"]
    assert doc["asset"]["version"] == "2.0"


def test_glb_meshes_are_the_part_shapes_in_metres(turntable_glb):
    _, (doc, data) = turntable_glb
    crank = doc["nodes"][node_of(doc, "crank")]
    prim = doc["meshes"][crank["mesh"]]["primitives"][0]
    pos = accessor(doc, data, prim["attributes"]["POSITION"])
    acc = doc["accessors"][prim["attributes"]["POSITION"]]
    assert acc["min"] == pos.min(axis=0).tolist() and acc["max"] == pos.max(axis=0).tolist()
    assert np.allclose(acc["min"], [0.0, -0.01, -0.005], atol=1e-7)   # box 0.1 x 0.02 x 0.01 at x+0.05
    assert np.allclose(acc["max"], [0.1, 0.01, 0.005], atol=1e-7)
    idx = accessor(doc, data, prim["indices"]).reshape(-1, 3).astype(int)
    assert idx.max() < len(pos)
    nrm = accessor(doc, data, prim["attributes"]["NORMAL"])
    assert nrm.shape == pos.shape and np.allclose(np.linalg.norm(nrm, axis=1), 1.0, atol=1e-6)
    # closed, outward-oriented surface: divergence theorem gives the box volume
    v0, v1, v2 = (pos[idx[:, k]].astype(float) for k in range(3))
    volume = np.einsum("ij,ij->i", v0, np.cross(v1, v2)).sum() / 6
    assert volume == pytest.approx(0.1 * 0.02 * 0.01, rel=1e-6)


def test_glb_animation_reproduces_the_motion(turntable_glb):
    m, (doc, data) = turntable_glb
    assert len(doc["animations"]) == 1
    times = None
    for b, name in enumerate(m.parts):
        node = node_of(doc, name)
        ch = channels_of(doc, node)
        if name == "base":                      # fixed: a constant node transform, no channel
            assert ch == {}
            assert doc["nodes"][node]["translation"] == [0.0, 0.0, 0.0]
            continue
        assert set(ch) == {"translation", "rotation"}
        assert all(s["interpolation"] == "LINEAR" for s in ch.values())
        t = accessor(doc, data, ch["translation"]["input"])
        times = t if times is None else times
        assert ch["translation"]["input"] == ch["rotation"]["input"]     # one shared time accessor
        assert np.allclose(t, m.time, atol=1e-6)
        acc_t = doc["accessors"][ch["translation"]["input"]]
        assert acc_t["min"] == [float(t[0])] and acc_t["max"] == [float(t[-1])]
        tr = accessor(doc, data, ch["translation"]["output"])
        assert np.allclose(tr, m.position[:, b], atol=1e-7)
        xyzw = accessor(doc, data, ch["rotation"]["output"])
        assert np.allclose(xyzw[:, [3, 0, 1, 2]], m.quaternion[:, b], atol=1e-7)
    # the crank turns half a revolution about z: check the last keyframe geometrically
    ch = channels_of(doc, node_of(doc, "crank"))
    x, y, z, w = accessor(doc, data, ch["rotation"]["output"])[-1]
    assert np.allclose(quat_to_matrix([w, x, y, z]) @ [1, 0, 0], [-1, 0, 0], atol=1e-6)


def test_glb_materials_carry_the_part_colours_in_linear_light(turntable_glb):
    _, (doc, _) = turntable_glb
    slider = doc["nodes"][node_of(doc, "slider")]
    mat = doc["materials"][doc["meshes"][slider["mesh"]]["primitives"][0]["material"]]
    rgba = mat["pbrMetallicRoughness"]["baseColorFactor"]
    # sRGB (0.1, 0.4, 0.9) -> linear by the IEC 61966-2-1 formula
    expected = [((c + 0.055) / 1.055) ** 2.4 for c in (0.1, 0.4, 0.9)]
    assert rgba[:3] == pytest.approx(expected, rel=1e-9) and rgba[3] == 1.0


@pytest.mark.filterwarnings("ignore:.*without CAD geometry")
def test_rotation_keyframes_stay_in_one_hemisphere(tmp_path):
    m = turntable(nt=41, duration=3 * math.pi / 2.0, with_shapes=False)   # three full turns
    scene = build_scene(m)
    q = scene.quaternion[:, 1]
    assert np.all(np.einsum("ij,ij->i", q[1:], q[:-1]) > 0)
    assert np.allclose(np.abs(q), np.abs(m.quaternion[:, 1]))


def test_gltf_text_file_embeds_the_same_buffer(tmp_path):
    m = turntable(nt=6)
    glb, gltf = write_outputs(m, [tmp_path / "a.glb", tmp_path / "a.gltf"])
    doc_b, data_b = read_glb(glb)
    doc_t = json.loads(gltf.read_text(encoding="utf-8"))
    uri = doc_t["buffers"][0].pop("uri")
    prefix = "data:application/octet-stream;base64,"
    assert uri.startswith(prefix)
    assert base64.b64decode(uri[len(prefix):]) == data_b[:doc_b["buffers"][0]["byteLength"]]
    assert doc_t == doc_b


def test_parts_without_geometry_get_a_box_at_their_centre_of_mass(tmp_path):
    m = turntable(nt=5, with_shapes=False)
    with pytest.warns(UserWarning, match="without CAD geometry"):
        (path,) = write_outputs(m, [tmp_path / "boxes.glb"])
    doc, data = read_glb(path)
    crank = doc["nodes"][node_of(doc, "crank")]
    prim = doc["meshes"][crank["mesh"]]["primitives"][0]
    pos = accessor(doc, data, prim["attributes"]["POSITION"])
    centre = 0.5 * (pos.min(axis=0) + pos.max(axis=0))
    assert np.allclose(centre, [0.05, 0.0, 0.0], atol=1e-7)        # the crank's com
    edge = pos.max(axis=0) - pos.min(axis=0)
    assert np.allclose(edge, edge[0]) and 1e-3 <= edge[0] <= 0.05
    geometries = {doc["meshes"][n["mesh"]]["primitives"][0]["attributes"]["POSITION"]
                  for n in doc["nodes"] if "mesh" in n}
    assert len(geometries) == 2             # base and slider share the box at the origin


def test_a_shared_shape_is_tessellated_and_stored_once(tmp_path):
    box = shapes()["crank"]
    parts = {"base": box, "crank": box, "slider": box}
    m = turntable(nt=5, shape_map=parts)
    cache = MeshCache()
    scene = build_scene(m, cache=cache)
    assert cache.tessellations == 1 and len(scene.meshes) == 1
    (path,) = write_outputs(m, [tmp_path / "shared.glb"])
    doc, _ = read_glb(path)
    positions = {doc["meshes"][n["mesh"]]["primitives"][0]["attributes"]["POSITION"]
                 for n in doc["nodes"] if "mesh" in n}
    assert len(positions) == 1               # three colours, three meshes, one geometry
    assert len(doc["meshes"]) == 3


def test_tessellation_respects_face_orientation_of_a_hollow_cylinder():
    import cadquery as cq

    r_out, r_in, h = 0.02, 0.012, 0.03
    tube = cq.Workplane().circle(r_out).circle(r_in).extrude(h).val().wrapped
    mesh = tessellate(tube)
    p = mesh.positions.astype(float)
    i = mesh.indices.astype(int)
    v0, v1, v2 = p[i[:, 0]], p[i[:, 1]], p[i[:, 2]]
    volume = np.einsum("ij,ij->i", v0, np.cross(v1, v2)).sum() / 6
    assert volume == pytest.approx(math.pi * (r_out**2 - r_in**2) * h, rel=0.02)
    # vertex normals agree with the winding of their triangles (inner wall points inwards)
    face_n = np.cross(v1 - v0, v2 - v0)
    assert np.all(np.einsum("ij,ij->i", face_n, mesh.normals[i[:, 0]]) > 0)


def test_one_tessellation_per_distinct_shape_for_100_instances():
    cache = MeshCache()
    scene = build_scene(carousel(3), cache=cache)
    assert cache.tessellations == 20 and len(scene.meshes) == 20


def carousel_glb(tmp_path, nt):
    m = carousel(nt)
    path = tmp_path / f"carousel{nt}.glb"
    start = time.perf_counter()
    write_outputs(m, [path])
    return path, time.perf_counter() - start


def test_file_grows_with_frames_only_by_keyframe_data(tmp_path):
    (small, _), (large, seconds) = carousel_glb(tmp_path, 10), carousel_glb(tmp_path, 300)
    doc10, bin10 = read_glb(small)
    doc300, bin300 = read_glb(large)
    n_moving = 100
    keyframes = (300 - 10) * (4 + n_moving * (3 + 4) * 4)     # time + translation + rotation, float32
    assert len(bin300) - len(bin10) == keyframes
    assert 0 <= (large.stat().st_size - small.stat().st_size) - keyframes < 2048   # JSON digits only
    for doc in (doc10, doc300):            # 20 distinct shapes, stored once each
        geometries = {m["primitives"][0]["attributes"]["POSITION"] for m in doc["meshes"]}
        assert len(geometries) == 20
    assert seconds < 10.0, f"300-frame, 100-part GLB took {seconds:.1f} s"


def test_repeated_output_times_still_give_strictly_increasing_keyframes(tmp_path):
    m = turntable(nt=6)
    m.time[3] = m.time[2]                       # e.g. an event reported at an output time
    (path,) = write_outputs(m, [tmp_path / "ties.glb"])
    doc, data = read_glb(path)
    ch = channels_of(doc, node_of(doc, "crank"))
    t = accessor(doc, data, ch["translation"]["input"])
    assert np.all(np.diff(t) > 0) and np.allclose(t, m.time, atol=1e-6)


def test_parts_of_a_model_file_are_drawn_as_sticks_between_their_joints(tmp_path):
    from pathlib import Path

    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics

    sample = Path(__file__).resolve().parents[2] / "samples" / "four_bar.cadmotion.toml"
    motion = kinematics(compile_model(load(sample)), t_end=0.1, steps=2)
    with pytest.warns(UserWarning, match="sticks"):
        (path,) = write_outputs(motion, [tmp_path / "fourbar.glb"])
    doc, data = read_glb(path)
    coupler = doc["nodes"][node_of(doc, "coupler")]
    pos = accessor(doc, data, doc["meshes"][coupler["mesh"]]["primitives"][0]["attributes"]["POSITION"])
    # the coupler's joints B (its frame origin) and C lie 0.3 m apart: the stick spans both
    span = np.linalg.norm(pos.max(axis=0) - pos.min(axis=0))
    assert 0.3 < span < 0.36
    assert pos.min(axis=0)[0] < 0.0 < 0.26 - 0.1 < pos.max(axis=0)[0]


GRIPPER = __import__("pathlib").Path(__file__).resolve().parents[2] / "samples" / "gripper" / "gripper.cadmotion.toml"


@pytest.mark.slow
@pytest.mark.skipif(not GRIPPER.with_name("gripper.step").exists(), reason="gripper.step missing")
def test_only_parts_that_really_move_get_animation_channels():
    """The gripper sample (108 STEP parts) moves its jaw linkage only: the lift servo holds
    its angle. The parts that move are, from the model's joints alone, the jaw linkage's
    links, jaw, push rod and servo horn, and what is welded (fixed joints) to them; the
    others only show round-off (~1e-15 m) and must not be animated."""
    import warnings

    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = load(GRIPPER)
    linkage = {"Laserteil 7:1", "Laserteil 7:2", "Laserteil 7:3", "Laserteil 8:1", "Laserteil 9:1",
               "Druckstange 2:1", "SG90 - Micro Servo 9g - Tower Pro.3_Peça:1_2"}
    group = {p.name: {p.name} for p in spec.parts}            # rigid groups through fixed joints
    for j in spec.joints:
        if j.type == "fixed":
            a, b = j.parts
            merged = group[a] | group[b]
            for n in merged:
                group[n] = merged
    expected = set().union(*(group[n] for n in linkage))
    motion = kinematics(compile_model(spec), t_end=2.0, steps=20)
    scene = build_scene(motion)
    animated = {n for n, a in zip(scene.part_names, scene.animated) if a}
    assert len(scene.part_names) == 108
    assert animated == expected and len(animated) == 18
