"""Effects: what one decision does on the Kubernetes API, idempotently.

Each decision kind has one effect. An effect first reads the object and decides whether a write
is needed at all, so applying a decision twice (after a crash, or a decision the topic repeats)
writes nothing the second time:

* the object is gone, was re-created under the same name (another uid) or is terminating:
  ``stale``, nothing is written (SEEDS S1: no status for a PodGroup on its way out);
* the object belongs to another scheduler (``spec.schedulerName``): ``not-ours``;
* the cluster already holds what the decision says (the pod is bound to that node, the status
  has that phase and those conditions): ``already``;
* otherwise the status is replaced (PUT on the status subresource) carrying the resourceVersion
  just read, so a 409 means someone wrote in between: the object is read again and the choice
  made again, up to three times, then the decision counts as stale (never forced);
* a pod bound to another node is a ``conflict``: reported and counted, not undone.

Status goes in status subresources (never annotations). Events (``Reject``, a pending gang's
reason, an eviction) get a name derived from the decision id, so a second create is a 409.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from services.kube.api import Rest, object_path

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_JOB_API = "batch.volcano.sh/v1alpha1"
CONFLICT_RETRIES = 3


class Outcome(StrEnum):
    """How a decision ended on the cluster; every one but ``failed`` is final and never retried."""

    APPLIED = "applied"  # the write was made
    ALREADY = "already"  # the cluster already held what the decision says
    NOT_OURS = "not-ours"  # another scheduler owns the object (its schedulerName)
    STALE = "stale"  # the object is gone, re-created or terminating: the decision is moot
    CONFLICT = "conflict"  # the pod is bound to another node
    IGNORED = "ignored"  # a kind someone else writes (JobStatus: Volcano's job controller)
    FAILED = "failed"  # the server refused the write (validation, a disruption budget)


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Context:
    """What every effect needs besides the decision."""

    rest: Rest
    scheduler_name: str
    now: Callable[[], str]  # RFC 3339 UTC, for lastTransitionTime and event timestamps


def is_transient(exc: ApiException) -> bool:
    """Errors worth retrying later (the server is busy or away); any other 4xx is final."""
    return exc.status in (0, 429, 500, 502, 503, 504)


def is_denied(exc: ApiException) -> bool:
    """Not a fact about the decision but about the applier's credentials: it must stop, not skip."""
    return exc.status in (401, 403)


async def apply(ctx: Context, decision: Mapping[str, Any]) -> Result:
    """Act on one decision (a transient API error propagates, so the caller retries it)."""
    effect = EFFECTS.get(decision["kind"])
    if effect is None:
        return Result(Outcome.IGNORED, f"{decision['kind']} is written by its own controller")
    for _ in range(CONFLICT_RETRIES):
        try:
            return await effect(ctx, decision)
        except ApiException as exc:
            if exc.status != 409:
                if is_transient(exc) or is_denied(exc):
                    raise
                return Result(Outcome.FAILED, f"HTTP {exc.status}: {exc.reason}")
    return Result(Outcome.STALE, f"the object kept changing ({CONFLICT_RETRIES} write conflicts)")


async def live(ctx: Context, target: Mapping[str, str]) -> dict[str, Any] | Result:
    """The target as the server holds it now, or why the decision no longer applies to it."""
    path = object_path(target["apiVersion"], target["kind"], target.get("namespace", ""), target["name"])
    obj = await ctx.rest.get(path)
    if obj is None:
        return Result(Outcome.STALE, "the object is gone")
    if target.get("uid") and obj["metadata"].get("uid") != target["uid"]:
        return Result(Outcome.STALE, "the object was re-created (another uid)")
    if obj["metadata"].get("deletionTimestamp"):
        return Result(Outcome.STALE, "the object is terminating")
    scheduler = obj.get("spec", {}).get("schedulerName", "default-scheduler")
    if target["kind"] == "Pod" and scheduler != ctx.scheduler_name:
        return Result(Outcome.NOT_OURS, f"schedulerName is {scheduler}")
    return obj


def status_path(target: Mapping[str, str]) -> str:
    return object_path(target["apiVersion"], target["kind"], target.get("namespace", ""), target["name"]) + "/status"


async def is_ours_pod_group(ctx: Context, pod_group: Mapping[str, Any]) -> bool:
    """A PodGroup of a Volcano Job is ours when the Job names us; a bare PodGroup exists only for a
    gang scheduler, so it is ours (we replace Volcano's)."""
    meta = pod_group["metadata"]
    for owner in meta.get("ownerReferences", ()):
        if owner.get("apiVersion") == VOLCANO_JOB_API and owner.get("kind") == "Job":
            job = await ctx.rest.get(object_path(VOLCANO_JOB_API, "Job", meta["namespace"], owner["name"]))
            return job is not None and job.get("spec", {}).get("schedulerName", "volcano") == ctx.scheduler_name
    return True


