"""SchedulerCache: what the Volcano session keeps between the cycles of one cluster.

Kueue's scheduler keeps a cache beside the cluster's objects and takes a snapshot of it per
cycle; Volcano's SchedulerCache does the same. Here the cluster's facts live in ``ClusterState``
and this cache holds only what the scheduler derives from them: the node table and the nodes'
loads, what each pod and PodGroup object gives a task or a job, the job table, and the node
rankings of the last session. Each part is renewed from ``Changes`` (what watch events and
recorded decisions changed since the last cycle), so a cycle costs what changed. None of it is a
fact: a fresh cache gives the same decisions (``tests/unit/domain/scheduler/test_kept_snapshot.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.scheduler.candidates import Candidates
from domain.scheduler.job_table import JobTable
from domain.scheduler.node_table import NodeMemo
from domain.scheduler.object_facts import Facts


@dataclass(slots=True, eq=False)
class SchedulerCache:
    nodes: NodeMemo = field(default_factory=NodeMemo)
    facts: Facts = field(default_factory=Facts)
    jobs: JobTable | None = None
    rankings: Candidates | None = None  # node rankings, with node-local plugins only (``candidates``)
    # What an action keeps for the next session under its module's key (``retry``'s attempts).
    kept: dict[str, object] = field(default_factory=dict)
