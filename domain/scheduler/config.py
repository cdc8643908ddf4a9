"""SchedulerConfig: the ``--config`` file in the shape of ``volcano-scheduler.conf``.

``actions`` is a comma-separated list, ``tiers`` a list of ``plugins`` lists; Kueue settings
live under ``kueue``. Unknown actions, plugins and keys are errors that name them, so a typo
never silently changes scheduling.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
PLUGINS = (
    "priority",
    "gang",
    "conformance",
    "drf",
    "predicates",
    "proportion",
    "capacity",
    "nodeorder",
    "binpack",
    "network-topology-aware",
    "sla",
    "reservation",
)
DEFAULT_ACTIONS = ("enqueue", "allocate", "backfill")
DEFAULT_TIERS = (("priority", "gang", "conformance"), ("drf", "predicates", "proportion", "nodeorder", "binpack"))

_TOP_KEYS = frozenset({"actions", "tiers", "configurations", "kueue", "schedulerName", "ibClusterLabel"})
# Plugin option keys as volcano-scheduler.conf spells them (the yaml tags, not the Go fields).
_PLUGIN_KEYS = frozenset({
    "name", "arguments", "enableJobOrder", "enableNamespaceOrder", "enableHierarchy", "enableJobReady",
    "enableJobPipelined", "enableTaskOrder", "enablePreemptable", "enableReclaimable", "enablePreemptive",
    "enableQueueOrder", "enabledClusterOrder", "enablePredicate", "enableBestNode", "enableNodeOrder",
    "enableTargetJob", "enableReservedNodes", "enableJobEnqueued", "enabledVictim", "enableJobStarving",
    "enabledOverused", "enabledAllocatable",
})  # fmt: skip
# Kueue settings and, for those that are mappings, the keys each accepts.
_KUEUE_KEYS: dict[str, frozenset[str] | None] = {
    "fairSharing": frozenset({"enable", "preemptionStrategies"}),
    "waitForPodsReady": frozenset({"enable", "timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}),
    "failFast": None,
    "admissionFairSharing": frozenset({"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}),
}
# A Go duration as Kueue's configuration spells one ("168h", "5m", "1m30s", "0s").
_DURATION = re.compile(r"0|(\d+(\.\d+)?(h|m|s|ms))+")
# Kueue accepts one strategy, or both in this order (its configuration validation).
_PREEMPTION_STRATEGIES = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


class ConfigError(ValueError):
    """The configuration names something unknown or has a value of the wrong shape."""


@dataclass(frozen=True, slots=True)
class PluginConfig:
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    actions: tuple[str, ...] = DEFAULT_ACTIONS
    tiers: tuple[tuple[PluginConfig, ...], ...] = tuple(
        tuple(PluginConfig(name) for name in tier) for tier in DEFAULT_TIERS
    )
    scheduler_name: str = "volcano"
    ib_cluster_label: str = "volcano.sh/ib-cluster"
    kueue: Mapping[str, Any] = field(default_factory=dict)

    def plugin_names(self) -> frozenset[str]:
        return frozenset(p.name for tier in self.tiers for p in tier)


def _unknown(kind: str, names: object, allowed: frozenset[str] | tuple[str, ...], where: str) -> None:
    bad = sorted(set(names) - set(allowed))  # type: ignore[call-overload]
    if bad:
        raise ConfigError(f"unknown {kind} {', '.join(repr(b) for b in bad)} in {where}")


def from_mapping(data: Mapping[str, Any] | None) -> SchedulerConfig:
    """Validate a parsed YAML document and build the config; defaults fill what is missing."""
    if data is None:
        return SchedulerConfig()
    if not isinstance(data, Mapping):
        raise ConfigError("the configuration must be a mapping")
    _unknown("key", data, _TOP_KEYS, "the configuration")
    defaults = SchedulerConfig()
    actions = defaults.actions
    if "actions" in data:
        if not isinstance(data["actions"], str):
            raise ConfigError("'actions' must be a comma-separated string")
        actions = tuple(a.strip() for a in data["actions"].split(",") if a.strip())
        _unknown("action", actions, ACTIONS, "'actions'")
    tiers = defaults.tiers
    if "tiers" in data:
        tiers = tuple(_tier(i, tier) for i, tier in enumerate(data["tiers"] or ()))
    kueue = _kueue(data.get("kueue") or {})
    return SchedulerConfig(
        actions=actions,
        tiers=tiers,
        scheduler_name=str(data.get("schedulerName", defaults.scheduler_name)),
        ib_cluster_label=str(data.get("ibClusterLabel", defaults.ib_cluster_label)),
        kueue=dict(kueue),
    )


def _kueue(kueue: Any) -> Mapping[str, Any]:
    if not isinstance(kueue, Mapping):
        raise ConfigError("'kueue' must be a mapping")
    _unknown("key", kueue, frozenset(_KUEUE_KEYS), "'kueue'")
    for key, allowed in _KUEUE_KEYS.items():
        value = kueue.get(key)
        if allowed is not None and value is not None:
            if not isinstance(value, Mapping):
                raise ConfigError(f"'kueue.{key}' must be a mapping")
            _unknown("key", value, allowed, f"'kueue.{key}'")
    _preemption_strategies((kueue.get("fairSharing") or {}).get("preemptionStrategies"))
    _admission_fair_sharing(kueue.get("admissionFairSharing") or {})
    return kueue


def _admission_fair_sharing(afs: Mapping[str, Any]) -> None:
    for key in ("usageHalfLifeTime", "usageSamplingInterval"):
        value = afs.get(key)
        if value is not None and not (isinstance(value, str) and _DURATION.fullmatch(value)):
            raise ConfigError(
                f"'kueue.admissionFairSharing.{key}' must be a duration such as '168h' or '5m', not {value!r}"
            )
    if afs.get("usageSamplingInterval") is not None and not any(c in "123456789" for c in afs["usageSamplingInterval"]):
        raise ConfigError("'kueue.admissionFairSharing.usageSamplingInterval' must be longer than 0")
    weights = afs.get("resourceWeights")
    if weights is None:
        return
    where = "'kueue.admissionFairSharing.resourceWeights'"
    if not isinstance(weights, Mapping):
        raise ConfigError(f"{where} must be a mapping of resource names to weights")
    for name, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise ConfigError(f"{where}: the weight of {name!r} must be a number of at least 0, not {weight!r}")


def _preemption_strategies(value: Any) -> None:
    if value is None or value == []:  # Kueue's default: both, in order
        return
    where = "'kueue.fairSharing.preemptionStrategies'"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strategy names")
    names = sorted({n for allowed in _PREEMPTION_STRATEGIES for n in allowed})
    bad = [v for v in value if v not in names]
    if bad:
        raise ConfigError(
            f"unknown preemption strategy {', '.join(repr(b) for b in bad)} in {where}; allowed: {', '.join(names)}"
        )
    if tuple(value) not in _PREEMPTION_STRATEGIES:
        allowed = " or ".join(f"[{', '.join(a)}]" for a in _PREEMPTION_STRATEGIES)
        raise ConfigError(f"{where} must be {allowed}, not [{', '.join(value)}]")


def _tier(index: int, tier: Any) -> tuple[PluginConfig, ...]:
    if not isinstance(tier, Mapping):
        raise ConfigError(f"tier {index} must be a mapping with only 'plugins'")
    _unknown("key", tier, frozenset({"plugins"}), f"tier {index}")
    plugins = []
    for entry in tier["plugins"] or ():
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise ConfigError(f"every plugin in tier {index} needs a 'name'")
        _unknown("plugin", [entry["name"]], PLUGINS, f"tier {index}")
        _unknown("key", entry, _PLUGIN_KEYS, f"plugin {entry['name']!r}")
        for key, value in entry.items():
            if key.startswith("enable") and not isinstance(value, bool):
                raise ConfigError(f"plugin {entry['name']!r}: {key} must be true or false, not {value!r}")
        options = {k: v for k, v in entry.items() if k != "name"}
        plugins.append(PluginConfig(entry["name"], options))
    return tuple(plugins)
