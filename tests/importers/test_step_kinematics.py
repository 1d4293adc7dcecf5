"""Specification of the ISO 10303-105 (STEP kinematics) reader.

The test files are made here, in ``tmp_path``: a CadQuery assembly is exported to STEP
(AP214, mm) and kinematic entities are appended to its DATA section, written by hand
with the attribute order of OCCT's own readers (``RWStepKinematics_RW*.cxx``: e.g.
REVOLUTE_PAIR = name, item_defined_transformation name, description, transform_item_1,
transform_item_2, joint, t_x, t_y, t_z, r_x, r_y, r_z).  OCCT itself then confirms that
it reads every appended pair as the intended ``StepKinematics_*`` class without errors,
so the files are valid for an independent reader, not only for ours.

Expected values are what was written (frames in mm or inches, angles in degrees),
converted by hand, and closed-form kinematics: the slider of a slider-crank at
x = a cos(phi) + sqrt(b^2 - a^2 sin^2 phi), gears turning at the ratio of their radii
(opposite senses outside, the same sense inside a ring), a rack moving r * theta.
"""

import math
import re
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from cadmotion.errors import CadImportError  # noqa: E402
from cadmotion.importers.step import read_step  # noqa: E402
from cadmotion.importers.step_kinematics import (  # noqa: E402
    StepKinematicsWarning,
    read_step_kinematics,
    read_step_mechanism,
)
from cadmotion.kernel.spec import DriverSpec, MechanismSpec, TimeFunctionSpec  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared/data beside the repo
MM, INCH, DEG = 1e-3, 0.0254, math.pi / 180.0
TOL = 1e-9  # m and rad

FREEDOMS = {  # t_x t_y t_z r_x r_y r_z as ISO 10303-105 fixes them per pair type
    "REVOLUTE_PAIR": "FFFFFT", "PRISMATIC_PAIR": "FFTFFF", "CYLINDRICAL_PAIR": "FFTFFT",
    "SPHERICAL_PAIR": "FFFTTT", "UNIVERSAL_PAIR": "FFFTFT", "PLANAR_PAIR": "TTFFFT",
    "FULLY_CONSTRAINED_PAIR": "FFFFFF", "UNCONSTRAINED_PAIR": "TTTTTT",
}
OCCT_CLASS = {  # entity -> the class OCCT's reader makes of it
    "REVOLUTE_PAIR": "StepKinematics_RevolutePair",
    "REVOLUTE_PAIR_WITH_RANGE": "StepKinematics_RevolutePairWithRange",
    "PRISMATIC_PAIR_WITH_RANGE": "StepKinematics_PrismaticPairWithRange",
    "PRISMATIC_PAIR": "StepKinematics_PrismaticPair",
    "CYLINDRICAL_PAIR_WITH_RANGE": "StepKinematics_CylindricalPairWithRange",
    "SPHERICAL_PAIR": "StepKinematics_SphericalPair",
    "UNIVERSAL_PAIR": "StepKinematics_UniversalPair",
    "PLANAR_PAIR": "StepKinematics_PlanarPair",
    "FULLY_CONSTRAINED_PAIR": "StepKinematics_FullyConstrainedPair",
    "UNCONSTRAINED_PAIR": "StepKinematics_UnconstrainedPair",
    "SCREW_PAIR": "StepKinematics_ScrewPair",
    "GEAR_PAIR": "StepKinematics_GearPair",
    "RACK_AND_PINION_PAIR": "StepKinematics_RackAndPinionPair",
    "LOW_ORDER_KINEMATIC_PAIR": "StepKinematics_LowOrderKinematicPair",
    "KINEMATIC_JOINT": "StepKinematics_KinematicJoint",
    "KINEMATIC_LINK": "StepKinematics_KinematicLink",
    "RIGID_LINK_REPRESENTATION": "StepKinematics_RigidLinkRepresentation",
    "KINEMATIC_LINK_REPRESENTATION_ASSOCIATION":
        "StepKinematics_KinematicLinkRepresentationAssociation",
    "CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION":
        "StepKinematics_ContextDependentKinematicLinkRepresentation",
    "PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS":
        "StepKinematics_ProductDefinitionRelationshipKinematics",
    "PAIR_REPRESENTATION_RELATIONSHIP": "StepKinematics_PairRepresentationRelationship",
    "KINEMATIC_TOPOLOGY_STRUCTURE": "StepKinematics_KinematicTopologyStructure",
    "MECHANISM_REPRESENTATION": "StepKinematics_MechanismRepresentation",
    "PRODUCT_DEFINITION_KINEMATICS": "StepKinematics_ProductDefinitionKinematics",
    "KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION":
        "StepKinematics_KinematicPropertyMechanismRepresentation",
}


# ----------------------------------------------------------------------------- geometry


