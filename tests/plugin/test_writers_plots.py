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


def _in_mm(motion):
    import copy
    from dataclasses import replace

    m = copy.copy(motion)
    m.spec = replace(motion.spec, settings=(("length_unit", "mm"),))
    return m


def test_a_model_in_mm_is_plotted_in_mm(motion):
    axes = make_figure(_in_mm(motion), "slider,slide").get_axes()
    assert [ax.get_ylabel() for ax in axes] == ["position (mm)", "velocity (mm/s)", "acceleration (mm/s²)",
                                                "displacement (mm)", "displacement rate (mm/s)"]
    th = OMEGA * motion.time
    assert np.allclose(lines(axes[0])["slider x"].get_ydata(), 1e3 * (0.2 + A * np.sin(th)))
    assert np.allclose(lines(axes[1])["slider x"].get_ydata(), 1e3 * A * OMEGA * np.cos(th))


def test_the_model_files_units_reach_the_plot(tmp_path):
    from pathlib import Path

    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics

    sample = Path(__file__).resolve().parents[2] / "samples" / "gripper" / "gripper.cadmotion.toml"
    text = sample.read_text()
    assert 'units = "mm"' in text
    model = tmp_path / "link.cadmotion.toml"
    model.write_text('units = "mm"\n[parts.base]\nfixed = true\n[parts.arm]\nposition = [0, 0, 0]\n'
                     '[[joints]]\nname = "pivot"\ntype = "revolute"\nparts = ["base", "arm"]\n'
                     'origin = [100, 0, 0]\naxis = [0, 0, 1]\n'
                     '[[drivers]]\njoint = "pivot"\nexpression = "pi/2*t"\n')
    m = kinematics(compile_model(load(model)), t_end=1.0, steps=4)
    ax = make_figure(m, "arm").get_axes()[0]
    assert ax.get_ylabel() == "position (mm)"
    # the arm's origin turns a quarter circle of radius 100 mm about (100, 0)
    assert np.allclose(lines(ax)["arm x"].get_ydata()[[0, -1]], [0.0, 100.0], atol=1e-6)
    assert np.allclose(lines(ax)["arm y"].get_ydata()[[0, -1]], [0.0, -100.0], atol=1e-6)


def test_a_long_title_wraps_inside_the_figure_and_is_not_cut(motion):
    import copy

    m = copy.copy(motion)
    m.complete, m.message = False, "lock-up: " + " ".join(f"joint_{k} reached its limit" for k in range(12))
    fig = make_figure(m, "slider")
    fig.canvas.draw()
    title = fig._suptitle
    box, page = title.get_window_extent(), fig.bbox
    assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 <= box.y0 and box.y1 <= page.y1 + 1
    assert m.message in title.get_text().replace("\n", " ")          # all of it, wrapped at spaces


def test_non_ascii_part_names_are_drawn_as_text(motion):
    import copy
    import warnings

    m = copy.copy(motion)
    m.parts = ["base", "Peça ø3 – Kurbel", "slider"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # a missing glyph warns in matplotlib
        from cadmotion.plugin.writers.plots import svg_text

        svg = svg_text(m, "Peça ø3 – Kurbel")
    assert "Peça ø3 – Kurbel x" in svg
