"""Specification of the STEP assembly reader and of geometry references.

Expected values come from outside the reader: closed-form mass properties of boxes and
cylinders, placements composed by hand, colours as written in the file, instance counts
from shared/data/SOURCES.md, and an independent flat read of the same file through
cadquery's STEPControl_Reader path.
"""

import math
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from cadmotion.errors import CadImportError  # noqa: E402
from cadmotion.importers.geometry_refs import (  # noqa: E402
    GeometryRefWarning,
    find_geometry,
    resolve_axis,
    world_shape,
)
from cadmotion.importers.materials import density_of, known_materials  # noqa: E402
from cadmotion.importers.step import StepImportWarning, read_step  # noqa: E402
from cadmotion.kernel.spec import PartSpec  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared/data beside the repo
GRIPPER = DATA / "step-gripper" / "gripper.step"
BOX = DATA / "step-hinged-box" / "AutMobRos_Box_Komplett.stp"
PUMP = DATA / "step-rotor-pump" / "trj6_pm4-ec-203.stp"
AS1 = DATA / "step-as1" / "as1-oc-214.stp"
CHRONO = DATA / "step-chrono-2body" / "assembly.stp"

needs_data = pytest.mark.skipif(not DATA.exists(), reason="shared test data not available")


# ----------------------------------------------------------------------------- helpers


def rotation_matrix(q):
    """Rotation matrix of a unit quaternion (w, x, y, z) (textbook formula)."""
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def box_inertia(m, a, b, c):
    return np.diag([m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12])


def cylinder_inertia(m, r, h):
    """Solid cylinder, axis z, about its centre of mass."""
    ixx = m * (3 * r * r + h * h) / 12
    return np.diag([ixx, ixx, m * r * r / 2])


def rel_close(actual, expected, rtol=1e-9, scale=None):
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    scale = np.max(np.abs(expected)) if scale is None else scale
    return np.max(np.abs(actual - expected)) <= rtol * scale


def assert_physical(part):
    """Mass positive; inertia symmetric, positive definite, principal moments obey I1+I2>=I3."""
    assert part.mass is not None and part.mass > 0, part.name
    inertia = np.array(part.inertia)
    assert np.allclose(inertia, inertia.T, rtol=0, atol=1e-12 * np.abs(inertia).max())
    moments = np.sort(np.linalg.eigvalsh(inertia))
    assert moments[0] > 0, (part.name, moments)
    assert moments[0] + moments[1] >= moments[2] * (1 - 1e-9), (part.name, moments)


def make_step_from_xcaf(path, build):
    """Write a STEP file (mm) from an XCAF document filled by ``build(shape_tool, color_tool)``."""
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPCAFControl import STEPCAFControl_Writer
    from OCP.STEPControl import STEPControl_AsIs
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDocStd import TDocStd_Document
    from OCP.XCAFApp import XCAFApp_Application
    from OCP.XCAFDoc import XCAFDoc_DocumentTool

    doc = TDocStd_Document(TCollection_ExtendedString("XmlXCAF"))
    XCAFApp_Application.GetApplication_s().InitDocument(doc)
    XCAFDoc_DocumentTool.SetLengthUnit_s(doc, 0.001)  # the document is in millimetres
    shape_tool = XCAFDoc_DocumentTool.ShapeTool_s(doc.Main())
    color_tool = XCAFDoc_DocumentTool.ColorTool_s(doc.Main())
    build(shape_tool, color_tool)
    shape_tool.UpdateAssemblies()
    writer = STEPCAFControl_Writer()
    writer.SetColorMode(True)
    writer.SetNameMode(True)
    assert writer.Transfer(doc, STEPControl_AsIs)
    assert writer.Write(str(path)) == IFSelect_RetDone
    return path


