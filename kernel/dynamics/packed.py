"""A model packed for the compiled library: its Model (constants) and a run's Data (mutable arrays).

:mod:`.layout` names every array; :func:`pack` packs a model's arrays, in the layout's order, into a
:class:`PackedModel` — the floats ``df`` and the integers ``di`` (a header locating every array, then the
integer arrays) — and :func:`make_data` makes a :class:`PackedData` for it: the per-call floats ``dd``
and the workspace ``ws``, each starting from the values packed. The compiled stages are functions of
(model, data): ``rhs(t, y, df, di, dd, ws)``, ``stage_kinematics(y, df, di, ws)``, ... (:mod:`._kernels`).

Header: 4 integers per array in packing order — its offset in the flat array of its kind, then up to
three dimensions (compiled code reads an array by its header index: ``_kernels.f2(df, di, k)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["PackedModel", "PackedData", "pack", "make_data", "check_shapes", "zeros", "library_constants"]


@dataclass(frozen=True)
class PackedModel:
    """A model's constants as the compiled library reads them.

    Attributes
    ----------
    df : ndarray (float64)
        The model floats (kind "f"), flat.
    di : ndarray (int64)
        The header (4 per array), then the model integers (kind "i"), flat.
    names : tuple of str
        Every packed array's name, in header order (group arrays suffixed ``_<group>``).
    kinds : tuple of str
        Their kinds (:data:`.layout.KINDS`).
    shapes : tuple of tuple
        Their shapes.
    offsets : tuple of int
        Each array's offset in the flat array of its kind (as in the header).
    dd0 : ndarray (float64)
        The per-call arrays' values when packed (a new :class:`PackedData` starts from them).
    ws0 : ndarray (float64)
        The workspace's values when packed (zeros but for arrays a formulation starts from, such as the
        semi-recursive tree's sign references ``t_pref`` and the recursive one's kept rows ``t_krow``).
    """

    df: np.ndarray
    di: np.ndarray
    names: tuple
    kinds: tuple
    shapes: tuple
    offsets: tuple
    dd0: np.ndarray
    ws0: np.ndarray
    index: dict = field(repr=False)

    def offset(self, name):
        """(kind, offset in its flat array, shape) of the array ``name``."""
        k = self.index[name]
        return self.kinds[k], self.offsets[k], self.shapes[k]

    def array(self, name):
        """A read-only view of the model array ``name`` (kind "f" or "i")."""
        kind, o, shape = self.offset(name)
        if kind not in "fi":
            raise KeyError(f"{name!r} is a {kind!r} array of the run's data, not of the model")
        flat = self.df if kind == "f" else self.di
        view = flat[o: o + math.prod(shape)].reshape(shape)
        view.flags.writeable = False
        return view


@dataclass
class PackedData:
    """A run's mutable arrays for a :class:`PackedModel`: ``dd`` (kind "d") and ``ws`` (kind "w"), and
    ``views``, each of their arrays by name (views into ``dd`` and ``ws``: writing one writes them)."""

    dd: np.ndarray
    ws: np.ndarray
    views: dict

    def snapshot(self):
        """A copy of the per-call data (what the run keeps besides y, e.g. at a frame)."""
        return self.dd.copy()

    def restore(self, snapshot):
        """Set the per-call data from a :meth:`snapshot`."""
        self.dd[:] = snapshot


def pack(entries):
    """A :class:`PackedModel` of ``entries``, [(name, kind, array)] in header order (arrays of kind "i"
    as int64, the others float64, C order)."""
    arrays = [np.ascontiguousarray(a, dtype=np.int64 if kind == "i" else np.float64) for _, kind, a in entries]
    n = len(arrays)
    header = np.zeros(4 * n, dtype=np.int64)
    chunks = {"f": [], "i": [], "d": [], "w": []}
    sizes = {"f": 0, "i": 4 * n, "d": 0, "w": 0}
    for k, ((_, kind, _), a) in enumerate(zip(entries, arrays)):
        header[4 * k] = sizes[kind]
        header[4 * k + 1: 4 * k + 1 + min(a.ndim, 3)] = a.shape[:3]
        chunks[kind].append(a.reshape(-1))
        sizes[kind] += a.size

    def flat(kind, dtype=np.float64):
        return np.concatenate(chunks[kind]).astype(dtype) if chunks[kind] else np.zeros(0, dtype)

    names = tuple(name for name, _, _ in entries)
    return PackedModel(df=flat("f"), di=np.concatenate([header, flat("i", np.int64)]), names=names,
                       kinds=tuple(kind for _, kind, _ in entries), shapes=tuple(a.shape for a in arrays),
                       offsets=tuple(int(o) for o in header[::4]),
                       dd0=flat("d"), ws0=flat("w"), index={name: k for k, name in enumerate(names)})


def make_data(model):
    """A new :class:`PackedData` for ``model``: the per-call arrays and the workspace as packed."""
    dd, ws = model.dd0.copy(), model.ws0.copy()
    views = {}
    for name, kind, o, shape in zip(model.names, model.kinds, model.offsets, model.shapes):
        if kind in "dw":
            flat = dd if kind == "d" else ws
            views[name] = flat[o: o + math.prod(shape)].reshape(shape)
    return PackedData(dd=dd, ws=ws, views=views)


def _size(dim, sizes, constants):
    """The size a layout dimension names, or None for a count bound by the arrays (``n_*``)."""
    if isinstance(dim, int):
        return dim
    if dim in sizes:
        return sizes[dim]
    if dim in constants:
        return constants[dim]
    if dim.startswith("n_") or dim in ("n", "neq"):
        return None
    raise KeyError(f"layout size {dim!r} is neither a model size, a constant nor a count n_*")


def zeros(fld, sizes, constants):
    """A zero array of a :class:`.layout.Field`'s shape: the workspace and per-call data a model starts with,
    or, with its counts ``n_*`` 0, the empty arrays of an element type the model does not have."""
    shape = tuple(_size(d, sizes, constants) or 0 for d in fld.shape)
    return np.zeros(shape, dtype=np.int64 if fld.kind == "i" else np.float64)


def check_shapes(fields, arrays, sizes, constants):
    """Hold ``arrays`` ({name: array}) to the shapes of ``fields`` (:class:`.layout.Field`): the model's
    ``sizes`` and the library's ``constants`` as given, each count ``n_*`` the same in every array that
    names it. A ValueError names the first array that differs, what the layout declares and why."""
    bound = {}
    for fld in fields:
        a = arrays[fld.name]
        shape = a.shape if isinstance(a, np.ndarray) else np.shape(a)
        if len(shape) != fld.ndim:
            raise ValueError(f"packed array {fld.name!r} has shape {shape}: the layout (kernel/dynamics/layout.py) "
                             f"declares {fld.shape}")
        for dim, n in zip(fld.shape, shape):
            want = _size(dim, sizes, constants)
            if want is None:
                want, source = bound.setdefault(dim, (n, fld.name))
            else:
                source = "the model" if dim in sizes else "the compiled code"
            if n != want:
                raise ValueError(f"packed array {fld.name!r} has shape {shape}: the layout (kernel/dynamics/"
                                 f"layout.py) declares {fld.shape} with {dim} = {want} (from {source})")


def library_constants():
    """The constants of the compiled code that :mod:`.layout` shapes name (upper case)."""
    from . import _contact_kernels as C
    from . import _kernels as K
    from .tyres import N_PAR as N_TYRE_PAR
    from .tyres import TYRE_OUTPUTS

    return dict(N_STAB=K.N_STAB, N_GRP=K.G_BASE + 1, N_TYRE_PAR=N_TYRE_PAR, N_TYRE_OUT=len(TYRE_OUTPUTS),
                N_CT_PAR=C.N_PAR, N_CT_PAIR=C.Q_ALWAYS + 1, N_CT_PC=C.N_PC, N_CT_FT=C.N_FT, N_CT_BX=C.N_BX,
                N_CT_STATS=C.N_STATS)
