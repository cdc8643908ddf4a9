"""domain.scheduler.config: the volcano-scheduler.conf-shaped ``--config`` file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from domain.kueue.settings import DEFAULT_STRATEGIES, AdmissionFairSharing, FairSharing, KueueSettings
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import ConfigError, PluginConfig, SchedulerConfig, from_mapping
from domain.scheduler.extension_points import ExtensionPoint
from domain.scheduler.registry import open_session
from domain.scheduler.snapshot import Snapshot

VOLCANO_DEFAULT_TIERS = (
    ("priority", "gang", "conformance"),
    ("drf", "predicates", "proportion", "nodeorder", "binpack"),
)


def tier_names(config: SchedulerConfig) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(p.name for p in tier) for tier in config.tiers)


@pytest.mark.parametrize("data", [None, {}], ids=["no configuration", "an empty mapping"])
def test_defaults_are_volcanos(data: dict[str, Any] | None) -> None:
    config = from_mapping(data)
    assert config == SchedulerConfig()
    assert config.actions == ("enqueue", "allocate", "backfill")
    assert tier_names(config) == VOLCANO_DEFAULT_TIERS
    assert all(p.options == {} for tier in config.tiers for p in tier)
    assert config.scheduler_name == "volcano"
    assert config.ib_cluster_label == "volcano.sh/ib-cluster"
    assert config.kueue == KueueSettings()
    assert config.plugin_names() == frozenset(name for tier in VOLCANO_DEFAULT_TIERS for name in tier)


VOLCANO_STYLE = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enabledVictim: false
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 5
  - name: network-topology-aware
schedulerName: my-volcano
ibClusterLabel: example.com/ib
kueue:
  fairSharing:
    enable: true
  failFast: true
"""


def test_a_volcano_style_config() -> None:
    config = from_mapping(yaml.safe_load(VOLCANO_STYLE))
    assert config.actions == ("enqueue", "allocate", "preempt", "reclaim", "backfill")
    assert tier_names(config) == (
        ("priority", "gang", "conformance"),
        ("drf", "predicates", "capacity", "nodeorder", "binpack", "network-topology-aware"),
    )
    assert config.tiers[0][1] == PluginConfig("gang", {"enabledVictim": False})
    assert config.tiers[1][2] == PluginConfig("capacity", {"enableHierarchy": True})
    assert config.tiers[1][4] == PluginConfig("binpack", {"arguments": {"binpack.weight": 10, "binpack.cpu": 5}})
    assert config.tiers[1][5].options == {}
    assert config.scheduler_name == "my-volcano"
    assert config.ib_cluster_label == "example.com/ib"
    assert config.kueue == KueueSettings(fair_sharing=FairSharing(), fail_fast=True)
    assert "capacity" in config.plugin_names()
    assert "proportion" not in config.plugin_names()


# Volcano's own default install (installer/helm/chart/volcano/config/volcano-scheduler.conf of v1.15.1,
# unchanged at main).
VOLCANO_DEFAULT_INSTALL = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def test_volcanos_default_install_config_is_accepted() -> None:
    config = from_mapping(yaml.safe_load(VOLCANO_DEFAULT_INSTALL))
    assert tier_names(config) == (VOLCANO_DEFAULT_TIERS[0], ("overcommit", *VOLCANO_DEFAULT_TIERS[1]))
    assert config.warnings == ()
    assert config.tiers[0][1] == PluginConfig("gang", {"enablePreemptable": False})


# The yaml tags of Volcano's PluginOption (pkg/scheduler/conf/scheduler_conf.go): most are
# "enableX", a few are "enabledX". Users write these, not the Go field names.
VOLCANO_PLUGIN_OPTION_KEYS = (
    "enableJobOrder",
    "enableNamespaceOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
)


def test_every_volcano_plugin_option_key_is_accepted() -> None:
    rejected = []
    for key in VOLCANO_PLUGIN_OPTION_KEYS:
        try:
            from_mapping({"tiers": [{"plugins": [{"name": "gang", key: True}]}]})
        except ConfigError:
            rejected.append(key)
    assert rejected == []


