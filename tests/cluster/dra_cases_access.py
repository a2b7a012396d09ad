"""Upstream cases of admin access and device taints (``features: AdminAccess``,
``DeviceTaints``), ported as facts: same inputs, same devices.

Upstream's results also list the tolerations a request used; berth's results do not carry them
(docs/dra.md, differences), so only the devices are compared.
"""

from __future__ import annotations

from berth.api.dra import Taint, Toleration
from tests.cluster.dra_tables import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    SLICE1,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    claim,
    cls,
    device,
    first_available,
    local,
    one_device,
    request,
    result,
    slice_,
    sub,
)

TAINT_KEY, TAINT_VALUE, TAINT_VALUE2 = "taint-key", "taint-value", "taint-value-2"
TAINT_NONE = Taint(TAINT_KEY, TAINT_VALUE, "None")
TAINT_NO_SCHEDULE = Taint(TAINT_KEY, TAINT_VALUE, "NoSchedule")
TAINT_NO_EXECUTE = Taint(TAINT_KEY, TAINT_VALUE2, "NoExecute")
TOLERATE_NO_SCHEDULE = Toleration(TAINT_KEY, "Exists", "", "NoSchedule")
TOLERATE_NO_EXECUTE = Toleration(TAINT_KEY, "Equal", TAINT_VALUE2, "NoExecute")

CLASSES_A = (cls(CLASS_A, DRIVER_A),)
TWO_PLAIN = (slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),)
TWO_TAINTED = (
    slice_(
        SLICE1,
        NODE1,
        POOL1,
        DRIVER_A,
        device(DEVICE1, taints=(TAINT_NO_SCHEDULE,)),
        device(DEVICE2, taints=(TAINT_NO_EXECUTE,)),
    ),
)


def tainted(*taints: Taint) -> tuple:
    return (slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=taints)),)


def admin_result(req: str, dev: str):
    return result(req, DRIVER_A, POOL1, dev, admin=True)


CASES: dict[str, Case] = {
    "all-devices-some-allocated-admin-access": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A, admin=True)),),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(
            allocation(local(NODE1), admin_result(REQ0, DEVICE1), admin_result(REQ0, DEVICE2)),
        ),
    ),
    "all-devices-some-allocating-admin-access": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, admin=True),
                all_request(REQ1, CLASS_A, admin=True),
            ),
        ),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 2, admin=True)),),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(
            allocation(local(NODE1), admin_result(REQ0, DEVICE1), admin_result(REQ0, DEVICE2)),
        ),
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A, admin=True)),
            claim(CLAIM1, request(REQ0, CLASS_A, admin=True)),
        ),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(
            allocation(local(NODE1), admin_result(REQ0, DEVICE1)),
            allocation(local(NODE1), admin_result(REQ0, DEVICE1)),
        ),
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A)),
            claim(CLAIM1, request(REQ0, CLASS_A, admin=True)),
        ),
        classes=CLASSES_A,
        slices=TWO_PLAIN,
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(local(NODE1), admin_result(REQ0, DEVICE1)),
        ),
    ),
    "admin-access-enabled": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, admin=True)),),
        allocated=((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)),
        classes=CLASSES_A,
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        expect=(allocation(local(NODE1), admin_result(REQ0, DEVICE1)),),
    ),
    "tainted-admin-access": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, admin=True)),),
        allocated=((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)),
        classes=CLASSES_A,
        slices=tainted(TAINT_NO_SCHEDULE),
    ),
    "tainted-two-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=CLASSES_A,
        slices=TWO_TAINTED,
    ),
    "tainted-one-device-two-taints": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=CLASSES_A,
        slices=tainted(TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
    ),
    "tainted-two-devices-tolerated": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, tolerations=(TOLERATE_NO_EXECUTE,))),),
        classes=CLASSES_A,
        slices=TWO_TAINTED,
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),),
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub(SUB0, CLASS_A),
                    sub(SUB1, CLASS_A, tolerations=(TOLERATE_NO_EXECUTE,)),
                ),
            ),
        ),
        classes=CLASSES_A,
        slices=TWO_TAINTED,
        expect=(allocation(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE2)),),
    ),
    "tainted-no-effect": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=CLASSES_A,
        slices=tainted(TAINT_NONE),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),),
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, tolerations=(TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE)),
            ),
        ),
        classes=CLASSES_A,
        slices=tainted(TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),),
    ),
    "tainted-prioritized-list": Case(
        claims=(claim(CLAIM0, first_available(REQ0, sub(SUB0, CLASS_B), sub(SUB1, CLASS_A))),),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=tainted(TAINT_NO_SCHEDULE),
    ),
    "tainted-all-devices-single": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=CLASSES_A,
        slices=tainted(TAINT_NO_SCHEDULE),
    ),
}
