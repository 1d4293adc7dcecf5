"""Plots: what is drawn is the motion's data, selections resolve by name, files are valid."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from cadmotion.errors import OutputError
from cadmotion.plugin.writers import write_outputs
from cadmotion.plugin.writers.plots import MAX_DEFAULT_PARTS, make_figure, select

try:
    from .test_writers_motions import A, OMEGA, carousel, turntable
except ImportError:
    from test_writers_motions import A, OMEGA, carousel, turntable


@pytest.fixture(scope="module")
def motion():
    return turntable(nt=41, with_shapes=False)


def lines(ax):
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_default_selection_is_the_moving_parts_and_joints(motion):
    parts, coords = select(motion)
    assert parts == ["crank", "slider"]
    assert [c.column for c in coords] == ["crank_pivot.angle", "slide.disp"]
    assert len(select(carousel(2))[0]) == MAX_DEFAULT_PARTS


def test_default_selection_leaves_out_round_off_and_takes_what_moves_most(motion):
    """A part that 'moves' by 1e-15 m is still; of many moving parts the default takes the
    ones that travel most (a turn of 1 rad counts as much as a move of one model size)."""
    import copy

    m = copy.deepcopy(motion)
    b = m.part_index("base")
    assert np.all(m.position[:, b] == m.position[0, b])
    m.position[:, b, 0] += 1e-15 * np.sin(np.arange(m.nt))          # round-off jitter
    m.quaternion[:, b, 3] += 1e-16 * np.cos(np.arange(m.nt))
    assert select(m)[0] == ["crank", "slider"]
    many = carousel(2)                                    # 100 parts, all turning alike
    grow = 1.0 + 0.1 * np.arange(1, 8)                    # seven move further, p006 most
    many.position[1:, :7, :2] *= grow[None, :, None]
    parts, _ = select(many)
    assert parts == many.parts[1:7]                       # the six that travel most, in model order


def test_selection_by_part_joint_and_column(motion):
    parts, coords = select(motion, "slider, crank_pivot,slide.disp")
    assert parts == ["slider"]
    assert [c.column for c in coords] == ["crank_pivot.angle", "slide.disp"]


def test_unknown_name_lists_what_can_be_plotted(motion):
    with pytest.raises(OutputError) as err:
        select(motion, "crank,rod")
    assert "'rod'" in str(err.value) and "slider" in str(err.value) and "crank_pivot" in str(err.value)


def test_axes_show_position_velocity_acceleration_with_units(motion):
    fig = make_figure(motion, "slider")
    axes = fig.get_axes()
    assert [ax.get_ylabel() for ax in axes] == ["position (m)", "velocity (m/s)", "acceleration (m/s²)"]
    assert axes[-1].get_xlabel() == "time (s)"
    t = motion.time
    th = OMEGA * t
    assert np.allclose(lines(axes[0])["slider x"].get_ydata(), 0.2 + A * np.sin(th))
    assert np.allclose(lines(axes[1])["slider x"].get_ydata(), A * OMEGA * np.cos(th))
    assert np.allclose(lines(axes[2])["slider x"].get_ydata(), -A * OMEGA**2 * np.sin(th))
    assert {"slider x", "slider y", "slider z"} <= set(lines(axes[0]))


def test_rotating_parts_add_angular_axes(motion):
    labels = [ax.get_ylabel() for ax in make_figure(motion, "crank").get_axes()]
    assert labels[3:] == ["angular velocity (rad/s)", "angular accel. (rad/s²)"]


def test_joint_coordinates_are_plotted_with_their_rates(motion):
    axes = make_figure(motion, "crank_pivot").get_axes()
    assert [ax.get_ylabel() for ax in axes] == ["angle (rad)", "angle rate (rad/s)"]
    assert np.allclose(lines(axes[0])["crank_pivot.angle"].get_ydata(), OMEGA * motion.time)
    assert np.allclose(lines(axes[1])["crank_pivot.angle"].get_ydata(), OMEGA)


def test_partial_run_is_named_in_the_title():
    m = turntable(nt=5, with_shapes=False, complete=False)
    assert "partial run" in make_figure(m)._suptitle.get_text()


def test_png_and_svg_files(tmp_path, motion):
    png, svg = write_outputs(motion, [tmp_path / "p.png", tmp_path / "p.svg"], plot="slider")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert width > 600 and height > 400
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
