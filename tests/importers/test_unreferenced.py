"""`unreferenced_parts`: what happens to the STEP parts that no joint, driver or force names.

On the nested AS1 assembly (plate; two L-bracket sub-assemblies each with three nut-bolt
sub-assemblies; a rod sub-assembly): the first L-bracket turns on a hinge to the plate.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.errors import ModelFileError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model, kinematics, mobility  # noqa: E402

AS1 = Path(__file__).resolve().parents[3] / "shared" / "data" / "step-as1" / "as1-oc-214.stp"
pytestmark = pytest.mark.skipif(not AS1.is_file(), reason="../shared/data not present")

BRACKET_1 = {"l-bracket_1", "bolt_1", "nut_3", "bolt_1_2", "nut_3_2", "bolt_1_3", "nut_3_3"}


def _model(policy=None, anchors=("l-bracket_1",)):
    data = {
        "units": "m",
        "step": str(AS1),
        "parts": {"plate_1": {"fixed": True}},
        "joints": [{"name": "hinge", "type": "revolute", "parts": ["plate_1", "l-bracket_1"],
                    "origin": [0.005, 0.125, 0.02], "axis": [1, 0, 0]}],
        "drivers": [{"joint": "hinge", "expression": "0.5*t"}],
    }
    if "bolt_1" in anchors:
        data["joints"].append({"name": "bolt", "type": "fixed", "parts": ["l-bracket_1", "bolt_1"],
                               "origin": [0.025, 0.075, 0.033], "axis": [0, 0, 1]})
    if policy is not None:
        data["unreferenced_parts"] = policy
    return parse_model(data, source="as1 (test)")


def _relative(motion, a, b, t):
    return np.linalg.inv(motion.pose(a, t)) @ motion.pose(b, t)


def test_weld_is_the_default_with_step_and_follows_the_sub_assembly():
    spec = _model()
    fixed = {p.name for p in spec.parts if p.fixed}
    welds = {j.parts[1]: j.parts[0] for j in spec.joints if j.name.startswith("weld ")}
    # the bracket's own nuts and bolts (two levels down) go with it; everything else stays put
    assert welds == {name: "l-bracket_1" for name in BRACKET_1 - {"l-bracket_1"}}
    assert fixed == {p.name for p in spec.parts} - BRACKET_1
    model = compile_model(spec)
    assert mobility(model).dof == 1
    motion = kinematics(model, t_end=1.0, steps=10)
    assert motion.complete
    turned = motion.pose("l-bracket_1", 1.0)[:3, :3] @ motion.pose("l-bracket_1", 0.0)[:3, :3].T
    assert np.isclose(np.arccos((np.trace(turned) - 1) / 2), 0.5, atol=1e-9)
    for name in BRACKET_1 - {"l-bracket_1"}:  # rigidly carried: the same relative pose throughout
        assert np.allclose(_relative(motion, "l-bracket_1", name, 0.0), _relative(motion, "l-bracket_1", name, 1.0),
                           atol=1e-9), name
    assert np.allclose(motion.pose("bolt_1_4", 1.0), motion.pose("bolt_1_4", 0.0))


def test_innermost_sub_assembly_first_and_the_nearest_part_when_there_are_several():
    """With bolt_1 also jointed, the L-bracket sub-assembly holds two used parts. nut_3 is in
    bolt_1's own nut-bolt set. The second set (bolt_1_2 + nut_3_2) moves as one piece, with
    the bracket its bolt head sits on (distance 0; bolt_1 is 11 mm away), although its nut
    alone is nearer bolt_1 (8.7 mm) than the bracket (20 mm; distances measured with OCP)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = _model(anchors=("l-bracket_1", "bolt_1"))
    welds = {j.parts[1]: j.parts[0] for j in spec.joints if j.name.startswith("weld ")}
    assert welds["nut_3"] == "bolt_1"
    assert welds["nut_3_2"] == welds["bolt_1_2"] == "l-bracket_1"
    assert welds["nut_3_3"] == welds["bolt_1_3"] == "l-bracket_1"
    assert any("nearest" in str(w.message) and "nut-bolt-assembly_2 -> l-bracket_1" in str(w.message)
               for w in caught)


def test_fix_report_and_free():
    fixed = _model("fix")
    assert not any(j.name.startswith("weld ") for j in fixed.joints)
    assert {p.name for p in fixed.parts if not p.fixed} == {"l-bracket_1"}
    with pytest.raises(ModelFileError) as info:
        _model("report")
    message = str(info.value)
    assert "unreferenced_parts" in message and "16 part(s)" in message and "nut_3_2" in message
    free = compile_model(_model("free"))
    assert mobility(free).dof == 1 + 6 * 16


def test_an_unknown_choice_is_refused():
    with pytest.raises(ModelFileError, match="unknown choice 'glue'"):
        _model("glue")


def test_models_without_step_keep_their_free_bodies():
    spec = parse_model({"parts": {"ground": {"fixed": True}, "ball": {"mass": 1.0, "inertia": [1e-3] * 3}}})
    assert not spec.joints and not spec.part("ball").fixed
