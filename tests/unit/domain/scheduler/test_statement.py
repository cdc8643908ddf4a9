"""domain.scheduler.statement: a job whose tentative placements are all discarded is exactly as
it was (its ``allocated`` too, key order included), so the next snapshot keeps it instead of
building it again; a committed placement, or any other change, has it built again. Kept so,
the jobs decide what jobs built afresh every cycle decide, in a busy closed-loop run where
gangs are placed in part and taken back every cycle."""

from __future__ import annotations

import io

import pytest

from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.meta import ObjectKey
from domain.scheduler import shortfall
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import JobInfo, TaskStatus
from domain.scheduler.snapshot import Snapshot
from services.simulate.loop import run_closed_loop
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions
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
