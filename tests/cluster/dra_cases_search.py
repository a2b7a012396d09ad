# ruff: noqa: E501  (upstream case names are longer than a line)
"""Upstream cases written to count the search's steps (``expectNumAllocateOneInvocations``),
ported for their verdicts: the devices or the failure. How many steps berth's search takes is
its own business and is not compared."""

from __future__ import annotations

from tests.cluster.dra_tables import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    SUB0,
    SUB1,
    Case,
    allocation,
    claim,
    cls,
    device,
    first_available,
    local,
    many_devices,
    request,
    result,
    slice_,
    sub,
)

DEVICE4 = "device-4"
CLASSES_A = (cls(CLASS_A, DRIVER_A),)
FIVE = (claim(CLAIM0, request(REQ0, CLASS_A, 5)),)
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'
TYPE_Y = f'device.attributes["{DRIVER_A}"].type == "Y"'
X_Y_Y = (
    slice_(
        SLICE1,
        NODE1,
        POOL1,
        DRIVER_A,
        device(DEVICE1, None, {"type": "X"}),
        device(DEVICE2, None, {"type": "Y"}),
        device(DEVICE3, None, {"type": "Y"}),
    ),
)


def r(req: str, dev: str, driver: str = DRIVER_A, pool: str = POOL1):
    return result(req, driver, pool, dev)


def four_devices(*slices: tuple[str, str, int, tuple[str, ...]]) -> Case:
    """Five devices asked of four, spread over (slice, pool, slices in pool, devices)."""
    return Case(
        claims=FIVE,
        classes=CLASSES_A,
        slices=tuple(
            slice_(name, NODE1, pool, DRIVER_A, *(device(d) for d in devices), count=count)
            for name, pool, count, devices in slices
        ),
    )


CASES: dict[str, Case] = {
    "prioritized-list-max-allocation-limit-request": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(REQ0, sub(SUB0, CLASS_A, 32), sub(SUB1, CLASS_A, 16)),
                first_available(REQ1, sub(SUB0, CLASS_A, 32), sub(SUB1, CLASS_A, 16)),
            ),
        ),
        classes=CLASSES_A,
        slices=(many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 64),),
        expect=(
            allocation(
                local(NODE1),
                *(r(f"{REQ0}/{SUB1}", f"device-{i}") for i in range(16)),
                *(r(f"{REQ1}/{SUB1}", f"device-{i}") for i in range(16, 32)),
            ),
        ),
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(REQ0, sub(SUB0, CLASS_A, mode="All"), sub(SUB1, CLASS_A, 2)),
                request(REQ1, CLASS_B, 2),
            ),
        ),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(
            many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 31),
            many_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
        ),
        expect=(
            allocation(
                local(NODE1),
                r(f"{REQ0}/{SUB1}", "device-0"),
                r(f"{REQ0}/{SUB1}", "device-1"),
                r(REQ1, "device-0", DRIVER_B, POOL2),
                r(REQ1, "device-1", DRIVER_B, POOL2),
            ),
        ),
    ),
    "check-combinations-within-single-request-single-pool-single-slice": four_devices(
        (SLICE1, POOL1, 1, (DEVICE1, DEVICE2, DEVICE3, DEVICE4)),
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": four_devices(
        (SLICE1, POOL1, 2, (DEVICE1, DEVICE2)),
        (SLICE2, POOL1, 2, (DEVICE3, DEVICE4)),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": four_devices(
        (SLICE1, POOL1, 2, (DEVICE1,)),
        (SLICE2, POOL1, 2, (DEVICE2,)),
        (SLICE3, POOL2, 1, (DEVICE3, DEVICE4)),
    ),
    "check-combinations-within-single-request-many-pools": four_devices(
        (SLICE1, POOL1, 1, (DEVICE1,)),
        (SLICE2, POOL2, 1, (DEVICE2,)),
        (SLICE3, POOL3, 1, (DEVICE3,)),
        ("slice-4", POOL4, 1, (DEVICE4,)),
    ),
    "check-combinations-with-backtracking": Case(
        claims=(claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, TYPE_X)),),
        classes=CLASSES_A,
        slices=X_Y_Y,
        expect=(allocation(local(NODE1), r(REQ1, DEVICE2), r(REQ1, DEVICE3), r(REQ2, DEVICE1)),),
    ),
    "check-combinations-with-prioritized-list": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(REQ1, sub(SUB0, CLASS_A, 3, TYPE_Y), sub(SUB1, CLASS_A, 2)),
                first_available(REQ2, sub(SUB0, CLASS_A, 2), sub(SUB1, CLASS_A, 1, TYPE_X)),
            ),
        ),
        classes=CLASSES_A,
        slices=X_Y_Y,
        expect=(
            allocation(
                local(NODE1),
                r(f"{REQ1}/{SUB1}", DEVICE2),
                r(f"{REQ1}/{SUB1}", DEVICE3),
                r(f"{REQ2}/{SUB1}", DEVICE1),
            ),
        ),
    ),
}
