"""Changes: which objects changed since the scheduler last looked, per kind.

The scheduler's caches (``domain.cache``) are kept between cycles and renewed only where
something changed. ``ClusterState`` reports every change it folds (a watch event, a deletion, a
recorded decision that changed an object's machine status) to its listener; a ``Changes`` is
that listener. Each kind has one taker (the cache that memoises that kind), and keys are kept
only for kinds someone takes: the first ``take`` returns nothing and starts keeping them, which
is right because a taker without a memo builds everything anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.objects.meta import ObjectKey


@dataclass(slots=True, eq=False)
class Changes:
    kept: dict[str, set[ObjectKey]] = field(default_factory=dict)

    def note(self, kind: str, key: ObjectKey) -> None:
        """``key`` of ``kind`` was added, changed or deleted."""
        keys = self.kept.get(kind)
        if keys is not None:
            keys.add(key)

    def take(self, kind: str) -> set[ObjectKey]:
        """The keys of ``kind`` changed since the last call (none on the first)."""
        keys = self.kept.get(kind, set())
        self.kept[kind] = set()
        return keys
