"""domain.scheduler.queue_shares: ``over_after`` (the quota check of proportion and capacity on a task) says what
``over`` says of the sum it no longer builds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain import quantity
from domain.scheduler.queue_shares import over, over_after

_NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", quantity.PODS])
_LIST = st.dictionaries(_NAMES, st.integers(-5, 20), max_size=4)


@given(_LIST, _LIST, _LIST)
def test_over_after_is_over_of_the_sum_on_the_requested_resources(used: dict, request: dict, limit: dict) -> None:
    requested = {n for n, amount in request.items() if amount > 0 and n != quantity.PODS}
    assert over_after(used, request, limit) == over(quantity.sum_lists([used, request]), limit, requested)
