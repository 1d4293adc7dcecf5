"""URDF ``<mesh>`` visuals (importers/urdf.py, importers/mesh_files.py, geometry/meshes.py): mesh files written
here — a binary STL cube, an ASCII STL tetrahedron, an OBJ pyramid with a square face, a COLLADA tetrahedron in
millimetres moved by its node — read into the link frame after the visual's scale and origin, and checked
against what the files and the URDF say: the bounds, the enclosed volume (from the triangles, by the divergence
theorem: positive when they face outwards), the triangle count. ``package://`` paths found; missing and
unreadable files named in the "not read" warning; a robot with a mesh visual written to GLB and HTML by the CLI
with the file's triangles."""

import json
import math
import struct
import warnings

import numpy as np
import pytest

from cadmotion.importers.urdf import mesh_path, read_urdf

CUBE_CORNERS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
#: the unit cube's 12 triangles, counter-clockwise seen from outside (corner index = 4x + 2y + z)
CUBE_TRIANGLES = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
                  (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
TETRA = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
TETRA_TRIANGLES = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]


def binary_stl(path, nodes, triangles):
    """A binary STL file: 80-byte header, count, then per triangle a normal, three corners and 2 bytes."""
    with open(path, "wb") as f:
        f.write(b"cadmotion test".ljust(80, b" ") + struct.pack("<I", len(triangles)))
        for t in triangles:
            a, b, c = nodes[list(t)]
            n = np.cross(b - a, c - a)
            f.write(struct.pack("<12fH", *(n / np.linalg.norm(n)), *a, *b, *c, 0))
    return path


def ascii_stl(path, nodes, triangles):
    lines = ["solid tetra"]
    for t in triangles:
        lines += ["  facet normal 0 0 0", "    outer loop"]
        lines += [f"      vertex {x:.9g} {y:.9g} {z:.9g}" for x, y, z in nodes[list(t)]]
        lines += ["    endloop", "  endfacet"]
    path.write_text("\n".join(lines + ["endsolid tetra", ""]))
    return path


def urdf(tmp_path, visuals, name="robot.urdf", links=""):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<robot name="r"><link name="a">{visuals}</link>{links}</robot>')
    return path


def visual(filename, xyz="0 0 0", rpy="0 0 0", scale=None, material=""):
    s = f' scale="{scale}"' if scale else ""
    return (f'<visual><origin xyz="{xyz}" rpy="{rpy}"/><geometry><mesh filename="{filename}"{s}/></geometry>'
            f'{material}</visual>')


def triangles_of(shape):
    """(nodes of every triangle (m, 3, 3)) of a shape's stored triangulation, in the part frame."""
    from cadmotion.geometry.triangulation import triangulated_faces

    return np.concatenate([f.nodes[f.triangles] for f in triangulated_faces(shape)])


def volume(T):
    """The volume the triangles T (m, 3, 3) enclose: Σ a · (b × c) / 6, positive when they face outwards."""
    return float(np.einsum("ij,ij->i", T[:, 0], np.cross(T[:, 1], T[:, 2])).sum() / 6)


