"""Digests of the decisions (and simulated events) of the real traces, for refactors that must
not change a byte: run it before and after, and compare the two outputs line by line.

Each case runs ``schedstream simulate`` on a slice of a trace in ``../shared/data`` (openb under
Volcano and under Kueue, openb under each example policy, DLRM, the HPC2N SWF trace, the
Kueue-shape workload) and prints one line per case: the name, the sha256 of ``decisions.jsonl``,
of ``events.jsonl`` and of ``metrics.json`` (ours and the FCFS, EASY and greedy baselines), and the
decision count. The scenario suite (``tests/scenarios``)
checks its own expected decisions; this covers the traces it does not.

    python -m bench.golden [--out FILE] [--small]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
POLICIES = ROOT / "examples" / "policies"


@dataclass(frozen=True)
class Case:
    name: str
    trace: str  # file name inside the work dir, written by ``prepare``
    args: tuple[str, ...]


def _head(source: Path, target: Path, lines: int) -> None:
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt") as src, target.open("w") as dst:
        for n, line in enumerate(src):
            if n >= lines:
                break
            dst.write(line)


def prepare(work: Path, small: bool) -> list[Case]:
    """Write the trace slices into ``work``; the cases that run them."""
    scale = 1 if not small else 4
    _head(DATA / "openb_pod_list_default.csv", work / "openb.csv", 2001 // scale)
    _head(DATA / "openb_pod_list_default.csv", work / "openb-small.csv", 601 // scale)
    _head(DATA / "disaggregated_DLRM_trace.csv", work / "dlrm.csv", 3001 // scale)
    _head(DATA / "HPC2N-2002-2.2-cln.swf.gz", work / "hpc2n.swf", 3000 // scale)
    kueue = work / "kueue-shape"
    subprocess.run(
        [sys.executable, "-m", "services.traces.kueue_shape", "--scale", str(0.05 / scale), "--out", str(kueue)],
        check=True,
        cwd=ROOT,
    )
    nodes = str(DATA / "openb_node_list_all_node.csv")
    cases = [
        Case("openb-volcano", "openb.csv", ("--format", "openb", "--nodes", nodes)),
        Case("openb-kueue", "openb-small.csv", ("--format", "openb", "--nodes", nodes, "--scheduler", "kueue")),
        Case("dlrm", "dlrm.csv", ("--format", "dlrm")),
        Case("hpc2n-swf", "hpc2n.swf", ("--format", "swf")),
        Case(
            "kueue-shape",
            "kueue-shape/jobs.jsonl",
            ("--nodes", str(kueue / "nodes.jsonl"), "--queues", str(kueue / "queues.yaml"), "--period", "0.1"),
        ),
    ]
    for policy in sorted(POLICIES.glob("*.yaml")):
        args = ("--format", "openb", "--nodes", nodes, "--config", str(policy))
        cases.append(Case(f"openb-{policy.stem}", "openb-small.csv", args))
    return cases


def sha(path: Path) -> str:
    """A file's sha256, its first 16 hex digits: how the speed table and these cases name an output."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def run(work: Path, cases: list[Case]) -> Iterator[str]:
    for case in cases:
        out = work / "runs" / case.name
        cmd = [sys.executable, "-m", "services.cli", "simulate", str(work / case.trace), *case.args, "--out", str(out)]
        done = subprocess.run(cmd, check=False, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            yield f"{case.name} FAILED: {done.stderr.strip().splitlines()[-1:]}"
            continue
        decisions = out / "decisions.jsonl"
        count = sum(1 for _ in decisions.open())
        files = f"decisions={sha(decisions)} events={sha(out / 'events.jsonl')}"
        yield f"{case.name} {files} metrics={sha(out / 'metrics.json')} n={count}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the lines to this file")
    parser.add_argument("--small", action="store_true", help="a quarter of each slice (a quick check)")
    args = parser.parse_args()
    lines = []
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        work = Path(tmp)
        for line in run(work, prepare(work, args.small)):
            print(line, flush=True)
            lines.append(line)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
