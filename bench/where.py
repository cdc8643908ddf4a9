"""Where a benchmark's time goes: one run of it under cProfile, told as the share of each stage
of the pipeline (the inclusive time of the stage's entry points), of each module (the own time
of its functions) and of the costliest functions. The speed table prints it under each row
that misses its target, from a run beside the measured one, so the gap is explained in the
same run (``make bench``).

cProfile weighs every call, so code made of many small calls reads dearer than it is: the
shares say where the time goes, not what each part would cost without the profiler.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]

Entry = tuple[str, str]  # (where its file is, relative to the repo root: a file or a folder/, function name)

STAGES: tuple[tuple[str, tuple[Entry, ...]], ...] = (
    ("parse", (("domain/events.py", "parse_event"),)),
    ("fold into the state", (("domain/state.py", "apply"),)),
    ("snapshot", (("domain/scheduler/snapshot.py", "build"),)),
    ("open session", (("domain/scheduler/registry.py", "open_session"),)),
    ("actions", (("domain/scheduler/actions/", "execute"),)),
    (
        "close",
        (
            ("domain/scheduler/close_decisions.py", "placements"),
            ("domain/scheduler/close_decisions.py", "pod_group_statuses"),
            ("domain/scheduler/close_decisions.py", "queue_statuses"),
            ("domain/scheduler/pod_status.py", "pod_statuses"),
            ("domain/scheduler/job_status.py", "job_statuses"),
        ),
    ),
    ("Kueue cycle", (("domain/kueue/cycle.py", "run"),)),
    ("store", (("services/store/store.py", "write_batch"),)),
    ("simulate's baselines", (("services/simulate/baselines.py", "run"),)),
)
"""Each stage and its entry points; no entry point of one stage runs inside another's."""


@dataclass(frozen=True, slots=True)
class Where:
    total: float  # seconds of the profiled run, as cProfile counts them
    stages: list[tuple[str, float]]  # (stage, share of ``total``), the largest first; then "other"
    modules: list[tuple[str, float]]  # (module, share of own time), the largest first
    functions: list[tuple[str, float]]  # (module.function, share of own time), the largest first

    def lines(self, note: str = "", shown: int = 5) -> list[str]:
        """Three lines: the stages, the modules and the functions; ``note`` says how the run
        profiled differs from the one measured."""

        def told(items: list[tuple[str, float]], count: int = shown) -> str:
            return ", ".join(f"{name} {share:.0%}" for name, share in items[:count] if share >= 0.005)

        run = f"a run beside it, {note}" if note else "a run beside it"
        run += f", {self.total:,.1f} s under the profiler"
        return [
            f"  where the time goes (cProfile of {run}): {told(self.stages, len(self.stages))}",
            f"    modules, own time: {told(self.modules)}",
            f"    costliest functions, own time: {told(self.functions)}",
        ]


def profiled(run: Callable[[], T]) -> tuple[T, Where]:
    """``run()`` under cProfile, and where its time went."""
    profile = cProfile.Profile()
    result = profile.runcall(run)
    return result, where(pstats.Stats(profile))


def _relative(filename: str) -> str:
    try:
        return Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return filename  # outside the repo: a library's or the standard library's


def _module(path: str) -> str:
    """A repo file's module name (``domain/scheduler/candidates.py`` -> ``scheduler.candidates``,
    ``services/store/store.py`` -> ``store.store``); a library file's top package."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if path.endswith(".py") and not path.startswith("/"):
        parts = path.removesuffix(".py").split("/")
        return ".".join(parts[1:] if len(parts) > 2 else parts)
    return "python" if path.startswith(("/", "<", "~")) else path


def _builtin(function: str) -> str:
    """A built-in's name as cProfile gives it, shortened: ``<method 'get' of 'dict' objects>``
    -> ``dict.get``, ``<built-in method builtins.len>`` -> ``len``."""
    if function.startswith("<method '"):
        method, _, owner = function.removeprefix("<method '").partition("' of '")
        return f"{owner.partition(chr(39))[0]}.{method}"
    return function.removeprefix("<built-in method ").removesuffix(">").removeprefix("builtins.")


def _is(entry: Entry, path: str, function: str) -> bool:
    place, name = entry
    return function == name and (path == place or (place.endswith("/") and path.startswith(place)))


def where(stats: pstats.Stats) -> Where:
    """The shares of ``stats`` (a finished cProfile's) by stage, module and function."""
    table = stats.stats  # type: ignore[attr-defined]  # (file, line, function) -> (cc, nc, own, cumulative, callers)
    total = sum(own for _, _, own, _, _ in table.values()) or 1.0
    per_stage: dict[str, float] = {}
    per_module: dict[str, float] = {}
    per_function: dict[str, float] = {}
    for (filename, _, function), (_, _, own, cumulative, callers) in table.items():
        path = _relative(filename)
        for stage, entries in STAGES:
            if any(_is(entry, path, function) for entry in entries):
                per_stage[stage] = per_stage.get(stage, 0.0) + cumulative
        if filename == "~":  # a built-in (``dict.get``, ``len``): its time is its callers' modules'
            for (caller_file, _, _), (_, _, in_caller, _) in callers.items():
                module = _module(_relative(caller_file))
                per_module[module] = per_module.get(module, 0.0) + in_caller
            name = _builtin(function)
        else:
            module = _module(path)
            per_module[module] = per_module.get(module, 0.0) + own
            name = f"{module}.{function}"
        per_function[name] = per_function.get(name, 0.0) + own
    stages = sorted(((stage, seconds / total) for stage, seconds in per_stage.items()), key=lambda i: -i[1])
    stages.append(("other", max(0.0, 1 - sum(share for _, share in stages))))
    return Where(total, stages, _shares(per_module, total), _shares(per_function, total))


def _shares(seconds: dict[str, float], total: float) -> list[tuple[str, float]]:
    return sorted(((name, value / total) for name, value in seconds.items()), key=lambda i: (-i[1], i[0]))
