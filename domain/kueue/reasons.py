"""The reasons the Kueue cycle writes into Workload conditions and decisions (Kueue's own
spellings), in one place: why a workload waits, was evicted, preempted or requeued."""

from __future__ import annotations

from enum import StrEnum


class KueueReason(StrEnum):
    # Waiting for quota (QuotaReserved=False)
    PENDING = "Pending"
    INADMISSIBLE = "Inadmissible"
    # Written with the condition of the same name
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    QUOTA_RELEASED = "QuotaReleased"
    BACKOFF_FINISHED = "BackoffFinished"
    # Why a workload was evicted
    PREEMPTED = "Preempted"
    NODE_FAILURES = "NodeFailures"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    ADMISSION_CHECK = "AdmissionCheck"
    DEACTIVATED = "Deactivated"
    # Why a workload was preempted (the Preempted condition's reason)
    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
