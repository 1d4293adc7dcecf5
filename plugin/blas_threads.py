"""One BLAS thread for a run: cadmotion's matrices are small, and BLAS threads only fight over the cores for them.

numpy's and scipy's BLAS and LAPACK (OpenBLAS in pip's wheels and in Debian's numpy, which FreeCAD uses) start a
thread per core for every call. On matrices of tens to a few hundred rows the threads cost more than they save,
and where the cores are busy — the other workers of a batch, the user's other programs — they wait for each
other: on the shared 2-core machine a 30 × 30 ``eigvalsh`` took 0.83 ms with OpenBLAS's threads and 0.022 ms on
one, and a two-worker ``cadmotion batch`` of six closed-loop samples on the numpy path 28.9 s against 15.7 s
(``benchmarks/README.md``, "BLAS threads"). So a run (:func:`.run_analysis.run_analysis`, which every front end
calls) takes one thread, through threadpoolctl, unless the user's environment says how many BLAS should take.
"""

from __future__ import annotations

import os
from contextlib import nullcontext

__all__ = ["single_blas_thread", "USER_SETTINGS"]

#: environment variables by which a user sets BLAS's threads; where one is set, it stands
USER_SETTINGS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def single_blas_thread():
    """A context in which BLAS and LAPACK run on one thread (``threadpoolctl.threadpool_limits``), or one that
    changes nothing where the environment sets their threads (:data:`USER_SETTINGS`) or threadpoolctl is not
    installed (a Python that has only what FreeCAD brings)."""
    if any(os.environ.get(name) for name in USER_SETTINGS):
        return nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    # the limit holds for the libraries loaded when it is set: numpy's BLAS and scipy's own (its LAPACK wrappers,
    # which the kernel loads without scipy.linalg) are loaded first
    from ..kernel import lapack  # noqa: F401 (loads numpy and scipy's LAPACK and their BLAS)

    return threadpool_limits(limits=1, user_api="blas")
