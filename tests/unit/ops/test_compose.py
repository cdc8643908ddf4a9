"""docker-compose.yml and .dockerignore: every long-running service has a healthcheck, the
worker's is /readyz, and its deliberate exit 78 ends the container instead of a restart loop
(the worker's shell wrapper is run here with a stand-in for schedstream)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def services() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_long_running_services_have_healthchecks_and_the_worker_checks_readyz() -> None:
    found = services()
    for name in ("kafka", "postgres", "worker"):
        assert found[name]["healthcheck"]["test"], name
    worker = found["worker"]
    assert "/readyz" in " ".join(worker["healthcheck"]["test"])
    assert worker["environment"]["SCHEDSTREAM_METRICS_ADDR"] == "0.0.0.0:9090"
    assert worker["environment"]["SCHEDSTREAM_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert worker["restart"] == "on-failure"


@pytest.mark.parametrize(
    ("worker_exit", "want_container_exit"),
    [(78, 0), (70, 70), (1, 1), (0, 0)],
    ids=["configuration refusal stops", "crashed batch restarts", "error restarts", "clean stop"],
)
def test_only_exit_78_ends_the_container_with_success(worker_exit: int, want_container_exit: int) -> None:
    worker = services()["worker"]
    assert worker["entrypoint"] == ["sh", "-c"]
    script = worker["command"][0].replace("$$", "$")  # compose's escape for a literal $
    run = subprocess.run(
        ["sh", "-c", f"schedstream() {{ return {worker_exit}; }}; {script}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == want_container_exit
    assert ("not restarting" in run.stderr) == (worker_exit == 78)


def test_dockerignore_keeps_local_state_out_of_the_build_context() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", ".local", ".schedstream", "ops/kafka/.jars", "*.db"} <= ignored
    for needed in ("pyproject.toml", "README.md", "domain", "services", "migrations"):
        assert needed not in ignored