def xcaf_location(translation=(0.0, 0.0, 0.0), axis=None, degrees=0.0):
    from OCP.gp import gp_Ax1, gp_Dir, gp_Pnt, gp_Trsf, gp_Vec
    from OCP.TopLoc import TopLoc_Location

    rot = gp_Trsf()
    if axis is not None:
        rot.SetRotation(gp_Ax1(gp_Pnt(0, 0, 0), gp_Dir(*axis)), math.radians(degrees))
    move = gp_Trsf()
    move.SetTranslation(gp_Vec(*translation))
    return TopLoc_Location(move.Multiplied(rot))


def set_name(label, text):
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDataStd import TDataStd_Name

    TDataStd_Name.Set_s(label, TCollection_ExtendedString(text))


# ----------------------------------------------------------------------------- real files


@pytest.fixture(scope="module")
def gripper():
    t0 = time.perf_counter()
    asm = read_step(GRIPPER)
    return asm, time.perf_counter() - t0


@pytest.fixture(scope="module")
def box():
    return read_step(BOX)


@pytest.fixture(scope="module")
def pump():
    return read_step(PUMP)


@pytest.fixture(scope="module")
def as1():
    return read_step(AS1)


@pytest.fixture(scope="module")
def chrono():
    return read_step(CHRONO)


