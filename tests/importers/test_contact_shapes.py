"""Contact shapes taken from CAD faces: ``shape = [{ face = [x, y, z] }, ...]`` in a model file.

The reference is the CAD the sample was built from (samples/validation/make_geometry.py): the post
is a cylinder of radius 10 mm, 20 mm high, standing on z = 0 at (120, 80) mm; the bar is a box
x −10..200, y −10..10, z 0..10 mm in its frame, at the origin.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.errors import ModelFileError  # noqa: E402
from cadmotion.importers.modelfile import read_model_file  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "validation"


def _model(tmp_path, contact):
    text = (SAMPLES / "collide.cadmotion.toml").read_text().replace('step = "collide.step"',
                                                                    f'step = "{SAMPLES / "collide.step"}"')
    path = tmp_path / "collide_contact.cadmotion.toml"
    path.write_text(text + "\n[[contacts]]\n" + contact + "\n")
    return path


def test_a_pins_cylinder_and_a_bars_flat_side_become_their_exact_primitives(tmp_path):
    spec = read_model_file(_model(tmp_path, 'name = "hit"\nparts = ["post", "bar"]\n'
                                            'shape = [{ face = [120, 69, 12] }, { face = [100, 11, 5] }]'))
    [contact] = spec.contacts
    (post_kind, post), (bar_kind, bar) = contact.shapes
    assert post_kind == "cylinder"
    radius, height, centre, axis = post[0], post[1], np.array(post[2:5]), np.array(post[5:8])
    assert (radius, height) == pytest.approx((0.010, 0.020), abs=1e-12)
    assert np.allclose(centre, [0, 0, 0.010], atol=1e-12) and np.allclose(np.abs(axis), [0, 0, 1], atol=1e-12)
    assert bar_kind == "plane"
    point, normal = np.array(bar[:3]), np.array(bar[3:])
    assert np.allclose(point, [0.100, 0.010, 0.005], atol=1e-12)   # the face's point nearest the given one
    assert np.allclose(normal, [0, 1, 0], atol=1e-12)               # out of the bar's material


def test_the_post_top_is_a_plane_facing_up():
    from cadmotion.importers.contact_shapes import primitive_near

    spec = read_model_file(SAMPLES / "collide.cadmotion.toml")
    post = next(p for p in spec.parts if p.name == "post")
    kind, plane = primitive_near(post, [0.121, 0.080, 0.021])
    assert kind == "plane"
    assert np.allclose(plane["point"], [0.001, 0, 0.020], atol=1e-12) and np.allclose(plane["normal"], [0, 0, 1])


def test_a_tessellation_with_too_many_points_is_refused_naming_the_part(tmp_path, monkeypatch):
    from cadmotion.importers import contact_shapes

    monkeypatch.setattr(contact_shapes, "MAX_MESH_POINTS", 100)
    with pytest.raises(ModelFileError) as err:
        read_model_file(_model(tmp_path, 'name = "c"\nparts = ["post", "bar"]\nshape = [{ mesh = 0.01 }, { plane = {} }]'))
    text = str(err.value)
    assert all(w in text for w in ("'c'", "'post'", "(at most 100)", "larger `mesh` deflection")), text


def test_a_mesh_shape_is_the_vertices_of_the_parts_tessellation_on_its_surface(tmp_path):
    """The post (a cylinder R 10 mm, 20 mm high, its frame at its base centre) tessellated at 0.1 mm:
    every vertex on its side (r = R) or its end caps (z = 0 or 20 mm), both caps' rims present, and
    the side sampled finely enough that no gap between neighbours on the rim exceeds the deflection's chord."""
    spec = read_model_file(_model(tmp_path, 'name = "c"\nparts = ["post", "bar"]\n'
                                            'shape = [{ mesh = 0.1 }, { face = [100, 11, 5] }]'))
    kind, numbers = spec.contacts[0].shapes[0]
    assert kind == "points"
    p = np.reshape(numbers, (-1, 3))
    r = np.hypot(p[:, 0], p[:, 1])
    on_side = np.abs(r - 0.010) < 1e-9
    on_caps = (np.abs(p[:, 2]) < 1e-9) | (np.abs(p[:, 2] - 0.020) < 1e-9)
    assert np.all(on_side | (on_caps & (r <= 0.010 + 1e-9)))
    for z in (0.0, 0.020):
        rim = np.sort(np.arctan2(p[on_side & (np.abs(p[:, 2] - z) < 1e-9), 1], p[on_side & (np.abs(p[:, 2] - z) < 1e-9), 0]))
        assert len(rim) >= 8
        step = np.max(np.diff(np.r_[rim, rim[0] + 2 * np.pi]))
        assert 0.010 * (1 - np.cos(step / 2)) <= 0.1e-3 + 1e-12  # the chord's sag is within the deflection


def test_a_hole_is_a_bore():
    """The Geneva wheel's bore (R 4 mm at its axis, z): a cylinder with its material outside."""
    from cadmotion.importers.contact_shapes import primitive_near

    spec = read_model_file(SAMPLES.parent / "geneva/geneva.cadmotion.toml")
    kind, bore = primitive_near(next(p for p in spec.parts if p.name == "wheel"), [0.0028284, 0.0028284, 0.005])
    assert kind == "cylinder" and bore["inside"] is True
    assert bore["radius"] == pytest.approx(0.004, abs=1e-12)
    assert np.allclose(np.abs(bore["axis"]), [0, 0, 1], atol=1e-12)


@pytest.mark.parametrize("sample, part, near, words", [
    ("cam/cam_follower.cadmotion.toml", "cam", [0.045, 0.0, 0.005], ["not a plane, sphere or cylinder"]),
])
def test_a_free_form_face_is_refused_naming_the_part(sample, part, near, words):
    """The cam's outline is a B-spline."""
    from cadmotion.errors import CadImportError
    from cadmotion.importers.contact_shapes import primitive_near

    spec = read_model_file(SAMPLES.parent / sample)
    with pytest.raises(CadImportError) as err:
        primitive_near(next(p for p in spec.parts if p.name == part), near)
    text = str(err.value)
    assert repr(part) in text and all(w in text for w in words), text


@pytest.mark.parametrize("contact, words", [
    ('name = "c"\npairs = "all"\nshape = { post = { face = [120, 69, 12] }, bar = { face = [100, 11, 5] } }',
     ["`face` names one part's face", "pattern"]),
    ('name = "c"\nparts = ["post", "bar"]\nshape = [{ face = [120, 69, 12] }, { face = [100, 11, 5], sphere = 1 }]',
     ["unknown key", "sphere"]),
    ('name = "c"\nparts = ["post", "bar"]\nshape = [{ mesh = 0 }, { face = [100, 11, 5] }]', ["`mesh`", "positive"]),
    ('name = "c"\nparts = ["post", "bar"]\nshape = [{ mesh = 1 }, { mesh = 1 }]',
     ["mesh points – mesh points", "not built", "a plane, a sphere, a box or a cylinder"]),
    ('name = "c"\nparts = ["post", "bar"]\nshape = [{ mesh = 1e-5 }, { plane = {} }]',
     ["'post'", "at least 1e-07 m"]),
    ('name = "c"\npairs = "all"\nshape = { post = { mesh = 1 }, bar = { plane = {} } }', ["`mesh` names one part's"]),
])
def test_face_references_that_cannot_stand_are_refused_naming_the_contact(tmp_path, contact, words):
    with pytest.raises(ModelFileError) as err:
        read_model_file(_model(tmp_path, contact))
    text = str(err.value)
    assert "'c'" in text and all(w in text for w in words), text
