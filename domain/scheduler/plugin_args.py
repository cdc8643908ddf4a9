"""Plugin arguments: the ``arguments`` mapping of a plugin in ``volcano-scheduler.conf``,
checked against the keys upstream's plugin reads (``args.GetInt`` and friends), with the type
it reads them as. A key upstream does not read is an error naming it (upstream ignores it, so
a typo silently changes nothing); a key upstream reads that has no effect here is accepted with
a warning saying why. The plugins read their values through the typed getters below.
"""

from __future__ import annotations

from collections.abc import Mapping


class ArgumentError(ValueError):
    """An argument upstream does not read, or of the wrong type (the config loader reports it)."""


BINPACK_RESOURCE_PREFIX = "binpack.resources."
_PREDICATE_SWITCHES = (
    "NodeAffinity", "NodePorts", "TaintToleration", "PodAffinity", "NodeVolumeLimits", "VolumeZone",
    "PodTopologySpread", "VolumeBinding", "DynamicResourceAllocation", "Cache",
)  # fmt: skip
# plugin -> key -> the type upstream reads it as (int, float, bool or str).
READ: dict[str, dict[str, type]] = {
    "binpack": {"binpack.weight": int, "binpack.cpu": int, "binpack.memory": int, "binpack.resources": str},
    "nodeorder": {
        f"{name}.weight": int
        for name in (
            "leastrequested",
            "mostrequested",
            "balancedresource",
            "nodeaffinity",
            "tainttoleration",
            "podaffinity",
            "imagelocality",
            "podtopologyspread",
        )
    },
    "predicates": {f"predicate.{name}Enable": bool for name in _PREDICATE_SWITCHES},
    "overcommit": {"overcommit-factor": float},
    "sla": {"sla-waiting-time": str},
    "reservation": {
        "reservation-waiting-time": str,
        "reservation-shortest-first": bool,
        "reservation-slowdown-first": bool,
    },
    "capacity": {
        "ancestorReclaimLevel": int,
        "capacity.DynamicResourceAllocationEnable": bool,
        "capacity.DRAConsumableCapacityEnable": bool,
    },
    "network-topology-aware": {
        "weight": int,
        "hypernode.binpack.cpu": int,
        "hypernode.binpack.memory": int,
        "hypernode.binpack.resources": str,
        "hypernode.binpack.normal-pod.enable": bool,
        "hypernode.binpack.normal-pod.fading": float,
        "hypernode.gradient.evict.max-hypernodes": int,
    },
}
# Keys upstream reads whose effect schedstream does not model, and why.
_NO_EFFECT: dict[str, str] = {
    "nodeorder.podaffinity.weight": "pod affinity is not scored here",
    "nodeorder.imagelocality.weight": "images are not tracked here",
    "nodeorder.podtopologyspread.weight": "topology spread constraints are not scored here",
    "nodeorder.nodeaffinity.weight": "preferred node affinity is not scored here",
    "nodeorder.tainttoleration.weight": "PreferNoSchedule taints are not scored here",
    "predicates.predicate.NodePortsEnable": "host ports are not checked here",
    "predicates.predicate.PodAffinityEnable": "inter-pod affinity is not checked here",
    "predicates.predicate.NodeVolumeLimitsEnable": "volumes are not modelled here",
    "predicates.predicate.VolumeZoneEnable": "volumes are not modelled here",
    "predicates.predicate.VolumeBindingEnable": "volumes are not modelled here",
    "predicates.predicate.PodTopologySpreadEnable": "topology spread constraints are not checked here",
    "predicates.predicate.DynamicResourceAllocationEnable": "DRA claims are not modelled here",
    "predicates.predicate.CacheEnable": "a cache of predicate results changes speed, not outcomes",
    "capacity.ancestorReclaimLevel": "reclaim across ancestor levels is not modelled here",
    "capacity.capacity.DynamicResourceAllocationEnable": "DRA claims are not modelled here",
    "capacity.capacity.DRAConsumableCapacityEnable": "DRA claims are not modelled here",
}


def check(plugin: str, arguments: object) -> list[str]:
    """Validate ``plugin``'s arguments; returns one warning per accepted key that has no effect."""
    if arguments is None:
        return []
    where = f"plugin {plugin!r}"
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"{where}: 'arguments' must be a mapping")
    known = READ.get(plugin, {})
    if plugin == "network-topology-aware":
        return (
            [f"{where}: arguments have no effect here (its HyperNode scoring is not upstream's)"] if arguments else []
        )
    warnings = []
    for key, value in arguments.items():
        kind = known.get(key) or (int if plugin == "binpack" and str(key).startswith(BINPACK_RESOURCE_PREFIX) else None)
        if kind is None:
            reads = ", ".join(sorted(known)) or "none"
            raise ArgumentError(f"unknown argument {key!r} of {where} (upstream reads: {reads})")
        if not _is(value, kind):
            raise ArgumentError(f"{where}: argument {key!r} must be {_NAMES[kind]}, not {value!r}")
        if (why := _NO_EFFECT.get(f"{plugin}.{key}")) is not None:
            warnings.append(f"{where}: argument {key!r} has no effect here: {why}")
    if plugin == "binpack":
        _binpack_resources(arguments)
    return warnings


_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _is(value: object, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _binpack_resources(arguments: Mapping[str, object]) -> None:
    """A per-resource weight names a resource listed in ``binpack.resources`` (else upstream ignores it)."""
    listed = set(binpack_resources(arguments))
    for key in arguments:
        if key.startswith(BINPACK_RESOURCE_PREFIX) and key.removeprefix(BINPACK_RESOURCE_PREFIX) not in listed:
            raise ArgumentError(f"plugin 'binpack': argument {key!r} names a resource missing from 'binpack.resources'")


def binpack_resources(arguments: Mapping[str, object]) -> list[str]:
    return [r.strip() for r in str(arguments.get("binpack.resources", "")).split(",") if r.strip()]


def arguments_of(options: Mapping[str, object]) -> Mapping[str, object]:
    args = options.get("arguments")
    return args if isinstance(args, Mapping) else {}


def integer(options: Mapping[str, object], key: str, default: int) -> int:
    value = arguments_of(options).get(key, default)
    return value if isinstance(value, int) else default


def number(options: Mapping[str, object], key: str, default: float) -> float:
    value = arguments_of(options).get(key, default)
    return float(value) if isinstance(value, int | float) else default


def switch(options: Mapping[str, object], key: str, default: bool = True) -> bool:
    value = arguments_of(options).get(key, default)
    return value if isinstance(value, bool) else default
