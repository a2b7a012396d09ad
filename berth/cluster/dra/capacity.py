"""Consumable capacity: what a request takes of a device's capacities, and whether it fits.

A device with ``allowMultipleAllocations`` is shared: each allocation consumes part of its
capacities, and another fits while the sums stay within each capacity's value. What one
allocation consumes of a capacity is what the request asks, rounded up to the capacity's
``requestPolicy`` (``validRange`` min and step, else the next of ``validValues``), or the
policy's ``default`` (else the whole value) when the request does not name that capacity. An
amount the policy does not allow (above ``max``, off the step, not a valid value) does not fit.
A request naming a capacity the device does not have does not fit either. Rounding is exact
decimal arithmetic, so fractional steps (``100m``) work as with Kubernetes'
``DRAFractionalCapacityRange``, on by default since 1.37.

A negative amount is no mismatch but bad data (a stored object from before validation got
stricter): ``NegativeCapacity``, which aborts the allocation as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal

from berth.api.dra import Capacity, CapacityPolicy

Amounts = Mapping[str, Decimal]


class NegativeCapacity(ValueError):
    """A capacity an allocation would consume is negative (the capacity's name is the
    message)."""


def _round_up(asked: Decimal, policy: CapacityPolicy) -> Decimal:
    if policy.min is not None:
        if asked < policy.min or policy.step is None:
            return max(asked, policy.min)
        steps = ((asked - policy.min) / policy.step).to_integral_value(rounding=ROUND_CEILING)
        return policy.min + policy.step * steps
    if policy.valid_values:
        for value in policy.valid_values:
            if asked <= value:
                return value
    return asked


def consumed_amount(asked: Decimal | None, capacity: Capacity) -> Decimal:
    policy = capacity.policy
    if asked is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return asked
    return _round_up(asked, policy)


def violates(amount: Decimal, policy: CapacityPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.min is not None or policy.max is not None or policy.step is not None:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None:
            low = policy.min if policy.min is not None else Decimal(0)
            return (amount - low) % policy.step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def consumption(asked: Amounts | None, capacities: Mapping[str, Capacity]) -> dict[str, Decimal]:
    """What one allocation takes of each of the device's capacities."""
    asked = asked or {}
    return {name: consumed_amount(asked.get(name), cap) for name, cap in capacities.items()}


def fits(
    asked: Amounts | None,
    capacities: Mapping[str, Capacity],
    *taken: Amounts | None,
) -> bool:
    """Whether an allocation asking ``asked`` fits on a device whose capacities already carry
    the ``taken`` amounts (allocated before, and being allocated now)."""
    if asked and any(name not in capacities for name in asked):
        return False
    asked = asked or {}
    amounts = {name: consumed_amount(asked.get(name), cap) for name, cap in capacities.items()}
    for name, amount in amounts.items():
        if amount < 0:
            raise NegativeCapacity(name)
    for name, cap in capacities.items():
        amount = amounts[name]
        if violates(amount, cap.policy):
            return False
        total = amount
        for amounts in taken:
            if amounts:
                total += amounts.get(name, 0)
        if total > cap.value:
            return False
    return True


def add_into(total: dict[str, Decimal], amounts: Amounts, sign: int = 1) -> None:
    for name, amount in amounts.items():
        left = total.get(name, Decimal(0)) + sign * amount
        if left:
            total[name] = left
        else:
            total.pop(name, None)
