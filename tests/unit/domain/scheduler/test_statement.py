"""domain.scheduler.statement: a job whose tentative placements are all discarded is exactly as
it was (its ``allocated`` too, key order included), so the next snapshot keeps it instead of
building it again; a committed placement, or any other change, has it built again. Kept so,
the jobs decide what jobs built afresh every cycle decide, in a busy closed-loop run where
gangs are placed in part and taken back every cycle. A job whose PodGroup comes back with the
status the scheduler wrote keeps its tasks too."""

from __future__ import annotations

import io
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import quantity
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup
from domain.scheduler import job_table, shortfall
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.object_facts import same_but_status
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from domain.scheduler.statement import Statement
from services.simulate.loop import run_closed_loop
from tests import builders as b
from tests import spies
from tests.unit.domain.scheduler.test_kept_snapshot import _check, _decisions
from tests.unit.domain.scheduler.test_retry import BUSY, LARGE_GANGS


def _snapshot(job: JobInfo) -> Snapshot:
    return Snapshot({}, {}, {job.key: job}, [], [], {})


def _job() -> JobInfo:
    return JobInfo(ObjectKey("ns/g"), None, "default", 2, {}, None, 0.0, PodGroupPhase.INQUEUE,
                   allocated={"memory": 5, "cpu": 2})  # fmt: skip


def test_the_last_discard_puts_the_job_back_and_a_commit_spoils_it() -> None:
    job = _job()
    allocated = job.allocated
    view = _snapshot(job)
    view.opened(job)
    view.opened(job)
    job.allocated["gpu"] = 1  # what two placements add (a new key, then taken back to 0 below)
    job.allocated["cpu"] = 4
    view.closed(job, committed=False)
    assert view.restored == set()  # one placement is still open
    job.allocated.update(gpu=0, cpu=2)
    view.closed(job, committed=False)
    assert job.allocated is allocated
    assert list(job.allocated.items()) == [("memory", 5), ("cpu", 2)]
    assert view.restored == {job.key} and view.spoiled == set()

    committed = _snapshot(job)
    committed.opened(job)
    committed.closed(job, committed=True)
    assert committed.spoiled == {job.key} and committed.restored == set()


def test_a_job_changed_otherwise_is_not_put_back() -> None:
    job = _job()
    view = _snapshot(job)
    view.opened(job)
    view.spoil(job.key)  # e.g. a member evicted in the same session
    job.allocated["cpu"] = 1
    view.closed(job, committed=False)
    assert job.allocated["cpu"] == 1  # left to the next build
    assert view.restored == set()


@pytest.mark.parametrize("config", [SchedulerConfig(), LARGE_GANGS], ids=["default", "large-gangs"])
def test_jobs_kept_after_discarded_placements_decide_as_built_ones(
    config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shortfall, "find", lambda *_: None)  # every gang is placed in part, then taken back
    events = io.BytesIO()
    run_closed_loop(BUSY, BUSY.nodes, config, events, io.BytesIO())
    restored: list[str] = []
    closed = Snapshot.closed

    def counted(self: Snapshot, job: JobInfo, *, committed: bool) -> None:
        closed(self, job, committed=committed)
        if job.key in self.restored and any(t.status is TaskStatus.PENDING for t in job.tasks):
            restored.append(job.key)

    monkeypatch.setattr(Snapshot, "closed", counted)
    lines = events.getvalue().decode().splitlines()
    kept = _decisions(lines, config, fresh=False)
    assert len(restored) > 20  # gangs were placed in part, taken back and kept
    assert kept == _decisions(lines, config, fresh=True)


def test_a_podgroup_written_again_with_its_status_is_the_same_to_a_job() -> None:
    group = b.typed(b.pod_group("g", min_member=2, rv="1"))
    echoed = b.typed(b.pod_group("g", min_member=2, rv="7", phase="Inqueue"))
    other_spec = b.typed(b.pod_group("g", min_member=3, rv="7", phase="Inqueue"))
    owned = b.typed(b.pod_group("g", min_member=2, rv="7", job="j"))
    assert isinstance(group, PodGroup)
    assert same_but_status(group, group) and same_but_status(group, echoed)  # type: ignore[arg-type]
    assert not same_but_status(group, other_spec) and not same_but_status(group, owned)  # type: ignore[arg-type]