def merge_conditions(
    current: list[dict[str, Any]], wanted: list[Mapping[str, Any]], now: str, **extra: Any
) -> tuple[list[dict[str, Any]], bool]:
    """``current`` with each wanted condition set by type; the time moves only on a real change.
    Returns the list and whether anything changed."""
    merged = [dict(c) for c in current]
    changed = False
    for want in wanted:
        old = next((c for c in merged if c.get("type") == want["type"]), None)
        fields = {k: want.get(k, "") for k in ("type", "status", "reason", "message")}
        if old is not None and all(old.get(k, "") == v for k, v in fields.items()):
            continue
        changed = True
        stamp = now if old is None or old.get("status") != want["status"] else old.get("lastTransitionTime", now)
        new = {**fields, "lastTransitionTime": stamp, **extra}
        if old is None:
            merged.append(new)
        else:
            merged[merged.index(old)] = new
    return merged, changed


async def bind(ctx: Context, d: Mapping[str, Any]) -> Result:
    target, node = d["target"], d["node"]
    pod = await live(ctx, target)
    if isinstance(pod, Result):
        return pod
    bound = pod["spec"].get("nodeName")
    if bound:
        return Result(Outcome.ALREADY) if bound == node else Result(Outcome.CONFLICT, f"bound to {bound}")
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": target["name"], "namespace": target["namespace"], "uid": pod["metadata"]["uid"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        await ctx.rest.post(object_path("v1", "Pod", target["namespace"], target["name"]) + "/binding", body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        # Bound meanwhile (by us before a crash, or by someone else): the next try reads which.
    else:
        return Result(Outcome.APPLIED)
    raise ApiException(status=409, reason="bound meanwhile")


async def write_status(ctx: Context, target: Mapping[str, str], obj: dict[str, Any], status: dict[str, Any]) -> None:
    """Replace the object's status through its status subresource. The object carries the
    resourceVersion just read, so a write in between is a 409 (read again, decide again)."""
    await ctx.rest.put(status_path(target), {**obj, "status": status})


async def pod_status(ctx: Context, d: Mapping[str, Any]) -> Result:
    pod = await live(ctx, d["target"])
    if isinstance(pod, Result):
        return pod
    if pod["spec"].get("nodeName"):
        return Result(Outcome.STALE, f"bound to {pod['spec']['nodeName']} meanwhile")
    status = pod.get("status", {})
    conditions, changed = merge_conditions(status.get("conditions", []), d["conditions"], ctx.now())
    if not changed:
        return Result(Outcome.ALREADY)
    await write_status(ctx, d["target"], pod, {**status, "conditions": conditions})
    return Result(Outcome.APPLIED)


async def pod_group_status(ctx: Context, d: Mapping[str, Any]) -> Result:
    pod_group = await live(ctx, d["target"])
    if isinstance(pod_group, Result):
        return pod_group
    if not await is_ours_pod_group(ctx, pod_group):
        return Result(Outcome.NOT_OURS, "its Job names another scheduler")
    status = pod_group.get("status", {})
    conditions, changed = merge_conditions(status.get("conditions", []), d.get("conditions", []), ctx.now())
    if not changed and status.get("phase") == d["phase"]:
        return Result(Outcome.ALREADY)
    await write_status(ctx, d["target"], pod_group, {**status, "phase": d["phase"], "conditions": conditions})
    for cond in d.get("conditions", []):
        if cond["type"] == "Unschedulable" and cond["status"] == "True":
            await record_gang_pending(ctx, d, pod_group, cond["message"])
    return Result(Outcome.APPLIED)


async def queue_status(ctx: Context, d: Mapping[str, Any]) -> Result:
    queue = await live(ctx, d["target"])
    if isinstance(queue, Result):
        return queue
    status = queue.get("status", {})
    if status.get("state") == d["state"] and status.get("allocated") == d["allocated"]:
        return Result(Outcome.ALREADY)
    await write_status(ctx, d["target"], queue, {**status, "state": d["state"], "allocated": d["allocated"]})
    return Result(Outcome.APPLIED)


