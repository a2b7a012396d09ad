"""Quantities: exact conversion into canonical units, and back."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.api.manifest import parse_documents
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler
from berth.resources import (
    MAX_AMOUNT,
    MAX_QUANTITY,
    QuantityError,
    format_amount,
    format_quantity,
    is_bytes,
    parse_quantity,
    to_canonical,
)

RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "hugepages-1Gi", "pods"]
SUFFIXES = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


@given(st.sampled_from(RESOURCES), st.integers(min_value=0, max_value=MAX_AMOUNT))
def test_a_canonical_amount_survives_a_round_trip(resource: str, amount: int) -> None:
    assert to_canonical(resource, format_quantity(resource, amount)) == amount


@given(
    st.sampled_from(RESOURCES),
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=3),
    st.sampled_from(sorted(SUFFIXES)),
)
def test_a_quantity_keeps_its_exact_value(
    resource: str, digits: int, decimals: int, suffix: str
) -> None:
    """``<digits / 10^decimals><suffix>`` converts to exactly its value in the canonical unit,
    rounded up only below that unit (a millicore, a byte, one of an extended resource)."""
    number = Decimal(digits).scaleb(-decimals)
    text = f"{number}{suffix}"
    exact = number * SUFFIXES[suffix] * (1000 if resource in ("cpu", "nvidia.com/gpu") else 1)
    if exact > MAX_AMOUNT:
        with pytest.raises(QuantityError, match="too large"):
            to_canonical(resource, text)
        return
    assert to_canonical(resource, text) == math.ceil(exact)
    if exact == int(exact):
        assert to_canonical(resource, format_quantity(resource, int(exact))) == int(exact)


@pytest.mark.parametrize(
    ("resource", "amount", "quantity", "human"),
    [
        ("memory", 10**9, "1000000000", "953.7Mi"),
        ("memory", 3 * 2**30, "3Gi", "3Gi"),
        ("memory", 1536 * 2**20, "1536Mi", "1.5Gi"),
        ("memory", 1000, "1000", "1000"),
        ("cpu", 2500, "2500m", "2.5"),
        ("nvidia.com/gpu", 3000, "3", "3"),
        ("hugepages-2Mi", 2**21, "2Mi", "2Mi"),
        ("example.com/fpga", 2, "2", "2"),
    ],
)
def test_formats(resource: str, amount: int, quantity: str, human: str) -> None:
    assert format_quantity(resource, amount) == quantity
    assert format_amount(resource, amount) == human


def test_byte_resources() -> None:
    assert [r for r in RESOURCES if is_bytes(r)] == ["memory", "ephemeral-storage", "hugepages-1Gi"]


def test_limits() -> None:
    with pytest.raises(QuantityError, match="negative"):
        to_canonical("memory", "-1")
    with pytest.raises(QuantityError, match="too large"):
        to_canonical("cpu", MAX_QUANTITY + 1)
    assert to_canonical("cpu", MAX_QUANTITY) == MAX_AMOUNT
    assert parse_quantity("1e3") == 1000


def _pod(name: str, memory: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": memory}}}]},
    }


def test_decimal_quantities_fit_as_in_kubernetes() -> None:
    """1G + 2G + 2G is exactly 5G: all three fit a 5G node. Rounded up to whole MiB they would
    not: 954 + 1908 + 1908 = 4770 MiB against the node's 4769."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "8", "memory": "5G", "pods": "110"}},
    }
    docs = [node, _pod("a", "1G"), _pod("b", "2G"), _pod("c", "2G"), _pod("d", "1")]
    manifests = parse_documents(docs, "t.yaml")
    assert not manifests.errors
    s = Scheduler(load_config(None))
    s.add_node(manifests.nodes[0])
    for p in manifests.pods:
        s.submit(p)
    bound = {b.pod.name for b in s.run_session(0.0)}
    assert bound == {"a", "b", "c"}  # and not a single byte more
    assert int(s.state.free[0, s.state.axis.index("memory")]) == 0
