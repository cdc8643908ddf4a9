"""ExtensionPoint: the places a plugin can hook into a session, each with the rule that
combines the answers of every plugin registered there (Volcano's session_plugins.go)."""

from __future__ import annotations

from enum import StrEnum


class ExtensionPoint(StrEnum):
    """Extension points in the order a cycle meets them; each comment names the rule that
    combines its callbacks (``Session``'s methods apply them): ALL, every callback must pass (or,
    for notifications, every one runs); VOTE, Permit, Abstain or Reject, any Reject refuses and
    the first tier with a Permit decides; ORDER, sort keys compared in tier order, the first
    non-equal one wins; SCORE, scores summed; INTERSECT, victims every plugin of a tier agrees
    on, the first tier with any decides."""

    QUEUE_ORDER = "queueOrder"  # ORDER: which queue gets the next job
    JOB_ORDER = "jobOrder"  # ORDER: which job of a queue goes next
    TASK_ORDER = "taskOrder"  # ORDER: which task of a job goes next
    JOB_VALID = "jobValid"  # ALL: may this job be scheduled at all (e.g. enough tasks)
    JOB_ENQUEUEABLE = "jobEnqueueable"  # VOTE: may a Pending job move to Inqueue
    JOB_ENQUEUED = "jobEnqueued"  # ALL: notifications that a job was enqueued (reserve its minimum)
    ALLOCATABLE = "allocatable"  # ALL: may the task's queue take its request now
    PREDICATE = "predicate"  # ALL: may the task run on the node
    NODE_ORDER = "nodeOrder"  # SCORE: how good the node is for the task
    JOB_READY = "jobReady"  # ALL: may the job's tentative placements be committed
    JOB_PIPELINED = "jobPipelined"  # VOTE: may a job that is not ready hold room for the rest of the cycle
    ALLOCATED = "allocated"  # ALL: notifications of a placement (or, undone, its removal)
    PREEMPTABLE = "preemptable"  # INTERSECT: which pods of its queue a preemptor may evict
    RECLAIMABLE = "reclaimable"  # INTERSECT: which pods of other queues a starving queue may evict

    @property
    def switch(self) -> str | None:
        """The plugin option (volcano-scheduler.conf's spelling) that, set to false, keeps a
        plugin's callback off this point; None where upstream has no switch."""
        return _SWITCHES.get(self)


# Upstream's per-plugin switches (framework.PluginOption's Enabled* fields); unset means on.
_SWITCHES = {
    ExtensionPoint.QUEUE_ORDER: "enableQueueOrder",
    ExtensionPoint.JOB_ORDER: "enableJobOrder",
    ExtensionPoint.TASK_ORDER: "enableTaskOrder",
    ExtensionPoint.JOB_ENQUEUEABLE: "enableJobEnqueued",
    ExtensionPoint.JOB_ENQUEUED: "enableJobEnqueued",
    ExtensionPoint.ALLOCATABLE: "enabledAllocatable",
    ExtensionPoint.PREDICATE: "enablePredicate",
    ExtensionPoint.NODE_ORDER: "enableNodeOrder",
    ExtensionPoint.JOB_READY: "enableJobReady",
    ExtensionPoint.JOB_PIPELINED: "enableJobPipelined",
    ExtensionPoint.PREEMPTABLE: "enablePreemptable",
    ExtensionPoint.RECLAIMABLE: "enableReclaimable",
}


class Vote(StrEnum):
    """A plugin's answer at a VOTE point."""

    PERMIT = "Permit"
    ABSTAIN = "Abstain"
    REJECT = "Reject"
