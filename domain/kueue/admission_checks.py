"""Admission checks: a ClusterQueue's ``admissionChecks`` (or ``admissionChecksStrategy``, per
flavor) gate a workload between quota reservation and admission, as in Kueue.

Admission reserves quota and lists the workload's checks as Pending; the check controllers
(outside us) write their states into the workload's status. Each cycle, a workload holding
quota but not admitted, with checks, is evicted (reason AdmissionCheck, requeued at once)
when a check says Retry, and admitted once every check is Ready, unless a podSet's topology
was delayed: a TAS flavor guarded by a ProvisioningRequest check gets no topology at
reservation (``delayedTopologyRequest: Pending``), and the second pass places it once the
checks are Ready (SEEDS S3), admitting the workload in the same write.

A Rejected check, admitted or not, makes Kueue deactivate the workload (``spec.active:
false``) and evict it. We cannot write spec, so one status write evicts it (reason
Deactivated) with ``DeactivationTarget=True`` (reason AdmissionCheck) naming the checks: that
condition counts as inactive (``lifecycle.workload.is_active``), so its quota is released
(Requeued=False) and it is never admitted again until the cluster shows a status without it
(the user reactivated it) or the workload is created anew.
"""

from __future__ import annotations

from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.workload_status import Outbox, with_conditions
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import ConditionType as C
from domain.lifecycle.workload import topology_pending
from domain.objects.kueue import ClusterQueue

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
RETRY = "Retry"
READY = "Ready"
REJECTED = "Rejected"


def delays_topology(snap: KueueSnapshot, cq: ClusterQueue, flavor: str) -> bool:
    """A ProvisioningRequest check guards ``flavor`` in ``cq``: its topology waits for the nodes."""
    for name in cq.spec.checks_for({flavor}):
        check = snap.admission_checks.get(name)
        if check is not None and check.spec.controller_name == PROVISIONING_CONTROLLER:
            return True
    return False


def admitted_message(cluster_queue: str) -> tuple[str, str, str]:
    return ("True", R.ADMITTED, f"The workload is admitted in ClusterQueue {cluster_queue}")


def run(snap: KueueSnapshot, box: Outbox) -> None:
    for info in snap.holders():
        view = info.view
        if not view.admission_checks or view.is_true(C.EVICTED):
            continue
        rejected = sorted(name for name, state in view.admission_checks if state == REJECTED)
        if rejected:
            message = f"The workload is deactivated: admission check(s) {', '.join(rejected)} rejected it"
            target = ("True", R.ADMISSION_CHECK, f"Admission check(s) {', '.join(rejected)} rejected the workload")
            box.evict(info, R.DEACTIVATED, message, cause=(C.DEACTIVATION_TARGET, target))
        elif not view.is_true(C.ADMITTED):
            _follow(box, info)


def _follow(box: Outbox, info: WorkloadInfo) -> None:
    view = info.view
    retry = sorted(name for name, state in view.admission_checks if state == RETRY)
    if retry:
        box.evict(info, R.ADMISSION_CHECK, f"At least one admission check is false: {', '.join(retry)}")
    elif all(state == READY for _, state in view.admission_checks) and not topology_pending(view.admission):
        box.status(info, with_conditions(view, **{C.ADMITTED: admitted_message(info.admitted_to)}), R.ADMITTED)
