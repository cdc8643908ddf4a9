"""SchedulerConfig: the ``--config`` file in the shape of ``volcano-scheduler.conf``.

``actions`` is a comma-separated list, ``tiers`` a list of ``plugins`` lists; Kueue settings
live under ``kueue``. Unknown actions, plugins and keys are errors that name them, so a typo
never silently changes scheduling.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain import durations
from domain.kueue import settings as kueue_settings
from domain.kueue.settings import KueueSettings
from domain.scheduler import plugin_args

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
    "overcommit",
    "sla",
    "reservation",
)
# Names Volcano knows whose work has no counterpart here: accepted with a warning saying why,
# so a user's upstream configuration loads; anything else unknown stays an error.
NO_EFFECT_ACTIONS = {
    "shuffle": "it evicts to rebalance running pods, which schedstream never does on its own",
    "gangpreempt": "the preempt action already keeps whole gangs",
    "gangreclaim": "the reclaim action already keeps whole gangs",
    "reserve": "node reservation for a target job (older releases) is not modelled",
}
NO_EFFECT_PLUGINS = {
    "cdp": "cooldown protection for elastic pods is not modelled",
    "deviceshare": "GPU sharing (vGPU, MIG) is not modelled; whole nvidia.com/gpu counts are",
    "extender": "no external scheduler extender is called",
    "nodegroup": "queue node-group affinity is not modelled",
    "numaaware": "NUMA topology is not modelled",
    "pdb": "PodDisruptionBudgets are not read",
    "rescheduling": "it evicts running pods to rebalance, which schedstream never does on its own",
    "resource-strategy-fit": "its per-resource scoring strategies are not modelled",
    "resourcequota": "namespace ResourceQuotas are not read",
    "task-topology": "task affinity inside a job is not modelled",
    "tdm": "time-division multiplexing of revocable nodes is not modelled",
    "usage": "real node usage metrics are not read",
}
DEFAULT_ACTIONS = ("enqueue", "allocate", "backfill")
DEFAULT_TIERS = (("priority", "gang", "conformance"), ("drf", "predicates", "proportion", "nodeorder", "binpack"))

_TOP_KEYS = frozenset({
    "actions", "tiers", "configurations", "kueue", "schedulerName", "ibClusterLabel", "runtimeHistoryLabel",
    "keepWaitingReasons",
})  # fmt: skip
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
# Kueue settings that are Go durations, by their key under ``kueue``.
_KUEUE_DURATIONS = (
    ("waitForPodsReady", "timeout"),
    ("waitForPodsReady", "recoveryTimeout"),
    ("admissionFairSharing", "usageHalfLifeTime"),
    ("admissionFairSharing", "usageSamplingInterval"),
)
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
    # The pod label whose values are users in the runtime history that predicts runtimes for held
    # room (``domain/runtime_history.py``); empty: no history is kept.
    runtime_history_label: str = ""
    # A waiting gang that has said why and still cannot fit is not tried again: its status keeps
    # the reason its last attempt gave (``domain/scheduler/parked.py``); off: Volcano's rewrite
    # of the message every cycle.
    keep_waiting_reasons: bool = False
    kueue: KueueSettings = field(default_factory=KueueSettings)
    # One line per name or argument that was accepted but has no effect here, saying why.
    warnings: tuple[str, ...] = ()

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
    warnings: list[str] = []
    actions = defaults.actions
    if "actions" in data:
        if not isinstance(data["actions"], str):
            raise ConfigError("'actions' must be a comma-separated string")
        actions = tuple(a.strip() for a in data["actions"].split(",") if a.strip())
        _unknown("action", actions, (*ACTIONS, *NO_EFFECT_ACTIONS), "'actions'")
        warnings.extend(f"action {a!r} has no effect here: {NO_EFFECT_ACTIONS[a]}" for a in actions if a not in ACTIONS)
        actions = tuple(a for a in actions if a in ACTIONS)
    tiers = defaults.tiers
    if "tiers" in data:
        tiers = tuple(_tier(i, tier, warnings) for i, tier in enumerate(data["tiers"] or ()))
    kueue = _kueue(data.get("kueue") or {})
    return SchedulerConfig(
        actions=actions,
        tiers=tiers,
        scheduler_name=str(data.get("schedulerName", defaults.scheduler_name)),
        ib_cluster_label=str(data.get("ibClusterLabel", defaults.ib_cluster_label)),
        runtime_history_label=_label(data, "runtimeHistoryLabel", defaults.runtime_history_label),
        keep_waiting_reasons=_switch(data, "keepWaitingReasons", defaults.keep_waiting_reasons),
        kueue=kueue_settings.parse(kueue),
        warnings=tuple(warnings),
    )


def _label(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{key!r} must be a label name, not {value!r}")
    return value


def _switch(data: Mapping[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key!r} must be true or false, not {value!r}")
    return value


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
    for section, key in _KUEUE_DURATIONS:
        value = (kueue.get(section) or {}).get(key)
        if value is not None:
            try:
                durations.parse(value, f"'kueue.{section}.{key}'")
            except durations.DurationError as exc:
                raise ConfigError(str(exc)) from None
    _preemption_strategies((kueue.get("fairSharing") or {}).get("preemptionStrategies"))
    _admission_fair_sharing(kueue.get("admissionFairSharing") or {})
    return kueue


def _admission_fair_sharing(afs: Mapping[str, Any]) -> None:
    interval = afs.get("usageSamplingInterval")
    if interval is not None and not durations.parse(interval, "usageSamplingInterval"):
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


def _tier(index: int, tier: Any, warnings: list[str]) -> tuple[PluginConfig, ...]:
    if not isinstance(tier, Mapping):
        raise ConfigError(f"tier {index} must be a mapping with only 'plugins'")
    _unknown("key", tier, frozenset({"plugins"}), f"tier {index}")
    if not tier.get("plugins"):
        raise ConfigError(f"tier {index} has no 'plugins': an empty tier is a mistake, remove it or list its plugins")
    plugins = []
    for entry in tier["plugins"]:
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise ConfigError(f"every plugin in tier {index} needs a 'name'")
        name = entry["name"]
        _unknown("plugin", [name], (*PLUGINS, *NO_EFFECT_PLUGINS), f"tier {index}")
        _unknown("key", entry, _PLUGIN_KEYS, f"plugin {name!r}")
        for key, value in entry.items():
            if key.startswith("enable") and not isinstance(value, bool):
                raise ConfigError(f"plugin {name!r}: {key} must be true or false, not {value!r}")
        if name in NO_EFFECT_PLUGINS:
            warnings.append(f"plugin {name!r} has no effect here: {NO_EFFECT_PLUGINS[name]}")
            continue
        try:
            warnings.extend(plugin_args.check(name, entry.get("arguments")))
        except plugin_args.ArgumentError as exc:
            raise ConfigError(str(exc)) from None
        options = {k: v for k, v in entry.items() if k != "name"}
        plugins.append(PluginConfig(name, options))
    return tuple(plugins)