def rz(deg):
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotation_matrix(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def export(tmp_path, name, parts):
    """A CadQuery assembly of ``parts`` [(name, solid, (x, y, z) mm, angle about z deg)]."""
    assy = cq.Assembly(name=name)
    for pname, solid, xyz, deg in parts:
        assy.add(solid, name=pname, loc=cq.Location(tuple(float(v) for v in xyz), (0, 0, 1), deg))
    path = tmp_path / f"{name}.step"
    assy.export(str(path))
    return path


# ----------------------------------------------------------------------------- writer


def num(v):
    text = repr(float(v)).upper()
    return text if "." in text or "E" in text else text + "."


class Step:
    """An exported STEP file plus appended entities (fresh ids), written back as text."""

    def __init__(self, path):
        self.text = Path(path).read_text()
        data = self.text[self.text.index("DATA;"):]
        self.stmts = {int(i): re.sub(r"\s+", " ", b.strip())
                      for i, b in re.findall(r"#(\d+)\s*=\s*(.*?);", data, flags=re.S)}
        self.next = max(self.stmts) + 1
        self.lines = []
        self.types = {}

    def add(self, body):
        eid = self.next
        self.next += 1
        self.lines.append(f"#{eid} = {body};")
        m = re.match(r"\s*([A-Z_0-9]+)\s*\(", body)
        self.types[eid] = m.group(1) if m else "(complex)"
        return eid

    def find(self, pattern):
        return [i for i, b in self.stmts.items() if re.match(pattern, b)]

    def product(self, name):
        """Ids of the product structure of the part ``name`` in the exported file."""
        (prod,) = self.find(rf"PRODUCT\('{re.escape(name)}'")
        (pdf,) = self.find(rf"PRODUCT_DEFINITION_FORMATION\('[^']*','[^']*',#{prod}\)")
        (pd,) = self.find(rf"PRODUCT_DEFINITION\('design','',#{pdf},")
        (pds,) = self.find(rf"PRODUCT_DEFINITION_SHAPE\('[^']*','[^']*',#{pd}\)")
        (sdr,) = self.find(rf"SHAPE_DEFINITION_REPRESENTATION\(#{pds},")
        sr = int(re.search(r",#(\d+)\)", self.stmts[sdr]).group(1))
        ctx = int(re.search(r"#(\d+)\)$", self.stmts[sr]).group(1))
        nauos = self.find(rf"NEXT_ASSEMBLY_USAGE_OCCURRENCE\('[^']*','[^']*','[^']*',#\d+,#{pd},")
        return {"pd": pd, "sr": sr, "ctx": ctx, "nauos": nauos}

    def root_pd(self):
        relating = {int(re.findall(r"#(\d+)", self.stmts[n])[0])
                    for n in self.find(r"NEXT_ASSEMBLY_USAGE_OCCURRENCE\(")}
        (pd,) = relating
        return pd

    def axis(self, origin, z=(0, 0, 1), x=(1, 0, 0)):
        p = self.add("CARTESIAN_POINT('',(%s))" % ",".join(num(v) for v in origin))
        d1 = self.add("DIRECTION('',(%s))" % ",".join(num(v) for v in z))
        d2 = self.add("DIRECTION('',(%s))" % ",".join(num(v) for v in x))
        return self.add(f"AXIS2_PLACEMENT_3D('',#{p},#{d1},#{d2})")

    def inch_degree_context(self):
        mm = self.add("( LENGTH_UNIT() NAMED_UNIT(*) SI_UNIT(.MILLI.,.METRE.) )")
        lmwu = self.add(f"LENGTH_MEASURE_WITH_UNIT(LENGTH_MEASURE(25.4),#{mm})")
        dim1 = self.add("DIMENSIONAL_EXPONENTS(1.,0.,0.,0.,0.,0.,0.)")
        inch = self.add(f"( CONVERSION_BASED_UNIT('INCH',#{lmwu}) LENGTH_UNIT() "
                        f"NAMED_UNIT(#{dim1}) )")
        rad = self.add("( NAMED_UNIT(*) PLANE_ANGLE_UNIT() SI_UNIT($,.RADIAN.) )")
        pamwu = self.add("PLANE_ANGLE_MEASURE_WITH_UNIT(PLANE_ANGLE_MEASURE("
                         f"0.0174532925199433),#{rad})")
        dim0 = self.add("DIMENSIONAL_EXPONENTS(0.,0.,0.,0.,0.,0.,0.)")
        deg = self.add(f"( CONVERSION_BASED_UNIT('DEGREE',#{pamwu}) NAMED_UNIT(#{dim0}) "
                       "PLANE_ANGLE_UNIT() )")
        sr = self.add("( NAMED_UNIT(*) SI_UNIT($,.STERADIAN.) SOLID_ANGLE_UNIT() )")
        return self.add(f"( GEOMETRIC_REPRESENTATION_CONTEXT(3) GLOBAL_UNIT_ASSIGNED_CONTEXT("
                        f"(#{inch},#{deg},#{sr})) REPRESENTATION_CONTEXT('inch','3D') )")

    def write(self, path):
        k = self.text.rindex("ENDSEC;")
        Path(path).write_text(self.text[:k] + "\n".join(self.lines) + "\n" + self.text[k:])
        return Path(path)


class Kinematics:
    """ISO 10303-105 entities, laid out as the CAx-IF practice and OCCT's readers have them:

    KINEMATIC_LINK per part, RIGID_LINK_REPRESENTATION(name, (pair frames), context, link),
    KINEMATIC_JOINT(name, link_1, link_2), <PAIR>(name, name, $, frame_1, frame_2, joint,
    freedoms..., own attributes...), PAIR_REPRESENTATION_RELATIONSHIP(name, name, $,
    link rep 1, link rep 2, pair), KINEMATIC_TOPOLOGY_STRUCTURE(name, (joints), context),
    MECHANISM_REPRESENTATION(name, (pair relationships), context, topology),
    KINEMATIC_LINK_REPRESENTATION_ASSOCIATION(name, $, link rep, part shape rep),
    PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS(name, $, occurrence),
    CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION(association, relationship),
    PRODUCT_DEFINITION_KINEMATICS(name, $, root product definition),
    KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION(definition, mechanism, base link rep).
    """

    def __init__(self, step, context=None):
        self.step = step
        self.context = context
        self.links = {}  # name -> [link id, product name, [frame ids], nauo index]
        self.pairs = []  # (pair id, joint id, link names)
        self.ids = {}

    def link(self, name, product=None, instance=0):
        lid = self.step.add(f"KINEMATIC_LINK('{name}')")
        self.links[name] = [lid, product or name, [], instance]
        return name

    def pair(self, entity, name, l1, f1, l2, f2, *, tail=(), freedoms=None, joint_name=None):
        s = self.step
        a1, a2 = s.axis(*f1), s.axis(*f2)
        self.links[l1][2].append(a1)
        self.links[l2][2].append(a2)
        j = s.add(f"KINEMATIC_JOINT('{joint_name or name}',#{self.links[l1][0]},"
                  f"#{self.links[l2][0]})")
        base = entity.replace("_WITH_RANGE", "")
        flags = freedoms or FREEDOMS.get(base)
        params = [f"'{name}'", f"'{name}'", "$", f"#{a1}", f"#{a2}", f"#{j}"]
        if flags:
            params += [f".{c}." for c in flags]
        params += list(tail)
        pid = s.add(f"{entity}({','.join(params)})")
        self.pairs.append((pid, j, (l1, l2)))
        self.ids[name] = pid
        return pid

    def finish(self, base, *, associate=True, occurrences=True, skip_assoc=()):
        s = self.step
        reps, ctx_of = {}, {}
        for lname, (lid, product, frames, inst) in self.links.items():
            info = s.product(product)
            ctx = self.context or info["ctx"]
            items = frames or [s.axis((0, 0, 0))]
            reps[lname] = s.add(f"RIGID_LINK_REPRESENTATION('{lname}',"
                                f"({','.join('#%d' % f for f in items)}),#{ctx},#{lid})")
            ctx_of[lname] = ctx
            if associate and lname not in skip_assoc:
                assoc = s.add(f"KINEMATIC_LINK_REPRESENTATION_ASSOCIATION('{lname}',$,"
                              f"#{reps[lname]},#{info['sr']})")
                if occurrences:
                    pdrk = s.add(f"PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS('{lname}',$,"
                                 f"#{info['nauos'][inst]})")
                    s.add(f"CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION(#{assoc},#{pdrk})")
        ctx = self.context or ctx_of[base]
        prrs = [s.add(f"PAIR_REPRESENTATION_RELATIONSHIP('p','p',$,#{reps[a]},#{reps[b]},#{pid})")
                for pid, _, (a, b) in self.pairs]
        self.prr = {pid: prr for (pid, _, _), prr in zip(self.pairs, prrs)}
        topo = s.add(f"KINEMATIC_TOPOLOGY_STRUCTURE('topology',"
                     f"({','.join('#%d' % j for _, j, _ in self.pairs)}),#{ctx})")
        mech = s.add(f"MECHANISM_REPRESENTATION('mechanism',({','.join('#%d' % p for p in prrs)}),"
                     f"#{ctx},#{topo})")
        pdk = s.add(f"PRODUCT_DEFINITION_KINEMATICS('kinematics',$,#{s.root_pd()})")
        s.add(f"KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION(#{pdk},#{mech},#{reps[base]})")
        return reps


def occt_types(path):
    """OCCT's class name and check state of every record of ``path``, by STEP id."""
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPControl import STEPControl_Reader

    text = Path(path).read_text()
    ids = [int(i) for i in re.findall(r"^#(\d+)\s*=", text[text.index("DATA;"):], flags=re.M)]
    reader = STEPControl_Reader()
    assert reader.ReadFile(str(path)) == IFSelect_RetDone
    model = reader.WS().Model()
    assert model.NbEntities() == len(ids)  # one entity per record, in file order
    out = {}
    for k, eid in enumerate(ids, start=1):
        failed = model.Check(k, True).HasFailed() or model.IsErrorEntity(k) \
            or model.IsUnknownEntity(k)
        out[eid] = (model.Value(k).DynamicType().Name(), failed)
    return out


def assert_occt_reads(path, step, ignore=()):
    seen = occt_types(path)
    for eid, entity in step.types.items():
        if entity in OCCT_CLASS and eid not in ignore:
            cls, failed = seen[eid]
            assert cls == OCCT_CLASS[entity], (eid, entity, cls)
            assert not failed, (eid, entity)


def frame_arrays(frame):
    return np.array(frame.rotation), np.array(frame.origin)


def assert_frame(frame, origin, z, x, scale=MM):
    R, o = frame_arrays(frame)
    assert np.allclose(o, np.asarray(origin, float) * scale, atol=TOL, rtol=0)
    assert np.allclose(R[:, 2], z, atol=TOL, rtol=0)
    assert np.allclose(R[:, 0], x, atol=TOL, rtol=0)
    assert np.allclose(R.T @ R, np.eye(3), atol=1e-12) and np.linalg.det(R) > 0


# ----------------------------------------------------------------------------- slider-crank

A_CRANK, B_ROD, PHI0 = 60.0, 150.0, 30.0  # mm, mm, deg
BETA = math.degrees(math.asin(A_CRANK * math.sin(math.radians(PHI0)) / B_ROD))
C_X = A_CRANK * math.cos(math.radians(PHI0)) + B_ROD * math.cos(math.radians(BETA))


def slider_crank_assembly(tmp_path, name="slider_crank"):
    B = A_CRANK * np.array([math.cos(math.radians(PHI0)), math.sin(math.radians(PHI0)), 0.0])
    return export(tmp_path, name, [
        ("ground", cq.Workplane().box(300, 40, 10).translate((100, 0, -15)), (0, 0, 0), 0),
        ("crank", cq.Workplane().box(70, 10, 5).translate((30, 0, 0)), (0, 0, 0), PHI0),
        ("rod", cq.Workplane().box(160, 10, 5).translate((75, 0, 5)), tuple(B), -BETA),
        ("slider", cq.Workplane().box(30, 20, 20), (C_X, 0, 0), 0),
    ])


def slider_crank_kinematics(step):
    kin = Kinematics(step)
    for part in ("ground", "crank", "rod", "slider"):
        kin.link(part)
    x_crank = rz(-PHI0) @ [1, 0, 0]
    x_rod = rz(BETA + PHI0) @ [1, 0, 0]
    kin.pair("REVOLUTE_PAIR_WITH_RANGE", "crank pivot", "ground", ((0, 0, 0),), "crank",
             ((0, 0, 0), (0, 0, 1), x_crank), tail=("-1.", "2."))
    kin.pair("REVOLUTE_PAIR", "crank pin", "crank", ((A_CRANK, 0, 0),), "rod",
             ((0, 0, 0), (0, 0, 1), x_rod))
    # written at a pair value of BETA (frames not coinciding at the assembly's pose)
    kin.pair("REVOLUTE_PAIR", "wrist pin", "rod", ((B_ROD, 0, 0),), "slider", ((0, 0, 0),))
    # the slider's frame at its own origin: a pair value of C_X mm
    kin.pair("PRISMATIC_PAIR_WITH_RANGE", "slide", "ground", ((0, 0, 0), (1, 0, 0), (0, 1, 0)),
             "slider", ((0, 0, 0), (1, 0, 0), (0, 1, 0)), tail=("100.", "250."))
    kin.finish(base="ground")
    return kin


@pytest.fixture(scope="module")
def slider_crank(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slider_crank")
    plain = slider_crank_assembly(tmp)
    step = Step(plain)
    slider_crank_kinematics(step)
    path = step.write(tmp / "slider_crank_kinematics.step")
    return plain, path, step


def test_appended_entities_are_valid_for_occt(slider_crank):
    _, path, step = slider_crank
    assert_occt_reads(path, step)


def test_file_still_loads_with_the_plain_xcaf_reader(slider_crank):
    plain, path, _ = slider_crank
    before, after = read_step(plain), read_step(path)
    assert after.names == before.names == ("ground", "crank", "rod", "slider")
    for p, q in zip(before.parts, after.parts):
        assert np.allclose(p.position, q.position, atol=1e-12)
        assert np.allclose(p.orientation, q.orientation, atol=1e-12)
        assert p.mass == pytest.approx(q.mass)
    assert read_step_kinematics(plain, before) == ()


def test_slider_crank_joints(slider_crank):
    _, path, _ = slider_crank
    asm = read_step(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StepKinematicsWarning)  # everything holds: no warning
        mech = read_step_mechanism(path, asm)
    joints = {j.name: j for j in mech.joints}
    assert [j.name for j in mech.joints] == ["crank pivot", "crank pin", "wrist pin", "slide"]
    assert mech.ground == ("ground",)
    assert dict(mech.links) == {n: n for n in ("ground", "crank", "rod", "slider")}
    expect = {"crank pivot": ("revolute", ("ground", "crank")),
              "crank pin": ("revolute", ("crank", "rod")),
              "wrist pin": ("revolute", ("rod", "slider")),
              "slide": ("prismatic", ("ground", "slider"))}
    for name, (jtype, parts) in expect.items():
        assert (joints[name].type, joints[name].parts) == (jtype, parts)
        assert joints[name].source.startswith(str(path))

    z = (0, 0, 1)
    assert_frame(joints["crank pivot"].markers[0], (0, 0, 0), z, (1, 0, 0))
    assert_frame(joints["crank pivot"].markers[1], (0, 0, 0), z, rz(-PHI0) @ [1, 0, 0])
    assert_frame(joints["crank pin"].markers[0], (A_CRANK, 0, 0), z, (1, 0, 0))
    assert_frame(joints["crank pin"].markers[1], (0, 0, 0), z, rz(BETA + PHI0) @ [1, 0, 0])
    assert_frame(joints["wrist pin"].markers[0], (B_ROD, 0, 0), z, (1, 0, 0))
    # turned back by the pair value BETA: the rod's x axis, seen from the slider
    assert_frame(joints["wrist pin"].markers[1], (0, 0, 0), z, rz(-BETA) @ [1, 0, 0])
    assert_frame(joints["slide"].markers[0], (0, 0, 0), (1, 0, 0), (0, 1, 0))
    # moved back along the slide by the pair value C_X
    assert_frame(joints["slide"].markers[1], (-C_X, 0, 0), (1, 0, 0), (0, 1, 0))

    assert dict(joints["crank pivot"].limits)["angle"] == pytest.approx((-1.0, 2.0), abs=TOL)
    lo, hi = dict(joints["slide"].limits)["disp"]
    assert (lo, hi) == pytest.approx(((100 - C_X) * MM, (250 - C_X) * MM), abs=TOL)
    assert joints["crank pin"].limits == ()


def test_slider_crank_moves_as_the_closed_form(slider_crank):
    kernel = pytest.importorskip("cadmotion.kernel")
    _, path, _ = slider_crank
    asm = read_step(path)
    mech = read_step_mechanism(path, asm)
    parts = tuple(replace(p, fixed=p.name in mech.ground) for p in asm.parts)
    spec = MechanismSpec(parts=parts, joints=mech.joints, drivers=(
        DriverSpec("turn", TimeFunctionSpec(expression="t"), joint="crank pivot",
                   coordinate="angle"),), source=str(path))
    motion = kernel.kinematics(kernel.compile_model(spec), t_end=1.0, steps=40)
    assert motion.complete, motion.message
    phi = math.radians(PHI0) + motion.time
    a, b = A_CRANK * MM, B_ROD * MM
    x = a * np.cos(phi) + np.sqrt(b * b - (a * np.sin(phi)) ** 2)
    s = motion.part_index("slider")
    assert np.allclose(motion.position[:, s, 0], x, atol=1e-8)
    assert np.allclose(motion.position[:, s, 1:], 0.0, atol=1e-8)
    c = motion.part_index("crank")
    turn = np.array([2 * math.atan2(q[3], q[0]) for q in motion.quaternion[:, c]])
    assert np.allclose(turn, phi, atol=1e-8)


# ----------------------------------------------------------------------------- every pair type


@pytest.fixture(scope="module")
def all_pairs(tmp_path_factory):
    """Every supported pair between ground and crank (crank turned 30 deg), in inches and
    degrees; plus a complex-entity revolute with a range."""
    tmp = tmp_path_factory.mktemp("all_pairs")
    plain = slider_crank_assembly(tmp, "all_pairs")
    step = Step(plain)
    kin = Kinematics(step, context=step.inch_degree_context())
    kin.link("ground")
    kin.link("crank")
    P = np.array([1.0, 0.5, 0.0])  # inch, ground frame
    Pc = rz(-PHI0) @ P  # the same point in the crank frame
    xc = rz(-PHI0) @ [1, 0, 0]
    yc = rz(-PHI0) @ [0, 1, 0]
    g, c = ((P,), (Pc, (0, 0, 1), xc))
    kin.pair("CYLINDRICAL_PAIR_WITH_RANGE", "cyl", "ground", g, "crank", c,
             tail=("-1.", "2.", "-90.", "$"))
    kin.pair("SPHERICAL_PAIR", "ball", "ground", g, "crank", c)
    kin.pair("UNIVERSAL_PAIR", "cardan", "ground", g, "crank", c, tail=("$",))
    kin.pair("PLANAR_PAIR", "plane", "ground", g, "crank", c)
    kin.pair("FULLY_CONSTRAINED_PAIR", "weld", "ground", g, "crank", c)
    kin.pair("SCREW_PAIR", "lead screw", "ground", g, "crank", c, tail=("0.5",))
    kin.pair("LOW_ORDER_KINEMATIC_PAIR", "generic", "ground", g, "crank", c, freedoms="FFTFFT")
    kin.pair("UNCONSTRAINED_PAIR", "free", "ground", g, "crank", c)
    kin.pair("PRISMATIC_PAIR", "", "ground", (P, (0, 1, 0), (0, 0, 1)), "crank",
             (Pc, yc, (0, 0, 1)), joint_name="unnamed slide")
    # a complex instance (the form exporters use for actuated pairs or ranges)
    s = step
    a1, a2 = s.axis(P), s.axis(Pc, (0, 0, 1), xc)
    kin.links["ground"][2].append(a1)
    kin.links["crank"][2].append(a2)
    j = s.add(f"KINEMATIC_JOINT('hinge joint',#{kin.links['ground'][0]},"
              f"#{kin.links['crank'][0]})")
    pid = s.add("( GEOMETRIC_REPRESENTATION_ITEM() ITEM_DEFINED_TRANSFORMATION('','',"
                f"#{a1},#{a2}) KINEMATIC_PAIR(#{j}) LOW_ORDER_KINEMATIC_PAIR(*,*,*,*,*,*) "
                "REPRESENTATION_ITEM('complex hinge') REVOLUTE_PAIR() "
                "REVOLUTE_PAIR_WITH_RANGE(PLANE_ANGLE_MEASURE(-45.),$) )")
    kin.pairs.append((pid, j, ("ground", "crank")))
    kin.finish(base="ground")
    path = step.write(tmp / "all_pairs.step")
    return path, step, P, Pc, kin.prr[pid]


def test_every_pair_type_is_valid_for_occt(all_pairs):
    path, step, _, _, complex_prr = all_pairs
    # OCCT 7.9 reads complex pairs only in its ACTUATED_KINEMATIC_PAIR form, so the
    # relationship that refers to the complex hinge is left to our reader
    assert_occt_reads(path, step, ignore={complex_prr})


def test_every_pair_type(all_pairs):
    path, _, P, Pc, _ = all_pairs
    asm = read_step(path)
    joints = {j.name: j for j in read_step_kinematics(path, asm)}
    assert list(joints) == ["cyl", "ball", "cardan", "plane", "weld", "lead screw", "generic",
                            "unnamed slide", "complex hinge"]  # "free" makes no joint
    types = {n: j.type for n, j in joints.items()}
    assert types == {"cyl": "cylindrical", "ball": "spherical", "cardan": "universal",
                     "plane": "planar", "weld": "fixed", "lead screw": "screw",
                     "generic": "cylindrical", "unnamed slide": "prismatic",
                     "complex hinge": "revolute"}
    xc = rz(-PHI0) @ [1, 0, 0]
    for name in ("cyl", "ball", "plane", "weld", "lead screw", "generic", "complex hinge"):
        j = joints[name]
        assert j.parts == ("ground", "crank")
        assert_frame(j.markers[0], P, (0, 0, 1), (1, 0, 0), scale=INCH)
        assert_frame(j.markers[1], Pc, (0, 0, 1), xc, scale=INCH)
    # universal: the first rotation about z of frame 1, the second about x of frame 2
    cardan = joints["cardan"]
    assert_frame(cardan.markers[0], P, (0, 0, 1), (1, 0, 0), scale=INCH)
    assert_frame(cardan.markers[1], Pc, xc, rz(-PHI0) @ [0, 1, 0], scale=INCH)
    assert_frame(joints["unnamed slide"].markers[0], P, (0, 1, 0), (0, 0, 1), scale=INCH)
    assert joints["lead screw"].param("pitch") == pytest.approx(0.5 * INCH, abs=TOL)
    lim = dict(joints["cyl"].limits)
    assert lim["disp"] == pytest.approx((-1 * INCH, 2 * INCH), abs=TOL)
    assert lim["angle"][0] == pytest.approx(-math.pi / 2, abs=TOL) and lim["angle"][1] == math.inf
    lo, hi = dict(joints["complex hinge"].limits)["angle"]
    assert lo == pytest.approx(-math.pi / 4, abs=TOL) and hi == math.inf


# ----------------------------------------------------------------------------- gears and rack

R1, R2, R_RING = 20.0, 10.0, 40.0  # mm pitch radii


@pytest.fixture(scope="module")
def gear_train(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gears")
    disc = lambda r: cq.Workplane().circle(r).extrude(5)  # noqa: E731
    ring = cq.Workplane().circle(R_RING + 5).circle(R_RING).extrude(5)
    plain = export(tmp, "gears", [
        ("ground", cq.Workplane().box(200, 120, 5).translate((30, 0, -10)), (0, 0, 0), 0),
        ("pinion", disc(R1), (0, 0, 0), 0),
        ("wheel", disc(R2), (R1 + R2, 0, 0), 0),
        ("ring", ring, (R1 + R2 + R_RING - R2, 0, 0), 0),
        ("rack", cq.Workplane().box(200, 10, 5).translate((0, -5, 0)), (0, -R1, 0), 0),
    ])
    step = Step(plain)
    kin = Kinematics(step)
    for part in ("ground", "pinion", "wheel", "ring", "rack"):
        kin.link(part)
    o = (0, 0, 0)
    kin.pair("REVOLUTE_PAIR", "pinion axle", "ground", (o,), "pinion", (o,))
    # the wheel's axle written the other way round: wheel first, axis down
    kin.pair("REVOLUTE_PAIR", "wheel axle", "wheel", (o, (0, 0, -1)), "ground",
             ((R1 + R2, 0, 0), (0, 0, -1)))
    kin.pair("REVOLUTE_PAIR", "ring axle", "ground", ((R1 + R2 + R_RING - R2, 0, 0),), "ring",
             (o,))
    # the rack slides along -x
    kin.pair("PRISMATIC_PAIR", "rack slide", "ground", ((0, -R1, 0), (-1, 0, 0), (0, 1, 0)),
             "rack", (o, (-1, 0, 0), (0, 1, 0)))
    kin.pair("GEAR_PAIR", "mesh", "pinion", ((R1, 0, 0),), "wheel", ((-R2, 0, 0),),
             tail=(num(R1), num(R2), "0.", "0.", num(R1 / R2)))
    kin.pair("GEAR_PAIR", "ring mesh", "wheel", ((R2, 0, 0),), "ring", ((-R_RING, 0, 0),),
             tail=(num(R2), num(R_RING), "0.", "0.", num(R2 / R_RING)))
    kin.pair("RACK_AND_PINION_PAIR", "rack drive", "rack", (o,), "pinion", ((0, -R1, 0),),
             tail=(num(R1),))
    kin.finish(base="ground")
    return step.write(tmp / "gears_kinematics.step"), step


def test_gear_and_rack_entities_are_valid_for_occt(gear_train):
    path, step = gear_train
    assert_occt_reads(path, step)


def test_gears_and_rack(gear_train):
    path, _ = gear_train
    asm = read_step(path)
    mech = read_step_mechanism(path, asm)
    joints = {j.name: j for j in mech.joints}
    assert joints["mesh"].type == "gear" and joints["mesh"].joints == ("pinion axle", "wheel axle")
    assert joints["ring mesh"].joints == ("wheel axle", "ring axle")
    assert joints["rack drive"].type == "rack-and-pinion"
    assert joints["rack drive"].joints == ("pinion axle", "rack slide")
    assert abs(joints["mesh"].param("ratio")) == pytest.approx(R1 / R2)
    assert abs(joints["ring mesh"].param("ratio")) == pytest.approx(R2 / R_RING)
    assert abs(joints["rack drive"].param("radius")) == pytest.approx(R1 * MM)

    kernel = pytest.importorskip("cadmotion.kernel")
    parts = tuple(replace(p, fixed=p.name in mech.ground) for p in asm.parts)
    spec = MechanismSpec(parts=parts, joints=mech.joints, drivers=(
        DriverSpec("turn", TimeFunctionSpec(expression="t"), joint="pinion axle",
                   coordinate="angle"),))
    motion = kernel.kinematics(kernel.compile_model(spec), t_end=1.0, steps=20)
    assert motion.complete, motion.message
    t = motion.time

    def turn(part):  # world rotation about +z
        q = motion.quaternion[:, motion.part_index(part)]
        return np.unwrap(2 * np.arctan2(q[:, 3], q[:, 0]))

    assert np.allclose(turn("pinion"), t, atol=1e-8)
    assert np.allclose(turn("wheel"), -(R1 / R2) * t, atol=1e-8)  # external: opposite sense
    assert np.allclose(turn("ring"), -(R1 / R2) * (R2 / R_RING) * t, atol=1e-8)  # internal
    rack = motion.position[:, motion.part_index("rack")]
    # the pinion turns counter-clockwise and touches the rack at its bottom: rack moves +x
    assert np.allclose(rack[:, 0], R1 * MM * t, atol=1e-8)
    assert np.allclose(rack[:, 1], -R1 * MM, atol=1e-8)


# ----------------------------------------------------------------------------- instances


def test_link_of_a_shared_product_is_found_by_its_occurrence(tmp_path):
    box = cq.Workplane().box(10, 10, 10)
    plain = export(tmp_path, "twins", [("base", cq.Workplane().box(50, 50, 2), (0, 0, -10), 0),
                                       ("left", box, (-20, 0, 0), 0),
                                       ("right", box, (20, 0, 0), 0)])
    asm = read_step(plain)
    assert asm.products["left"] == asm.products["right"]  # one product, two instances

    def build(occurrences, name):
        step = Step(plain)
        kin = Kinematics(step)
        kin.link("base")
        kin.link("L", product="left", instance=0)
        kin.link("R", product="left", instance=1)
        kin.pair("REVOLUTE_PAIR", "left hinge", "base", ((-20, 0, 10),), "L", ((0, 0, 0),))
        kin.pair("REVOLUTE_PAIR", "right hinge", "base", ((20, 0, 10),), "R", ((0, 0, 0),))
        kin.finish(base="base", occurrences=occurrences)
        return step.write(tmp_path / name)

    path = build(True, "twins_kin.step")
    mech = read_step_mechanism(path, read_step(path))
    assert dict(mech.links) == {"base": "base", "L": "left", "R": "right"}
    assert [j.parts for j in mech.joints] == [("base", "left"), ("base", "right")]

    bad = build(False, "twins_ambiguous.step")
    with pytest.raises(CadImportError, match=r"2 instances.*left, right"):
        read_step_kinematics(bad, read_step(bad))


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def three_parts(tmp_path):
    plain = slider_crank_assembly(tmp_path, "three")
    return plain, read_step(plain)


def _one_pair(plain, tmp_path, edit=None, **finish):
    step = Step(plain)
    kin = Kinematics(step)
    kin.link("ground")
    kin.link("crank")
    kin.pair("REVOLUTE_PAIR", "pivot", "ground", ((0, 0, 0),), "crank",
             ((0, 0, 0), (0, 0, 1), rz(-PHI0) @ [1, 0, 0]))
    if edit:
        edit(step, kin)
    kin.finish(base="ground", **finish)
    return step.write(tmp_path / "bad.step"), step, kin


def test_no_kinematics_gives_no_joints(three_parts):
    plain, asm = three_parts
    assert read_step_kinematics(plain, asm) == ()
    mech = read_step_mechanism(plain, asm)
    assert mech.joints == () and mech.ground == ()


@pytest.mark.skipif(not DATA.exists(), reason="shared test data not available")
@pytest.mark.parametrize("name", ["step-gripper/gripper.step", "step-as1/as1-oc-214.stp",
                                  "step-chrono-2body/assembly.stp"])
def test_real_files_without_kinematics(name):
    # the reader does not need the assembly when there is nothing to map
    assert read_step_kinematics(DATA / name, None) == ()


def test_pair_referencing_a_missing_link(three_parts, tmp_path):
    plain, asm = three_parts

    def dangling(step, kin):
        step.add("REVOLUTE_PAIR('lost','lost',$,#%d,#%d,#%d,.F.,.F.,.F.,.F.,.F.,.T.)" % (
            step.axis((0, 0, 0)), step.axis((0, 0, 0)),
            step.add(f"KINEMATIC_JOINT('lost',#{kin.links['ground'][0]},#99999)")))

    path, _, _ = _one_pair(plain, tmp_path, dangling)
    with pytest.raises(CadImportError) as err:
        read_step_kinematics(path, asm)
    assert "#99999" in str(err.value) and str(path) in str(err.value)
    with pytest.raises(CadImportError, match="incomplete"):  # and OCCT's reader refuses it
        read_step(path)


def test_link_that_is_no_part(three_parts, tmp_path):
    plain, asm = three_parts
    path, _, kin = _one_pair(plain, tmp_path, skip_assoc=("crank",))
    lid = kin.links["crank"][0]
    with pytest.raises(CadImportError, match=rf"link #{lid} 'crank' is not associated"):
        read_step_kinematics(path, asm)


def test_unsupported_pair_is_named(three_parts, tmp_path):
    plain, asm = three_parts

    def point_on_surface(step, kin):
        plane = step.add(f"PLANE('',#{step.axis((0, 0, 0))})")
        kin.pair("POINT_ON_SURFACE_PAIR", "follower", "ground", ((0, 0, 0),), "crank",
                 ((0, 0, 0),), tail=(f"#{plane}",))

    path, step, kin = _one_pair(plain, tmp_path, point_on_surface)
    assert_occt_reads(path, step)  # a valid entity, just not one cadmotion reads
    pid = kin.ids["follower"]
    with pytest.raises(CadImportError, match=rf"pair #{pid} is a POINT_ON_SURFACE_PAIR"):
        read_step_kinematics(path, asm)
    with pytest.warns(StepKinematicsWarning, match="POINT_ON_SURFACE_PAIR.*skipped"):
        joints = read_step_kinematics(path, asm, unsupported="skip")
    assert [j.name for j in joints] == ["pivot"]


def test_wrong_parameter_count(three_parts, tmp_path):
    plain, asm = three_parts

    def short(step, kin):
        kin.pair("REVOLUTE_PAIR", "short", "ground", ((0, 0, 0),), "crank", ((0, 0, 0),),
                 freedoms="FFFFF")

    path, _, kin = _one_pair(plain, tmp_path, short)
    with pytest.raises(CadImportError, match=rf"#{kin.ids['short']} REVOLUTE_PAIR has 11 "
                                             r"parameters, expected 12"):
        read_step_kinematics(path, asm)


def test_low_order_pair_without_a_cadmotion_joint(three_parts, tmp_path):
    plain, asm = three_parts

    def odd(step, kin):
        kin.pair("LOW_ORDER_KINEMATIC_PAIR", "odd", "ground", ((0, 0, 0),), "crank",
                 ((0, 0, 0),), freedoms="TFFFFF")

    path, _, kin = _one_pair(plain, tmp_path, odd)
    with pytest.raises(CadImportError, match=r"leaves t_x free"):
        read_step_kinematics(path, asm)


def test_gear_without_axles(three_parts, tmp_path):
    plain, asm = three_parts

    def gear(step, kin):
        kin.link("rod")
        kin.pair("GEAR_PAIR", "loose", "crank", ((0, 0, 0),), "rod", ((0, 0, 0),),
                 tail=("10.", "10.", "0.", "0.", "1."))

    path, _, _ = _one_pair(plain, tmp_path, gear)
    with pytest.raises(CadImportError, match=r"gear pair #\d+ 'loose'.*common part"):
        read_step_kinematics(path, asm)


def test_damaged_record(three_parts, tmp_path):
    plain, asm = three_parts

    def garbage(step, kin):
        step.add("REVOLUTE_PAIR('broken' 'x')")

    path, _, _ = _one_pair(plain, tmp_path, garbage)
    with pytest.raises(CadImportError, match=r"entity #\d+ cannot be parsed: ',' expected"):
        read_step_mechanism(path, asm)


def test_pair_that_does_not_hold_is_reported(three_parts, tmp_path):
    plain, asm = three_parts

    def off(step, kin):
        kin.pair("REVOLUTE_PAIR", "off axis", "ground", ((5, 0, 0),), "crank", ((0, 0, 0),))

    path, _, _ = _one_pair(plain, tmp_path, off)
    with pytest.warns(StepKinematicsWarning, match=r"'off axis' does not hold.*origin 0.005"):
        read_step_kinematics(path, asm)


# ----------------------------------------------------------------------------- Part 21 text


def test_part21_text_details(slider_crank, tmp_path):
    """Header strings that look like section keywords, comments between records, \\X2\\
    escapes in names and lower-case keywords are read as ISO 10303-21 says."""
    plain, path, _ = slider_crank
    text = path.read_text()
    head, data = text.split("DATA;", 1)
    head = re.sub(r"FILE_DESCRIPTION\(\(.*?\)", "FILE_DESCRIPTION(('DATA; ENDSEC; #1=X();')",
                  head, count=1, flags=re.S)
    data = data.replace("KINEMATIC_LINK('crank')", "kinematic_link('cr\\X2\\00E4\\X0\\nk')")
    data = data.replace("KINEMATIC_LINK('rod')", "/* a comment; 'with quotes' */ "
                        "KINEMATIC_LINK( 'it''s the rod' )")
    edited = tmp_path / "edited.step"
    edited.write_text(head + "DATA;" + data)
    mech = read_step_mechanism(edited, read_step(plain))
    assert dict(mech.links) == {"ground": "ground", "cr\u00e4nk": "crank",
                                "it's the rod": "rod", "slider": "slider"}
    assert [j.name for j in mech.joints] == ["crank pivot", "crank pin", "wrist pin", "slide"]


def _model_merges_kinematics():
    import inspect

    from cadmotion.importers import step

    return "step_kinematics" in inspect.getsource(step.read_step_model)


@pytest.mark.skipif(not _model_merges_kinematics(),
                    reason="read_step_model does not read STEP kinematics yet")
def test_load_gives_joints_and_ground(slider_crank):
    from cadmotion.importers import load

    _, path, _ = slider_crank
    spec = load(path)
    assert [j.name for j in spec.joints] == ["crank pivot", "crank pin", "wrist pin", "slide"]
    assert [p.name for p in spec.parts if p.fixed] == ["ground"]
