"""Which devices a request may take: its class's and its own CEL selectors, device taints and
its tolerations, and the attribute constraints (``matchAttribute``, ``distinctAttribute``)
across a claim's requests.

Selector verdicts are cached per expression and device: many devices of a cluster look
alike (same driver, attributes and capacities), and each distinct look is evaluated once.
"""

from __future__ import annotations

from typing import Any

from berth.api.cel import CelError, compile_selector, quantity_value, version_value
from berth.api.dra import Device, ExactRequest, Version

DeviceId = tuple[str, str, str]  # driver, pool, device


class AllocationError(Exception):
    """The claims cannot be allocated anywhere as written (a missing class, a selector that
    fails, too many devices): not a matter of this node's free devices."""


def _cel_value(value: Any) -> Any:
    if isinstance(value, Version):
        return version_value(value.text)
    if isinstance(value, tuple):
        return [_cel_value(v) for v in value]
    return value


def device_variable(driver: str, device: Device) -> dict[str, Any]:
    """The ``device`` a selector sees (see ``berth.api.cel``)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[ident] = _cel_value(value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[ident] = quantity_value(cap.value)
    return {
        "driver": driver,
        "allowMultipleAllocations": device.allow_multiple_allocations,
        "attributes": attributes,
        "capacity": capacity,
    }


def _look(driver: str, device: Device) -> tuple[Any, ...]:
    """What a selector can see of a device (its name aside)."""
    return (
        driver,
        device.allow_multiple_allocations,
        tuple(sorted(device.attributes.items())),
        tuple(sorted((k, v.value) for k, v in device.capacity.items())),
    )


class SelectorCache:
    """Verdicts of expressions on devices, by expression and the device's look."""

    def __init__(self) -> None:
        self._looks: dict[int, tuple[Device, tuple[Any, ...]]] = {}
        self._verdicts: dict[tuple[str, tuple[Any, ...]], bool | str] = {}

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        """The verdict; CelError when the expression fails on the device."""
        held = self._looks.get(id(device))
        if held is None or held[0] is not device:
            held = (device, _look(driver, device))
            self._looks[id(device)] = held
        key = (expression, held[1])
        verdict = self._verdicts.get(key)
        if verdict is None:
            try:
                verdict = compile_selector(expression).matches(device_variable(driver, device))
            except CelError as exc:
                verdict = str(exc)
            self._verdicts[key] = verdict
        if isinstance(verdict, str):
            raise CelError(verdict)
        return verdict


def blocked_by_taints(device: Device, request: ExactRequest) -> bool:
    """A NoSchedule or NoExecute taint the request does not tolerate keeps it off the device."""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            t.tolerates(taint) for t in request.tolerations
        ):
            return True
    return False


def lookup_attribute(device: Device, driver: str, name: str) -> Any:
    """The attribute a constraint names (fully qualified; the driver's own domain may be left
    out in the slice), or None."""
    if name in device.attributes:
        return device.attributes[name]
    domain, _, ident = name.partition("/")
    if ident and domain == driver:
        return device.attributes.get(ident)
    return None


def _scalar(value: Any) -> tuple[type, Any] | None:
    """A comparable form of a single-valued attribute (lists: None, as the allocator without
    list-type attributes has them)."""
    if value is None or isinstance(value, tuple):
        return None
    return (type(value), value)


class MatchAttribute:
    """All devices of the named requests (all of the claim's when none are named) share one
    value of the attribute."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: tuple[type, Any] | None = None
        self.count = 0

    def applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub) and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: Device, driver: str) -> bool:
        if not self.applies(request, sub):
            return True
        raw = lookup_attribute(device, driver, self.attribute)
        if raw is None:
            return False
        value = _scalar(raw)
        if self.count == 0:
            self.value = value
            self.count = 1
            return True
        if value is None or value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.count -= 1


class DistinctAttribute(MatchAttribute):
    """The devices of the named requests all differ in the attribute, also several devices of
    one request."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        #: The values of the devices added, in order: the search removes the last added first.
        self.values: list[tuple[type, Any] | None] = []

    def add(self, request: str, sub: str, device: Device, driver: str) -> bool:
        if not self.applies(request, sub):
            return True
        raw = lookup_attribute(device, driver, self.attribute)
        if raw is None:
            return False
        value = _scalar(raw)
        if self.values and (value is None or value in self.values):
            return False
        self.values.append(value)
        self.count += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.values.pop()
            self.count -= 1
