"""domain.quantity: Kubernetes quantities as exact integers in milli-units."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from domain.quantity import (
    InvalidQuantity,
    add,
    format_milli,
    max_lists,
    parse_milli,
    shortfall,
    sum_lists,
)

KI, MI, GI = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class ParseCase:
    name: str
    value: Any
    want_milli: int


PARSE_CASES = [
    ParseCase("milli cpu stays as written", "500m", 500),
    ParseCase("a whole cpu is a thousand milli", "1", 1000),
    ParseCase("a decimal string is exact", "1.5", 1500),
    ParseCase("binary gibibytes", "2Gi", 2 * GI * 1000),
    ParseCase("half a gibibyte", "0.5Gi", GI // 2 * 1000),
    ParseCase("kibibytes", "1Ki", KI * 1000),
    ParseCase("mebibytes", "256Mi", 256 * MI * 1000),
    ParseCase("decimal kilo", "1k", 1000 * 1000),
    ParseCase("decimal mega", "3M", 3 * 10**6 * 1000),
    ParseCase("decimal giga", "4G", 4 * 10**9 * 1000),
    ParseCase("exponent notation", "1e3", 1000 * 1000),
    ParseCase("capital exponent notation", "2E2", 200 * 1000),
    ParseCase("micro rounds up to one milli", "250u", 1),
    ParseCase("nano rounds up to one milli", "1n", 1),
    ParseCase("a fraction of a milli rounds up", "1500u", 2),
    ParseCase("zero", "0", 0),
    ParseCase("zero milli", "0m", 0),
    ParseCase("an int counts whole units", 4, 4000),
    ParseCase("a zero int", 0, 0),
    ParseCase("a float counts units", 0.5, 500),
    ParseCase("a small float rounds up", 0.0001, 1),
    ParseCase("a large int is exact", 10**15, 10**18),
]


@pytest.mark.parametrize("case", PARSE_CASES, ids=lambda c: c.name)
def test_parse_milli(case: ParseCase) -> None:
    got = parse_milli(case.value)
    assert got == case.want_milli
    assert isinstance(got, int)


@dataclass(frozen=True)
class BadCase:
    name: str
    value: Any
    want_error: str


BAD_CASES = [
    BadCase("an unknown suffix", "2x", "invalid quantity '2x'"),
    BadCase("a lower-case binary prefix", "1ki", "invalid quantity '1ki'"),
    BadCase("a suffix without a number", "Gi", "invalid quantity 'Gi'"),
    BadCase("a dangling exponent", "1e", "invalid quantity '1e'"),
    BadCase("words", "two", "invalid quantity 'two'"),
    BadCase("a negative string", "-1", "negative quantity '-1'"),
    BadCase("a negative milli string", "-500m", "negative quantity '-500m'"),
    BadCase("a negative int", -3, "negative quantity '-3'"),
    BadCase("a bool is not a number", True, "quantity must be a string or a number, not bool"),
    BadCase("None", None, "quantity must be a string or a number, not NoneType"),
    BadCase("a list", [1], "quantity must be a string or a number, not list"),
    BadCase("a float nan", float("nan"), "invalid quantity nan"),
    BadCase("a float infinity", float("inf"), "invalid quantity inf"),
    BadCase("the string nan", "nan", "invalid quantity 'nan'"),
    BadCase("the string Infinity", "Infinity", "invalid quantity 'Infinity'"),
    BadCase("the empty string", "", "invalid quantity ''"),
    # Kubernetes' ParseQuantity accepts only [+-]digits[.digits] with a known suffix; Python's
    # Decimal (behind kubernetes.utils.parse_quantity) also accepts these two.
    BadCase("underscore digit separators", "1_000", "invalid quantity '1_000'"),
    BadCase("surrounding whitespace", " 1 ", "invalid quantity ' 1 '"),
    BadCase("a space before the suffix", "12 Gi", "invalid quantity '12 Gi'"),
]


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.name)
def test_parse_milli_rejects(case: BadCase) -> None:
    with pytest.raises(InvalidQuantity) as excinfo:
        parse_milli(case.value)
    assert str(excinfo.value) == case.want_error


_SUFFIX_MILLI = {
    "": 1000,
    "k": 1000 * 10**3,
    "M": 1000 * 10**6,
    "Ki": 1000 * KI,
    "Mi": 1000 * MI,
    "Gi": 1000 * GI,
    "m": 1,
}


@given(n=st.integers(0, 10**12), suffix=st.sampled_from(sorted(_SUFFIX_MILLI)))
def test_parse_milli_is_exact_for_integers_with_any_suffix(n: int, suffix: str) -> None:
    assert parse_milli(f"{n}{suffix}") == n * _SUFFIX_MILLI[suffix]


_LARGE_SUFFIX_MILLI = {
    "T": 1000 * 10**12,
    "P": 1000 * 10**15,
    "E": 1000 * 10**18,
    "Ti": 1000 * (1 << 40),
    "Pi": 1000 * (1 << 50),
    "Ei": 1000 * (1 << 60),
}


@given(n=st.integers(0, 10**12), suffix=st.sampled_from(sorted(_LARGE_SUFFIX_MILLI)))
@example(n=999_999_999_999, suffix="Ei")
def test_parse_milli_is_exact_for_the_largest_suffixes(n: int, suffix: str) -> None:
    # The module promises exact integers; Decimal's default 28-digit context must not round.
    assert parse_milli(f"{n}{suffix}") == n * _LARGE_SUFFIX_MILLI[suffix]


@dataclass(frozen=True)
class FormatCase:
    name: str
    resource: str
    milli: int
    want_text: str


FORMAT_CASES = [
    FormatCase("whole cpus print without a suffix", "cpu", 2000, "2"),
    FormatCase("fractional cpu prints in milli", "cpu", 500, "500m"),
    FormatCase("zero cpu", "cpu", 0, "0"),
    FormatCase("memory in whole gibibytes", "memory", 2 * GI * 1000, "2Gi"),
    FormatCase("memory in mebibytes when not whole Gi", "memory", 1536 * MI * 1000, "1536Mi"),
    FormatCase("memory in kibibytes", "memory", KI * 1000, "1Ki"),
    FormatCase("memory in bytes when no binary unit divides", "memory", 1500 * 1000, "1500"),
    FormatCase("zero memory", "memory", 0, "0"),
    FormatCase("storage uses binary units too", "ephemeral-storage", GI * 1000, "1Gi"),
    FormatCase("whole gpus", "nvidia.com/gpu", 2000, "2"),
    FormatCase("a fraction of an extended resource prints milli", "nvidia.com/gpu", 1500, "1500m"),
    FormatCase("pods", "pods", 110_000, "110"),
]


@pytest.mark.parametrize("case", FORMAT_CASES, ids=lambda c: c.name)
def test_format_milli(case: FormatCase) -> None:
    assert format_milli(case.resource, case.milli) == case.want_text


@pytest.mark.parametrize(
    "text", ["500m", "2", "2Gi", "1536Mi", "1Ki", "3"], ids=lambda t: f"{t} survives format(parse)"
)
def test_format_milli_round_trips_canonical_text(text: str) -> None:
    resource = "memory" if text.endswith("i") else "cpu"
    assert format_milli(resource, parse_milli(text)) == text


@dataclass(frozen=True)
class ListCase:
    name: str
    a: dict[str, int]
    b: dict[str, int]
    want_add: dict[str, int]
    want_max: dict[str, int]
    want_shortfall: list[str] = field(default_factory=list)


LIST_CASES = [
    ListCase(
        "disjoint resources are unioned",
        {"cpu": 1000},
        {"memory": 5},
        want_add={"cpu": 1000, "memory": 5},
        want_max={"cpu": 1000, "memory": 5},
        want_shortfall=["cpu"],
    ),
    ListCase(
        "shared resources add and take the larger",
        {"cpu": 1000, "memory": 10},
        {"cpu": 500, "memory": 20},
        want_add={"cpu": 1500, "memory": 30},
        want_max={"cpu": 1000, "memory": 20},
        want_shortfall=["cpu"],
    ),
    ListCase(
        "a request covered exactly has no shortfall",
        {"cpu": 500, "memory": 20},
        {"cpu": 500, "memory": 20},
        want_add={"cpu": 1000, "memory": 40},
        want_max={"cpu": 500, "memory": 20},
    ),
    ListCase(
        "zero requests never fall short, even when the resource is absent",
        {"nvidia.com/gpu": 0},
        {},
        want_add={"nvidia.com/gpu": 0},
        want_max={"nvidia.com/gpu": 0},
    ),
    ListCase(
        "several short resources are sorted by name",
        {"nvidia.com/gpu": 1000, "cpu": 4000, "memory": 1},
        {"cpu": 1000},
        want_add={"nvidia.com/gpu": 1000, "cpu": 5000, "memory": 1},
        want_max={"nvidia.com/gpu": 1000, "cpu": 4000, "memory": 1},
        want_shortfall=["cpu", "memory", "nvidia.com/gpu"],
    ),
    ListCase(
        "a negative free amount (overcommitted node) falls short",
        {"cpu": 1},
        {"cpu": -1000},
        want_add={"cpu": -999},
        want_max={"cpu": 1},
        want_shortfall=["cpu"],
    ),
]


@pytest.mark.parametrize("case", LIST_CASES, ids=lambda c: c.name)
def test_resource_list_arithmetic(case: ListCase) -> None:
    a_before, b_before = dict(case.a), dict(case.b)
    total = dict(case.a)
    add(total, case.b)
    assert total == case.want_add
    assert sum_lists([case.a, case.b]) == case.want_add
    assert max_lists(case.a, case.b) == case.want_max
    assert shortfall(case.a, case.b) == case.want_shortfall
    assert (case.a, case.b) == (a_before, b_before), "inputs must not be mutated"


def test_sum_lists_of_nothing_is_empty() -> None:
    assert sum_lists([]) == {}
