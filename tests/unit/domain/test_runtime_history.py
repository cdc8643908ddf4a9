"""domain.runtime_history: each user's last runtimes, as the stream shows them, folded by the
cluster state when the config names a user label, and the predictions made of them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.runtime_history import KEPT, RuntimeHistory, raised, user_of
from domain.state import ClusterState
from tests import builders as b

LABEL = "example.com/user"


def _pod(name: str, user: str | None, phase: str, *, started: float | None = 0, rv: str = "1") -> dict[str, Any]:
    pod = b.pod(name, "team", node_name="n", phase=phase, rv=rv)
    if user is not None:
        pod["metadata"]["labels"] = {LABEL: user}
    if started is not None:
        pod["status"]["startTime"] = b.iso(started)
    return pod


def _fold(lines: list[str], label: str = LABEL, *, markers: bool = True) -> ClusterState:
    """The state of ``lines``, after a first marker at 0 when the stream has ``markers``."""
    state = ClusterState("c1")
    for seq, event in enumerate(b.parse_all([b.marker(0), *lines] if markers else lines)):
        state.apply(event, seq=seq, history_label=label)
    return state


def _ran(name: str, user: str | None, start: float, end: float, *, started: float | None = None) -> list[str]:
    """A pod seen running from ``start``, then Succeeded, and the marker at ``end`` after it."""
    began = start if started is None else started
    return [
        b.added(_pod(name, user, "Running", started=start)),
        b.modified(_pod(name, user, "Succeeded", started=began, rv="2")),
        b.marker(end),
    ]


def test_the_marker_after_a_pod_succeeds_settles_its_runtime() -> None:
    state = _fold(_ran("a", "u", 0, 30))
    assert state.runtime_history.runs == {"team/u": (30.0,)}
    assert state.runtime_history.ended == []


def test_before_the_next_marker_the_runtime_waits() -> None:
    lines = _ran("a", "u", 0, 30)[:2]
    state = _fold([b.marker(10), *lines])
    assert state.runtime_history.runs == {}
    assert [user for user, _ in state.runtime_history.ended] == ["team/u"]


def test_each_user_keeps_the_last_runs_and_predicts_their_mean() -> None:
    lines = [*_ran("a", "u", 0, 10), *_ran("b", "u", 10, 40), *_ran("c", "u", 40, 100), *_ran("d", "w", 0, 200)]
    state = _fold(lines)
    assert state.runtime_history.runs == {"team/u": (30.0, 60.0), "team/w": (200.0,)}
    assert KEPT == 2
    pod = b.typed(_pod("next", "u", "Pending", started=None))
    assert user_of(pod, LABEL) == "team/u"  # type: ignore[arg-type]
    assert state.runtime_history.mean("team/u") == 45.0
    stranger = b.typed(_pod("next", "x", "Pending", started=None))
    assert user_of(stranger, LABEL) == "team/x"  # type: ignore[arg-type]
    assert state.runtime_history.mean("team/x") is None


def test_a_pod_seen_succeeded_again_counts_once() -> None:
    lines = [*_ran("a", "u", 0, 5), b.modified(_pod("a", "u", "Succeeded", rv="3")), b.marker(9)]
    assert _fold(lines).runtime_history.runs == {"team/u": (5.0,)}


@pytest.mark.parametrize(
    "lines",
    [
        [b.added(_pod("a", "u", "Succeeded")), b.marker(5)],
        [b.added(_pod("a", "u", "Running")), b.modified(_pod("a", "u", "Failed", rv="2")), b.marker(5)],
        [b.added(_pod("a", "u", "Running")), b.deleted(_pod("a", "u", "Running", rv="2")), b.marker(5)],
        _ran("a", None, 0, 5),
        [
            b.added(_pod("a", "u", "Running", started=None)),
            b.modified(_pod("a", "u", "Succeeded", started=None, rv="2")),
            b.marker(5),
        ],
    ],
    ids=["first seen finished", "failed", "deleted while running", "no user label", "no start time"],
)
def test_what_teaches_nothing(lines: list[str]) -> None:
    assert _fold(lines).runtime_history.runs == {}


def test_a_stream_without_markers_keeps_nothing() -> None:
    assert _fold(_ran("a", "u", 0, 5), markers=False).runtime_history == RuntimeHistory()


def test_without_a_label_in_the_config_nothing_is_kept() -> None:
    assert _fold(_ran("a", "u", 0, 5), label="").runtime_history == RuntimeHistory()


def test_a_run_shorter_than_a_second_counts_as_one() -> None:
    assert _fold([b.marker(10), *_ran("a", "u", 10, 10)]).runtime_history.runs == {"team/u": (1.0,)}


def test_the_start_time_of_the_running_pod_serves_when_the_last_sight_drops_it() -> None:
    lines = [
        b.added(_pod("a", "u", "Running", started=3)),
        b.modified(_pod("a", "u", "Succeeded", started=None, rv="2")),
        b.marker(10),
    ]
    assert _fold(lines).runtime_history.runs == {"team/u": (7.0,)}


@given(st.floats(min_value=1, max_value=1e6), st.floats(min_value=0, max_value=1e7))
def test_a_raised_prediction_is_the_first_doubling_longer_than_the_run(predicted: float, ran: float) -> None:
    got = raised(predicted, ran)
    assert got > ran
    doublings = round(got / predicted).bit_length() - 1
    assert got == predicted * 2**doublings
    assert doublings == 0 or predicted * 2 ** (doublings - 1) <= ran


def test_the_history_round_trips_through_its_dict() -> None:
    state = _fold([*_ran("a", "u", 0, 10), *_ran("b", "w", 0, 20)[:2]])
    data = state.runtime_history.to_dict()
    assert data == {"runs": {"team/u": [10.0]}, "ended": [["team/w", "2026-01-01T00:00:00+00:00"]]}
    assert RuntimeHistory.from_dict(data) == state.runtime_history
