"""Generated modules in the code cache: Python files written once, loaded with the joint templates'
numba code bound into them.

The compiled dynamics library (:mod:`.dynamics.fast`) and the semi-recursive tree module
(:mod:`.dynamics.fast_tree`), one per parametrisation for every model, and the compiled kinematic
step (:mod:`.kinematics_fast`), one per model structure, generate their source and name its file by
a digest of everything it is compiled from; numba caches its machine code beside it. The source is
our own generated code, never text from a model file."""

import importlib.util
import os
import sys
import tempfile
import types


def write_source(path, src):
    """``path`` (a :class:`~pathlib.Path` in the code cache) with ``src`` written to it atomically if
    it is missing; None when the folder cannot be written (the caller then compiles in memory)."""
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(src)
            os.replace(tmp, path)
    except OSError:
        return None
    return path


def load_module(path, name, src, functions):
    """The generated module ``name``, imported from ``path`` (or, when it is None or unreadable,
    compiled from ``src`` in memory, without numba's disk cache), with each of its templates'
    numba ``functions`` (e.g. ``("jac", "phi")``) bound as ``<function>_<k>`` for template k of
    ``module.TEMPLATES``, and so are its row variants' (``jac_r0_into_<k>`` …, :mod:`.symbolic.codegen`)."""
    module = None
    if path is not None:
        from .numba_cache import configure

        configure()  # the machine code goes to the folder named by the kernel sources
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)  # our own generated code
        except OSError:
            module = None
    if module is None:  # read-only cache: compile in memory, without numba's disk cache
        module = types.ModuleType(name)
        sys.modules[name] = module  # a module generated after it may import from it (the tree from the library)
        exec(compile(src.replace("cache=True", "cache=False"), f"<{name}>", "exec"), module.__dict__)
    from .symbolic.codegen import generated

    for k, template in enumerate(getattr(module, "TEMPLATES", ())):  # none in a module importing them
        code = generated(template, module.PARAMETRIZATION, "numba")
        for fn in functions:
            setattr(module, f"{fn}_{k}", getattr(code, fn))
        for fn, function in code.row_variants.items():  # the dynamics library's row variants (``jac_r0_into`` …)
            setattr(module, f"{fn}_{k}", function)
    return module