async def workload_status(ctx: Context, d: Mapping[str, Any]) -> Result:
    """As Kueue writes it: conditions (metav1.Condition, with observedGeneration) and
    ``status.admission`` in the same write; a null admission removes it."""
    workload = await live(ctx, d["target"])
    if isinstance(workload, Result):
        return workload
    status = workload.get("status", {})
    generation = workload["metadata"].get("generation", 1)
    conditions, changed = merge_conditions(
        status.get("conditions", []), d.get("conditions", []), ctx.now(), observedGeneration=generation
    )
    admission = d.get("admission")
    if not changed and status.get("admission") == admission:
        return Result(Outcome.ALREADY)
    new = {k: v for k, v in status.items() if k != "admission"} | {"conditions": conditions}
    if admission is not None:
        new["admission"] = admission
    await write_status(ctx, d["target"], workload, new)
    return Result(Outcome.APPLIED)


async def evict(ctx: Context, d: Mapping[str, Any]) -> Result:
    target = d["target"]
    obj = await live(ctx, target)
    if isinstance(obj, Result):
        return obj
    message = d.get("message") or d["reason"]
    if target["kind"] == "Workload":
        evicted = {"type": "Evicted", "status": "True", "reason": d["reason"], "message": message}
        kept = obj.get("status", {}).get("admission")  # Kueue's job reconciler clears it, not the evictor
        return await workload_status(ctx, {**d, "conditions": [evicted], "admission": kept})
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": target["name"], "namespace": target["namespace"]},
        "deleteOptions": {"preconditions": {"uid": obj["metadata"]["uid"]}},
    }
    try:
        await ctx.rest.post(object_path("v1", "Pod", target["namespace"], target["name"]) + "/eviction", body)
    except ApiException as exc:
        if exc.status == 404:
            return Result(Outcome.STALE, "the object is gone")
        if exc.status == 429:
            return Result(Outcome.FAILED, "the eviction is refused by a PodDisruptionBudget")
        raise
    await record_event(ctx, d["id"], target, "Preempted", message, kind="Normal")
    return Result(Outcome.APPLIED)


async def reject(ctx: Context, d: Mapping[str, Any]) -> Result:
    target = d["target"]
    obj = await live(ctx, target)
    if isinstance(obj, Result):
        return obj
    created = await record_event(ctx, d["id"], target, d["reason"], d.get("message") or d["reason"], kind="Warning")
    return Result(Outcome.APPLIED if created else Outcome.ALREADY)


async def record_gang_pending(ctx: Context, d: Mapping[str, Any], pod_group: Mapping[str, Any], message: str) -> None:
    """As Volcano does for a gang that waits: an Unschedulable event on the PodGroup, and a
    FailedScheduling event on each of its pods of ours still unbound (what kubectl describe shows)."""
    namespace, name = pod_group["metadata"]["namespace"], pod_group["metadata"]["name"]
    await record_event(ctx, d["id"], d["target"], "Unschedulable", message, kind="Warning")
    pods = await ctx.rest.get(object_path("v1", "Pod", namespace))
    for pod in (pods or {}).get("items", []):
        meta = pod["metadata"]
        spec = pod["spec"]
        ours = spec.get("schedulerName") == ctx.scheduler_name
        if ours and meta.get("annotations", {}).get(GROUP_ANNOTATION) == name and not spec.get("nodeName"):
            ref = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": meta["name"], "uid": meta["uid"]}
            await record_event(ctx, d["id"], ref, "FailedScheduling", message, kind="Warning")


async def record_event(
    ctx: Context, decision_id: str, target: Mapping[str, str], reason: str, message: str, *, kind: str
) -> bool:
    """A core v1 Event on ``target``, named after the decision: False when it exists already."""
    namespace = target.get("namespace") or "default"  # cluster-scoped objects' events live there
    now = ctx.now()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{target['name']}.{decision_id[:16]}", "namespace": namespace},
        "involvedObject": {k: v for k, v in target.items() if k in ("apiVersion", "kind", "namespace", "name", "uid")},
        "reason": reason,
        "message": message[:1024],
        "type": kind,
        "source": {"component": ctx.scheduler_name},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        await ctx.rest.post(object_path("v1", "Event", namespace), body)
    except ApiException as exc:
        if exc.status == 409:
            return False
        raise
    return True


Effect = Callable[[Context, Mapping[str, Any]], Awaitable[Result]]
EFFECTS: dict[str, Effect] = {
    "Bind": bind,
    "PodStatus": pod_status,
    "PodGroupStatus": pod_group_status,
    "QueueStatus": queue_status,
    "WorkloadStatus": workload_status,
    "Evict": evict,
    "Reject": reject,
}