@needs_data
class TestRealFiles:
    def test_gripper_has_108_instances_of_23_parts_sharing_shapes(self, gripper):
        asm, _ = gripper
        assert len(asm.parts) == 108
        assert len(set(asm.products.values())) == 23
        assert len({id(p.shape) for p in asm.parts}) == 23  # one shape object per product
        assert len({p.name for p in asm.parts}) == 108
        assert len({p.path for p in asm.parts}) == 108
        product_names = set(asm.product_names.values())
        assert {f"Laserteil {i}" for i in range(1, 10)} <= product_names
        assert {"Druckstange 1", "Druckstange 2"} <= product_names
        assert asm.unit == "mm" and asm.unit_scale == 0.001

    def test_gripper_two_servo_subassemblies_appear_in_paths(self, gripper):
        asm, _ = gripper
        servo = "SG90 - Micro Servo 9g - Tower Pro v2"
        prefixes = {p.path.split("/")[1] for p in asm.parts if servo in p.path}
        assert len(prefixes) == 2

    def test_gripper_reads_in_a_few_seconds(self, gripper):
        _, seconds = gripper
        assert seconds < 15.0, f"gripper took {seconds:.1f} s"

    def test_hinged_box_creo_ap203(self, box):
        assert len(box.parts) == 6
        counts = Counter(box.product_names[box.products[p.name]] for p in box.parts)
        assert counts == {"KOFFER_T1_V2": 1, "KOFFER_T2": 1, "LAGER": 2, "VERSCHRAUBUNG": 2}
        assert [p.name for p in box.parts if p.name.startswith("LAGER")] == ["LAGER", "LAGER_2"]
        lager = [p for p in box.parts if p.name.startswith("LAGER")]
        assert lager[0].shape is lager[1].shape and lager[0].mass == lager[1].mass
        assert lager[0].position != lager[1].position

    def test_rotor_pump_nested_with_18_shared_spheres(self, pump):
        assert len(pump.parts) == 32
        spheres = [p for p in pump.parts if pump.product_names[pump.products[p.name]] == "Sphere"]
        assert len(spheres) == 18 and len({id(p.shape) for p in spheres}) == 1
        assert len(set(pump.products.values())) == 13
        # the "-> " prefix of CAx-IF instance names is dropped
        assert pump.part("Impeller").path == "Rotor Assembly/Impeller"
        assert pump.part("Sphere 1").path == "Rotor Assembly/Bearing/9 Spheres 1/Sphere 1"

    def test_as1_nested_instances(self, as1):
        assert len(as1.parts) == 18
        counts = Counter(as1.product_names[as1.products[p.name]] for p in as1.parts)
        assert counts == {"plate": 1, "l-bracket": 2, "rod": 1, "bolt": 6, "nut": 8}
        assert as1.part("rod_1").path == "rod-assembly_1/rod_1"
        bolts = [p for p in as1.parts if as1.products[p.name] == as1.products["bolt_1"]]
        assert [b.name for b in bolts] == ["bolt_1"] + [f"bolt_1_{k}" for k in range(2, 7)]
        assert all(len(b.path.split("/")) == 3 for b in bolts)
        assert as1.part("l-bracket-assembly_2/nut-bolt-assembly_3/bolt_1").name == "bolt_1_6"
        assert as1.unit == "mm"

    def test_chrono_mapped_item_assembly_yields_two_bodies(self, chrono):
        assert [p.name for p in chrono.parts] == ["body1", "body2"]
        assert chrono.unit == "m"

    def test_every_real_part_is_physical(self, gripper, box, pump, as1, chrono):
        for asm in (gripper[0], box, pump, as1, chrono):
            assert asm.warnings == ()
            for part in asm.parts:
                assert_physical(part)
                assert abs(np.linalg.norm(part.orientation) - 1) < 1e-12

    def test_as1_placements_agree_with_an_independent_flat_read(self, as1):
        """Each instance's centroid and inertia, moved to the assembly frame, match one
        solid of the same file read flat by STEPControl_Reader (cadquery, mm)."""
        from OCP.BRepGProp import BRepGProp
        from OCP.GProp import GProp_GProps

        flat = []
        for solid in cq.importers.importStep(str(AS1)).solids().vals():
            props = GProp_GProps()
            BRepGProp.VolumeProperties_s(solid.wrapped, props)
            c = props.CentreOfMass()
            m = props.MatrixOfInertia()
            inertia = np.array([[m.Value(i, j) for j in (1, 2, 3)] for i in (1, 2, 3)])
            # mm -> m; density 1000 kg/m^3
            flat.append((props.Mass() * 1e-9 * 1000, np.array([c.X(), c.Y(), c.Z()]) * 1e-3,
                         inertia * 1e-15 * 1000))
        assert len(flat) == len(as1.parts)
        unmatched = list(flat)
        for part in as1.parts:
            rot = rotation_matrix(part.orientation)
            com_w = rot @ np.array(part.com) + np.array(part.position)
            inertia_w = rot @ np.array(part.inertia) @ rot.T
            k = min(range(len(unmatched)), key=lambda i: np.linalg.norm(unmatched[i][1] - com_w))
            mass, com, inertia = unmatched.pop(k)
            assert np.linalg.norm(com - com_w) < 1e-9, part.name
            assert abs(mass - part.mass) <= 1e-9 * mass, part.name
            assert rel_close(inertia_w, inertia, 1e-8), part.name

    def test_densities_and_materials_scale_mass_and_inertia(self, as1):
        heavy = read_step(AS1, materials={"bolt": "Steel"}, densities={"plate_1": 2700.0})
        for light, dense in zip(as1.parts, heavy.parts):
            product = as1.product_names[as1.products[light.name]]
            ratio = 7.85 if product == "bolt" else 2.7 if light.name == "plate_1" else 1.0
            assert dense.mass == pytest.approx(ratio * light.mass, rel=1e-12)
            assert rel_close(dense.inertia, ratio * np.array(light.inertia), 1e-12)
            assert dense.com == light.com

    def test_load_gives_a_mechanism_of_free_parts(self):
        from cadmotion.importers import load

        spec = load(CHRONO)
        assert [p.name for p in spec.parts] == ["body1", "body2"]
        assert spec.joints == () and not any(p.fixed for p in spec.parts)
        assert spec.cad.part("body1") == spec.part("body1")

    def test_reading_leaves_the_global_cascade_unit_alone(self):
        from OCP.Interface import Interface_Static

        before = Interface_Static.CVal_s("xstep.cascade.unit")
        read_step(CHRONO)
        assert Interface_Static.CVal_s("xstep.cascade.unit") == before


# ----------------------------------------------------------------------------- generated files


A, B, C = 0.1, 0.02, 0.01  # box edges, m
R, H = 0.01, 0.05  # cylinder radius and height, m


