"""A run takes one BLAS thread (plugin/blas_threads.py): its matrices are small, and BLAS's threads only fight over
the cores for them (a two-worker batch on the numpy path: 29 s against 16 s, ``benchmarks/README.md``)."""
from pathlib import Path

import pytest

from cadmotion.importers import load
from cadmotion.plugin.blas_threads import USER_SETTINGS
from cadmotion.plugin.run_analysis import run_spec

threadpoolctl = pytest.importorskip("threadpoolctl")

SLIDER_CRANK = Path(__file__).resolve().parents[2] / "samples" / "slider_crank.cadmotion.toml"


def _blas_threads():
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


def _threads_during_a_run():
    seen = []
    run_spec(load(SLIDER_CRANK), "kinematic", t_end=0.1, steps=4, progress=lambda k, nt: seen.append(_blas_threads()))
    return seen


@pytest.fixture
def two_blas_threads(monkeypatch):
    """BLAS set to two threads, the user's environment silent; skipped where BLAS cannot take two."""
    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    from cadmotion.kernel import lapack  # noqa: F401 (numpy's and scipy's BLAS loaded, as a run loads them)

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if not _blas_threads() or min(_blas_threads()) < 2:
            pytest.skip("BLAS here runs one thread whatever it is asked")
        yield


def test_a_run_takes_one_blas_thread_and_gives_the_others_back(two_blas_threads):
    seen = _threads_during_a_run()
    assert seen and all(threads == [1] * len(threads) for threads in seen), seen
    assert min(_blas_threads()) == 2


def test_threads_the_user_sets_in_the_environment_stand(two_blas_threads, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    seen = _threads_during_a_run()
    assert seen and all(min(threads) == 2 for threads in seen), seen
