"""Properties of the DRA allocator on random nodes and claims: no device taken twice unless
it is shared, no shared device's capacity exceeded, every device passes its selectors."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.dra import Capacity, Device, NodeSelection, ResourceSlice
from berth.cluster.dra import AllocatedState, Allocator
from tests.cluster.dra_tables import claim, cls, request

DRIVER = "gpu.example.com"


@st.composite
def scenario(draw):
    devices = []
    for index in range(draw(st.integers(0, 8))):
        memory = Decimal(draw(st.sampled_from([8, 16, 40, 80])))
        shared = draw(st.booleans())
        devices.append(
            Device(f"gpu-{index}", {"index": index}, {"memory": Capacity(memory)}, shared)
        )
    item = ResourceSlice(
        "s", DRIVER, "pool", 1, 1, NodeSelection(node_name="n"), devices=tuple(devices)
    )
    claims = []
    for number in range(draw(st.integers(1, 3))):
        requests = []
        for r in range(draw(st.integers(1, 2))):
            least = draw(st.sampled_from([0, 16, 40]))
            selector = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{least}")) >= 0'
            asked = draw(st.sampled_from([None, Decimal(8), Decimal(16)]))
            count = draw(st.integers(1, 3))
            requests.append(request(f"r{r}", "gpu", count, selector, capacity=None))
            if asked is not None:
                requests[-1] = request(f"r{r}", "gpu", count, selector)
                spec = requests[-1].exactly
                requests[-1] = type(requests[-1])(
                    requests[-1].name,
                    type(spec)(
                        spec.class_name,
                        spec.selectors,
                        spec.mode,
                        spec.count,
                        capacity={"memory": asked},
                    ),  # fmt: skip
                )
        claims.append(claim(f"c{number}", *requests))
    return item, claims


@settings(max_examples=150, deadline=None)
@given(scenario())
def test_allocations_respect_devices(case) -> None:
    item, claims = case
    allocator = Allocator([cls("gpu", DRIVER)], [item], AllocatedState())
    got = allocator.allocate("n", {}, claims)
    if got is None:
        return
    devices = {d.name: d for d in item.devices}
    whole = Counter()
    used: dict[str, Decimal] = Counter()
    for allocation, one in zip(got, claims, strict=True):
        asked = {r.name: r.exactly for r in one.spec.requests}
        for result in allocation.results:
            device = devices[result.device]
            spec = asked[result.request]
            memory = device.capacity["memory"].value
            least = Decimal(spec.selectors[0].split('quantity("')[1].split('"')[0])
            assert memory >= least
            if device.allow_multiple_allocations:
                assert result.consumed is not None
                used[device.name] += result.consumed["memory"]
            else:
                whole[device.name] += 1
        assert len(allocation.results) == sum(r.exactly.count for r in one.spec.requests)
    assert all(n == 1 for n in whole.values())
    for name, amount in used.items():
        assert amount <= devices[name].capacity["memory"].value
        assert name not in whole
