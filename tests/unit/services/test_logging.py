"""Logging (services/logging.py): off a terminal every line is JSON, Faust's and aiokafka's
records included, without escape codes; an invalid format or level is a one-line usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")

LOGS = """
import logging
from services import logging as log
early = log.get("schedstream.store")  # as a module takes its logger, at import
log.configure("info", "auto")
log.get("schedstream.worker").info("decision", cluster="c1", seq=3)
early.info("taken before configure")
logging.getLogger("aiokafka.consumer").warning("heartbeat failed for group %s", "g1")
logging.getLogger("faust.transport").info("not shown: libraries log at WARNING unless we debug")
logging.getLogger("mode.worker").error("crashed", exc_info=ZeroDivisionError("boom"))
"""


def test_every_line_is_json_without_escape_codes_when_stderr_is_a_file(tmp_path: Path) -> None:
    err = tmp_path / "stderr.log"
    with err.open("wb") as stderr:
        subprocess.run([sys.executable, "-c", LOGS], cwd=ROOT, stderr=stderr, check=True)
    text = err.read_text()
    assert "\x1b" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [(line["logger"], line["event"], line["level"]) for line in lines] == [
        ("schedstream.worker", "decision", "info"),
        ("schedstream.store", "taken before configure", "info"),
        ("aiokafka.consumer", "heartbeat failed for group g1", "warning"),
        ("mode.worker", "crashed", "error"),
    ]
    assert lines[0]["cluster"] == "c1" and lines[0]["seq"] == 3
    assert "ZeroDivisionError: boom" in lines[3]["exception"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [("SCHEDSTREAM_LOG_FORMAT", "xml"), ("SCHEDSTREAM_LOG_LEVEL", "loud")],
    ids=["format", "level"],
)
def test_an_invalid_log_setting_is_a_usage_error(tmp_path: Path, variable: str, value: str) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("")
    run = subprocess.run(
        [SCHEDSTREAM, "replay", str(events), "--out", str(tmp_path / "out.jsonl")],
        env={"PATH": "/usr/bin:/bin", variable: value},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert f"{variable}={value!r} is not one of" in run.stderr
    assert "Traceback" not in run.stderr
