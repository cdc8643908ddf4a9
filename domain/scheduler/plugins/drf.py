"""drf: dominant resource fairness as job order; the job whose largest share of any cluster
resource is smallest goes first, so small consumers are not starved by big ones."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Key, Plugin, Session

NAME = "drf"
_NOTHING: Key = (0.0,)


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        total = session.snapshot.total

        def order(job: JobInfo) -> Key:
            if not job.allocated:
                return _NOTHING  # a waiting gang holds nothing: most jobs asked
            shares = (amount / total[name] for name, amount in job.allocated.items() if total.get(name))
            return (max(shares, default=0.0),)

        session.add_job_order(NAME, order)

    return Plugin(NAME, on_open)
