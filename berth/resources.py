"""Resource quantities and the resource axis shared by pods and nodes.

Every resource is held as an integer in a canonical unit so that fit checks are exact integer
comparisons over numpy arrays: cpu in millicores, memory and every other byte-valued resource
(ephemeral storage, hugepages) in bytes as the Kubernetes API stores them, GPUs in milli-GPU
(1000 = one device, which is what makes fractional GPU sharing a plain vector entry), pods as a
count, other extended resources as a count of their own unit. No quantity changes value on the
way in: ``1G + 2G + 2G`` fits a ``5G`` node here exactly as it does in Kubernetes.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"

#: The fixed head of the resource axis; extended resources are appended on first sight.
BASE_RESOURCES: tuple[str, ...] = (CPU, MEMORY, GPU, PODS)

#: Resources Kubernetes itself counts in bytes (``hugepages-<size>`` too, see ``is_bytes``).
_BYTE_RESOURCES = {MEMORY, "ephemeral-storage", "storage", "kubernetes.io/batch-memory"}
MIB = 2**20
GIB = 2**30

#: Aliases accepted for the GPU resource (trace formats and other vendors' device plugins).
GPU_ALIASES = {"gpu", "nvidia.com/gpu", "amd.com/gpu"}

_SUFFIX = {
    "n": Decimal(10) ** -9,
    "u": Decimal(10) ** -6,
    "m": Decimal(10) ** -3,
    "": Decimal(1),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity ("500m", "4Gi", "1.5", 2) into an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Decimal(repr(value))
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{value!r} is not a quantity (e.g. 500m, 2, 1.5, 4Gi)")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{value!r} is not a quantity") from exc
    return number * _SUFFIX[match.group(2)]


def canonical_name(name: str) -> str:
    """The name berth files a resource under (GPU aliases collapse to nvidia.com/gpu)."""
    return GPU if name in GPU_ALIASES else name


def is_bytes(name: str) -> bool:
    """Whether Kubernetes counts resource ``name`` in bytes."""
    return name in _BYTE_RESOURCES or name.startswith("hugepages-")


#: The largest canonical amount one quantity may convert to: int64 columns then leave room
#: for sums over many nodes. As a quantity (cpu and GPUs are scaled by 1000) that is 4e15.
MAX_AMOUNT = 4 * 10**18
MAX_QUANTITY = MAX_AMOUNT // 1000


def to_canonical(name: str, value: str | int | float) -> int:
    """Convert a quantity of resource ``name`` to berth's integer unit for it.

    Byte-valued resources are exact (a whole number of bytes, as the API stores them); cpu and
    GPUs are in thousandths. A fraction of the unit rounds up, as Kubernetes does when it turns
    a quantity into an integer (``MilliValue``, ``Value``).
    """
    quantity = parse_quantity(value)
    if quantity < 0:
        raise QuantityError(f"{value!r} is negative")
    name = canonical_name(name)
    scaled = quantity * 1000 if name in (CPU, GPU) else quantity
    amount = int(scaled.to_integral_value(rounding="ROUND_CEILING"))
    if amount > MAX_AMOUNT:
        raise QuantityError(f"{value!r} is too large")
    return amount


def format_quantity(name: str, amount: int) -> str:
    """A canonical amount as the Kubernetes quantity that converts back to exactly ``amount``
    (``to_canonical(name, format_quantity(name, a)) == a``)."""
    name = canonical_name(name)
    if name in (CPU, GPU):
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if is_bytes(name) and amount:
        for suffix, size in (("Ti", 2**40), ("Gi", GIB), ("Mi", MIB), ("Ki", 2**10)):
            if amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def format_amount(name: str, amount: float) -> str:
    """Human form of a canonical amount, for tables and error messages (binary units for
    bytes, four significant digits)."""
    name = canonical_name(name)
    if name in (CPU, GPU):
        return f"{amount / 1000:g}"
    if is_bytes(name):
        for suffix, size in (("Ti", 2**40), ("Gi", GIB), ("Mi", MIB), ("Ki", 2**10)):
            if abs(amount) >= size:
                return f"{amount / size:.4g}{suffix}"
        return f"{amount:g}"
    return f"{amount:g}"


class ResourceAxis:
    """The ordered list of resource names that indexes every request and capacity vector.

    Extended resources are registered the first time a node or pod names them; vectors built
    before that are shorter and are padded with zeros by the consumers (``ClusterState`` grows its
    columns when the axis grows).
    """

    __slots__ = ("names", "_index")

    def __init__(self, names: tuple[str, ...] = BASE_RESOURCES) -> None:
        self.names: list[str] = list(names)
        self._index = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Column of ``name``, registering it when new."""
        name = canonical_name(name)
        col = self._index.get(name)
        if col is None:
            col = len(self.names)
            self.names.append(name)
            self._index[name] = col
        return col

    def find(self, name: str) -> int | None:
        return self._index.get(canonical_name(name))