@pytest.fixture(scope="module")
def cq_step(tmp_path_factory):
    """A cq.Assembly in mm: one box part used twice (same product), one cylinder."""
    box = cq.Workplane().add(cq.Solid.makeBox(100, 20, 10))  # corner at the origin
    pin = cq.Workplane().add(cq.Solid.makeCylinder(10, 50))  # axis z, base at the origin
    assy = cq.Assembly(name="demo")
    assy.add(box, name="link", loc=cq.Location((10, 20, 30)), color=cq.Color(0.2, 0.4, 0.6, 1))
    assy.add(box, name="link2", loc=cq.Location((0, 0, 50), (0, 0, 1), 90),
             color=cq.Color(0.2, 0.4, 0.6, 1))
    assy.add(pin, name="pin", loc=cq.Location((0, 0, 0), (1, 0, 0), 90),
             color=cq.Color(0.9, 0.1, 0.1, 1))
    path = tmp_path_factory.mktemp("cq") / "demo.step"
    assy.export(str(path))
    return path


class TestGeneratedAssembly:
    def test_cq_assembly_names_units_placements_colours(self, cq_step):
        asm = read_step(cq_step)
        assert asm.unit == "mm" and asm.name == "demo"
        assert [p.name for p in asm.parts] == ["link", "link2", "pin"]
        assert [p.path for p in asm.parts] == ["link", "link2", "pin"]
        link, link2, pin = asm.parts
        assert np.allclose(link.position, (0.010, 0.020, 0.030), rtol=0, atol=1e-9)
        assert np.allclose(link.orientation, (1, 0, 0, 0), rtol=0, atol=1e-12)
        assert np.allclose(link2.position, (0, 0, 0.050), rtol=0, atol=1e-9)
        s = math.sqrt(0.5)
        assert np.allclose(link2.orientation, (s, 0, 0, s), rtol=0, atol=1e-12)
        assert np.allclose(pin.orientation, (s, s, 0, 0), rtol=0, atol=1e-12)
        assert np.allclose(link.color, (0.2, 0.4, 0.6), rtol=0, atol=1e-6)
        assert np.allclose(pin.color, (0.9, 0.1, 0.1), rtol=0, atol=1e-6)
        # one product, one shape object
        assert asm.products["link"] == asm.products["link2"] != asm.products["pin"]
        assert link.shape is link2.shape and asm.shape_of("link") is link.shape
        assert asm.instances_of(asm.products["link"]) == ("link", "link2")

    def test_box_and_cylinder_mass_properties_match_closed_forms(self, cq_step):
        rho = 7850.0
        asm = read_step(cq_step, materials={"link": "steel", "link2": "steel", "pin": "ABS"})
        link, pin = asm.part("link"), asm.part("pin")
        m_box = rho * A * B * C
        assert link.mass == pytest.approx(m_box, rel=1e-9)
        assert rel_close(link.com, (A / 2, B / 2, C / 2), 1e-9)
        assert rel_close(link.inertia, box_inertia(m_box, A, B, C), 1e-9)
        m_pin = 1050.0 * math.pi * R * R * H
        assert pin.mass == pytest.approx(m_pin, rel=1e-9)
        assert rel_close(pin.com, (0, 0, H / 2), 1e-9, scale=H / 2)
        assert rel_close(pin.inertia, cylinder_inertia(m_pin, R, H), 1e-9)

    def test_default_density_is_water(self, cq_step):
        link = read_step(cq_step).part("link")
        assert link.mass == pytest.approx(1000.0 * A * B * C, rel=1e-9)

    def test_nested_instances_compose_placements_and_prefer_instance_colour(self, tmp_path):
        """mech -> arm (at (100,200,300) mm, 90 deg about z) -> link x2 (one product):
        link at (10,0,0) mm with its own colour, link at (0,50,0) mm turned 90 deg about x."""
        from OCP.Quantity import Quantity_Color, Quantity_ColorRGBA, Quantity_TOC_sRGB
        from OCP.XCAFDoc import XCAFDoc_ColorSurf

        def build(st, ct):
            link = st.AddShape(cq.Solid.makeBox(100, 20, 10).wrapped, False)
            set_name(link, "link")
            top = st.NewShape()
            set_name(top, "mech")
            arm = st.NewShape()
            set_name(arm, "arm")
            c1 = st.AddComponent(arm, link, xcaf_location((10, 0, 0)))
            set_name(c1, "link")
            c2 = st.AddComponent(arm, link, xcaf_location((0, 50, 0), (1, 0, 0), 90))
            set_name(c2, "link")
            blue = Quantity_ColorRGBA(Quantity_Color(0.2, 0.4, 0.6, Quantity_TOC_sRGB), 1.0)
            ct.SetColor(c1, blue, XCAFDoc_ColorSurf)
            ct.SetColor(link, Quantity_Color(1.0, 0.0, 0.0, Quantity_TOC_sRGB), XCAFDoc_ColorSurf)
            ca = st.AddComponent(top, arm, xcaf_location((100, 200, 300), (0, 0, 1), 90))
            set_name(ca, "arm")

        path = make_step_from_xcaf(tmp_path / "nested.step", build)
        asm = read_step(path)
        first, second = asm.parts
        assert (first.name, first.path) == ("link", "arm/link")
        assert (second.name, second.path) == ("link_2", "arm/link_2")
        # p = p_arm + Rz(90) p_link
        assert np.allclose(first.position, (0.100, 0.210, 0.300), rtol=0, atol=1e-9)
        assert np.allclose(second.position, (0.050, 0.200, 0.300), rtol=0, atol=1e-9)
        s = math.sqrt(0.5)
        assert np.allclose(first.orientation, (s, 0, 0, s), atol=1e-12)
        assert np.allclose(second.orientation, (0.5, 0.5, 0.5, 0.5), atol=1e-12)  # qz90 * qx90
        assert np.allclose(first.color, (0.2, 0.4, 0.6), atol=1e-6)  # instance colour
        assert np.allclose(second.color, (1.0, 0.0, 0.0), atol=1e-6)  # product colour
        assert first.shape is second.shape

    def test_a_part_without_volume_has_no_mass_and_warns(self, tmp_path):
        assy = cq.Assembly(name="mixed")
        assy.add(cq.Workplane().add(cq.Solid.makeBox(10, 10, 10)), name="block")
        assy.add(cq.Workplane().add(cq.Face.makePlane(10, 10)), name="sheet")
        path = tmp_path / "mixed.step"
        assy.export(str(path))
        with pytest.warns(StepImportWarning, match="sheet.*no solid volume"):
            asm = read_step(path)
        assert asm.part("sheet").mass is None and asm.part("sheet").inertia is None
        assert asm.part("block").mass == pytest.approx(1000 * 1e-6, rel=1e-9)


