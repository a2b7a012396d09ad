"""Upstream cases of ``firstAvailable`` lists and of the claim limit (32 devices), ported as
facts: same inputs, same devices or the same error."""

from __future__ import annotations

from berth.api.dra import DeviceClass
from tests.cluster.dra_tables import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    allocation,
    claim,
    cls,
    device,
    first_available,
    gi,
    local,
    many_devices,
    match,
    request,
    result,
    slice_,
    sub,
    version,
)

HUGE = 2**63 // 2 + 1  # math.MaxInt/2+1: two of them overflow an int64
CLASSES_A = (cls(CLASS_A, DRIVER_A),)
TWO_PLAIN = (slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),)
VERSION = f"{DRIVER_A}/driverVersion"


def memory(n: int) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{n}Gi")) >= 0'


def generation(g: str) -> str:
    return f'device.attributes["{DRIVER_A}"].generation == "{g}"'


def sized(name: str, gib: int, **attributes) -> object:
    return device(name, {"memory": gi(gib)}, attributes)


def v6_else_v5() -> object:
    """``firstAvailable``: all devices of generation v6, else all of v5."""
    return first_available(
        REQ0,
        sub(SUB0, CLASS_A, 1, generation("v6"), mode="All"),
        sub(SUB1, CLASS_A, 1, generation("v5"), mode="All"),
    )


def r(req: str, pool: str, dev: str):
    return result(req, DRIVER_A, pool, dev)


R0S1 = f"{REQ0}/{SUB1}"
R1S1 = f"{REQ1}/{SUB1}"
EIGHT_THEN_FOUR = (
    slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, 8)),
    slice_(SLICE2, NODE1, POOL2, DRIVER_A, sized(DEVICE2, 4)),
)

