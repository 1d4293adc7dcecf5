"""A wall-time cap for benchmark runs (SIGALRM, POSIX), shared by the benchmark scripts."""
import signal


class TimeCap(BaseException):
    """Raised by SIGALRM; a BaseException so the formulations' error handling does not catch it."""


def _alarm(signum, frame):
    raise TimeCap()


def capped(seconds, fn, *args, **kw):
    """fn(*args, **kw), or raise :class:`TimeCap` after ``seconds`` of wall time (no cap where
    there is no SIGALRM or ``seconds`` is 0)."""
    if not hasattr(signal, "setitimer") or not seconds:
        return fn(*args, **kw)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kw)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
