"""Kinematic validation of a mechanism: mobility, assembly, driven motion, ranges, limits,
interference.

``check(model_or_path, t_end=..., steps=...)`` returns a :class:`CheckReport`; the
``cadmotion check`` command prints it (or its JSON) and exits with :attr:`CheckReport.exit_code`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..errors import CadmotionError, DrivingError, MechanismError, SingularityError

__all__ = ["CheckReport", "check", "EXIT_CODES"]

#: process exit codes of ``cadmotion check`` (a CI job can branch on them)
EXIT_CODES = {
    "ok": 0,
    "error": 1,
    "cannot-assemble": 3,
    "locks": 4,
    "collides": 5,
    "limits": 6,
    "underdetermined": 7,
}


@dataclass
class CheckReport:
    """What ``cadmotion check`` found. ``status`` is a key of :data:`EXIT_CODES`."""

    model: str
    status: str = "ok"
    dof: Optional[int] = None
    dof_driven: Optional[int] = None
    gruebler: Optional[int] = None
    redundant: List[str] = field(default_factory=list)
    redundant_joints: List[str] = field(default_factory=list)
    relaxations: List[str] = field(default_factory=list)
    #: the spanning tree and the cut joints of the relative-coordinate formulations (text lines)
    tree: List[str] = field(default_factory=list)
    assembly: Dict = field(default_factory=dict)
    motion: Dict = field(default_factory=dict)
    ranges: Dict[str, List[float]] = field(default_factory=dict)
    limits: List[Dict] = field(default_factory=list)
    events: List[Dict] = field(default_factory=list)
    collisions: List[Dict] = field(default_factory=list)
    near: List[Dict] = field(default_factory=list)
    contacts: List[Dict] = field(default_factory=list)
    proposed_contacts: str = ""
    messages: List[str] = field(default_factory=list)

    @property
    def exit_code(self):
        """The process exit code of this status (:data:`EXIT_CODES`)."""
        return EXIT_CODES[self.status]

    @property
    def ok(self):
        """Whether the mechanism passed every check."""
        return self.status == "ok"

    def to_dict(self):
        """The report as plain data (JSON-ready)."""
        return asdict(self)

    def assert_ok(self):
        """Raise AssertionError with the readable summary unless the check passed."""
        if not self.ok:
            raise AssertionError(self.summary())

    def summary(self):
        """A human-readable multi-line summary."""
        lines = [f"model: {self.model}", f"status: {self.status}"]
        if self.dof is not None:
            lines.append(f"mobility: {self.dof} DOF (Grübler count {self.gruebler}); "
                         f"with drivers: {self.dof_driven} DOF left")
        if self.redundant:
            lines.append(f"redundant equations ({len(self.redundant)}): {', '.join(self.redundant)}")
            for text in self.relaxations:
                lines.append(f"  to remove them: {text}")
        lines += self.tree
        if self.assembly:
            a = self.assembly
            state = "assembles" if a.get("success") else "does NOT assemble"
            lines.append(f"assembly: {state} (residual {a.get('residual', float('nan')):.2e})")
            moved = {k: v for k, v in a.get("moved", {}).items() if v > 1e-9}
            if moved:
                lines.append("  moved to assemble: " + ", ".join(f"{k} {v:.3g} m" for k, v in moved.items()))
            if a.get("success") and a.get("message"):
                lines.append(f"  note: {a['message']}")
            if a.get("conflicts"):
                lines.append("  conflicting joints: " + ", ".join(a["conflicts"]))
        if self.motion:
            m = self.motion
            lines.append(f"motion: {m.get('frames', 0)} frames to t = {m.get('t_reached', 0):.6g} s "
                         f"of {m.get('t_end', 0):.6g} s" + ("" if m.get("complete") else " (stopped early)"))
        for e in self.events:
            lines.append(f"  {e['kind']} at t = {e['time']:.6g} s: {e['message']}")
        for lim in self.limits:
            lines.append(f"  limit: {lim['message']}")
        for c in self.collisions:
            lines.append(f"  collision: {c['message']}")
        for c in self.contacts:
            lines.append(f"  touches: {c['message']}")
        if self.proposed_contacts:
            lines.append("  to simulate a collision as a contact (dynamics), declare it; fitted to the CAD faces where "
                         "the parts first touch:")
            lines += ["    " + line for line in self.proposed_contacts.splitlines()]
        for c in self.near:
            lines.append(f"  close: {c['message']}")
        if self.ranges:
            lines.append("range of motion:")
            for k, (lo, hi) in self.ranges.items():
                lines.append(f"  {k}: {lo:.6g} .. {hi:.6g}")
        lines += self.messages
        return "\n".join(lines)


#: looser joint types to try in place of each type, for relaxation suggestions
RELAXATIONS = {
    "fixed": ("revolute", "spherical"),
    "revolute": ("spherical", "cylindrical", "universal"),
    "prismatic": ("cylindrical",),
    "cylindrical": ("point-on-line",),
    "universal": ("spherical",),
    "planar": ("point-on-plane",),
    "parallel": ("perpendicular",),
}


def suggest_relaxations(spec, parametrization="euler-parameters", limit=8, seconds=10.0):
    """Joint replacements that remove redundant equations without changing the mobility.

    Each candidate (a joint named in the redundancy, with a looser type from
    :data:`RELAXATIONS`) has its rows of Φq replaced by those of the looser type (compiled
    for that joint's two parts alone) and the rank compared; returns readable lines such
    as ``"revolute B -> spherical removes 2 redundant equations"``, best first, welds
    (``fixed`` joints) after the joints that move. Trials stop after ``seconds`` of wall
    time (joints that move first); a last line then says how many were not tried.
    """
    import time

    import scipy.sparse as sps

    from ..kernel import AngleState, compile_model, mobility
    from ..kernel.analysis import DENSE_FALLBACK, rank_info
    from ..kernel.system import System

    model = compile_model(spec, parametrization)
    base = mobility(model)
    if not base.redundant:
        return []
    J = System(model).jacobian(model.q0, 0.0, AngleState(model, model.q0)).tocsr()
    labels = model.row_labels
    joint_rows = np.array([r for r, lab in enumerate(labels) if not lab[1].startswith("drive-")], dtype=int)
    parts = {p.name: p for p in spec.parts}
    found = []
    # every joint of a small mechanism (all joints of a loop share its redundancy),
    # else the joints whose rows were found redundant; welds last
    everyone = len(spec.joints) <= 40
    trials = [(j, looser) for j in sorted(spec.joints, key=lambda j: j.type == "fixed")
              if (everyone or j.name in base.redundant_joints) and len(j.parts) == 2
              for looser in RELAXATIONS.get(j.type, ())]
    deadline = time.perf_counter() + seconds
    skipped = 0
    for done, (j, looser) in enumerate(trials):
        if time.perf_counter() > deadline:
            skipped = len(trials) - done
            break
        rows = _joint_rows(model, spec, parts, j, looser, parametrization)
        if rows is None:
            continue
        others = np.array([r for r in joint_rows if labels[r][0] != j.name], dtype=int)
        trial = sps.vstack([J[others], rows]).tocsr()
        if sum(trial.shape) <= DENSE_FALLBACK:  # one dense QR beats Lanczos when many rows are redundant
            trial = trial.toarray()
        norm = np.flatnonzero([labels[r][1] == "normalize" for r in others])
        info = rank_info(trial, prefer=norm)
        removed = len(base.redundant) - len(info.redundant)
        if model.nq - info.rank == base.dof and removed > 0:
            found.append(((j.type == "fixed", -removed),
                          f"{j.type} {j.name} -> {looser} removes {removed} redundant "
                          f"equation{'s' if removed > 1 else ''}"))
    lines = [text for _, text in sorted(found)[:limit]]
    if skipped:
        lines.append(f"({skipped} of {len(trials)} candidate relaxations not tried: time limit)")
    return lines


def _joint_rows(model, spec, parts, joint, looser, parametrization):
    """Rows of Φq (in ``model``'s columns, at its q0) of ``joint`` made of type ``looser``, or None."""
    from dataclasses import replace

    import scipy.sparse as sps

    from ..kernel import AngleState, MechanismSpec, compile_model
    from ..kernel.system import System

    pair = tuple(parts[name] for name in joint.parts)
    if all(p.fixed for p in pair):
        return None
    mini_spec = MechanismSpec(parts=pair, joints=(replace(joint, type=looser),), name=f"{spec.name}: {joint.name}")
    try:
        mini = compile_model(mini_spec, parametrization)
    except CadmotionError:
        return None
    Jm = System(mini).jacobian(mini.q0, 0.0, AngleState(mini, mini.q0)).tocsc()
    keep = [r for r, lab in enumerate(mini.row_labels) if lab[0] == joint.name and lab[1] != "normalize"]
    nqb = model.nqb
    cols, src = [], []
    for b, name in enumerate(mini.body_names):
        if mini.body_fixed[b]:
            continue
        big = model.body_index(name)
        cols.append(model.body_qadr[big] + np.arange(nqb))
        src.append(mini.body_qadr[b] + np.arange(nqb))
    cols, src = np.concatenate(cols), np.concatenate(src)
    block = Jm[keep][:, src].tocoo()
    return sps.csr_matrix((block.data, (block.row, cols[block.col])), shape=(len(keep), model.nq))


def _load(source, parametrization, drive):
    from ..importers import load
    from ..kernel import MechanismSpec, compile_model
    from .run_analysis import with_overrides

    spec = with_overrides(source if isinstance(source, MechanismSpec) else load(source), drive)
    return spec, compile_model(spec, parametrization)


def check(source, t_end=None, steps=None, *, parametrization="euler-parameters", interference=True,
          clearance=None, near=None, exclude_jointed=None, joint_clearance=None, ignore=(), drive=(),
          free_dof="refuse"):
    """Check a mechanism (a path any importer reads, or a MechanismSpec).

    ``drive``: drivers to add, ``"NAME=EXPRESSION"`` each, as ``--drive`` on the command
    line (:mod:`cadmotion.importers.drive_option`), e.g. for a FreeCAD document that
    stores joints but no motion.

    ``interference`` checks the parts that have geometry (from STEP, FCStd, CadQuery) for
    collisions along the motion (:func:`~cadmotion.plugin.interference.find_interference`):
    ``clearance`` (m) is the gap unjointed parts must keep; pairs that come within
    ``near`` (m, default ``clearance`` + 1 mm) without colliding are listed in
    ``report.near`` with their minimum distance; ``exclude_jointed=False`` also checks
    parts joined by a joint, against ``joint_clearance`` (m; negative allows that much
    overlap, for pins modelled line-to-line).
    ``ignore`` lists pairs (part names or globs such as ``"M3x20*"``) whose contact is by
    design (pins in holes, links on their washers). Arguments left at None take the model
    file's ``[check]`` values, else clearance 0, joint clearance 0, jointed pairs excluded;
    the file's ``ignore`` pairs are added to ``ignore``.

    ``free_dof``: ``"refuse"`` (default) reports a mechanism whose drivers leave degrees of
    freedom free as ``underdetermined``; ``"minimal"`` checks its motion with the free
    coordinates moving minimally (``cadmotion run --free-dof minimal``), and the report's
    events include the ``free-dof`` event naming them.

    Never raises for mechanism problems: they are recorded in the report. Errors reading
    the file (:class:`~cadmotion.errors.CadmotionError`) propagate.
    """
    from ..kernel import AngleState, assemble, mobility
    from ..kernel.dynamics.tree import build_tree, describe_tree
    from .run_analysis import run_analysis, time_span

    spec, model = _load(source, parametrization, drive)
    report = CheckReport(model=str(getattr(spec, "source", "") or spec.name))
    angles = AngleState(model, model.q0)
    asm = assemble(model, model.q0, 0.0, angles)
    report.assembly = dict(success=asm.success, residual=asm.residual, moved=asm.moved,
                           conflicts=asm.conflicts, message=asm.message)
    mob = mobility(model, asm.q, 0.0, angles)
    report.dof, report.dof_driven, report.gruebler = mob.dof, mob.dof_driven, mob.gruebler
    report.redundant, report.redundant_joints = mob.redundant, mob.redundant_joints
    if mob.redundant:
        report.relaxations = suggest_relaxations(spec, parametrization)
    try:
        report.tree = describe_tree(build_tree(model))
    except CadmotionError as exc:  # a bad [formulation] cut
        report.status = "error"
        report.messages.append(str(exc))
        return report
    if not asm.success:
        report.status = "cannot-assemble"
        report.messages.append(asm.message)
        return report
    if not spec.drivers:
        report.messages.append("no drivers: motion not checked (add [[drivers]] to check the motion)")
        return report
    t_end, steps = time_span(spec, t_end, steps)
    try:
        motion, _ = run_analysis(model, "kinematic", t_end, steps, free_dof=free_dof)
    except DrivingError as exc:
        report.status = "underdetermined"
        report.messages.append(str(exc))
        return report
    except SingularityError as exc:
        report.status = "locks"
        report.messages.append(str(exc))
        return report
    except CadmotionError as exc:
        report.status = "error"
        report.messages.append(str(exc))
        return report
    report.motion = dict(t_end=t_end, steps=steps, frames=motion.nt, complete=motion.complete,
                         t_reached=float(motion.time[-1]), message=motion.message)
    report.events = [dict(kind=e.kind, time=e.time, message=e.message) for e in motion.events]
    for jc in motion.joint_coordinates:
        report.ranges[jc.column] = [float(np.min(jc.values)), float(np.max(jc.values))]
    for j in spec.joints:
        for coord, (lo, hi) in j.limits:
            col = f"{j.name}.{coord}"
            try:
                values = motion.coordinate(col)
            except KeyError:
                continue
            bad = np.flatnonzero((values < lo - 1e-12) | (values > hi + 1e-12))
            if bad.size:
                t0 = float(motion.time[bad[0]])
                report.limits.append(dict(joint=j.name, coordinate=coord, time=t0, limits=[lo, hi],
                                          message=f"{col} leaves [{lo:.6g}, {hi:.6g}] at t = {t0:.6g} s"))
    if interference and any(p.shape is not None for p in spec.parts):
        clearance = _setting(spec, "clearance", clearance, 0.0)
        near = _setting(spec, "near", near, clearance + _NEAR_MARGIN)
        if exclude_jointed is None:
            exclude_jointed = not spec.setting("check.check_jointed", False)
        try:
            pairs = ignored_pairs(spec, tuple(ignore) + tuple(spec.setting("check.ignore", ())))
        except CadmotionError as exc:
            report.status = "error"
            report.messages.append(f"interference not checked: {exc}")
            return report
        else:
            _check_interference(report, motion, spec, clearance=clearance, exclude_jointed=exclude_jointed,
                                joint_clearance=_setting(spec, "joint_clearance", joint_clearance, 0.0),
                                near=near, ignore=pairs)
    if any(e.kind in ("lockup", "singular", "branch") for e in motion.events) or not motion.complete:
        report.status = "locks"
    elif report.collisions:
        report.status = "collides"
    elif report.limits:
        report.status = "limits"
    return report


#: m; pairs this much beyond their clearance are listed as close by default
_NEAR_MARGIN = 1e-3
#: colliding pairs a [[contacts]] proposal is written for (the first ones in the report)
_PROPOSED_PAIRS = 10


def _setting(spec, key, given, default):
    """An argument, else the model file's ``[check]`` value, else ``default``."""
    if given is not None:
        return given
    return spec.setting(f"check.{key}", default)


def ignored_pairs(spec, patterns):
    """Concrete (part_a, part_b) pairs matching ``patterns`` (names or fnmatch globs), a != b.

    A pattern pair that matches no two parts raises :class:`MechanismError` naming it, so
    that a renamed part does not silently turn an exception off.
    """
    from fnmatch import fnmatchcase

    names = [p.name for p in spec.parts if p.shape is not None] or [p.name for p in spec.parts]
    out = set()
    for a, b in patterns:
        first = [n for n in names if fnmatchcase(n, a)]
        second = [n for n in names if fnmatchcase(n, b)]
        found = {tuple(sorted((x, y))) for x in first for y in second if x != y}
        if not found:
            missing = a if not first else b
            raise MechanismError(f"ignore pair [{a!r}, {b!r}] matches no two parts ({missing!r} matches none)",
                                 hint="use part names as `cadmotion inspect` lists them; * and ? are wildcards")
        out |= found
    return sorted(out)


def _check_interference(report, motion, spec, **options):
    from .interference import find_interference

    try:
        found = find_interference(motion, spec, **options)
    except CadmotionError as exc:
        report.messages.append(f"interference not checked: {exc}")
        return
    declared = {frozenset(c.parts): c.name for c in spec.contacts}
    for pair in found.to_dicts():
        name = declared.get(frozenset(pair["parts"]))
        if name is None:
            report.collisions.append(pair)
        else:
            report.contacts.append(dict(pair, contact=name, message=f"declared contact {name!r}: {pair['message']}"))
    report.near = [p.to_dict() for p in found.near]
    report.messages += found.messages
    if report.collisions:
        from ..importers.modelfile import UNITS
        from .contact_proposal import propose_contacts

        scale = UNITS.get(spec.setting("length_unit", "m"), 1.0)
        pairs = [(c["parts"][0], c["parts"][1], c["first_time"]) for c in report.collisions[:_PROPOSED_PAIRS]
                 if c.get("first_time") is not None and c.get("moving", True)]
        try:
            report.proposed_contacts = propose_contacts(motion, spec, pairs, scale)
        except Exception as exc:  # OCCT failing on a shape must not lose the check's findings
            report.messages.append(f"no [[contacts]] proposal: {exc}")
