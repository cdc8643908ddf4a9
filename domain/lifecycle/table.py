"""Lifecycle: one kind's state machine as a table of data.

A machine is a tuple of ``Row(source, trigger, target)`` rows that read "in phase X, fact Y
moves to Z". Phases and triggers are ``StrEnum`` members of the kind's module; triggers are
facts derived from watch events (``ObservedRunning``, ``DeletionStarted``, ``Deleted``) or
from our own decisions (``BindDecided``). There are no wildcard sources, no guards and no
``to_<phase>`` shortcuts: a table says what is legal, the scheduler decides what is wise.
A (phase, trigger) pair without a row is an ``IllegalTransition``, which ClusterState records
and counts instead of applying.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

P = TypeVar("P", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class Row(Generic[P, T]):
    source: P
    trigger: T
    target: P


class IllegalTransition(Exception):
    """A fact that no row allows in the object's phase: a bug or a stream we cannot trust."""

    def __init__(self, kind: str, phase: str, trigger: str) -> None:
        self.kind, self.phase, self.trigger = kind, phase, trigger
        super().__init__(self.reason)

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self.trigger} is not legal in phase {self.phase}"


@dataclass(frozen=True)
class Lifecycle(Generic[P, T]):
    """A kind's phases, triggers and rows; ``initial`` is the phase before the first sighting."""

    kind: str
    phases: type[P]
    triggers: type[T]
    initial: P
    rows: tuple[Row[P, T], ...]
    _index: dict[tuple[P, T], P] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[P, T], P] = {}
        for row in self.rows:
            if (row.source, row.trigger) in index:
                raise ValueError(f"{self.kind}: two rows for {row.trigger} in {row.source}")
            for member, enum in ((row.source, self.phases), (row.target, self.phases), (row.trigger, self.triggers)):
                if not isinstance(member, enum):
                    raise TypeError(f"{self.kind}: {member!r} is not a {enum.__name__}")
            index[(row.source, row.trigger)] = row.target
        object.__setattr__(self, "_index", index)

    def step(self, phase: P, trigger: T) -> P:
        """The phase ``trigger`` moves ``phase`` to, or raise IllegalTransition."""
        target = self._index.get((phase, trigger))
        if target is None:
            raise IllegalTransition(self.kind, phase, trigger)
        return target

    def triggers_in(self, phase: P) -> list[T]:
        """The facts that are legal in ``phase``, in table order."""
        return [row.trigger for row in self.rows if row.source == phase]

    def is_terminal(self, phase: P) -> bool:
        return not self.triggers_in(phase)
