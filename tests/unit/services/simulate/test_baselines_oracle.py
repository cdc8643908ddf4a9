"""services.simulate.baselines against an oracle: FCFS, EASY backfill and greedy written the slow, plain
way (every check a fresh first fit over every node), on random traces of gangs with node
affinity, unknown durations and jobs that never fit. The baselines count and skip instead of
placing again (each shape's tally, the shadow time by counting, backfill candidates like one that
failed); they must start and end every job exactly when the oracle does."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.quantity import MILLI, parse_milli
from services.simulate.baselines import easy, fcfs, greedy
from services.traces.events import KUBELET_MAX_PODS
from services.traces.model import Job, Node, Trace

Rooms = list[dict[str, int]]


def _first_fit(job: Job, request: dict[str, int], rooms: Rooms, labels: list[dict[str, str]]) -> list[int] | None:
    """Every task on the first allowed node with room, taken from ``rooms``; None (and nothing
    taken) if one does not fit."""
    taken: list[int] = []
    for _ in range(job.tasks):
        for index, room in enumerate(rooms):
            allowed = all(labels[index].get(key) in values for key, values in job.node_affinity.items())
            if allowed and all(room.get(name, 0) >= amount for name, amount in request.items()):
                for name, amount in request.items():
                    room[name] = room.get(name, 0) - amount
                taken.append(index)
                break
        else:
            _give_back(taken, request, rooms)
            return None
    return taken


def _give_back(taken: list[int], request: dict[str, int], rooms: Rooms) -> None:
    for index in taken:
        for name, amount in request.items():
            rooms[index][name] += amount


def _start_all_that_fit(
    waiting: list[Job],
    requests: dict[str, dict[str, int]],
    rooms: Rooms,
    labels: list[dict[str, str]],
    start: Callable[[Job, list[int]], None],
) -> None:
    for job in list(waiting):
        if (taken := _first_fit(job, requests[job.id], rooms, labels)) is not None:
            waiting.remove(job)
            start(job, taken)


def oracle(trace: Trace, policy: str) -> dict[str, tuple[float | None, float | None]]:
    labels = [dict(node.labels) for node in trace.nodes]
    capacity = [
        {n: parse_milli(a) for n, a in {"pods": KUBELET_MAX_PODS, **node.allocatable}.items()} for node in trace.nodes
    ]
    rooms = [dict(room) for room in capacity]
    requests = {job.id: {"pods": MILLI, **{n: parse_milli(a) for n, a in job.requests.items()}} for job in trace.jobs}
    fits_empty = {
        job.id for job in trace.jobs if _first_fit(job, requests[job.id], [dict(r) for r in capacity], labels)
    }
    times: dict[str, tuple[float | None, float | None]] = {job.id: (None, None) for job in trace.jobs}
    running: dict[str, tuple[float | None, list[int]]] = {}  # job -> (end, nodes), in start order
    waiting: list[Job] = []
    moments = sorted({job.submit for job in trace.jobs if job.id in fits_empty})
    while moments:
        now = moments.pop(0)
        for job_id, (end, taken) in list(running.items()):
            if end == now:
                del running[job_id]
                _give_back(taken, requests[job_id], rooms)
                times[job_id] = (times[job_id][0], now)
        waiting += [job for job in trace.jobs if job.submit == now and job.id in fits_empty]

        def start(job: Job, taken: list[int], now: float = now) -> None:
            end = None if job.duration is None else now + job.duration
            running[job.id] = (end, taken)
            times[job.id] = (now, None)
            if end is not None and end not in moments:
                moments.append(end)
                moments.sort()

        while waiting and (taken := _first_fit(waiting[0], requests[waiting[0].id], rooms, labels)) is not None:
            start(waiting.pop(0), taken)
        if policy == "greedy":
            _start_all_that_fit(waiting, requests, rooms, labels, start)
        if policy == "easy" and len(waiting) > 1:
            head = waiting[0]
            later, shadow = [dict(room) for room in rooms], None
            for job_id, (end, taken) in sorted(running.items(), key=lambda item: item[1][0] or 0.0):
                if end is None:
                    continue
                _give_back(taken, requests[job_id], later)
                if (room := _first_fit(head, requests[head.id], later, labels)) is not None:
                    _give_back(room, requests[head.id], later)
                    shadow = end
                    break
            for job in list(waiting[1:]):
                taken = _first_fit(job, requests[job.id], rooms, labels)
                if taken is None:
                    continue
                if shadow is not None and (job.duration is None or now + job.duration > shadow):
                    for index in taken:
                        for name, amount in requests[job.id].items():
                            later[index][name] -= amount
                    room = _first_fit(head, requests[head.id], later, labels)
                    if room is None:
                        _give_back(taken, requests[job.id], later)
                        _give_back(taken, requests[job.id], rooms)
                        continue
                    _give_back(room, requests[head.id], later)
                waiting.remove(job)
                start(job, taken)
    return times


_NODES = (
    Node("a0", {"cpu": "4", "memory": "8Gi"}, {"role": "a"}),
    Node("a1", {"cpu": "8", "memory": "8Gi"}, {"role": "a"}),
    Node("b0", {"cpu": "4", "memory": "16Gi"}, {"role": "b"}),
    Node("b1", {"cpu": "2", "memory": "4Gi", "pods": "2"}, {"role": "b"}),
)
_JOB = st.tuples(
    st.integers(0, 40),  # submit
    st.one_of(st.none(), st.integers(1, 30)),  # duration
    st.integers(1, 3),  # tasks
    st.sampled_from(["1", "2", "3", "4", "6", "9"]),  # cpu
    st.sampled_from(["1Gi", "2Gi", "6Gi"]),  # memory
    st.sampled_from([None, "a", "b"]),  # role
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_JOB, min_size=1, max_size=30))
def test_fcfs_easy_and_greedy_start_and_end_every_job_as_the_oracle_does(rows: list[tuple]) -> None:
    jobs = tuple(
        Job(f"j{i:02d}", submit, duration, tasks=tasks, requests={"cpu": cpu, "memory": memory},
            node_affinity={} if role is None else {"role": (role,)})
        for i, (submit, duration, tasks, cpu, memory, role) in enumerate(rows)
    )  # fmt: skip
    trace = Trace(tuple(sorted(jobs, key=lambda j: (j.submit, j.id))), _NODES)
    for policy, run in (("fcfs", fcfs), ("easy", easy), ("greedy", greedy)):
        outcome = run(trace, trace.nodes)
        assert {job_id: (r.start, r.end) for job_id, r in outcome.jobs.items()} == oracle(trace, policy), policy


def test_a_backfill_taken_back_leaves_the_next_job_of_its_shape_the_room_it_gave_back() -> None:
    """j3 fits now but outlives the head's shadow time and would leave the head no room then, so
    EASY takes it back; j4 and j5 ask for the same and must find the room j3 gave back first."""
    nodes = (Node("n0", {"cpu": "4", "memory": "8Gi"}), Node("n1", {"cpu": "4", "memory": "8Gi"}))
    rows = [("j0", 0, 10, "3"), ("j1", 0, 100, "3"), ("j2", 1, 10, "4"), ("j3", 1, 50, "1"), ("j4", 1, 5, "1"),
            ("j5", 1, 5, "1")]  # fmt: skip
    jobs = tuple(Job(name, submit, duration, tasks=1, requests={"cpu": cpu}) for name, submit, duration, cpu in rows)
    trace = Trace(jobs, nodes)
    outcome = easy(trace, nodes)
    times = {job_id: (r.start, r.end) for job_id, r in outcome.jobs.items()}
    assert times == oracle(trace, "easy")
    assert times["j3"][0] == 10 and times["j5"] == (1, 6)


def test_a_job_like_one_that_would_delay_the_head_is_tried_again_once_a_backfill_moved_the_room() -> None:
    """The head j2 fits at 10, on n1 and n2. j3 fits now on n2 but outlives 10 and would leave
    the head one node then: taken back. j4, of j3's shape, ends by 10 and takes n2 now; so j5,
    j3's twin, goes to n3, which the head does not need: it starts now, though j3 did not."""
    nodes = tuple(Node(f"n{i}", {"cpu": cpu, "memory": "8Gi"}) for i, cpu in enumerate(["4", "4", "4", "2"]))
    rows = [("j0", 0, 100, 1, "4"), ("j1", 0, 10, 1, "4"), ("j2", 1, 10, 2, "4"), ("j3", 1, 50, 1, "2"),
            ("j4", 1, 5, 2, "2"), ("j5", 1, 50, 1, "2")]  # fmt: skip
    jobs = tuple(Job(name, submit, run, tasks=tasks, requests={"cpu": cpu}) for name, submit, run, tasks, cpu in rows)
    trace = Trace(jobs, nodes)
    outcome = easy(trace, nodes)
    times = {job_id: (r.start, r.end) for job_id, r in outcome.jobs.items()}
    assert times == oracle(trace, "easy")
    assert times["j2"][0] == 10 and times["j3"][0] > 10 and times["j4"] == (1, 6) and times["j5"] == (1, 51)
