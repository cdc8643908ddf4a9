"""Issue 16's fairness targets over neighbouring arrival scales. ``schedstream simulate`` runs one
trace at each scale, as many at once as there are cores, and each scale's figures are set beside
the baselines of its own run. Then come their mean and their worst, and at how many scales each
target holds.

Near saturation a trace is chaotic. On the first 18,000 HPC2N jobs, EASY's own mean bounded
slowdown moves by a third between 1.48x and 1.50x. The largest gangs' longest wait moves between
1.67x and 3.62x EASY's from one hundredth to the next (docs/large-gangs.md, thirty-third and
thirty-eighth sessions). So a change of policy is judged over several scales, not at one.

    python -m bench.fairness TRACE [--scales 1.48,1.49,1.5,1.51,1.52] [--workers N] [simulate's options]

Any option this command does not know goes to ``simulate`` as it is (``--format swf --config
examples/policies/large-gangs-history.yaml``...). The columns, per scale:
- mean bounded slowdown: ours, EASY's and greedy's;
- ours over EASY's, and over greedy's;
- the largest size class's longest wait over EASY's;
- the smallest class's mean wait over greedy's;
- jobs never started (censored);
- the CPU-s of the whole run.

The targets are issue 16's:
- the slowdown within 1.1x EASY's, and below greedy's;
- the largest class's longest wait at most 2x EASY's;
- the smallest class's mean wait at most 1.2x greedy's;
- no job censored.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCALES = (1.48, 1.49, 1.5, 1.51, 1.52)


@dataclass(frozen=True)
class Row:
    """One scale's figures, read from its run's ``metrics.json``."""

    scale: float
    slowdown: float
    easy: float
    greedy: float
    tail: float  # the largest class's longest wait over EASY's
    small: float  # the smallest class's mean wait over greedy's
    censored: int
    cpu: float

    @property
    def over_easy(self) -> float:
        return _ratio(self.slowdown, self.easy)

    @property
    def over_greedy(self) -> float:
        return _ratio(self.slowdown, self.greedy)


@dataclass(frozen=True)
class Target:
    name: str
    holds: Callable[[Row], bool]


TARGETS = (
    Target("slowdown within 1.1x EASY's", lambda r: r.over_easy <= 1.1),
    Target("slowdown below greedy's", lambda r: r.over_greedy < 1.0),
    Target("largest class's longest wait at most 2x EASY's", lambda r: r.tail <= 2.0),
    Target("smallest class's mean wait at most 1.2x greedy's", lambda r: r.small <= 1.2),
    Target("none censored", lambda r: r.censored == 0),
)


def _ratio(ours: float, theirs: float) -> float:
    """``ours`` over ``theirs``: 1 when both are 0 (a class no job waited in), infinite over 0."""
    if theirs == 0:
        return 1.0 if ours == 0 else float("inf")
    return ours / theirs


def row(scale: float, metrics: dict[str, Any], cpu: float) -> Row:
    """The figures of one run's ``metrics.json``: size classes in the order the file gives them,
    the first the smallest."""
    policies = metrics["policies"]
    ours, easy, greedy = policies["schedstream"], policies["easy"], policies["greedy"]
    classes = list(ours["by_size"])
    if not classes:
        raise SystemExit("bench.fairness: the run's metrics have no size classes")
    first, last = classes[0], classes[-1]

    def of(policy: dict[str, Any], name: str, what: str) -> float:
        return float(policy["by_size"][name]["wait"][what])

    return Row(
        scale=scale,
        slowdown=float(ours["bounded_slowdown"]["mean"]),
        easy=float(easy["bounded_slowdown"]["mean"]),
        greedy=float(greedy["bounded_slowdown"]["mean"]),
        tail=_ratio(of(ours, last, "max"), of(easy, last, "max")),
        small=_ratio(of(ours, first, "mean"), of(greedy, first, "mean")),
        censored=int(ours["censored"]["count"]),
        cpu=cpu,
    )


def _command(trace: Path, scale: float, options: Sequence[str], out: Path) -> list[str]:
    simulate = [sys.executable, "-m", "services.cli", "simulate", str(trace)]
    return [*simulate, "--arrival-scale", str(scale), *options, "--out", str(out)]


def _run(trace: Path, scale: float, options: Sequence[str], work: Path) -> Row:
    """One scale's run, in the caller's directory (so ``options`` may name files relative to
    it); its directory is removed once its metrics are read (the events of a long trace take
    hundreds of MB)."""
    out, log = work / f"x{scale}", work / f"x{scale}.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    with log.open("wb") as errors:
        child = subprocess.Popen(
            _command(trace, scale, options, out), env=env, stdout=subprocess.DEVNULL, stderr=errors
        )
    _, status, usage = os.wait4(child.pid, 0)  # its own CPU time, which Popen.wait does not give
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait for it again
    if child.returncode:
        last = log.read_text().strip().splitlines()[-1:] or ["no message"]
        raise SystemExit(f"bench.fairness: simulate at {scale}x failed: {last[0]}")
    metrics = json.loads((out / "metrics.json").read_text())
    shutil.rmtree(out)
    return row(scale, metrics, usage.ru_utime + usage.ru_stime)


def runs(trace: Path, scales: Sequence[float], options: Sequence[str], workers: int) -> Iterator[Row]:
    """Each scale's row, as its run ends, at most ``workers`` runs at once."""
    with tempfile.TemporaryDirectory(prefix="fairness-") as tmp, ThreadPoolExecutor(workers) as pool:
        pending = [pool.submit(_run, trace, scale, options, Path(tmp)) for scale in scales]
        for done in as_completed(pending):
            yield done.result()