CASES: dict[str, Case] = {
    "exact-count-total-overflows-claim-limit": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, HUGE), request(REQ1, CLASS_A, HUGE)),),
        classes=CLASSES_A,
        error="exceeds the claim limit",
    ),
    "exact-count-total-would-wrap-to-zero": Case(
        claims=(
            claim(
                CLAIM0,
                *(request(name, CLASS_A, HUGE) for name in (REQ0, REQ1, REQ2, "req-3")),
            ),
        ),
        classes=CLASSES_A,
        error="exceeds the claim limit",
    ),
    "exact-count-sum-exceeds-claim-limit": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 20), request(REQ1, CLASS_A, 20)),),
        classes=CLASSES_A,
        error="request req-1: .*exceeds the claim limit",
    ),
    "exact-count-sum-exactly-fills-claim-limit": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 16), request(REQ1, CLASS_A, 16)),),
        classes=CLASSES_A,
        slices=(many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32),),
        expect=(
            allocation(
                local(NODE1),
                *(r(REQ0, POOL1, f"device-{i}") for i in range(16)),
                *(r(REQ1, POOL1, f"device-{i}") for i in range(16, 32)),
            ),
        ),
    ),
    "prioritized-list-minimum-sum-exceeds-claim-limit": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 20),
                first_available(REQ1, sub(SUB0, CLASS_A, 20), sub(SUB1, CLASS_A, 24)),
            ),
        ),
        classes=CLASSES_A,
        error="request req-1: .*exceeds the claim limit",
    ),
    # Upstream also counts the search's steps here (8); berth checks the devices only.
    "prioritized-list-overflowing-first-subrequest-is-pruned": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                first_available(REQ1, sub(SUB0, CLASS_A, 2**63 - 1), sub(SUB1, CLASS_A)),
            ),
        ),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(allocation(local(NODE1), r(REQ0, POOL1, DEVICE1), r(R1S1, POOL1, DEVICE2)),),
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, memory(1)),
                first_available(
                    REQ1, sub(SUB0, CLASS_A, 1, memory(4)), sub(SUB1, CLASS_A, 2, memory(2))
                ),
            ),
        ),
        classes=CLASSES_A,
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                sized(DEVICE1, 2),
                sized(DEVICE2, 2),
                sized(DEVICE3, 1),
            ),
        ),
        expect=(
            allocation(
                local(NODE1),
                r(REQ0, POOL1, DEVICE3),
                r(R1S1, POOL1, DEVICE1),
                r(R1S1, POOL1, DEVICE2),
            ),
        ),
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, memory(8)),
                first_available(
                    REQ1, sub(SUB0, CLASS_A, 1, memory(2)), sub(SUB1, CLASS_A, 1, memory(1))
                ),
                constraints=(match(VERSION, REQ0, REQ1),),
            ),
        ),
        classes=CLASSES_A,
        slices=(
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, 8, driverVersion=version("1.0.0"))
            ),
            slice_(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                sized(DEVICE2, 2, driverVersion=version("2.0.0")),
                sized(DEVICE3, 1, driverVersion=version("1.0.0")),
            ),
        ),
        expect=(allocation(local(NODE1), r(REQ0, POOL1, DEVICE1), r(R1S1, POOL2, DEVICE3)),),
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, memory(8)),
                first_available(
                    REQ1, sub(SUB0, CLASS_A, 1, memory(2)), sub(SUB1, CLASS_A, 1, memory(1))
                ),
                constraints=(match(VERSION, REQ0, f"{REQ1}/{SUB0}"),),
            ),
        ),
        classes=CLASSES_A,
        slices=(
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, 8, driverVersion=version("1.0.0"))
            ),
            slice_(
                SLICE2, NODE1, POOL2, DRIVER_A, sized(DEVICE2, 2, driverVersion=version("2.0.0"))
            ),
        ),
        expect=(allocation(local(NODE1), r(REQ0, POOL1, DEVICE1), r(R1S1, POOL2, DEVICE2)),),
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=(
            claim(
                CLAIM0, first_available(REQ0, sub(SUB0, CLASS_A, mode="All"), sub(SUB1, CLASS_A))
            ),
        ),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE2)),),
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                first_available(REQ1, sub(SUB0, CLASS_A, mode="All"), sub(SUB1, CLASS_A)),
            ),
        ),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(allocation(local(NODE1), r(REQ0, POOL1, DEVICE1), r(R1S1, POOL1, DEVICE2)),),
    ),
    "prioritized-list-multi-request": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 1, memory(8)),
                first_available(
                    REQ0, sub(SUB0, CLASS_A, 1, memory(8)), sub(SUB1, CLASS_A, 1, memory(4))
                ),
            ),
        ),
        classes=CLASSES_A,
        slices=EIGHT_THEN_FOUR,
        expect=(allocation(local(NODE1), r(REQ1, POOL1, DEVICE1), r(R0S1, POOL2, DEVICE2)),),
    ),
    "prioritized-list-with-backtracking": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(
                    REQ0, sub(SUB0, CLASS_A, 1, memory(8)), sub(SUB1, CLASS_A, 1, memory(4))
                ),
                request(REQ1, CLASS_A, 1, memory(8)),
            ),
        ),
        classes=CLASSES_A,
        slices=EIGHT_THEN_FOUR,
        expect=(allocation(local(NODE1), r(R0S1, POOL2, DEVICE2), r(REQ1, POOL1, DEVICE1)),),
    ),
    "prioritized-list-allocation-mode-all": Case(
        claims=(
            claim(
                CLAIM0, first_available(REQ0, sub(SUB0, CLASS_A, mode="All"), sub(SUB1, CLASS_A))
            ),
        ),
        allocated=((DRIVER_A, POOL1, DEVICE2),),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE1)),),
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        claims=(claim(CLAIM0, v6_else_v5()),),
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": "v5"})),
        ),
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE1)),),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        claims=(claim(CLAIM0, v6_else_v5()),),
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": "v5"})),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE1, None, {"generation": "v5"})),
        ),
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE1), r(R0S1, POOL2, DEVICE1)),),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        claims=(claim(CLAIM0, v6_else_v5()),),
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, None, {"generation": "v5"})),
            slice_(
                SLICE2,
                NODE2,
                POOL2,
                DRIVER_A,
                device(DEVICE1, None, {"generation": "v5"}),
                device(DEVICE2, None, {"generation": "v6"}),
            ),
        ),
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE1)),),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        claims=(claim(CLAIM0, v6_else_v5()),),
        classes=(
            DeviceClass(
                CLASS_A,
                (f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected',),
            ),
        ),
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"generation": "v6", "selected": False}),
                device(DEVICE2, None, {"generation": "v5", "selected": False}),
                device(DEVICE3, None, {"generation": "v5", "selected": True}),
            ),
        ),
        expect=(allocation(local(NODE1), r(R0S1, POOL1, DEVICE3)),),
    ),
}