# ----------------------------------------------------------------------------- bad input


class TestBadInput:
    def test_missing_file(self, tmp_path):
        missing = tmp_path / "nope.step"
        with pytest.raises(CadImportError, match="not found") as err:
            read_step(missing)
        assert str(missing) in str(err.value)

    def test_text_file_that_is_not_step(self, tmp_path):
        path = tmp_path / "notes.step"
        path.write_text("these are my notes, not a CAD file\n")
        with pytest.raises(CadImportError, match="not a STEP file") as err:
            read_step(path)
        assert "notes.step" in str(err.value) and "hint" in str(err.value)

    @needs_data
    def test_truncated_file(self, tmp_path):
        data = AS1.read_bytes()
        path = tmp_path / "cut.stp"
        path.write_bytes(data[: int(0.4 * len(data))])
        with pytest.raises(CadImportError, match="truncated") as err:
            read_step(path)
        assert "cut.stp" in str(err.value)

    @needs_data
    def test_cut_file_with_a_forged_ending_has_unresolved_references(self, tmp_path):
        lines = AS1.read_bytes().split(b"\n")
        n = int(0.4 * len(lines))
        while not lines[n - 1].rstrip().endswith(b";"):
            n -= 1
        path = tmp_path / "forged.stp"
        path.write_bytes(b"\n".join(lines[:n]) + b"\nENDSEC;\nEND-ISO-10303-21;\n")
        with pytest.raises(CadImportError, match="incomplete") as err:
            read_step(path)
        assert "forged.stp" in str(err.value)

    def test_garbage_after_a_valid_header(self, tmp_path):
        path = tmp_path / "garbage.step"
        path.write_bytes(b"ISO-10303-21;\nHEADER;\n" + bytes(range(256)) * 20
                         + b"\nEND-ISO-10303-21;\n")
        with pytest.raises(CadImportError, match="garbage.step"):
            read_step(path)

    def test_file_without_solids(self, tmp_path):
        assy = cq.Assembly(name="sheets")
        assy.add(cq.Workplane().add(cq.Face.makePlane(10, 10)), name="sheet")
        path = tmp_path / "sheets.step"
        assy.export(str(path))
        with pytest.raises(CadImportError, match="no solid"):
            read_step(path)

    def test_unknown_material_lists_known_ones(self, cq_step):
        with pytest.raises(CadImportError, match="unobtainium") as err:
            read_step(cq_step, materials={"link": "unobtainium"})
        assert "steel" in str(err.value) and "'link'" in str(err.value)

    def test_density_key_that_names_no_part(self, cq_step):
        with pytest.raises(CadImportError, match="lnik") as err:
            read_step(cq_step, densities={"lnik": 7850})
        assert "link" in str(err.value)

    @pytest.mark.parametrize("rho", [0.0, -1.0, float("nan"), "heavy"])
    def test_density_must_be_positive(self, cq_step, rho):
        with pytest.raises(CadImportError, match="positive"):
            read_step(cq_step, densities={"pin": rho})

    def test_density_and_material_for_the_same_part(self, cq_step):
        with pytest.raises(CadImportError, match="both"):
            read_step(cq_step, densities={"pin": 1000}, materials={"pin": "steel"})