def test_jobs_keep_their_tasks_when_their_status_comes_back_and_decide_as_built_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = io.BytesIO()
    run_closed_loop(BUSY, BUSY.nodes, SchedulerConfig(), events, io.BytesIO())
    kept = spies.answers(monkeypatch, job_table, "_status_only")
    lines = events.getvalue().decode().splitlines()
    decided = _decisions(lines, SchedulerConfig(), fresh=False)
    assert sum(kept) > 20
    assert decided == _decisions(lines, SchedulerConfig(), fresh=True)


@pytest.mark.parametrize(
    "edited",
    [{"min_member": 3}, {"queue": "other"}, {"phase": "Inqueue", "min_member": 3}],
    ids=["minMember", "queue", "status and minMember"],
)
def test_a_podgroup_edited_otherwise_has_its_job_built_again(edited: dict[str, object]) -> None:
    """Three pods of a gang of two wait on a node with room for none; the PodGroup is then edited
    (nothing else changes): the kept snapshot's job is the one built from the new object."""
    group = {"min_member": 2, "rv": "1"}
    lines = [
        b.added(b.node("n1", cpu="1")),
        b.added(b.queue("other")),
        b.added(b.pod_group("g", **group)),  # type: ignore[arg-type]
        *(b.added(b.pod(f"p{i}", cpu="2", group="g")) for i in range(3)),
        *(b.marker(t) for t in (1, 2, 3)),  # admitted, then waiting with nothing new
        b.modified(b.pod_group("g", **{**group, "rv": "2", **edited})),  # type: ignore[arg-type]
        b.marker(4),
        b.marker(5),
    ]
    assert _check(lines, SchedulerConfig()) > 0


@pytest.mark.parametrize("committed", [False, True], ids=["discarded", "committed"])
def test_a_placement_of_a_task_that_was_not_plain_pending_has_its_job_built_again(committed: bool) -> None:
    """A pipelined task placed afresh (its status and node are not what a discard gives back)."""
    job = _job()
    task = TaskInfo(ObjectKey("ns/p"), cast(Pod, None), job.key, {"cpu": 1}, TaskStatus.PIPELINED, "n1")
    job.tasks.append(task)
    node = NodeInfo("n1", cast(Node, None), {"cpu": 4}, {"cpu": 4}, {})
    view = Snapshot({"n1": node}, {}, {job.key: job}, [], [], {})
    statement = Statement(Session(view, SchedulerConfig()))
    statement.allocate(task, "n1")
    if committed:
        statement.commit()
    else:
        statement.discard()
    assert view.spoiled == {job.key} and view.restored == set()


def _two_pending() -> tuple[JobInfo, list[TaskInfo], Snapshot, Statement]:
    """A job of two pending tasks, on a snapshot of one node with room for both, and a statement."""
    job = _job()
    tasks = [TaskInfo(ObjectKey(f"ns/p{n}"), cast(Pod, None), job.key, {"cpu": 1}, TaskStatus.PENDING) for n in (0, 1)]
    job.tasks.extend(tasks)
    node = NodeInfo("n1", cast(Node, None), {"cpu": 4}, {"cpu": 4}, {})
    view = Snapshot({"n1": node}, {}, {job.key: job}, [], [], {})
    return job, tasks, view, Statement(Session(view, SchedulerConfig()))


def test_every_status_a_statement_gives_moves_the_job_on_and_its_tally_follows() -> None:
    """What a job's tasks add up to is counted once per stamp (``JobInfo.tally``): each status a
    statement gives a task, and each it gives back, moves the stamp, so no count is stale."""
    job, tasks, _, statement = _two_pending()
    at_rest = job.tally()
    assert at_rest.pending == tasks and job.tally() is at_rest and job.placed() == 0
    stamps = [job.stamp]
    statement.allocate(tasks[0], "n1")
    stamps.append(job.stamp)
    assert job.placed() == 1 and job.pending() == tasks[1:]
    statement.pipeline(tasks[1], "n1")
    stamps.append(job.stamp)
    assert job.pipelined() == tasks[1:] and job.pending() == []
    statement.discard()
    stamps.append(job.stamp)
    assert len(set(stamps)) == len(stamps)  # never back to an earlier stamp, though the tasks are
    assert job.pending() == tasks and job.placed() == 0 and job.tally() is not at_rest


