"""The relist of `schedstream watch` (services/kube/watch.py) as a property: whatever the watcher
knew and whatever the server lists now, the lines it writes turn the one into the other
(DELETED first, then ADDED and MODIFIED, nothing for unchanged objects), page by page, and the
saved progress moved by those lines ends equal to the list. The server side is a list
response in memory; the real API server is in tests/kube/."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given
from hypothesis import strategies as st

from services.kube.resources import CORE
from services.kube.state import Identity, ResourceState, WatchState
from services.kube.watch import Informer, Line, apply

PODS = next(r for r in CORE if r.plural == "pods")
NAMES = [f"p-{i}" for i in range(6)]


class Listing:
    """``Kube.read`` of a pods list served in pages of two, as the API server pages a list."""

    def __init__(self, pods: list[dict[str, object]], version: str) -> None:
        self.pods = pods
        self.version = version

    async def read(self, path: str, query: dict[str, str] | None = None, *, missing_ok: bool = False) -> bytes:
        assert path == "/api/v1/pods"
        start = int((query or {}).get("continue", "0"))
        page = self.pods[start : start + 2]
        more = start + 2 < len(self.pods)
        meta = {"resourceVersion": self.version, **({"continue": str(start + 2)} if more else {})}
        return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page}).encode()


def pod(name: str, uid: str, version: str) -> dict[str, object]:
    # As in a list response: items of built-in kinds carry no apiVersion or kind.
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": version}, "spec": {}}


objects = st.dictionaries(
    st.sampled_from(NAMES), st.tuples(st.sampled_from(["u1", "u2"]), st.sampled_from(["1", "2", "3"]))
)


@given(known=objects, listed=objects)
def test_a_relist_writes_exactly_the_difference_and_the_saved_progress_ends_at_the_list(
    known: dict[str, tuple[str, str]], listed: dict[str, tuple[str, str]]
) -> None:
    saved = ResourceState(
        "7",
        {f"{n}-{u}": Identity("v1", "Pod", "ns", n, f"{n}-{u}", v) for n, (u, v) in known.items()},
    )
    state = WatchState(path=None, cluster="c1", resources={PODS.key: saved})  # type: ignore[arg-type]
    queue: asyncio.Queue[Line] = asyncio.Queue()
    listing = Listing([pod(n, f"{n}-{u}", v) for n, (u, v) in sorted(listed.items())], "42")
    informer = Informer(listing, PODS, "c1", ResourceState(saved.resource_version, dict(saved.objects)), queue)  # type: ignore[arg-type]
    asyncio.run(informer.relist())

    lines = []
    while not queue.empty():
        line = queue.get_nowait()
        apply(state, line)
        lines.append(line)
    written = [json.loads(line.payload) for line in lines if line.payload]
    types = [w["type"] for w in written]
    assert types == sorted(types, key=lambda t: t != "DELETED")  # every DELETED before the rest
    for w in written:
        assert w["cluster"] == "c1"
        assert (w["object"]["apiVersion"], w["object"]["kind"]) == ("v1", "Pod")

    before = {f"{n}-{u}": v for n, (u, v) in known.items()}
    after = {f"{n}-{u}": v for n, (u, v) in listed.items()}
    by_uid = {w["object"]["metadata"]["uid"]: w["type"] for w in written}
    expected = {uid: "DELETED" for uid in before.keys() - after.keys()}
    expected |= {uid: "ADDED" for uid in after.keys() - before.keys()}
    expected |= {uid: "MODIFIED" for uid in after.keys() & before.keys() if after[uid] != before[uid]}
    assert by_uid == expected
    assert len(written) == len(expected)

    assert {uid: i.resource_version for uid, i in saved.objects.items()} == after
    assert {uid: i.resource_version for uid, i in informer.known.items()} == after
    assert saved.resource_version == informer.rv == "42"
    assert lines[-1] == Line(PODS.key, None, cursor="42")  # the cursor moves only at the end
    assert all(line.cursor is None for line in lines[:-1])