def test_a_plugin_switch_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="enabledAllocatable must be true or false, not 'no'"):
        from_mapping({"tiers": [{"plugins": [{"name": "proportion", "enabledAllocatable": "no"}]}]})


def test_a_switch_set_to_false_keeps_the_plugin_off_that_extension_point_only() -> None:
    def points(options: dict[str, Any]) -> set[ExtensionPoint]:
        config = from_mapping({"tiers": [{"plugins": [{"name": "proportion", **options}]}]})
        return open_session(Snapshot({}, {}, {}, [], [], {}), config, SchedulerCache()).points

    on = points({})
    assert points({"enabledAllocatable": False}) == on - {ExtensionPoint.ALLOCATABLE}
    assert points({"enableQueueOrder": True, "enabledAllocatable": True}) == on


@dataclass(frozen=True)
class ActionsCase:
    name: str
    actions: str
    want_actions: tuple[str, ...]


ACTIONS_CASES = [
    ActionsCase("spaces around commas are trimmed", " allocate ,backfill ", ("allocate", "backfill")),
    ActionsCase("empty entries are dropped", "enqueue,,allocate,", ("enqueue", "allocate")),
    ActionsCase("order is kept as written", "backfill, allocate", ("backfill", "allocate")),
]


@pytest.mark.parametrize("case", ACTIONS_CASES, ids=lambda c: c.name)
def test_actions_string(case: ActionsCase) -> None:
    config = from_mapping({"actions": case.actions})
    assert config.actions == case.want_actions
    assert tier_names(config) == VOLCANO_DEFAULT_TIERS


def test_only_tiers_given_keeps_default_actions() -> None:
    config = from_mapping({"tiers": [{"plugins": [{"name": "gang"}]}]})
    assert config.actions == ("enqueue", "allocate", "backfill")
    assert tier_names(config) == (("gang",),)


@dataclass(frozen=True)
class ErrorCase:
    name: str
    data: Any
    want_error: str


def _plugin(name: str, arguments: Any) -> dict[str, Any]:
    return _tiers({"name": name, "arguments": arguments})


def _tiers(*plugins: dict[str, Any]) -> dict[str, Any]:
    return {"tiers": [{"plugins": list(plugins)}]}


