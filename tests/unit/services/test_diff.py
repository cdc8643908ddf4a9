"""`schedstream diff`: per object, where two decision streams part, with both reasons."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from services.cli import main
from services.diff import diff, render

ROOT = Path(__file__).resolve().parents[3]


def decision(seq: int, kind: str, name: str, *, ident: str = "", **fields: object) -> dict[str, object]:
    target_kind = {"Bind": "Pod", "PodGroupStatus": "PodGroup"}.get(kind, "Queue")
    return {
        "id": ident or f"id-{seq}-{name}",
        "cluster": "c1",
        "seq": seq,
        "kind": kind,
        "target": {"kind": target_kind, "namespace": "ns", "name": name},
        **fields,
    }


def unschedulable(seq: int, message: str) -> dict[str, object]:
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": message}
    return decision(seq, "PodGroupStatus", "pg", reason="NotEnoughResources", phase="Inqueue", conditions=[condition])


def test_streams_that_differ_only_in_ids_decide_the_same() -> None:
    a = [decision(3, "Bind", "p-0", node="n-1", ident="x")]
    b = [decision(3, "Bind", "p-0", node="n-1", ident="y")]
    assert diff(a, b) == []


def test_a_different_node_is_one_change_with_both_decisions() -> None:
    a = [decision(3, "Bind", "p-0", node="n-1"), decision(3, "Bind", "p-1", node="n-1")]
    b = [decision(3, "Bind", "p-0", node="n-2"), decision(3, "Bind", "p-1", node="n-1")]
    [only] = diff(a, b)
    assert only.object == ("c1", "Pod", "ns", "p-0")
    assert [(c.a, c.b) for c in only.changes] == [([a[0]], [b[0]])]


def test_an_extra_decision_shows_as_one_not_as_a_shift() -> None:
    a = [unschedulable(5, "2/2 tasks in gang unschedulable"), decision(9, "PodGroupStatus", "pg", phase="Running")]
    b = [decision(9, "PodGroupStatus", "pg", phase="Running")]
    [only] = diff(a, b)
    assert [(c.seq, len(c.a), len(c.b)) for c in only.changes] == [(5, 1, 0)]


def test_objects_come_in_the_order_of_their_first_difference_with_both_reasons() -> None:
    a = [
        decision(7, "Bind", "p-0", node="n-1"),
        unschedulable(4, "1/2 tasks in gang unschedulable: 1 Insufficient cpu"),
    ]
    b = [
        decision(7, "Bind", "p-0", node="n-3"),
        unschedulable(4, "2/2 tasks in gang unschedulable: 2 Insufficient cpu"),
    ]
    diffs = diff(a, b)
    assert [d.object[3] for d in diffs] == ["pg", "p-0"]
    text = render(diffs, "a.jsonl", "b.jsonl", (2, 2))
    assert "A: seq 4 PodGroupStatus Inqueue (NotEnoughResources) Unschedulable=True: 1/2 tasks" in text
    assert "B: seq 4 PodGroupStatus Inqueue (NotEnoughResources) Unschedulable=True: 2/2 tasks" in text
    assert "A: seq 7 Bind -> n-1 (Scheduled)" not in text  # no reason given, none printed
    assert "B: seq 7 Bind -> n-3" in text
    assert text.endswith("2 object(s) differ")


def test_the_command_compares_a_replay_with_an_edited_copy(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    runner = CliRunner()
    replayed = runner.invoke(main, ["replay", str(ROOT / "examples" / "volcano-gang.jsonl"), "--out", str(a)])
    assert replayed.exit_code == 0, replayed.output
    lines = a.read_text().splitlines()
    edited = [json.loads(line) for line in lines]
    edited[0]["node"] = "gpu-2"
    b.write_text("\n".join(json.dumps(d) for d in edited[:-1]) + "\n")
    result = runner.invoke(main, ["diff", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    objects = [(d["kind"], d["name"]) for d in json.loads(result.stdout)]
    assert objects == [("Pod", "train-worker-0"), ("Queue", "default")]
    same = runner.invoke(main, ["diff", str(a), str(a)])
    assert same.stdout.strip().endswith("the streams decide the same (ids aside)")