def read_one_part(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may be left unread
        (part,) = read_urdf(path).parts
    return part


def test_a_binary_stl_cube_is_scaled_along_its_own_axes_then_placed_by_the_visual_origin(tmp_path):
    # the unit cube [0, 1]³ scaled by (2, 1, 0.5) is [0, 2] × [0, 1] × [0, 0.5]; turned by yaw 90° (x → y,
    # y → −x) it is [−1, 0] × [0, 2] × [0, 0.5]; moved by (1, 2, 3): [0, 1] × [2, 4] × [3, 3.5]; volume 1
    pytest.importorskip("OCP")
    binary_stl(tmp_path / "cube.stl", CUBE_CORNERS, CUBE_TRIANGLES)
    part = read_one_part(urdf(tmp_path, visual("cube.stl", "1 2 3", f"0 0 {math.pi / 2!r}", "2 1 0.5")))
    T = triangles_of(part.shape)
    assert len(T) == 12
    np.testing.assert_allclose(T.reshape(-1, 3).min(axis=0), [0, 2, 3], atol=1e-6)
    np.testing.assert_allclose(T.reshape(-1, 3).max(axis=0), [1, 4, 3.5], atol=1e-6)
    assert volume(T) == pytest.approx(1.0, rel=1e-6)


def test_a_mirroring_scale_keeps_an_ascii_stl_tetrahedron_facing_outwards(tmp_path):
    # scale (1, −1, 1) mirrors the tetrahedron into y ≤ 0; its triangles are turned so that they still face
    # outwards: the volume stays +1/6, not −1/6
    pytest.importorskip("OCP")
    ascii_stl(tmp_path / "tetra.stl", TETRA, TETRA_TRIANGLES)
    part = read_one_part(urdf(tmp_path, visual("tetra.stl", scale="1 -1 1")))
    T = triangles_of(part.shape)
    assert len(T) == 4
    np.testing.assert_allclose(T.reshape(-1, 3).min(axis=0), [0, -1, 0], atol=1e-6)
    np.testing.assert_allclose(T.reshape(-1, 3).max(axis=0), [1, 0, 1], atol=1e-6)
    assert volume(T) == pytest.approx(1 / 6, rel=1e-6)


def test_an_obj_pyramid_with_a_square_face_and_negative_indices(tmp_path):
    # a pyramid: base 2 × 2 at z = 0, apex 3 up; its base is one quad (two triangles), its sides written with
    # negative indices (−1 the apex); volume = base × height / 3 = 4; 6 triangles; moved 0.5 along z
    pytest.importorskip("OCP")
    (tmp_path / "pyramid.obj").write_text(
        "# pyramid\no pyramid\nv -1 -1 0\nv 1 -1 0\nv 1 1 0\nv -1 1 0\nvn 0 0 1\nv 0 0 3\n"
        "f 1//1 4//1 3//1 2//1\nf -5 -4 -1\nf -4 -3 -1\nf -3 -2 -1\nf -2 -5 -1\n")
    part = read_one_part(urdf(tmp_path, visual("pyramid.obj", xyz="0 0 0.5")))
    T = triangles_of(part.shape)
    assert len(T) == 6
    np.testing.assert_allclose(T.reshape(-1, 3).min(axis=0), [-1, -1, 0.5], atol=1e-9)
    np.testing.assert_allclose(T.reshape(-1, 3).max(axis=0), [1, 1, 3.5], atol=1e-9)
    assert volume(T) == pytest.approx(4.0, rel=1e-9)


def collada_tetrahedron(path, unit="0.001", up="Y_UP"):
    """The tetrahedron scaled to 100 units, in a node moved by (500, 0, 0) and turned 90° about z; its
    material's diffuse colour (0.2, 0.4, 0.6, 1); the faces as one <polylist>."""
    positions = " ".join(f"{100 * v:g}" for v in TETRA.ravel())
    indices = " ".join(str(i) for t in TETRA_TRIANGLES for i in t)
    path.write_text(f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="millimeter" meter="{unit}"/><up_axis>{up}</up_axis></asset>
  <library_effects><effect id="blue-fx"><profile_COMMON><technique sid="common"><phong>
    <diffuse><color>0.2 0.4 0.6 1</color></diffuse></phong></technique></profile_COMMON></effect></library_effects>
  <library_materials><material id="blue" name="blue"><instance_effect url="#blue-fx"/></material></library_materials>
  <library_geometries><geometry id="tetra" name="tetra"><mesh>
    <source id="tetra-pos"><float_array id="tetra-pos-array" count="12">{positions}</float_array>
      <technique_common><accessor source="#tetra-pos-array" count="4" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="tetra-vtx"><input semantic="POSITION" source="#tetra-pos"/></vertices>
    <polylist material="mat" count="4"><input semantic="VERTEX" source="#tetra-vtx" offset="0"/>
      <vcount>3 3 3 3</vcount><p>{indices}</p></polylist>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="scene"><node id="n" name="n">
    <translate>500 0 0</translate><rotate>0 0 1 90</rotate>
    <instance_geometry url="#tetra"><bind_material><technique_common>
      <instance_material symbol="mat" target="#blue"/></technique_common></bind_material></instance_geometry>
  </node></visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>
""")
    return path


def test_a_collada_file_in_millimetres_moved_by_its_node_and_coloured_by_its_material(tmp_path):
    # 100 mm tetrahedron turned 90° about z (x → y, y → −x): corners (0,0,0), (0,100,0), (−100,0,0), (0,0,100) mm;
    # moved 500 mm along x: in metres x ∈ [0.4, 0.5], y ∈ [0, 0.1], z ∈ [0, 0.1]; its up_axis Y_UP is not applied
    # (ROS's viewers drop it); then the visual origin moves it 1 m along z. Volume 0.1³ / 6 m³. No <material>
    # in the URDF: the part takes the file's diffuse colour
    pytest.importorskip("OCP")
    pytest.importorskip("collada")
    collada_tetrahedron(tmp_path / "tetra.dae")
    part = read_one_part(urdf(tmp_path, visual("tetra.dae", xyz="0 0 1")))
    T = triangles_of(part.shape)
    assert len(T) == 4
    np.testing.assert_allclose(T.reshape(-1, 3).min(axis=0), [0.4, 0, 1], atol=1e-7)
    np.testing.assert_allclose(T.reshape(-1, 3).max(axis=0), [0.5, 0.1, 1.1], atol=1e-7)
    assert volume(T) == pytest.approx(0.1**3 / 6, rel=1e-6)
    assert part.color == (0.2, 0.4, 0.6, 1.0)


#: the box of Tiago's arm_1.stl (the visual of its arm_1_link), read from the binary STL file of example-robot-data 6.0.0
ARM_1_STL_BOX = ([-0.0515, -0.0515, -0.0828826], [0.176986, 0.087459, 0.038])


def test_a_real_y_up_collada_mesh_lies_on_its_links_visual_unturned(tmp_path):
    # Tiago's arm_1_link collision mesh (tests/data/urdf-meshes, MeshLab, Y_UP, 92 triangles) at the collision's
    # origin (0) lies on its visual STL's box to 0.9 mm: up_axis is not applied, as ROS's viewers do. Turned from
    # Y up to Z up (+90° about x: y → z, z → −y) its box would be [−0.05, −0.04, −0.05] … [0.18, 0.08, 0.09]: 5 cm off
    pytest.importorskip("OCP")
    pytest.importorskip("collada")
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "urdf-meshes" / "arm_1_collision.dae"
    part = read_one_part(urdf(tmp_path, visual(str(data))))
    T = triangles_of(part.shape)
    assert len(T) == 92
    np.testing.assert_allclose(T.reshape(-1, 3).min(axis=0), ARM_1_STL_BOX[0], atol=1e-3)
    np.testing.assert_allclose(T.reshape(-1, 3).max(axis=0), ARM_1_STL_BOX[1], atol=1e-3)
    assert part.color is None  # no material in the file


def test_the_urdf_material_colour_wins_over_the_collada_colour(tmp_path):
    pytest.importorskip("OCP")
    pytest.importorskip("collada")
    collada_tetrahedron(tmp_path / "tetra.dae")
    part = read_one_part(urdf(tmp_path, visual("tetra.dae", material='<material name="red"><color rgba="1 0 0 1"/>'
                                                                     '</material>')))
    assert part.color == (1.0, 0.0, 0.0, 1.0)


def test_package_paths_are_found_above_the_urdf_file_and_in_ros_package_path(tmp_path, monkeypatch):
    # ROS's convention: a package's folder is named after it
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    mesh = tmp_path / "ws" / "my_robot" / "meshes" / "a.stl"
    mesh.parent.mkdir(parents=True)
    mesh.write_bytes(b"")
    robot = tmp_path / "ws" / "my_robot" / "urdf" / "r.urdf"
    robot.parent.mkdir()
    assert mesh_path("package://my_robot/meshes/a.stl", robot) == mesh
    assert mesh_path("package:///my_robot/meshes/a.stl", robot) == mesh
    assert mesh_path("../meshes/a.stl", robot) == robot.parent / "../meshes/a.stl"
    assert mesh_path(f"file://{mesh}", robot) == mesh
    elsewhere = tmp_path / "elsewhere" / "r.urdf"
    with pytest.raises(FileNotFoundError, match="package 'my_robot' not found"):
        mesh_path("package://my_robot/meshes/a.stl", elsewhere)
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'ws'}")
    assert mesh_path("package://my_robot/meshes/a.stl", elsewhere) == mesh
    with pytest.raises(FileNotFoundError, match="file not found"):
        mesh_path("package://my_robot/meshes/b.stl", elsewhere)


def test_a_package_mesh_is_read_into_the_robot(tmp_path):
    pytest.importorskip("OCP")
    (tmp_path / "my_robot" / "meshes").mkdir(parents=True)
    binary_stl(tmp_path / "my_robot" / "meshes" / "cube.stl", CUBE_CORNERS, CUBE_TRIANGLES)
    part = read_one_part(urdf(tmp_path, visual("package://my_robot/meshes/cube.stl"), name="my_robot/urdf/r.urdf"))
    assert len(triangles_of(part.shape)) == 12


def test_missing_and_unreadable_meshes_are_named_and_the_link_keeps_its_other_visuals(tmp_path):
    # three mesh visuals that cannot be read, one box: the warning names each file with its reason, the part
    # is the box alone
    pytest.importorskip("OCP")
    from cadmotion.geometry.shapes import bounding_box

    (tmp_path / "garbage.stl").write_bytes(b"\x00" * 10)
    (tmp_path / "base.mesh").write_text("OGRE")
    visuals = (visual("package://nowhere/a.stl") + visual("missing.obj") + visual("garbage.stl")
               + visual("base.mesh")
               + '<visual><geometry><box size="1 2 3"/></geometry></visual>')
    with pytest.warns(UserWarning) as record:
        (part,) = read_urdf(urdf(tmp_path, visuals)).parts
    message = " ".join(str(w.message) for w in record)
    assert "#1 <mesh> package://nowhere/a.stl (package 'nowhere' not found" in message
    assert f"#2 <mesh> missing.obj (file not found: {tmp_path / 'missing.obj'})" in message
    assert "#3 <mesh> garbage.stl (unreadable: OpenCascade read no triangle" in message
    assert "#4 <mesh> base.mesh (unreadable: .mesh: not a mesh format" in message
    lo, hi = bounding_box(part.shape)
    np.testing.assert_allclose(hi - lo, [1, 2, 3], atol=1e-7)


def test_a_collada_file_is_named_as_not_read_without_pycollada(tmp_path, monkeypatch):
    pytest.importorskip("OCP")
    import sys

    monkeypatch.setitem(sys.modules, "collada", None)  # import collada raises ImportError
    collada_tetrahedron(tmp_path / "tetra.dae")
    with pytest.warns(UserWarning, match=r"tetra.dae \(unreadable: reading COLLADA needs pycollada"):
        (part,) = read_urdf(urdf(tmp_path, visual("tetra.dae"))).parts
    assert part.shape is None


def read_glb(path):
    """(JSON document, binary chunk) of a GLB file (glTF 2.0: header, JSON chunk, BIN chunk)."""
    raw = path.read_bytes()
    json_len = struct.unpack_from("<I", raw, 12)[0]
    return json.loads(raw[20:20 + json_len]), raw[28 + json_len:]


def test_a_robot_with_a_mesh_visual_is_written_to_glb_and_html_by_the_cli(tmp_path):
    # link b turns about z through 1 rad; its visual is the STL cube scaled to 0.1 m: the GLB's mesh of b is the
    # file's 12 triangles (nothing meshed again), within [0, 0.1]³ in b's frame
    pytest.importorskip("OCP")
    from cadmotion.plugin.cli import main

    binary_stl(tmp_path / "cube.stl", CUBE_CORNERS, CUBE_TRIANGLES)
    links = (f'<link name="b">{visual("cube.stl", scale="0.1 0.1 0.1")}</link>'
             '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/>'
             '<axis xyz="0 0 1"/><limit lower="-2" upper="2"/></joint>')
    robot = urdf(tmp_path, '<visual><geometry><box size="0.2 0.2 0.2"/></geometry></visual>', links=links)
    glb, html = tmp_path / "out.glb", tmp_path / "out.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(robot), "--drive", "j=t", "--t-end", "1", "--steps", "10", "-q",
                     "-o", str(glb), "-o", str(html)]) == 0
    doc, _ = read_glb(glb)
    node = next(n for n in doc["nodes"] if n.get("name") == "b" and "mesh" in n)
    (primitive,) = doc["meshes"][node["mesh"]]["primitives"]
    assert doc["accessors"][primitive["indices"]]["count"] == 3 * 12
    position = doc["accessors"][primitive["attributes"]["POSITION"]]
    np.testing.assert_allclose(position["min"], [0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(position["max"], [0.1, 0.1, 0.1], atol=1e-6)
    assert html.stat().st_size > 0 and "<html" in html.read_text()[:1000].lower()


def sliding_cubes(tmp_path, a_visual):
    """Link a (fixed) and link b, the STL cube scaled to 0.1 m, on a prismatic joint along x, 0.3 m from a."""
    binary_stl(tmp_path / "cube.stl", CUBE_CORNERS, CUBE_TRIANGLES)
    links = (f'<link name="b">{visual("cube.stl", scale="0.1 0.1 0.1")}</link>'
             '<joint name="j" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0"/>'
             '<axis xyz="1 0 0"/><limit lower="-1" upper="1"/></joint>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_urdf(urdf(tmp_path, a_visual, links=links))


@pytest.mark.parametrize("a_visual", [visual("cube.stl", scale="0.1 0.1 0.1"),
                                      '<visual><origin xyz="0.05 0.05 0.05"/><geometry><box size="0.1 0.1 0.1"/>'
                                      '</geometry></visual>'], ids=["mesh-mesh", "box-mesh"])
def test_mesh_parts_are_checked_for_interference(tmp_path, a_visual):
    # a = [0, 0.1]³ (the mesh cube, or a box); b's cube starts at x = 0.3 and moves by −0.3 t: its face x = 0.3 −
    # 0.3 t meets a's face x = 0.1 at t = 2/3. Moving by −0.15 t it stops 0.05 m short at t = 1
    pytest.importorskip("OCP")
    from cadmotion.plugin.interference import find_interference
    from cadmotion.plugin.run_analysis import run_spec

    spec = sliding_cubes(tmp_path, a_visual)
    motion = run_spec(spec, "kinematic", t_end=1.0, steps=20, drive=["j=-0.3*t"]).motion
    (hit,) = find_interference(motion, spec, exclude_jointed=False).collisions
    assert hit.first_time == pytest.approx(2 / 3, abs=1e-6)
    motion = run_spec(spec, "kinematic", t_end=1.0, steps=20, drive=["j=-0.15*t"]).motion
    report = find_interference(motion, spec, exclude_jointed=False, near=0.1)
    assert report.collisions == []
    # between two meshes exact; against the box (OCCT measures no distance to a mesh) the meshes' upper bound,
    # within the box's allowed chord error: 1.5 × 1e-3 of its diagonal √3 × 0.1 m, 0.26 mm
    allowed = 1e-9 if "<mesh" in a_visual else 1.5e-3 * math.sqrt(3) * 0.1 + 1e-9
    assert 0.05 - 1e-9 <= report.near[0].min_distance <= 0.05 + allowed


def test_cadmotion_check_reports_the_collision_of_mesh_parts_and_proposes_no_contact_for_them(tmp_path):
    # the CLI's check: the sliding cubes collide at t = 2/3; a contact fitted to CAD faces cannot be proposed for
    # meshes, and the report says why instead of proposing one
    pytest.importorskip("OCP")
    from cadmotion.plugin.check import check

    spec = sliding_cubes(tmp_path, visual("cube.stl", scale="0.1 0.1 0.1"))
    report = check(spec, t_end=1.0, steps=20, drive=["j=-0.3*t"], exclude_jointed=False)
    assert report.status == "collides"
    assert report.collisions[0]["first_time"] == pytest.approx(2 / 3, abs=1e-6)
    assert "a and b: triangle meshes (URDF <mesh>), no CAD face to fit a contact shape to" in report.proposed_contacts


def test_mesh_parts_are_written_to_step_as_triangulated_surfaces_in_metres(tmp_path):
    # AP242's TRIANGULATED_SURFACE_SET; read back by cadmotion's STEP reader: b's cube at t = 1 spans
    # [0.15, 0.25] × [0, 0.1]², a's box [0, 0.1]³, b's 12 triangles kept
    pytest.importorskip("OCP")
    from cadmotion.geometry.placements import placed
    from cadmotion.geometry.shapes import bounding_box
    from cadmotion.importers import load
    from cadmotion.plugin.run_analysis import run_spec
    from cadmotion.plugin.writers import write_outputs

    spec = sliding_cubes(tmp_path, '<visual><origin xyz="0.05 0.05 0.05"/><geometry><box size="0.1 0.1 0.1"/>'
                                   '</geometry></visual>')
    motion = run_spec(spec, "kinematic", t_end=1.0, steps=4, drive=["j=-0.15*t"]).motion
    write_outputs(motion, [tmp_path / "out.step"])
    assert "TRIANGULATED_SURFACE_SET" in (tmp_path / "out.step").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = {p.name: p for p in load(tmp_path / "out.step").parts}
    boxes = {n: bounding_box(placed(p.shape, p.position, p.orientation)) for n, p in parts.items()}
    np.testing.assert_allclose(boxes["a"][0], [0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(boxes["a"][1], [0.1, 0.1, 0.1], atol=1e-6)
    np.testing.assert_allclose(boxes["b"][0], [0.15, 0, 0], atol=1e-6)
    np.testing.assert_allclose(boxes["b"][1], [0.25, 0.1, 0.1], atol=1e-6)
    assert len(triangles_of(parts["b"].shape)) == 12
