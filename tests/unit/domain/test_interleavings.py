"""SEEDS S1 as a property: random interleavings of several Job deletion cascades (Job,
PodGroup, Pods; background or foreground, each event at any place) and unrelated events give
the same decisions and the same final state as the usual order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from tests import builders as b

EXAMPLES = 400

# (job, gpus per pod): two gangs that run on the two 4-GPU nodes, one that never fits.
GANGS = (("a", "2"), ("b", "2"), ("w", "8"))


def _pod(job: str, i: int, gpu: str, **kwargs: Any) -> dict[str, Any]:
    return b.pod(f"{job}-{i}", cpu="1", memory="1Gi", gpu=gpu, group=f"{job}-pg", job=job, **kwargs)


def _setup() -> list[str]:
    lines = [b.added(b.node(f"n-{i}", gpu="4", rv=str(10 + i))) for i in range(2)]
    for job, gpu in GANGS:
        lines += [b.added(b.job(job, min_available=2)), b.added(b.pod_group(f"{job}-pg", min_member=2, job=job))]
        lines += [b.added(_pod(job, i, gpu)) for i in range(2)]
    lines.append(b.added(b.pod("lone", gpu="16")))  # never fits: pending throughout
    lines.append(b.marker(1))
    return lines


def _cascade(job: str, gpu: str) -> list[str]:
    """Every event a Job's deletion produces; its usual (foreground) order is the list order."""
    return [
        b.modified(b.job(job, min_available=2, rv="3", deleted_at=10)),
        b.modified(_pod(job, 0, gpu, rv="3", deleted_at=10)),
        b.modified(_pod(job, 1, gpu, rv="3", deleted_at=10)),
        b.deleted(_pod(job, 0, gpu, rv="4", deleted_at=10)),
        b.deleted(_pod(job, 1, gpu, rv="4", deleted_at=10)),
        b.modified(b.pod_group(f"{job}-pg", min_member=2, job=job, rv="3", deleted_at=10)),
        b.deleted(b.pod_group(f"{job}-pg", min_member=2, job=job, rv="4", deleted_at=10)),
        b.deleted(b.job(job, min_available=2, rv="4", deleted_at=10)),
    ]


def _unrelated() -> list[str]:
    return [
        b.modified(b.node("n-0", gpu="4", rv="20", labels={"zone": "a"})),
        b.modified(b.node("n-0", gpu="4", rv="21", labels={"zone": "b"})),
        b.added(b.node("n-1", gpu="4", rv="11")),  # a relist: known object, same version
        b.event("BOOKMARK", {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "50"}}),
        b.added({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": b.meta("d", "ns")}),
        b.added({"apiVersion": "v1", "kind": "Namespace", "metadata": b.meta("team")}),
        b.modified(b.pod("lone", gpu="16", rv="2")),
    ]


TAIL = [line for job, gpu in GANGS for line in _cascade(job, gpu)] + _unrelated()


def _final(engine: Engine) -> dict[str, Any]:
    """The final state, without counters (a late event for a deleted object is counted as stale)."""
    state = engine.state("c1")
    return {
        "objects": {kind: dict(sorted(store.items())) for kind, store in sorted(state.objects.items()) if store},
        "machines": {
            kind: {key: (s.uid, s.phase, s.node, s.reported, s.illegal) for key, s in sorted(store.items())}
            for kind, store in sorted(state.machines.items())
            if store
        },
        "tombstones": sorted(state.tombstones),
        "illegal": state.counters["illegal_transition"],
    }


def _run(order: list[int], markers: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    engine = Engine(SchedulerConfig(), on_markers=lambda _: markers)
    lines = list(_setup())
    for n, index in enumerate(order):
        lines.append(TAIL[index])
        if markers:
            lines.append(b.marker(100 + n))
    decisions = [d.to_dict() for line in lines for d in engine.handle(parse_event(line)).decisions]
    return decisions, _final(engine)


def test_s1_random_interleavings_of_cascades_and_unrelated_events_end_the_same() -> None:
    baselines = {markers: _run(list(range(len(TAIL))), markers) for markers in (True, False)}
    for decisions, final in baselines.values():
        kinds = [(d["kind"], d["target"]["name"]) for d in decisions]
        assert ("PodGroupStatus", "a-pg") in kinds and ("PodGroupStatus", "w-pg") in kinds
        assert all(d["seq"] < len(_setup()) for d in decisions), "no decision once the cascades begin"
        assert final["machines"].get("PodGroup") is None and final["illegal"] == 0
    explored: set[tuple[tuple[int, ...], bool]] = set()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
    @given(order=st.permutations(range(len(TAIL))), markers=st.booleans())
    def check(order: list[int], markers: bool) -> None:
        explored.add((tuple(order), markers))
        assert _run(order, markers) == baselines[markers]

    check()
    print(f"\nS1 property: {len(explored)} distinct interleavings of {len(TAIL)} events explored")
    assert len(explored) >= EXAMPLES * 0.9