def table(rows: Sequence[Row]) -> list[str]:
    """The rows by scale, then their mean and their worst, the CPU-s of all the runs, then at
    how many scales each target holds."""
    head = (
        f"{'scale':>6} {'slowdown':>10} {'EASY':>10} {'greedy':>10} {'/EASY':>6} {'/greedy':>7}"
        f" {'tail/EASY':>9} {'small/greedy':>12} {'censored':>8} {'CPU-s':>7}"
    )
    lines = [head]
    for r in sorted(rows, key=lambda r: r.scale):
        lines.append(
            f"{r.scale:>6.3g} {r.slowdown:>10.1f} {r.easy:>10.1f} {r.greedy:>10.1f} {r.over_easy:>6.2f}"
            f" {r.over_greedy:>7.2f} {r.tail:>9.2f} {r.small:>12.2f} {r.censored:>8d} {r.cpu:>7.1f}"
        )
    for name, pick in (("mean", fmean), ("worst", max)):
        lines.append(
            f"{name:>6} {'':>10} {'':>10} {'':>10} {pick(r.over_easy for r in rows):>6.2f}"
            f" {pick(r.over_greedy for r in rows):>7.2f} {pick(r.tail for r in rows):>9.2f}"
            f" {pick(r.small for r in rows):>12.2f} {max(r.censored for r in rows):>8d}"
            f" {pick(r.cpu for r in rows):>7.1f}"
        )
    lines.append(f"{len(rows)} runs, {sum(r.cpu for r in rows):.1f} CPU-s in all")
    lines.append("")
    for target in TARGETS:
        met = sum(1 for r in rows if target.holds(r))
        lines.append(f"{target.name}: met at {met} of {len(rows)} scales")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--scales", default=",".join(map(str, SCALES)), help="arrival scales, comma-separated")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="runs at once (default: the cores)")
    args, options = parser.parse_known_args(argv)
    try:
        scales = [float(s) for s in args.scales.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--scales: not a list of numbers: {args.scales!r}")
    if not scales or any(s <= 0 for s in scales):
        parser.error("--scales: give one positive number or more")
    if not args.trace.is_file():
        parser.error(f"no such trace: {args.trace}")
    rows = []
    for found in runs(args.trace.resolve(), scales, options, max(1, args.workers)):
        print(f"{found.scale}x done in {found.cpu:.1f} CPU-s", file=sys.stderr, flush=True)
        rows.append(found)
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
