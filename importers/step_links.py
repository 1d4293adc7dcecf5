"""From the kinematic links of a STEP file to the parts of its assembly: through the link
representations, their association with shape representations, the product behind them and,
for products with several instances, the assembly occurrence (see :mod:`.step_kinematics`,
"From a pair to two parts")."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..errors import CadImportError
from .part_names import clean_name
from .step_part21 import (FORMATION_TYPES, LINK_REPRESENTATIONS, PRODUCT_DEFINITION_TYPES, Part21Index,
                          Ref)


class Links:
    """Maps KINEMATIC_LINKs to the parts of a StepAssembly (how: the module docstring)."""

    def __init__(self, model: Part21Index, asm):
        self.model = model
        self.asm = asm
        self._reps_of_link: Optional[Dict[int, List[int]]] = None
        self._assoc_of_rep: Optional[Dict[int, List[int]]] = None
        self._sdr_of_rep: Optional[Dict[int, List[int]]] = None
        self._srr: Optional[Dict[int, List[int]]] = None
        self._cdklr: Optional[Dict[int, List[int]]] = None
        self._pds_of_def: Optional[Dict[int, List[int]]] = None
        self._part_of: Dict[int, str] = {}
        self._rep_fields: Dict[int, dict] = {}

    # -- indexes built on first use
    def reps_of_link(self, link) -> List[int]:
        """Ids of the link representations whose ``represented_link`` is ``link`` (index built on first use)."""
        if self._reps_of_link is None:
            self._reps_of_link = {}
            for rid in self.model.ids(*LINK_REPRESENTATIONS):
                _, f = self.model.fields(rid, LINK_REPRESENTATIONS)
                self._rep_fields[rid] = f
                link_ref = f["represented_link"]
                if isinstance(link_ref, Ref):
                    self._reps_of_link.setdefault(int(link_ref), []).append(rid)
        return self._reps_of_link.get(int(link), [])

    def rep(self, rid) -> dict:
        """Attributes of the link representation ``rid`` by name (cached)."""
        if rid not in self._rep_fields:
            _, self._rep_fields[rid] = self.model.fields(rid, LINK_REPRESENTATIONS)
        return self._rep_fields[rid]

    def _assocs(self, rep) -> List[int]:
        if self._assoc_of_rep is None:
            self._assoc_of_rep = {}
            for aid in self.model.ids("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION"):
                _, f = self.model.fields(aid, ("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION",))
                for key in ("rep_1", "rep_2"):
                    if isinstance(f[key], Ref):
                        self._assoc_of_rep.setdefault(int(f[key]), []).append(aid)
        return self._assoc_of_rep.get(int(rep), [])

    def _sdrs(self, rep) -> List[int]:
        if self._sdr_of_rep is None:
            self._sdr_of_rep = {}
            for sid in self.model.ids("SHAPE_DEFINITION_REPRESENTATION"):
                f = self.model.try_fields(sid, ("SHAPE_DEFINITION_REPRESENTATION",))
                if f is not None and isinstance(f["used_representation"], Ref):
                    self._sdr_of_rep.setdefault(int(f["used_representation"]), []).append(sid)
        return self._sdr_of_rep.get(int(rep), [])

    def _related_reps(self, rep) -> List[int]:
        """Shape representations related to ``rep`` without a transformation."""
        if self._srr is None:
            self._srr = {}
            for rid in self.model.ids("SHAPE_REPRESENTATION_RELATIONSHIP",
                                      "REPRESENTATION_RELATIONSHIP"):
                if not self.model.record(rid).simple:  # complex ones place a component
                    continue
                f = self.model.try_fields(rid, ("SHAPE_REPRESENTATION_RELATIONSHIP",
                                                "REPRESENTATION_RELATIONSHIP"))
                if f is None:
                    continue
                a, b = f["rep_1"], f["rep_2"]
                if isinstance(a, Ref) and isinstance(b, Ref):
                    self._srr.setdefault(int(a), []).append(int(b))
                    self._srr.setdefault(int(b), []).append(int(a))
        return self._srr.get(int(rep), [])

    def _cdklrs(self, assoc) -> List[int]:
        if self._cdklr is None:
            self._cdklr = {}
            for cid in self.model.ids("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION"):
                _, f = self.model.fields(cid, ("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION",))
                if isinstance(f["representation_relation"], Ref):
                    self._cdklr.setdefault(int(f["representation_relation"]), []).append(cid)
        return self._cdklr.get(int(assoc), [])

    # -- product structure
    def _product_of_pd(self, pd, referrer) -> Tuple[int, Optional[str]]:
        """(PRODUCT id, OCCT's product name) of a PRODUCT_DEFINITION."""
        m = self.model
        _, f = m.fields(pd, PRODUCT_DEFINITION_TYPES, referrer)
        pdf = m.ref(f["formation"], pd, "formation")
        _, g = m.fields(pdf, FORMATION_TYPES, pd)
        prod = m.ref(g["of_product"], pdf, "of_product")
        _, h = m.fields(prod, ("PRODUCT",), pdf)
        name = m.string(h["name"]) or m.string(h["id"])
        return int(prod), clean_name(name)

    def _pds_definitions(self, shape_rep) -> List[Tuple[int, int]]:
        """(SDR id, definition id) of the product definition shapes of a shape rep."""
        m = self.model
        seen, todo, out = {int(shape_rep)}, [int(shape_rep)], []
        depth = 0
        while todo and not out and depth < 4:
            nxt = []
            for rep in todo:
                for sid in self._sdrs(rep):
                    pds = m.fields(sid, ("SHAPE_DEFINITION_REPRESENTATION",))[1]["definition"]
                    if not isinstance(pds, Ref):
                        continue
                    g = m.try_fields(pds, ("PRODUCT_DEFINITION_SHAPE",))
                    if g is not None and isinstance(g["definition"], Ref):
                        out.append((sid, int(g["definition"])))
                for other in self._related_reps(rep):
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            todo, depth = nxt, depth + 1
        return out

    def _pds_of(self, definition) -> List[int]:
        """PRODUCT_DEFINITION_SHAPEs whose definition is ``definition``."""
        if self._pds_of_def is None:
            self._pds_of_def = {}
            for pid in self.model.ids("PRODUCT_DEFINITION_SHAPE"):
                f = self.model.try_fields(pid, ("PRODUCT_DEFINITION_SHAPE",))
                if f is not None and isinstance(f["definition"], Ref):
                    self._pds_of_def.setdefault(int(f["definition"]), []).append(pid)
        return self._pds_of_def.get(int(definition), [])

    def _nauo(self, nid, referrer):
        """(fields, OCCT's instance name or None) of a NEXT_ASSEMBLY_USAGE_OCCURRENCE."""
        m = self.model
        _, f = m.fields(nid, ("NEXT_ASSEMBLY_USAGE_OCCURRENCE",), referrer,
                        what="NEXT_ASSEMBLY_USAGE_OCCURRENCE (a part instance)")
        # OCCT names an instance by the occurrence's description, else name, else id, when
        # a PRODUCT_DEFINITION_SHAPE refers to the occurrence (else by its product's name)
        inst = None
        if self._pds_of(nid):
            inst = clean_name(m.string(f["description"]) or m.string(f["name"])
                               or m.string(f["id"]))
        return f, inst

    def _is_assembly(self, pd) -> bool:
        for nid in self.model.ids("NEXT_ASSEMBLY_USAGE_OCCURRENCE"):
            f = self.model.try_fields(nid, ("NEXT_ASSEMBLY_USAGE_OCCURRENCE",))
            if f is not None and isinstance(f["relating"], Ref) and int(f["relating"]) == int(pd):
                return True
        return False

    def part_of(self, link) -> str:
        """The part (StepAssembly part name) that KINEMATIC_LINK ``link`` is."""
        link = int(link)
        if link in self._part_of:
            return self._part_of[link]
        m, asm = self.model, self.asm
        _, lf = m.fields(link, ("KINEMATIC_LINK",), what="KINEMATIC_LINK")
        lname = m.string(lf["name"]) or f"#{link}"
        label = f"link #{link} {lname!r}"
        reps = self.reps_of_link(link)
        if not reps:
            raise CadImportError(
                f"{label} has no link representation (RIGID_LINK_REPRESENTATION), so it "
                "cannot be matched to a part", where=m.where,
                hint="the exporter must write a RIGID_LINK_REPRESENTATION for every link")
        assocs = [a for r in reps for a in self._assocs(r)]
        if not assocs:
            raise CadImportError(
                f"{label} is not associated with a part's shape "
                "(no KINEMATIC_LINK_REPRESENTATION_ASSOCIATION)", where=m.where,
                hint="the exporter must relate each link representation to the shape "
                     "representation of its part")
        pds, nauos = [], []
        for aid in assocs:
            rec = m.record(aid)
            if "REPRESENTATION_RELATIONSHIP_WITH_TRANSFORMATION" in rec.partials:
                raise CadImportError(
                    f"{label}: association #{aid} places the link with a transformation, "
                    "which is not supported", where=m.where,
                    hint="write the link representation in the part's coordinate space")
            _, af = m.fields(aid, ("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION",))
            for key in ("rep_1", "rep_2"):
                other = af[key]
                if isinstance(other, Ref) and int(other) not in reps:
                    pds += self._pds_definitions(other)
            for cid in self._cdklrs(aid):
                _, cf = m.fields(cid, ("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION",))
                pdrk = m.ref(cf["represented_product_relation"], cid, "represented_product_relation")
                _, pf = m.fields(pdrk, ("PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS",), cid)
                d = m.ref(pf["definition"], pdrk, "definition")
                drec = m.record(d, pdrk)
                if "PRODUCT_DEFINITION_SHAPE" in drec.partials:
                    _, df = m.fields(d, ("PRODUCT_DEFINITION_SHAPE",), pdrk)
                    d = m.ref(df["definition"], d, "definition")
                    drec = m.record(d, pdrk)
                if "NEXT_ASSEMBLY_USAGE_OCCURRENCE" in drec.partials:
                    nauos.append(int(d))
                elif any(t in drec.partials for t in PRODUCT_DEFINITION_TYPES):
                    pds.append((pdrk, int(d)))
                else:
                    raise CadImportError(
                        f"{label}: #{pdrk} relates to #{int(d)} ({drec.type}), expected a "
                        "NEXT_ASSEMBLY_USAGE_OCCURRENCE or PRODUCT_DEFINITION", where=m.where,
                        hint="the file does not follow the ISO 10303-105 entity layouts")
        # product definitions behind the shapes (a PDS of an occurrence counts as that occurrence)
        pd_ids = set()
        for src, d in pds:
            drec = m.record(d, src)
            if "NEXT_ASSEMBLY_USAGE_OCCURRENCE" in drec.partials:
                nauos.append(int(d))
            elif any(t in drec.partials for t in PRODUCT_DEFINITION_TYPES):
                pd_ids.add(int(d))
        inst_names = []
        for nid in dict.fromkeys(nauos):
            f, inst = self._nauo(nid, link)
            related = m.ref(f["related"], nid, "related")
            pd_ids.add(int(related))
            inst_names.append((nid, inst))
        if not pd_ids:
            raise CadImportError(
                f"{label}: the shape it is associated with belongs to no product "
                "(no SHAPE_DEFINITION_REPRESENTATION)", where=m.where,
                hint="associate the link with the shape representation of a part")
        products = {self._product_of_pd(pd, link) for pd in pd_ids}
        if len({p for p, _ in products}) > 1:
            raise CadImportError(
                f"{label} is associated with several products: "
                + ", ".join(sorted(repr(n) for _, n in products)), where=m.where,
                hint="a link must be one part")
        pname = next(iter(products))[1]
        keys = [k for k, n in asm.product_names.items() if n == pname] if pname else []
        candidates = [p for p in asm.parts if asm.products.get(p.name) in keys]
        if not candidates:
            if any(self._is_assembly(pd) for pd in pd_ids):
                raise CadImportError(
                    f"{label} is the sub-assembly {pname!r}; cadmotion needs every link to be "
                    "a single part", where=m.where,
                    hint="make each link a part in the CAD system, or join the sub-assembly's "
                         "parts with fixed joints in a model file")
            raise CadImportError(
                f"{label} is product {pname!r}, which is not a part of the assembly read from "
                "the file", where=m.where,
                hint="read the assembly and the kinematics from the same file")
        if len(candidates) > 1:
            narrowed = []
            for _, inst in inst_names:
                if inst is None:
                    continue
                narrowed += [p for p in candidates
                             if p.name == inst or p.path.split("/")[-1] == inst]
            narrowed = list({p.name: p for p in narrowed}.values())
            if len(narrowed) != 1:
                names = ", ".join(p.name for p in candidates[:8])
                named = [inst for _, inst in inst_names if inst]
                why = (f"its occurrence ({', '.join(repr(n) for n in named)}) matches "
                       f"{len(narrowed) or 'none'} of them" if named
                       else "the file does not say which one it is")
                raise CadImportError(
                    f"{label} is product {pname!r}, which has {len(candidates)} instances "
                    f"({names}), and {why}", where=m.where,
                    hint="the exporter must write a CONTEXT_DEPENDENT_KINEMATIC_LINK_"
                         "REPRESENTATION naming the NEXT_ASSEMBLY_USAGE_OCCURRENCE of the link")
            candidates = narrowed
        part = candidates[0].name
        if "@" in asm.products.get(part, ""):
            raise CadImportError(
                f"{label} is part {part!r}, which the assembly places by a mirror or scaling; "
                "its pair frames cannot be expressed in a rigid part frame", where=m.where,
                hint="mirror the part's geometry in the CAD system instead of its placement")
        self._part_of[link] = part
        return part


