"""A scheduling cycle made to raise while a pod ``ns/poison`` exists. No input we know of makes a
cycle raise (``tests/faults``), so the tests of what follows a failed cycle plant one: with
``monkeypatch.setattr(engine, "run_cycle", poisoned(engine.run_cycle))`` in the test's process,
or ``SITECUSTOMIZE`` in a worker's (a ``sitecustomize.py`` on its ``PYTHONPATH``, beside the
repository's root)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.decisions import Decision

POISON = "ns/poison"
MESSAGE = "a pod the cycle cannot handle"
SITECUSTOMIZE = """\
import domain.engine
from tests.poisoned_cycle import poisoned

domain.engine.run_cycle = poisoned(domain.engine.run_cycle)
"""

Cycle = Callable[..., list[Decision]]


def poisoned(real: Cycle) -> Cycle:
    """``real`` (``domain.cycle.run_cycle``), raising ZeroDivisionError while the pod ``POISON`` exists."""

    def cycle(state: Any, cache: Any, config: Any, *, seq: int) -> list[Decision]:
        if POISON in state.pods():
            raise ZeroDivisionError(MESSAGE)
        return real(state, cache, config, seq=seq)

    return cycle