ERROR_CASES = [
    ErrorCase("an unknown action", {"actions": "enqueue, allocat"}, "unknown action 'allocat' in 'actions'"),
    ErrorCase(
        "two unknown actions are both named, sorted",
        {"actions": "evict, allocate, alocate"},
        "unknown action 'alocate', 'evict' in 'actions'",
    ),
    ErrorCase("actions as a list", {"actions": ["allocate"]}, "'actions' must be a comma-separated string"),
    ErrorCase(
        "an unknown plugin", _tiers({"name": "gang"}, {"name": "overcommitt"}), "unknown plugin 'overcommitt' in tier 0"
    ),
    ErrorCase(
        "an unknown plugin in the second tier",
        {"tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": [{"name": "nodeOrder"}]}]},
        "unknown plugin 'nodeOrder' in tier 1",
    ),
    ErrorCase(
        "an unknown plugin key",
        _tiers({"name": "capacity", "enableHierachy": True}),
        "unknown key 'enableHierachy' in plugin 'capacity'",
    ),
    ErrorCase("a plugin without a name", _tiers({"enableHierarchy": True}), "every plugin in tier 0 needs a 'name'"),
    ErrorCase("a plugin that is a string", _tiers("gang"), "every plugin in tier 0 needs a 'name'"),  # type: ignore[arg-type]
    ErrorCase("an unknown top-level key", {"action": "allocate"}, "unknown key 'action' in the configuration"),
    ErrorCase(
        "an unknown kueue key", {"kueue": {"fairSharng": {"enable": True}}}, "unknown key 'fairSharng' in 'kueue'"
    ),
    ErrorCase("kueue as a list", {"kueue": ["fairSharing"]}, "'kueue' must be a mapping"),
    ErrorCase("a configuration that is a list", ["actions"], "the configuration must be a mapping"),
    ErrorCase("a tier that is a list", {"tiers": [[{"name": "gang"}]]}, "tier 0 must be a mapping with only 'plugins'"),
    # The contract: "An unknown action, plugin or key is an error that names it."
    ErrorCase(
        "an unknown key next to plugins in a tier is named",
        {"tiers": [{"plugins": [{"name": "gang"}], "plugin": [{"name": "drf"}]}]},
        "'plugin'",
    ),
    ErrorCase(
        "an unknown key inside kueue fairSharing is named",
        {"kueue": {"fairSharing": {"enabel": True}}},
        "'enabel'",
    ),
    ErrorCase(
        "an unknown preemption strategy is named with the allowed ones",
        {"kueue": {"fairSharing": {"enable": True, "preemptionStrategies": ["LessThanFinalShare"]}}},
        "unknown preemption strategy 'LessThanFinalShare' in 'kueue.fairSharing.preemptionStrategies'; "
        "allowed: LessThanInitialShare, LessThanOrEqualToFinalShare",
    ),
    ErrorCase(
        "preemption strategies in the wrong order",
        {"kueue": {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}}},
        "'kueue.fairSharing.preemptionStrategies' must be [LessThanOrEqualToFinalShare] or [LessThanInitialShare] or "
        "[LessThanOrEqualToFinalShare, LessThanInitialShare], not [LessThanInitialShare, LessThanOrEqualToFinalShare]",
    ),
    ErrorCase(
        "preemption strategies as a string",
        {"kueue": {"fairSharing": {"preemptionStrategies": "LessThanInitialShare"}}},
        "'kueue.fairSharing.preemptionStrategies' must be a list of strategy names",
    ),
    ErrorCase(
        "an unknown key inside kueue admissionFairSharing is named",
        {"kueue": {"admissionFairSharing": {"usageHalfLifeDecayTime": "1h"}}},
        "unknown key 'usageHalfLifeDecayTime' in 'kueue.admissionFairSharing'",
    ),
    ErrorCase(
        "a half-life that is not a duration",
        {"kueue": {"admissionFairSharing": {"usageHalfLifeTime": "a week"}}},
        "'kueue.admissionFairSharing.usageHalfLifeTime' must be a duration such as '5m' or '300ms', not 'a week'",
    ),
    ErrorCase(
        "a sampling interval given as a bare number",
        {"kueue": {"admissionFairSharing": {"usageSamplingInterval": 300}}},
        "'kueue.admissionFairSharing.usageSamplingInterval' must be a duration such as '5m' or '300ms', not 300",
    ),
    ErrorCase(
        "a sampling interval of zero",
        {"kueue": {"admissionFairSharing": {"usageSamplingInterval": "0s"}}},
        "'kueue.admissionFairSharing.usageSamplingInterval' must be longer than 0",
    ),
    ErrorCase(
        "resource weights as a list",
        {"kueue": {"admissionFairSharing": {"resourceWeights": ["cpu"]}}},
        "'kueue.admissionFairSharing.resourceWeights' must be a mapping of resource names to weights",
    ),
    ErrorCase(
        "a negative resource weight",
        {"kueue": {"admissionFairSharing": {"resourceWeights": {"cpu": 2.0, "memory": -1}}}},
        "'kueue.admissionFairSharing.resourceWeights': the weight of 'memory' must be a number of at least 0, not -1",
    ),
    # Issue 12 items 16-19: configurations as users bring them.
    ErrorCase("a truly unknown plugin stays an error", _plugin("overcomit", None), "unknown plugin 'overcomit'"),
    ErrorCase("a truly unknown action stays an error", {"actions": "enqueue, shufle"}, "unknown action 'shufle'"),
    ErrorCase("an empty tier is named", {"tiers": [{}]}, "tier 0 has no 'plugins'"),
    ErrorCase("an empty second tier is named", {"tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": []}]}, "tier 1"),
    ErrorCase(
        "a binpack argument upstream does not read",
        _plugin("binpack", {"binpack.gpu": 2}),
        "unknown argument 'binpack.gpu' of plugin 'binpack'",
    ),
    ErrorCase(
        "a per-resource weight for a resource not listed",
        _plugin("binpack", {"binpack.resources": "nvidia.com/gpu", "binpack.resources.example.com/foo": 3}),
        "'binpack.resources.example.com/foo' names a resource missing from 'binpack.resources'",
    ),
    ErrorCase(
        "a weight that is not an integer",
        _plugin("nodeorder", {"leastrequested.weight": "2"}),
        "argument 'leastrequested.weight' must be an integer, not '2'",
    ),
    ErrorCase(
        "a predicates switch that is not a boolean",
        _plugin("predicates", {"predicate.NodeAffinityEnable": "no"}),
        "must be true or false",
    ),
    ErrorCase(
        "drf reads no argument", _plugin("drf", {"drf.weight": 1}), "unknown argument 'drf.weight' of plugin 'drf'"
    ),
    ErrorCase(
        "proportion reads no argument", _plugin("proportion", {"weight": 1}), "unknown argument 'weight' of plugin"
    ),
    ErrorCase(
        "overcommit's factor is a number", _plugin("overcommit", {"overcommit-factor": "1.5"}), "must be a number"
    ),
    ErrorCase(
        "a timeout of a non-duration is named",
        {"kueue": {"waitForPodsReady": {"enable": True, "timeout": "banana"}}},
        "'kueue.waitForPodsReady.timeout' must be a duration such as '5m' or '300ms', not 'banana'",
    ),
    ErrorCase(
        "a negative timeout is named",
        {"kueue": {"waitForPodsReady": {"enable": True, "timeout": "-1s"}}},
        "'kueue.waitForPodsReady.timeout' must not be negative, not '-1s'",
    ),
    ErrorCase(
        "a recovery timeout in days (not Go) is named",
        {"kueue": {"waitForPodsReady": {"recoveryTimeout": "1d"}}},
        "'kueue.waitForPodsReady.recoveryTimeout' must be a duration",
    ),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.name)