# ----------------------------------------------------------------------------- materials


def test_material_table_is_case_insensitive_with_aliases():
    assert density_of("Steel") == 7850.0
    assert density_of("stainless_steel") == density_of("Stainless Steel") == 8000.0
    assert density_of("aluminum") == density_of("ALUMINIUM") == 2700.0
    assert density_of("acetal") == density_of("POM") == 1410.0
    assert density_of("PA") == density_of("nylon") == 1140.0
    assert {"brass", "copper", "titanium", "abs", "pla", "wood"} <= set(known_materials())


def test_mass_properties_of_a_compound_and_of_an_inverted_solid():
    """Two unit cubes [0,1]^3 and [2,3]x[0,1]^2 (m): com (1.5, .5, .5); parallel axes:
    Ixx = 2/6, Iyy = Izz = 2 (1/6 + 1^2) per unit density. An inside-out cube weighs 1."""
    from cadmotion.importers.massprops import volume_properties

    cubes = cq.Compound.makeCompound(
        [cq.Solid.makeBox(1, 1, 1), cq.Solid.makeBox(1, 1, 1, pnt=cq.Vector(2, 0, 0))]
    ).wrapped
    props = volume_properties(cubes)
    assert props.n_solids == 2 and props.volume == pytest.approx(2.0, rel=1e-12)
    assert rel_close(props.com, (1.5, 0.5, 0.5), 1e-12)
    assert rel_close(props.inertia_per_density, np.diag([1 / 3, 7 / 3, 7 / 3]), 1e-12)
    inverted = volume_properties(cq.Solid.makeBox(1, 1, 1).wrapped.Reversed())
    assert inverted.volume == pytest.approx(1.0, rel=1e-12)
    assert rel_close(inverted.inertia_per_density, np.diag([1 / 6] * 3), 1e-12)


def test_importers_package_does_not_import_ocp():
    code = "import sys, cadmotion.importers; print('OCP' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- geometry refs


