"""KueueSettings: the configuration's ``kueue:`` section, parsed once (after the configuration
loader has validated it, see ``domain.scheduler.config``) into the typed values the Kueue cycle
reads: fair sharing, ``waitForPodsReady``, ``failFast`` and Admission Fair Sharing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from domain import durations

DEFAULT_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
DEFAULT_HALF_LIFE = "168h"
DEFAULT_SAMPLING = "5m"
_AFS = "kueue.admissionFairSharing."


@dataclass(frozen=True, slots=True)
class FairSharing:
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    half_life: float  # seconds
    sampling: float  # seconds
    resource_weights: Mapping[str, float]

    def alpha(self, elapsed: float) -> float:
        """The weight of what is admitted now against the history, after ``elapsed`` seconds."""
        return 0.0 if self.half_life == 0 else 1.0 - 0.5 ** (elapsed / self.half_life)


@dataclass(frozen=True, slots=True)
class KueueSettings:
    fair_sharing: FairSharing | None = None  # None: fair sharing off
    pods_ready_timeout: timedelta | None = None  # ``waitForPodsReady.timeout``; None: waitForPodsReady off
    # ``waitForPodsReady.requeuingStrategy``: the backoff of a workload requeued after PodsReadyTimeout.
    backoff_base_seconds: float = 60
    backoff_max_seconds: float = 3600
    fail_fast: bool = False
    admission_fair_sharing: AdmissionFairSharing | None = None  # None: not configured


def _admission_fair_sharing(afs: Mapping[str, Any]) -> AdmissionFairSharing:
    return AdmissionFairSharing(
        half_life=durations.seconds(afs.get("usageHalfLifeTime", DEFAULT_HALF_LIFE), _AFS + "usageHalfLifeTime"),
        sampling=durations.seconds(afs.get("usageSamplingInterval", DEFAULT_SAMPLING), _AFS + "usageSamplingInterval"),
        resource_weights={str(k): float(v) for k, v in (afs.get("resourceWeights") or {}).items()},
    )


def parse(section: Mapping[str, Any]) -> KueueSettings:
    """The typed settings of a validated ``kueue:`` mapping (missing keys take Kueue's defaults)."""
    fair = section.get("fairSharing") or {}
    wait = section.get("waitForPodsReady") or {}
    strategy = wait.get("requeuingStrategy") or {}
    afs = section.get("admissionFairSharing")
    timeout = durations.parse(wait.get("timeout", "5m"), "kueue.waitForPodsReady.timeout")
    return KueueSettings(
        fair_sharing=FairSharing(tuple(fair.get("preemptionStrategies") or DEFAULT_STRATEGIES))
        if fair.get("enable")
        else None,
        pods_ready_timeout=timeout if wait.get("enable") else None,
        backoff_base_seconds=strategy.get("backoffBaseSeconds", 60),
        backoff_max_seconds=strategy.get("backoffMaxSeconds", 3600),
        fail_fast=bool(section.get("failFast")),
        admission_fair_sharing=None if afs is None else _admission_fair_sharing(afs),
    )