def test_config_errors_name_the_culprit(case: ErrorCase) -> None:
    with pytest.raises(ConfigError) as excinfo:
        from_mapping(case.data)
    assert case.want_error in str(excinfo.value)


@pytest.mark.parametrize(
    "strategies",
    [
        ["LessThanOrEqualToFinalShare"],
        ["LessThanInitialShare"],
        ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        [],
    ],
    ids=str,
)
def test_kueues_preemption_strategy_combinations_are_accepted(strategies: list[str]) -> None:
    fair = {"enable": True, "preemptionStrategies": strategies}
    assert from_mapping({"kueue": {"fairSharing": fair}}).kueue.fair_sharing == FairSharing(
        tuple(strategies) or DEFAULT_STRATEGIES
    )


def test_kueues_admission_fair_sharing_example_is_accepted() -> None:
    afs = {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m", "resourceWeights": {"cpu": 2.0, "memory": 1}}
    got = from_mapping({"kueue": {"admissionFairSharing": afs}}).kueue.admission_fair_sharing
    assert got == AdmissionFairSharing(168 * 3600.0, 300.0, {"cpu": 2.0, "memory": 1.0})
    zero = from_mapping({"kueue": {"admissionFairSharing": {"usageHalfLifeTime": "0s"}}}).kueue.admission_fair_sharing
    assert zero is not None and zero.alpha(60) == 0.0


def test_the_runtime_history_label_is_read_and_off_by_default() -> None:
    assert SchedulerConfig().runtime_history_label == ""
    assert from_mapping({"runtimeHistoryLabel": "example.com/user"}).runtime_history_label == "example.com/user"


@pytest.mark.parametrize("value", [None, 5, ["a"]])
def test_a_runtime_history_label_that_is_not_a_string_is_an_error(value: object) -> None:
    with pytest.raises(ConfigError, match="'runtimeHistoryLabel' must be a label name"):
        from_mapping({"runtimeHistoryLabel": value})
