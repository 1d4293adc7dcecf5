"""Progress display for long commands: a tqdm bar on a terminal, nothing in a pipe.

``tqdm`` is an optional extra (``pip install cadmotion[progress]``). Without it a
terminal gets one plain line per finished item instead of a bar; a pipe or a file
never gets progress output, only what the command prints at the end.

>>> bar = ProgressBar(3, unit="model", enabled=True)   # doctest: +SKIP
>>> bar.update("four_bar: ok")                          # doctest: +SKIP
>>> bar.close()                                         # doctest: +SKIP
"""

from __future__ import annotations

import sys

__all__ = ["ProgressBar", "is_terminal"]


def is_terminal(stream):
    """True if ``stream`` is an interactive terminal (False for pipes, files, closed streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ProgressBar:
    """Count finished items out of ``total``.

    Parameters
    ----------
    total : int, number of items expected.
    unit : what an item is called (``"model"``, ``"frame"``).
    desc : short label in front of the bar.
    enabled : False shows nothing at all (``--quiet``).
    stream : text stream, default ``sys.stderr``; progress is shown only if it is a terminal.

    ``update(text)`` counts one item (``text`` says which); ``write(line)`` prints a line
    without breaking the bar and is shown in pipes too (for notices that matter there);
    ``close()`` removes the bar. The object is also a context manager.
    """

    def __init__(self, total, *, unit="item", desc="", enabled=True, stream=None):
        self.total = int(total)
        self.unit = unit
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        self.count = 0
        self._bar = None
        self._lines = False
        self.active = bool(enabled) and is_terminal(self.stream)
        if not self.active or self.total <= 0:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self._lines = True
            return
        self._bar = tqdm(total=self.total, unit=unit, desc=desc or None, file=self.stream,
                         leave=False, dynamic_ncols=True)

    def update(self, text=""):
        """One more item finished; ``text`` names it (shown beside the bar)."""
        self.count += 1
        if self._bar is not None:
            if text:
                self._bar.set_postfix_str(text, refresh=False)
            self._bar.update(1)
        elif self._lines:
            print(f"[{self.count}/{self.total}] {text}", file=self.stream, flush=True)

    def write(self, line):
        """Print ``line`` on the stream, above the bar if there is one."""
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def close(self):
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