def test_placements_all_discarded_take_the_job_back_to_its_stamp() -> None:
    """A job whose tentative placements are all discarded is as it was (``Snapshot.closed``):
    its stamp goes back; a later move takes a stamp never given before."""
    job, tasks, view, statement = _two_pending()
    at_rest, stamp = job.tally(), job.stamp
    statement.allocate(tasks[0], "n1")
    statement.allocate(tasks[1], "n1")
    moved = job.tally()
    assert moved.placed == 2
    statement.discard()
    assert job.stamp == stamp and view.restored == {job.key}
    assert job.tally().pending == at_rest.pending == tasks and job.placed() == 0
    statement.allocate(tasks[0], "n1")
    assert job.stamp not in (stamp, moved.stamp) and job.placed() == 1


NODES = ("a", "b", "c")
ROOM = st.fixed_dictionaries({"cpu": st.integers(-1000, 3000)}, optional={"memory": st.integers(0, 4)})
ASKS = st.lists(
    st.tuples(st.sampled_from(NODES), st.integers(0, 2000), st.none() | st.integers(0, 3)), min_size=1, max_size=6
)
CHANGES = st.lists(st.dictionaries(st.sampled_from(NODES), ROOM), max_size=3)  # per turn, what each node gains


def _held(rooms: dict[str, dict[str, int]], asks: list[tuple[str, int, int | None]]) -> tuple[Statement, Snapshot]:
    """A statement whose Holds take what ``asks`` (node, cpu, memory) ask of nodes with ``rooms`` free."""
    node = b.typed(b.node("n", cpu="4", memory="8"))
    assert isinstance(node, Node)
    nodes = {name: NodeInfo(name, node, {"cpu": 4000}, dict(room), {}) for name, room in rooms.items()}
    snapshot = Snapshot(nodes, {}, {}, [], [], {})
    statement = Statement(Session(snapshot, SchedulerConfig()))
    for n, (where, cpu, memory) in enumerate(asks):
        pod = b.typed(b.pod(f"t{n}", cpu="1"))
        assert isinstance(pod, Pod)
        request = {"cpu": cpu} | ({} if memory is None else {"memory": memory})
        statement.hold(TaskInfo(ObjectKey(f"ns/t{n}"), pod, ObjectKey("ns/g"), request, TaskStatus.PENDING), where)
    return statement, snapshot


@given(st.fixed_dictionaries(dict.fromkeys(NODES, ROOM)), ASKS, CHANGES)
def test_room_held_again_is_what_holding_it_afresh_takes(
    rooms: dict[str, dict[str, int]], asks: list[tuple[str, int, int | None]], changes: list[dict[str, dict[str, int]]]
) -> None:
    """Holds given back (lent) and taken again, turn after turn while the nodes' free room changes
    or comes back as it was, take what holding afresh on that free room takes, and their totals
    per node are their sums: the Holds on a node whose free room is as it was when they took
    theirs take the same again at once, the others afresh."""
    statement, snapshot = _held(rooms, asks)
    for change in [*changes, *[{node: {k: -v for k, v in gain.items()} for node, gain in change.items()}
                               for change in reversed(changes)], {}]:  # fmt: skip
        statement.give_back()
        for node, gain in change.items():
            quantity.add(snapshot.nodes[node].idle, gain)
            quantity.add(rooms[node], gain)
        statement.hold_again()
        fresh, again = _held(rooms, asks)
        assert statement.holding() == fresh.holding()
        assert {name: info.idle for name, info in snapshot.nodes.items()} == {
            name: info.idle for name, info in again.nodes.items()
        }
        assert statement.held_totals() == fresh.held_totals()
