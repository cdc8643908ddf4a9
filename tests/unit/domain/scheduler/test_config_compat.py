"""Configurations as users bring them (issue 12 items 16-19; Volcano's shipped default is in
test_config): names upstream knows but we do not model warn, plugin arguments are checked against what
upstream reads, Go durations are parsed exactly, and an empty tier is named."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from domain import durations
from domain.kueue.settings import parse as parse_kueue
from domain.scheduler.config import from_mapping
from services.cli import main


def test_upstream_names_without_effect_here_load_with_one_warning_each() -> None:
    config = from_mapping({
        "actions": "enqueue, allocate, shuffle",
        "tiers": [{"plugins": [{"name": "gang"}, {"name": "deviceshare", "arguments": {"deviceshare.VGPU": True}}]}],
    })  # fmt: skip
    assert config.actions == ("enqueue", "allocate")
    assert [p.name for p in config.tiers[0]] == ["gang"]
    assert len(config.warnings) == 2
    assert config.warnings[0].startswith("action 'shuffle' has no effect here: ")
    assert config.warnings[1].startswith("plugin 'deviceshare' has no effect here: GPU sharing")
    assert all("\n" not in w for w in config.warnings)


def test_arguments_upstream_reads_are_accepted() -> None:
    config = from_mapping({
        "tiers": [{"plugins": [
            {"name": "binpack", "arguments": {
                "binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 1,
                "binpack.resources": "nvidia.com/gpu, example.com/foo",
                "binpack.resources.nvidia.com/gpu": 2, "binpack.resources.example.com/foo": 3,
            }},
            {"name": "nodeorder", "arguments": {"leastrequested.weight": 0, "mostrequested.weight": 2}},
            {"name": "predicates", "arguments": {"predicate.TaintTolerationEnable": False}},
            {"name": "overcommit", "arguments": {"overcommit-factor": 1}},
        ]}],
    })  # fmt: skip
    assert config.warnings == ()


def _plugin(name: str, arguments: Any) -> dict[str, Any]:
    return {"tiers": [{"plugins": [{"name": name, "arguments": arguments}]}]}


def test_an_argument_upstream_reads_but_we_do_not_model_warns() -> None:
    config = from_mapping(_plugin("nodeorder", {"podaffinity.weight": 2}))
    assert config.warnings == ("plugin 'nodeorder': argument 'podaffinity.weight' has no effect here: "
                               "pod affinity is not scored here",)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "want"),
    [("300ms", timedelta(milliseconds=300)), ("1m30s", timedelta(seconds=90)), ("0", timedelta(0)),
     ("168h", timedelta(days=7)), ("1.5h", timedelta(minutes=90))],
)  # fmt: skip
def test_go_durations_are_read_exactly(text: str, want: timedelta) -> None:
    assert durations.parse(text, "k") == want


def test_the_pods_ready_timeout_is_read_as_go_reads_it() -> None:
    # Was 18,000 s: "300ms" read as 300 minutes.
    settings = parse_kueue({"waitForPodsReady": {"enable": True, "timeout": "300ms"}})
    assert settings.pods_ready_timeout == timedelta(milliseconds=300)


def test_replay_prints_one_warning_line_per_name_without_effect(tmp_path: Path) -> None:
    config = tmp_path / "volcano-scheduler.conf"
    config.write_text(
        'actions: "enqueue, allocate, shuffle"\ntiers:\n- plugins:\n  - name: gang\n  - name: numaaware\n'
    )
    events = tmp_path / "events.jsonl"
    events.write_text("")
    result = CliRunner().invoke(
        main, ["replay", str(events), "--out", str(tmp_path / "out.jsonl"), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert "action 'shuffle' has no effect here" in warnings[0]
    assert "plugin 'numaaware' has no effect here: NUMA topology is not modelled" in warnings[1]


def test_replay_refuses_an_empty_tier_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.conf"
    config.write_text("tiers:\n- {}\n")
    events = tmp_path / "events.jsonl"
    events.write_text("")
    result = CliRunner().invoke(main, ["replay", str(events), "--out", "-", "--config", str(config)])
    assert result.exit_code == 2
    assert "tier 0 has no 'plugins'" in result.stderr
    assert "Traceback" not in result.output
