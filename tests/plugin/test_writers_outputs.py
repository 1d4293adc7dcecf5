"""write_outputs: format by extension, clear errors, and nothing on disk destroyed."""

import json
import os

import pytest

import cadmotion.plugin.writers.gltf as gltf_mod
from cadmotion.errors import OutputError
from cadmotion.plugin.writers import WRITERS, check_outputs, write_outputs
from cadmotion.plugin.writers.atomic import atomic_write

try:
    from .test_writers_motions import turntable
except ImportError:
    from test_writers_motions import turntable


@pytest.fixture(scope="module")
def motion():
    return turntable(nt=6)


def test_every_known_extension_writes_its_format(tmp_path, motion):
    names = ["m.csv", "m.json", "m.glb", "m.gltf", "m.html", "m.step", "m.stp", "m.png", "m.svg"]
    out = write_outputs(motion, [tmp_path / n for n in names])
    assert out == [tmp_path / n for n in names]
    starts = {".csv": b"t,base.x", ".json": b"{", ".glb": b"glTF", ".gltf": b"{", ".html": b"<!DOCTYPE html>",
              ".step": b"ISO-10303-21", ".stp": b"ISO-10303-21", ".png": b"\x89PNG", ".svg": b"<?xml"}
    for path in out:
        assert path.read_bytes().startswith(starts[path.suffix]), path
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)   # no temporary files left


def test_extension_case_and_a_single_path_are_accepted(tmp_path, motion):
    assert write_outputs(motion, str(tmp_path / "M.CSV")) == [tmp_path / "M.CSV"]


def test_unknown_extension_is_named_with_the_known_ones_and_nothing_is_written(tmp_path, motion):
    with pytest.raises(OutputError) as err:
        write_outputs(motion, [tmp_path / "m.csv", tmp_path / "m.xlsx"])
    text = str(err.value)
    assert "'.xlsx'" in text and all(ext in text for ext in WRITERS)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["missing/m.csv", "afile/m.csv"])
def test_unwritable_folder_is_an_output_error(tmp_path, motion, where):
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(OutputError, match="folder"):
        write_outputs(motion, [tmp_path / where])


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_folder_is_an_output_error(tmp_path, motion):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="not writable"):
            write_outputs(motion, [ro / "m.csv"])
    finally:
        ro.chmod(0o700)


def test_a_failing_writer_leaves_the_old_file_untouched(tmp_path, motion, monkeypatch):
    old = tmp_path / "m.glb"
    old.write_bytes(b"previous result")

    def explode(doc, data):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(gltf_mod, "glb_bytes", explode)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_outputs(motion, [old])
    assert old.read_bytes() == b"previous result"
    assert [p.name for p in tmp_path.iterdir()] == ["m.glb"]


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")
    with pytest.raises(ValueError):
        with atomic_write(target, "w") as f:
            f.write("half")
            raise ValueError
    assert target.read_text() == "old"
    with atomic_write(target, "w") as f:
        f.write("new")
    assert target.read_text() == "new"
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask       # as a plain open() would give


def test_partial_motion_is_written_and_marked(tmp_path, motion):
    cut = motion.truncated(3, "interrupted by the user")
    js, glb = write_outputs(cut, [tmp_path / "m.json", tmp_path / "m.gltf"])
    assert json.loads(js.read_text())["complete"] is False
    asset = json.loads(glb.read_text())["asset"]["extras"]
    assert asset["complete"] is False and asset["message"] == "interrupted by the user"
    assert asset["frames"] == 3


def test_unknown_plot_name_fails_before_writing(tmp_path, motion):
    with pytest.raises(OutputError, match="cannot plot 'rod'"):
        write_outputs(motion, [tmp_path / "m.csv", tmp_path / "m.png"], plot="rod")
    assert list(tmp_path.iterdir()) == []


def test_a_one_frame_run_writes_every_format(tmp_path):
    one = turntable(nt=4).truncated(1, "stopped after the first frame")
    names = ["m.csv", "m.json", "m.glb", "m.html", "m.step", "m.png", "frames/"]
    out = write_outputs(one, [f"{tmp_path}/{n}" for n in names])
    assert [p.name for p in out] == names[:-1] + ["frame_0000.step"]


def test_a_run_without_frames_writes_tables_only(tmp_path):
    empty = turntable(nt=4, with_shapes=False).truncated(0, "failed to assemble")
    csv_path, json_path = write_outputs(empty, [tmp_path / "m.csv", tmp_path / "m.json"])
    assert csv_path.read_text().count("\n") == 1                 # the header
    assert json.loads(json_path.read_text())["time"] == []
    with pytest.raises(OutputError, match="no frames"):
        write_outputs(empty, [tmp_path / "m.glb"])


def test_check_outputs_validates_without_writing(tmp_path):
    jobs = check_outputs([tmp_path / "a.CSV", f"{tmp_path}/frames/", str(tmp_path / "b.stp")])
    assert [k for k, _ in jobs] == [".csv", "frames", ".stp"]
    with pytest.raises(OutputError, match="does not exist"):
        check_outputs(tmp_path / "no" / "such" / "a.glb")
    with pytest.raises(OutputError, match="unknown output format"):
        check_outputs("result")
    assert list(tmp_path.iterdir()) == []
