"""Simulator speed (issue 6): simulated hours per wall second of ``schedstream simulate``'s closed
loop (the scheduler's cycles, the simulated cluster, events.jsonl and decisions.jsonl written to
files), against the FCFS baseline's own simulator on the same trace and nodes, timed in the
same process (it places jobs with a first fit and no scheduler at all: the floor of what a
simulation of the trace costs).

Workloads: the whole openb trace (8,152 pods; ``--openb-pods N`` takes the first N) on all
1,523 of its nodes (from $SCHEDSTREAM_SHARED_DATA or ../shared/data; left out when missing),
and the Kueue shape of issue 5 at ``--kueue-scale`` (services/traces/kueue_shape.py; 1.0, the
default, is 15,000 workloads). Issue 6's target: each of the two whole workloads in under 60 s
of one core, printed as CPU seconds beside the wall time.

    python -m bench.simulate [--openb-pods N] [--kueue-scale 1.0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from domain.scheduler.config import SchedulerConfig
from services.simulate.baselines import fcfs
from services.simulate.loop import run_closed_loop
from services.traces import kueue_shape
from services.traces.model import Node, Trace
from services.traces.openb import read_openb
from tests.shared_data import SHARED_DATA


@dataclass(frozen=True)
class Case:
    name: str
    trace: Trace
    nodes: tuple[Node, ...]
    period: float
    kueue_objects: list[dict[str, Any]] | None = None


def _timed(run: Callable[[], float]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, simulated seconds) of one run."""
    started, cpu = time.perf_counter(), time.process_time()
    simulated = run()
    return time.perf_counter() - started, time.process_time() - cpu, simulated


def closed_loop(case: Case) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        with (out / "events.jsonl").open("wb") as events, (out / "decisions.jsonl").open("wb") as decisions:
            cluster = run_closed_loop(
                case.trace,
                case.nodes,
                SchedulerConfig(),
                events,
                decisions,
                period=case.period,
                kueue_objects=case.kueue_objects,
            )
    return cluster.outcome.end


def baseline(case: Case) -> float:
    return fcfs(case.trace, case.nodes).end


def cases(openb_pods: int | None, kueue_scale: float) -> list[Case]:
    out: list[Case] = []
    pods, nodes = SHARED_DATA / "openb_pod_list_default.csv", SHARED_DATA / "openb_node_list_all_node.csv"
    if pods.exists() and nodes.exists():
        openb = read_openb(pods, nodes)
        if openb_pods is None:
            out.append(Case(f"openb ({len(openb.jobs):,} pods)", openb, openb.nodes, 1.0))
        else:
            sliced = Trace(openb.jobs[:openb_pods], openb.nodes)
            out.append(Case(f"openb, first {openb_pods:,} pods", sliced, sliced.nodes, 1.0))
    else:
        print(f"(no openb trace in {SHARED_DATA}: left out)")
    shape = kueue_shape.trace(kueue_scale)
    name = f"Kueue shape x{kueue_scale:g} ({len(shape.jobs):,} workloads)"
    out.append(Case(name, shape, shape.nodes, 0.1, kueue_shape.queues()))
    return out


def report(openb_pods: int | None = None, kueue_scale: float = 1.0) -> None:
    print(f"{'workload':<38} {'nodes':>6} {'sim h':>9} {'wall s':>8} {'CPU s':>7} {'sim h/wall s':>13}", end="")
    print(f" {'FCFS s':>8} {'x FCFS':>8}")
    for case in cases(openb_pods, kueue_scale):
        base_wall, _, _ = _timed(lambda case=case: baseline(case))
        wall, cpu, simulated = _timed(lambda case=case: closed_loop(case))
        hours = simulated / 3600
        print(
            f"{case.name:<38} {len(case.nodes):>6,} {hours:>9.3f} {wall:>8.2f} {cpu:>7.2f} {hours / wall:>13.4f}"
            f" {base_wall:>8.2f} {wall / base_wall:>8.1f}"
        )
    print("issue 6 target: each whole workload in under 60 CPU s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openb-pods", type=int, default=None, help="the first N pods (default: all)")
    parser.add_argument("--kueue-scale", type=float, default=1.0)
    args = parser.parse_args()
    report(args.openb_pods, args.kueue_scale)


if __name__ == "__main__":
    main()
