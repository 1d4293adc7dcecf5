"""The compiled dynamics' Model and Data (issue 18 item 1): every packed array named, shaped and documented
in kernel/dynamics/layout.py, a model's constants packed once (PackedModel), a run's mutable arrays apart
(PackedData), the shapes held to the layout when a model is packed."""

from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import _tree_kernels, layout
from cadmotion.kernel.dynamics.packed import check_shapes, library_constants, make_data, pack, zeros

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LAYOUTS = {"COMMON": layout.COMMON, "GROUP": layout.GROUP, "TREE": _tree_kernels.TREE}
TREE_SIZES = ("nj", "nz", "mc", "ny", "nw6", "nwf", "nwv", "nwm", "nwc", "nwq", "nwmb")


@pytest.mark.parametrize("which", sorted(LAYOUTS))
def test_every_packed_array_has_a_kind_a_shape_of_known_sizes_and_a_meaning(which):
    fields = LAYOUTS[which]
    names = [f.name for f in fields]
    assert len(set(names)) == len(names)
    constants = dict(library_constants(), W3_SIZE=_tree_kernels.W3_SIZE)
    for f in fields:
        assert f.kind in layout.KINDS, f
        assert f.doc.strip(), f"{f.name} has no meaning"
        assert 1 <= f.ndim <= 3, f
        for dim in f.shape:
            known = (isinstance(dim, int) or dim in layout.MODEL_SIZES or dim in constants or dim in TREE_SIZES
                     or dim.startswith("n_") or (which == "GROUP" and dim in ("n", "neq")))
            assert known, f"{f.name}: size {dim!r}"


def test_the_tree_arrays_do_not_reuse_a_name_of_the_common_ones():
    assert not {f.name for f in layout.COMMON} & {f.name for f in _tree_kernels.TREE}


def _springs(n, k_rows):
    fields = [f for f in layout.COMMON if f.name.startswith("sp_")]
    arrays = {f.name: np.zeros((n,) + tuple(d for d in f.shape[1:])) for f in fields}
    arrays["sp_k"] = np.zeros(k_rows)
    return fields, arrays


def test_an_array_whose_rows_differ_from_its_elements_is_refused_naming_it_and_the_count():
    fields, arrays = _springs(2, 2)
    check_shapes(fields, arrays, {}, {})
    fields, arrays = _springs(2, 3)
    with pytest.raises(ValueError, match=r"'sp_k' has shape \(3,\).*n_spring = 2 \(from sp_ia\)"):
        check_shapes(fields, arrays, {}, {})


def test_an_array_of_the_wrong_model_size_or_dimension_is_refused():
    mass = next(f for f in layout.COMMON if f.name == "mass")
    with pytest.raises(ValueError, match=r"'mass'.*nmov = 3 \(from the model\)"):
        check_shapes([mass], {"mass": np.zeros(2)}, {"nmov": 3}, {})
    with pytest.raises(ValueError, match=r"'mass' has shape \(3, 1\).*declares \('nmov',\)"):
        check_shapes([mass], {"mass": np.zeros((3, 1))}, {"nmov": 3}, {})


def test_an_element_type_the_model_has_not_is_empty_with_its_declared_columns():
    bushing_rotations = next(f for f in layout.COMMON if f.name == "bu_Ra")
    assert zeros(bushing_rotations, {}, {}).shape == (0, 3, 3)
    workspace = next(f for f in layout.COMMON if f.name == "Jc")
    assert zeros(workspace, {"m": 4, "ns": 2}, {}).shape == (4, 2, 6)


def test_the_model_holds_constants_read_only_and_each_data_its_own_mutable_arrays():
    model = pack([("k", "f", np.array([1.0, 2.0])), ("ids", "i", np.array([[3, 4, 5]])),
                  ("ref", "d", np.array([0.5])), ("work", "w", np.zeros((2, 2)))])
    np.testing.assert_array_equal(model.array("k"), [1.0, 2.0])
    np.testing.assert_array_equal(model.array("ids"), [[3, 4, 5]])
    with pytest.raises(ValueError):
        model.array("k")[0] = 9.0
    with pytest.raises(KeyError, match="data"):
        model.array("ref")
    first, second = make_data(model), make_data(model)
    np.testing.assert_array_equal(first.views["ref"], [0.5])  # starts from the packed value
    first.views["ref"][0] = 7.0
    first.views["work"][1, 1] = 3.0
    assert first.dd[0] == 7.0 and first.ws[3] == 3.0  # the views write the flat arrays
    assert second.views["ref"][0] == 0.5 and not second.ws.any()  # another run's data is untouched
    snap = first.snapshot()
    first.views["ref"][0] = -1.0
    first.restore(snap)
    assert first.views["ref"][0] == 7.0


def _fast(path):
    from cadmotion.kernel.dynamics import fast
    from cadmotion.kernel.dynamics.forward import prepare

    if not fast.available():
        pytest.skip("the compiled library needs numba")
    dyn, q0, v0, angles, refs = prepare(compile_model(load(path)))
    return fast.FastRHS(dyn, angles, refs), dyn, q0


def test_a_sample_packs_its_masses_forces_and_workspace_in_the_declared_shapes():
    rhs, dyn, _ = _fast(SAMPLES / "vehicles" / "van.cadmotion.toml")
    model = rhs.packed_model
    np.testing.assert_array_equal(model.array("mass"), dyn.mass.body_mass)
    kt = model.array("bu_Kt")
    np.testing.assert_array_equal(kt, np.broadcast_to(dyn.forces.bushing["Kt"], kt.shape))
    assert model.shapes[model.index["sp_da"]] == (len(dyn.forces.springs["ia"]), 3)
    assert model.shapes[model.index["bl_Ri"]] == (0, 3, 3)  # no ball-joint springs in the van
    assert model.shapes[model.index["Lb"]] == (rhs.m, rhs.bw + 1)


def test_the_right_hand_side_is_a_function_of_the_model_and_a_data():
    """The compiled evaluation reads the model's constants and writes only the data it is given: a second
    Data of the same Model gives the same ẏ, and the first one's workspace is left as it was."""
    rhs, dyn, q0 = _fast(SAMPLES / "dynamics" / "double_pendulum.cadmotion.toml")
    y = np.concatenate([q0, np.zeros(dyn.nv + 1)])
    first = rhs(0.0, y).copy()
    ws = rhs.ws.copy()
    other = make_data(rhs.packed_model)
    other.dd[:] = rhs.dd
    out, ok = rhs.rhs_fn(0.0, y, rhs.df, rhs.di, other.dd, other.ws)
    assert ok
    np.testing.assert_array_equal(out, first)
    np.testing.assert_array_equal(rhs.ws, ws)
