"""Kubernetes resource quantities as exact integers.

Every quantity is held in *milli-units* of its resource (``"500m"`` cpu -> 500, ``"2Gi"``
memory -> 2147483648000, ``"1"`` GPU -> 1000), rounded up like the API server rounds a
request: one integer type for every resource, exact arithmetic, no float tolerance.
Parsing is delegated to the official Kubernetes client's parser (``parse_quantity``), which
knows every suffix; results are cached because clusters repeat a handful of strings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal, localcontext
from functools import lru_cache

from kubernetes.utils.quantity import parse_quantity as _k8s_parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
MILLI = 1000
_EXACT_DIGITS = 100
# Guards against lines built to hurt: no real quantity is this long or this large (a 2 MB digit
# string or "1E1000000000" would otherwise cost seconds or overflow Decimal).
TEXT_LIMIT = 100
MAGNITUDE_LIMIT = 10**40  # units; an exabyte is 10**18, "999999999999Ei" about 1.2e30

ResourceList = dict[str, int]
"""Resource name -> quantity in milli-units."""


class Quantity(int):
    """A parsed quantity in milli-units; the type msgspec decodes quantity fields into."""

    __slots__ = ()


class InvalidQuantity(ValueError):
    """A string or number that is not a valid, non-negative Kubernetes quantity."""


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> int:
    # Python's Decimal (and the client's suffix split) also read "1_000", " 1 " and "12 Gi",
    # which Kubernetes rejects.
    if len(text) > TEXT_LIMIT:
        raise InvalidQuantity(f"invalid quantity {text[:20]!r}... ({len(text)} characters, at most {TEXT_LIMIT})")
    if not text or "_" in text or any(c.isspace() for c in text):
        raise InvalidQuantity(f"invalid quantity {text!r}")
    with localcontext(prec=_EXACT_DIGITS):  # exact even for "999999999999Ei"
        try:
            value: Decimal = _k8s_parse_quantity(text)
        except (ValueError, ArithmeticError, TypeError) as exc:  # ArithmeticError: Decimal's Overflow
            raise InvalidQuantity(f"invalid quantity {text!r}") from exc
        if not value.is_finite():
            raise InvalidQuantity(f"invalid quantity {text!r}")
        if value < 0:
            raise InvalidQuantity(f"negative quantity {text!r}")
        if value > MAGNITUDE_LIMIT:
            raise InvalidQuantity(f"quantity {text!r} is too large (at most 1e40)")
        return math.ceil(value * MILLI)


def parse_milli(value: object) -> Quantity:
    """Parse ``"500m"``, ``"2Gi"``, ``"1e3"``, ``4`` or ``0.5`` into milli-units."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidQuantity(f"quantity must be a string or a number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidQuantity(f"invalid quantity {value!r}")
    if isinstance(value, int) and not -MAGNITUDE_LIMIT <= value <= MAGNITUDE_LIMIT:
        raise InvalidQuantity("quantity is too large (at most 1e40)")  # repr() of a huge int is refused too
    return Quantity(_parse_text(value if isinstance(value, str) else repr(value)))


def add(total: ResourceList, more: Mapping[str, int]) -> None:
    """Add ``more`` into ``total`` in place."""
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def sum_lists(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    total: ResourceList = {}
    for item in lists:
        add(total, item)
    return total


def max_lists(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """Per-resource maximum: how init containers combine with the app containers."""
    out = dict(a)
    for name, amount in b.items():
        if amount > out.get(name, 0):
            out[name] = amount
    return out


def shortfall(request: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    """Names of resources in ``request`` that ``free`` cannot cover, sorted."""
    return sorted(name for name, amount in request.items() if amount > 0 and amount > free.get(name, 0))


def format_milli(name: str, value: int) -> str:
    """Render milli-units back in the usual notation: cpu in m, memory in Mi/Gi, others whole."""
    if name == CPU:
        return f"{value // MILLI}" if value % MILLI == 0 else f"{value}m"
    units = value // MILLI
    if name == MEMORY or name.endswith("storage"):
        for suffix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
        return str(units)
    return str(units) if value % MILLI == 0 else f"{value}m"
