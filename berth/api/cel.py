"""CEL device selectors of Dynamic Resource Allocation (``resource.k8s.io/v1``), compiled once
and evaluated with the ``common-expression-language`` package (the Rust CEL interpreter's
Python bindings).

The environment is the one Kubernetes gives a selector: one variable ``device`` with

- ``device.driver`` (string), ``device.allowMultipleAllocations`` (bool);
- ``device.attributes[domain][id]``: each attribute under the domain of its qualified name, an
  unqualified one under the device's driver (``device.attributes["gpu.example.com"].model``);
  ints, bools, strings, versions and their list forms;
- ``device.capacity[domain][id]``: quantities.

Quantities and versions are values of their own (maps tagged with a private key, since the
bindings have no custom types); the functions Kubernetes adds for them are registered here:
``quantity(s)``, ``isQuantity(s)``, ``semver(s)``, ``isSemver(s)``, and on those values
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``sign``, ``isInteger``, ``asInteger``,
``asApproximateFloat``, ``add``, ``sub``, ``major``, ``minor``, ``patch``.

What the interpreter does not give: static type checking (Kubernetes refuses an expression
whose type is not bool or that names an unknown field when it is created; here a name other
than ``device`` or a function outside CEL's standard library and the list above is refused at
compile time, other mistakes show when the expression runs), cost limits, and the optional
syntax ``.?``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from berth.resources import QuantityError, parse_quantity

_QUANTITY = "__berth_quantity__"
_SEMVER = "__berth_semver__"

#: CEL's own functions and operators as the interpreter names them, plus the macros.
_STANDARD = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches", "has", "all", "exists",
        "exists_one", "map", "filter", "int", "uint", "double", "string", "bool", "bytes",
        "type", "dyn", "duration", "timestamp", "lowerAscii", "upperAscii", "trim", "split",
        "join", "replace", "indexOf", "lastIndexOf", "substring", "charAt", "max", "min",
        "in", "@in", "@not_strictly_false",
    }
)  # fmt: skip


class CelError(ValueError):
    """An expression that does not compile or fails when run."""


def _qvalue(value: Any) -> Decimal:
    if isinstance(value, dict) and _QUANTITY in value:
        return Decimal(value[_QUANTITY])
    raise CelError(f"expected a quantity, got {value!r}")


def _quantity_map(amount: Decimal) -> dict[str, str]:
    return {_QUANTITY: str(amount.normalize()) if amount else "0"}


def quantity_value(text: str | int | float | Decimal) -> dict[str, str]:
    """A quantity as selectors see it."""
    if isinstance(text, Decimal):
        return _quantity_map(text)
    try:
        return _quantity_map(parse_quantity(text))
    except (QuantityError, InvalidOperation) as exc:
        raise CelError(f"quantity: {text!r} is not a quantity") from exc


_SEMVER_RE = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?")


def _parse_semver(text: str) -> tuple[int, int, int]:
    match = _SEMVER_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise CelError(f"semver: {text!r} is not a semantic version")
    return tuple(int(g or 0) for g in match.groups())  # type: ignore[return-value]


def version_value(text: str) -> dict[str, str]:
    _parse_semver(text)
    return {_SEMVER: text}


def _svalue(value: Any) -> tuple[int, int, int]:
    if isinstance(value, dict) and _SEMVER in value:
        return _parse_semver(value[_SEMVER])
    raise CelError(f"expected a semver, got {value!r}")


def _ordered(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, dict) and _SEMVER in a:
        return _svalue(a), _svalue(b)
    return _qvalue(a), _qvalue(b)


def _compare(a: Any, b: Any) -> int:
    left, right = _ordered(a, b)
    return (left > right) - (left < right)


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(text)
    except (QuantityError, InvalidOperation, TypeError):
        return False
    return True


def _is_semver(text: Any) -> bool:
    try:
        _parse_semver(text)
    except CelError:
        return False
    return True


def _sum(a: Any, b: Any, sign: int) -> dict[str, str]:
    other = Decimal(b) if isinstance(b, int) else _qvalue(b)
    return _quantity_map(_qvalue(a) + sign * other)


_FUNCTIONS: dict[str, Any] = {
    "quantity": quantity_value,
    "isQuantity": _is_quantity,
    "semver": version_value,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "sign": lambda a: (lambda v: (v > 0) - (v < 0))(_qvalue(a)),
    "isInteger": lambda a: _qvalue(a) == _qvalue(a).to_integral_value(),
    "asInteger": lambda a: int(_qvalue(a)),
    "asApproximateFloat": lambda a: float(_qvalue(a)),
    "add": lambda a, b: _sum(a, b, 1),
    "sub": lambda a, b: _sum(a, b, -1),
    "major": lambda a: _svalue(a)[0],
    "minor": lambda a: _svalue(a)[1],
    "patch": lambda a: _svalue(a)[2],
}


@dataclass(frozen=True, slots=True)
class Selector:
    """One compiled expression."""

    expression: str
    program: Any

    def matches(self, device: dict[str, Any]) -> bool:
        """Whether ``device`` (see ``device_variable``) passes; CelError when the expression
        fails on it or does not give a bool."""
        context = _cel().Context(variables={"device": device}, functions=_FUNCTIONS)
        try:
            result = self.program.execute(context)
        except Exception as exc:  # the bindings raise KeyError, ValueError, RuntimeError, ...
            raise CelError(_runtime_message(exc)) from None
        if not isinstance(result, bool):
            raise CelError(f"expression gave {type(result).__name__}, not bool")
        return result


def _runtime_message(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else ''}"
    return " ".join(str(exc).split()) or type(exc).__name__


_WHERE = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")


def _compile_message(text: str) -> str:
    """The interpreter's complaint in one short line: where, and what (without the list of
    tokens the parser would have taken)."""
    match = _WHERE.search(text)
    if match is None:
        return " ".join(text.split())
    line, column, what = match.groups()
    what = what.split(" expecting ")[0]
    where = f"column {column}" if line == "1" else f"line {line}, column {column}"
    return f"{what} at {where}"


def _cel() -> Any:
    """The CEL interpreter, imported when a selector is first compiled: the package brings its
    own command-line tool's imports (about 0.1 s), which runs without DRA objects never need."""
    import cel

    return cel


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Selector:
    """The compiled expression (cached: each expression is compiled once); CelError with the
    reason when it does not compile in the selector environment."""
    if not expression.strip():
        raise CelError("empty expression")
    try:
        program = _cel().compile(expression)
    except Exception as exc:
        raise CelError(_compile_message(str(exc))) from None
    unknown = [name for name in program.variables() if name != "device"]
    if unknown:
        raise CelError(f"undeclared reference to {unknown[0]!r} (the only variable is device)")
    for name in program.functions():
        if not (name.startswith("_") or name in _STANDARD or name in _FUNCTIONS):
            raise CelError(f"undeclared reference to function {name!r}")
    return Selector(expression, program)


def compile_error(expression: str) -> str | None:
    """Why ``expression`` does not compile, or None."""
    try:
        compile_selector(expression)
    except CelError as exc:
        return str(exc)
    return None
