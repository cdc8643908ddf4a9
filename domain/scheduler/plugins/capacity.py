"""capacity: queues with elastic quotas. ``capability`` is a hard cap, ``guarantee`` is kept
for the queue, ``deserved`` orders queues by how much of it they use. With
``enableHierarchy`` queues form a tree under ``root``: a child inherits the limits its parent
sets and it does not, and neither a placement nor an enqueued minimum may take any ancestor
past its real capability (Volcano's hierarchical capacity plugin). A child without its own
``deserved`` gets a share of its parent's (what its siblings' own ``deserved`` leave), split by
``weight`` among such siblings as proportion splits the cluster; root deserves the cluster.
Queues are ordered as upstream orders them in a tree: two leaves compare by the shares of their
ancestors just below the deepest one they have in common, so a queue under an over-served parent
goes after one under an under-served parent, whatever its own share."""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.quantity import ResourceList
from domain.reasons import Reason, Verdict
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import ROOT, JobInfo, QueueInfo, TaskInfo
from domain.scheduler.queue_shares import (
    Ledger,
    describe,
    lower,
    over_after,
    priority,
    real_capabilities,
    reclaimable_beyond_deserved,
    requests,
    water_fill,
)
from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import Snapshot

NAME = "capacity"


def _tree(snapshot: Snapshot) -> dict[str, ResourceList]:
    """Top-down: a child's real capability is its own (inherited where unset), cut to what its
    parent has left after the siblings' guarantees; root is unbounded unless it says otherwise."""
    out: dict[str, ResourceList] = {ROOT: dict(snapshot.queues[ROOT].capability)}
    pending = [ROOT]
    while pending:
        parent = snapshot.queues[pending.pop()]
        guarantees = quantity.sum_lists(snapshot.queues[c].guarantee for c in parent.children)
        for name in sorted(parent.children):
            if name in out:
                continue  # a cycle in spec.parent: the first path wins
            child = snapshot.queues[name]
            room = {n: a - guarantees.get(n, 0) + child.guarantee.get(n, 0) for n, a in out[parent.name].items()}
            out[name] = lower({**out[parent.name], **child.capability}, room)
            pending.append(name)
    return out


def _deserved_tree(snapshot: Snapshot, real: Mapping[str, ResourceList]) -> dict[str, ResourceList]:
    """Top-down: root deserves its own ``deserved`` or the cluster; a child its own ``deserved``, or
    else its weight's share of what its parent deserves beyond its siblings' own, water-filled by
    what each subtree asks for; always within its real capability and at least its guarantee."""
    asked: dict[str, ResourceList] = {name: {} for name in snapshot.queues}
    for name, amount in requests(snapshot).items():
        for queue in snapshot.ancestors(name):
            quantity.add(asked[queue.name], amount)
    out: dict[str, ResourceList] = {ROOT: dict(snapshot.queues[ROOT].deserved or snapshot.total)}
    pending = [ROOT]
    while pending:
        parent = snapshot.queues[pending.pop()]
        children = [snapshot.queues[c] for c in sorted(parent.children) if c not in out and c in real]
        own = [c for c in children if c.deserved]
        for child in own:
            out[child.name] = _at_least(lower(child.deserved, real[child.name]), child.guarantee)
        taken = quantity.sum_lists(out[c.name] for c in own)
        left = {n: max(a - taken.get(n, 0), 0) for n, a in out[parent.name].items()}
        out.update(water_fill([c for c in children if not c.deserved], left, asked, real))
        pending.extend(c.name for c in children)
    return out


def _at_least(amount: Mapping[str, int], floor: Mapping[str, int]) -> ResourceList:
    return {n: max(amount.get(n, 0), floor.get(n, 0)) for n in set(amount) | set(floor)}


class _Capacity:
    """One session's capacity plugin: each queue's deserved share (``wanted``), the chain of
    capabilities that bound it (``chains``), and the ledger of what the queues use."""

    def __init__(self, snapshot: Snapshot, hierarchy: bool) -> None:
        self.snapshot, self.hierarchy = snapshot, hierarchy
        self.ledger = Ledger(snapshot, roll_up=hierarchy)
        real = _tree(snapshot) if hierarchy else real_capabilities(snapshot)
        if hierarchy:
            tree = _deserved_tree(snapshot, real)
            self.wanted = {name: tree.get(name, {}) for name in snapshot.queues}
        else:
            # A resource the queue's deserved does not name is not deserved (upstream's Min keeps
            # only the deserved's own dimensions): a victim holding only such resources is fair game.
            self.wanted = {
                name: _at_least({n: a for n, a in lower(q.deserved, real.get(name, {})).items() if n in q.deserved},
                                q.guarantee)
                for name, q in snapshot.queues.items()
            }  # fmt: skip
        # Below root, the queues from the top down to each queue, padded so keys compare level by level.
        self.paths = {
            name: [q.name for q in reversed(snapshot.ancestors(name)) if q.name != ROOT] for name in snapshot.queues
        }
        self.depth = max((len(p) for p in self.paths.values()), default=0)
        # A queue not reachable from root in the tree has no limits of its own: it is unbounded.
        self.chains = {
            q: [(name, real[name]) for name in self.ledger.chain(q) if name in real] for q in snapshot.queues
        }

    def share(self, name: str) -> Key:
        want = self.wanted[name]
        if not want:
            return (1.0, 1.0)  # best-effort queues (no deserved) go after those with one
        used = self.ledger.used[name]
        # Pod slots are a limit, not a share: upstream's share looks at cpu, memory and scalars only.
        shares = (a / want[n] if want.get(n) else 1.0 for n, a in used.items() if a > 0 and n != quantity.PODS)
        return (max(shares, default=0.0), 0.0)

    def order(self, queue: QueueInfo) -> Key:
        if not self.hierarchy:
            return priority(queue), *self.share(queue.name)
        path = self.paths[queue.name]
        return priority(queue), *(v for name in path for v in self.share(name)), *(0.0, 0.0) * (self.depth - len(path))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Verdict | None:
        for name, limit in self.chains.get(queue.name, []):
            short = over_after(self.ledger.used[name], task.request, limit)
            if short:
                message = f"queue {name} would exceed its capability: {describe(short)}"
                return Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)
        return None

    def enqueueable(self, job: JobInfo) -> tuple[Vote, Verdict | None]:
        if not job.min_resources:
            return Vote.PERMIT, None
        for name, limit in self.chains.get(job.queue, []):
            short = self.ledger.enqueue_shortfall(job, name, limit)
            if short:
                message = f"queue {name} resource quota insufficient: insufficient {describe(short)}"
                return Vote.REJECT, Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)
        return Vote.PERMIT, None

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return reclaimable_beyond_deserved(
            self.snapshot, self.ledger.used, reclaimer, candidates, lambda name: self.wanted[name], partly=True
        )


def build(options: Mapping[str, object]) -> Plugin:
    hierarchy = bool(options.get("enableHierarchy", False))

    def on_open(session: Session) -> None:
        plugin = _Capacity(session.snapshot, hierarchy)
        session.add_queue_order(NAME, plugin.order)
        session.add_allocatable(NAME, plugin.allocatable)
        session.add_job_enqueueable(NAME, plugin.enqueueable)
        session.add_job_enqueued(NAME, plugin.ledger.enqueued)
        session.add_allocated(NAME, plugin.ledger.allocated)
        session.add_reclaimable(NAME, plugin.reclaimable)

    return Plugin(NAME, on_open)
