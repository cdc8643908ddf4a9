"""The two wire forms of a topologyAssignment: v1beta2 slices read into v1beta1 domains, and
written back (one slice) without losing the domains or their order."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from domain.objects.topology_assignment import to_domains, to_slices

HOST = "kubernetes.io/hostname"


def test_slices_with_prefix_suffix_and_universal_values_are_read_in_order() -> None:
    # Two node pools in two slices (the shape of the KEP's example), names with a DNS suffix.
    v1beta2 = {
        "levels": ["rack", HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universalValue": "r1"},
                    {"prefix": "pool-1-", "suffix": ".ec2", "roots": ["a", "b"]},
                ],
                "universalPodCount": 3,
            },
            {
                "domainCount": 1,
                "valuesPerLevel": [{"roots": ["r2"]}, {"roots": ["pool-2-c.ec2"]}],
                "podCounts": [4],
            },
        ],
    }
    assert to_domains(v1beta2) == {
        "levels": ["rack", HOST],
        "domains": [
            {"values": ["r1", "pool-1-a.ec2"], "count": 3},
            {"values": ["r1", "pool-1-b.ec2"], "count": 3},
            {"values": ["r2", "pool-2-c.ec2"], "count": 4},
        ],
    }


def test_a_v1beta1_assignment_is_read_as_it_is() -> None:
    v1beta1 = {"levels": [HOST], "domains": [{"values": ["n-1"], "count": 2}]}
    assert to_domains(v1beta1) == v1beta1


def test_one_slice_is_written_with_shared_values_and_counts_factored_out() -> None:
    v1beta1 = {
        "levels": ["block", "rack"],
        "domains": [{"values": ["block-1", "rack-1"], "count": 4}, {"values": ["block-1", "rack-2"], "count": 2}],
    }
    assert to_slices(v1beta1) == {
        "levels": ["block", "rack"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"universalValue": "block-1"}, {"prefix": "rack-", "roots": ["1", "2"]}],
                "podCounts": [4, 2],
            }
        ],
    }


def test_every_root_keeps_a_character_when_one_value_is_the_others_prefix() -> None:
    v1beta1 = {"levels": [HOST], "domains": [{"values": ["n-1"], "count": 1}, {"values": ["n-10"], "count": 1}]}
    written = to_slices(v1beta1)
    assert written["slices"][0]["valuesPerLevel"] == [{"prefix": "n-", "roots": ["1", "10"]}]
    assert written["slices"][0]["universalPodCount"] == 1
    assert to_domains(written) == v1beta1


names = st.text(alphabet="ab-.1", min_size=1, max_size=6)


@given(st.lists(st.tuples(names, names, st.integers(min_value=1, max_value=5)), max_size=8))
def test_writing_then_reading_gives_the_same_domains(domains: list[tuple[str, str, int]]) -> None:
    v1beta1: dict[str, Any] = {
        "levels": ["rack", HOST],
        "domains": [{"values": [rack, host], "count": count} for rack, host, count in domains],
    }
    assert to_domains(to_slices(v1beta1)) == v1beta1


def test_a_common_suffix_is_kept_whole() -> None:
    # Found by the property above: the suffix was cut from the wrong end ("1a" and "a1a" share "1a").
    v1beta1 = {"levels": [HOST], "domains": [{"values": ["1a"], "count": 1}, {"values": ["a1a"], "count": 1}]}
    written = to_slices(v1beta1)
    assert written["slices"][0]["valuesPerLevel"] == [{"suffix": "a", "roots": ["1", "a1"]}]
    assert to_domains(written) == v1beta1
