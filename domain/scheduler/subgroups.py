"""Sub-gangs of a PodGroup (``spec.subGroupPolicy``, Volcano's SubJobs).

Each policy splits the tasks it matches by the values of its ``matchLabelKeys``: tasks with the
same values form one sub-gang, named ``<policy>-<values>``. A task matches a policy when it
carries every one of those labels (a policy without keys takes every task into one sub-gang); a
task goes to the first policy it matches, and one that matches none stays in the plain gang.
A sub-gang is placed whole, ``subGroupSize`` members at least, inside one network domain when
its policy asks for one; the gang is ready only when ``minSubGroups`` of a policy's sub-gangs are.
"""

from __future__ import annotations

from domain.objects.volcano import PodGroup
from domain.scheduler.infos import SubGroup, TaskInfo
from domain.scheduler.network_domains import hyper_request


def split(group: PodGroup | None, tasks: list[TaskInfo]) -> tuple[list[SubGroup], dict[str, int]]:
    """The sub-gangs of a PodGroup's tasks, by name, and each policy's ``minSubGroups``."""
    if group is None or not group.spec.sub_group_policy:
        return [], {}
    out: dict[str, SubGroup] = {}
    minimum: dict[str, int] = {}
    for task in tasks:
        labels = task.pod.metadata.labels
        for policy in group.spec.sub_group_policy:
            if not all(k in labels for k in policy.match_label_keys):
                continue
            name = "-".join([policy.name, *(labels[k] for k in policy.match_label_keys)])
            sub = out.get(name)
            if sub is None:
                spec = policy.network_topology
                request = None if spec is None else hyper_request(spec)
                sub = out[name] = SubGroup(name, policy.name, max(policy.sub_group_size or 1, 1), request)
            sub.tasks.append(task)
            break
    for policy in group.spec.sub_group_policy:
        minimum[policy.name] = max(minimum.get(policy.name, 0), policy.min_sub_groups or 0)
    return [out[name] for name in sorted(out)], minimum
