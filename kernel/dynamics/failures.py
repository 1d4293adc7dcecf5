"""The exception a formulation's evaluation or step raises on a numerical failure; the driver in
:mod:`.contract` turns it into a stopped run (frames so far and a message). Its own module so the
crossing methods (:mod:`.crossing`) raise it without importing the driver that calls them."""


class _Failure(Exception):
    """A numerical failure inside an evaluation (singular matrix, no convergence)."""