@pytest.fixture(scope="module")
def plate_part():
    """A 100 x 40 x 10 mm plate (in metres) centred at the part origin with an 8 mm hole
    along part z through (0.03, 0, z); placed at (1, 2, 3) m, turned 90 deg about x."""
    plate = (cq.Workplane().box(0.1, 0.04, 0.01).faces(">Z").workplane()
             .center(0.03, 0).hole(0.008))
    s = math.sqrt(0.5)
    return PartSpec(name="crank", position=(1.0, 2.0, 3.0), orientation=(s, s, 0.0, 0.0),
                    shape=plate.val().wrapped)


class TestGeometryRefs:
    # Rx(90) maps part (x, y, z) to world (x, -z, y)
    def test_cylinder_axis_in_world(self, plate_part):
        near = np.array([1.031, 2.002, 3.001])
        point, direction = resolve_axis(world_shape(plate_part), "cylinder", near, part="crank")
        assert abs(abs(direction @ np.array([0.0, 1.0, 0.0])) - 1) < 1e-12  # part z -> world -y
        assert np.allclose(point, (1.03, 2.002, 3.0), atol=1e-12)  # foot of near on the axis

    def test_circle_edge_gives_the_rim_centre(self, plate_part):
        ref = find_geometry(world_shape(plate_part), "circle", (1.031, 1.996, 3.0),
                            entity="edge", part="crank")
        assert ref.radius == pytest.approx(0.004, rel=1e-12)
        assert np.allclose(ref.point, (1.03, 2.0 - 0.005, 3.0), atol=1e-12)  # top rim
        assert abs(abs(ref.direction[1]) - 1) < 1e-12

    def test_plane_gives_foot_point_and_outward_normal(self, plate_part):
        point, normal = resolve_axis(world_shape(plate_part), "plane", (1.0, 1.9, 3.01))
        assert np.allclose(normal, (0, -1, 0), atol=1e-12)  # top face (part +z) -> world -y
        assert np.allclose(point, (1.0, 1.995, 3.01), atol=1e-12)

    def test_missing_kind_names_the_part_and_its_kinds(self, plate_part):
        with pytest.raises(CadImportError, match="crank") as err:
            resolve_axis(world_shape(plate_part), "cone", (1, 2, 3), part="crank")
        assert "plane x6" in str(err.value) and "cylinder x1" in str(err.value)

    def test_unknown_kind_and_wrong_entity(self, plate_part):
        with pytest.raises(CadImportError, match="unknown geometry kind"):
            resolve_axis(world_shape(plate_part), "hole", (1, 2, 3), part="crank")
        with pytest.raises(CadImportError, match="not a face kind"):
            resolve_axis(world_shape(plate_part), "circle", (1, 2, 3), entity="face")

    def test_equally_near_faces_with_different_axes_warn(self):
        two_pins = (cq.Workplane().pushPoints([(-0.01, 0), (0.01, 0)]).cylinder(0.01, 0.002))
        with pytest.warns(GeometryRefWarning, match="equally near"):
            find_geometry(two_pins.val().wrapped, "cylinder", (0, 0, 0))

    def test_world_shape_of_a_step_part_sits_at_its_placement(self, cq_step):
        pin = read_step(cq_step).part("pin")  # cylinder r=10 mm along part z, turned about x
        point, direction = resolve_axis(world_shape(pin), "cylinder", (0.0, 0.0, 0.0))
        assert abs(abs(direction[1]) - 1) < 1e-12  # Rx(90): part z -> world -y
        assert np.allclose(point, 0.0, atol=1e-12)


@needs_data
def test_reading_after_a_cadquery_export_in_the_same_process_does_not_crash(tmp_path):
    # OCP 7.9 segfaulted in the name lookup of the Chrono file once cadquery had built an
    # XCAF document; run in a child process so a regression fails the test, not the suite
    import subprocess
    import sys

    script = (
        "import cadquery as cq\n"
        "from cadmotion.importers.step import read_step\n"
        "a = cq.Assembly(name='box'); a.add(cq.Workplane().box(1, 1, 1), name='b')\n"
        f"a.export({str(tmp_path / 'x.step')!r})\n"
        f"print(len(read_step({str(DATA / 'step-chrono-2body' / 'assembly.stp')!r}).parts))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("2")
