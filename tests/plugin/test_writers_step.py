"""STEP writer: read the files back with cadquery/OCP and check poses, names and colours.

cadquery reads STEP in millimetres, so a part at x = 0.2 m must come back at 200 mm:
this checks the unit written in the file as well as the placement.
"""

import math

import numpy as np
import pytest

from cadmotion.errors import OutputError
from cadmotion.kernel.motion import quat_to_matrix
from cadmotion.plugin.writers import write_outputs

try:
    from .test_writers_motions import A, OMEGA, turntable
except ImportError:
    from test_writers_motions import A, OMEGA, turntable

cq = pytest.importorskip("cadquery")


def read_assembly(path):
    """{component name: (solid centre in mm, colour rgba or None)} of a STEP assembly."""
    assy = cq.Assembly.importStep(str(path))
    out = {}
    for name, obj in assy.objects.items():
        if obj.obj is None:
            continue
        solid = obj.obj.moved(obj.loc)
        out[name] = (np.array(solid.BoundingBox().center.toTuple()),
                     obj.color.toTuple() if obj.color is not None else None)
    return out


@pytest.fixture(scope="module")
def motion():
    return turntable(nt=9)


def test_step_places_every_part_at_its_pose_at_time_at(tmp_path, motion):
    at = 0.3                                    # between output frames: poses are interpolated
    (path,) = write_outputs(motion, [tmp_path / "at.step"], at=at)
    parts = read_assembly(path)
    assert set(parts) == {"base", "crank", "slider"}
    th = OMEGA * at
    # crank: box centred at (0.05, 0, 0) in its frame, turned by th about z
    assert np.allclose(parts["crank"][0], 1000 * np.array([0.05 * math.cos(th), 0.05 * math.sin(th), 0]),
                       atol=1e-3)
    # slider: a cylinder at x = 0.2 + A sin(th); Hermite interpolation of 9 frames is within 1 um
    assert np.allclose(parts["slider"][0], [1000 * (0.2 + A * math.sin(th)), 0, 0], atol=1e-3)
    assert np.allclose(parts["base"][0], [100.0, 0.0, -20.0], atol=1e-6)


def test_step_keeps_names_and_colours(tmp_path, motion):
    (path,) = write_outputs(motion, [tmp_path / "last.stp"])
    parts = read_assembly(path)
    assert parts["crank"][1] == pytest.approx((0.9, 0.3, 0.1, 1.0), abs=1e-6)
    assert parts["slider"][1] == pytest.approx((0.1, 0.4, 0.9, 1.0), abs=1e-6)
    th = OMEGA * motion.time[-1]                 # default time: the last frame (half a turn)
    assert np.allclose(parts["crank"][0], [1000 * 0.05 * math.cos(th), 1000 * 0.05 * math.sin(th), 0],
                       atol=1e-3)


def test_shared_shape_with_two_colours_keeps_both(tmp_path):
    box = cq.Workplane().box(0.01, 0.01, 0.01).val().wrapped
    m = turntable(nt=3, shape_map={"base": box, "crank": box, "slider": box})
    (path,) = write_outputs(m, [tmp_path / "shared.step"])
    parts = read_assembly(path)
    assert parts["crank"][1] == pytest.approx((0.9, 0.3, 0.1, 1.0), abs=1e-6)
    assert parts["slider"][1] == pytest.approx((0.1, 0.4, 0.9, 1.0), abs=1e-6)
    assert parts["base"][1] == pytest.approx((0.5, 0.5, 0.5, 1.0), abs=1e-6)


def test_a_rotated_part_is_rotated_not_only_moved(tmp_path):
    m = turntable(nt=5)
    m.quaternion[:, 2] = [math.cos(math.pi / 4), math.sin(math.pi / 4), 0, 0]   # slider tipped 90 deg about x
    (path,) = write_outputs(m, [tmp_path / "tipped.step"], at=0.0)
    assy = cq.Assembly.importStep(str(path))
    slider = assy.objects["slider"]
    bb = slider.obj.moved(slider.loc).BoundingBox()
    # cylinder r = 0.015, h = 0.02 along z; tipped about x its axis lies along y
    assert (bb.xlen, bb.ylen, bb.zlen) == pytest.approx((30.0, 20.0, 30.0), abs=1e-3)
    R = quat_to_matrix(m.quaternion[0, 2])
    assert np.allclose(R @ [0, 0, 1], [0, -1, 0])


def test_parts_without_shapes_are_left_out_with_a_warning(tmp_path):
    import cadmotion.kernel.spec as spec_mod

    m = turntable(nt=3)
    parts = tuple(p if p.name != "slider" else spec_mod.PartSpec("slider") for p in m.spec.parts)
    m.spec = spec_mod.MechanismSpec(parts=parts, name="turntable")
    with pytest.warns(UserWarning, match="slider"):
        (path,) = write_outputs(m, [tmp_path / "two.step"])
    assert set(read_assembly(path)) == {"base", "crank"}


def test_a_folder_gets_one_step_file_per_frame(tmp_path):
    m = turntable(nt=4)
    out = write_outputs(m, [str(tmp_path / "frames") + "/"])
    assert [p.name for p in out] == [f"frame_{k:04d}.step" for k in range(4)]
    for k, path in enumerate(out):
        slider = read_assembly(path)["slider"][0]
        assert slider[0] == pytest.approx(1000 * m.position[k, 2, 0], abs=1e-3)


def test_time_outside_the_run_is_refused_before_anything_is_written(tmp_path, motion):
    with pytest.raises(OutputError, match="outside the run"):
        write_outputs(motion, [tmp_path / "m.csv", tmp_path / "late.step"], at=10.0)
    assert list(tmp_path.iterdir()) == []


def test_writing_step_prints_nothing(tmp_path):
    """OCCT's transfer statistics must not reach stdout (the CLI may print JSON there).

    Run in a fresh interpreter without cadquery, which would silence OCCT on import.
    """
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import numpy as np
        from OCP.BRepPrimAPI import BRepPrimAPI_MakeBox
        from cadmotion.kernel.motion import Motion
        from cadmotion.kernel.spec import MechanismSpec, PartSpec
        from cadmotion.plugin.writers import write_outputs
        box = BRepPrimAPI_MakeBox(0.01, 0.02, 0.03).Shape()
        z = np.zeros((2, 1, 3)); q = np.zeros((2, 1, 4)); q[..., 0] = 1
        m = Motion(np.array([0.0, 1.0]), ["b"], z, q, z, z, z, z,
                   spec=MechanismSpec(parts=(PartSpec("b", shape=box),)))
        write_outputs(m, [{str(tmp_path / "quiet.step")!r}])
        import sys; assert "cadquery" not in sys.modules
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    assert (tmp_path / "quiet.step").read_text().startswith("ISO-10303-21")
