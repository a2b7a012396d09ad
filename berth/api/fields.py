"""Field conversions several kinds share: quantities, numeric and boolean annotations, label
selectors and their requirements."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence

from berth.api import schema
from berth.api.deadline import DEADLINE_ANNOTATION, deadline_problem
from berth.api.keys import PREEMPTABLE_ANNOTATION, SLA_WAITING_TIME_ANNOTATION
from berth.api.loaded import Context
from berth.api.numbers import to_float, to_int
from berth.api.selectors import LabelSelector, Requirement
from berth.durations import DurationError, parse_duration
from berth.resources import canonical_name, to_canonical


def canonical(resources: Mapping[str, str | int | float]) -> dict[str, int]:
    return {canonical_name(name): to_canonical(name, value) for name, value in resources.items()}


def positive_int_annotation(
    annotations: Mapping[str, str], key: str, path: str, ctx: Context
) -> int | None:
    text = annotations.get(key)
    if text is None:
        return None
    path = f"{path}.{key}"
    try:
        value = to_int(text)
    except ValueError:
        ctx.error(path, f"{schema.show(text)} is not an integer (expected a positive integer)")
        return None
    if value < 1:
        ctx.error(path, f"must be >= 1 (got {text})")
        return None
    return value


def float_annotation(
    annotations: Mapping[str, str],
    key: str,
    ctx: Context,
    check: Callable[[float], str | None],
) -> float | None:
    """A numeric simulation annotation; ``check`` returns what is wrong with the value, if any."""
    text = annotations.get(key)
    if text is None:
        return None
    path = f"metadata.annotations.{key}"
    try:
        value = to_float(text)
    except ValueError:
        ctx.error(path, f"{schema.show(text)} is not a number")
        return None
    wrong = "must be a finite number" if not math.isfinite(value) else check(value)
    if wrong:
        ctx.error(path, f"{wrong} (got {text})")
        return None
    return value


def at_least_zero(value: float) -> str | None:
    return "must be >= 0" if value < 0 else None


def above_zero(value: float) -> str | None:
    return "must be > 0" if value <= 0 else None


def fraction(value: float) -> str | None:
    return "must be between 0 and 1" if not 0 <= value <= 1 else None


#: What Go's strconv.ParseBool accepts, which is how Volcano reads boolean annotations.
GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def preemptable(meta: schema.ObjectMeta, ctx: Context) -> bool:
    """Volcano's ``volcano.sh/preemptable``: the annotation, else the label, else preemptable."""
    for where, values in (("annotations", meta.annotations), ("labels", meta.labels)):
        text = values.get(PREEMPTABLE_ANNOTATION)
        if text is None:
            continue
        value = GO_BOOLS.get(text.strip())
        if value is None:
            ctx.error(
                f"metadata.{where}.{PREEMPTABLE_ANNOTATION}",
                f'{schema.show(text)} is not a boolean (expected "true" or "false")',
            )
            return True
        return value
    return True


def check_deadline(annotations: Mapping[str, str], ctx: Context) -> None:
    problem = deadline_problem(annotations)
    if problem is not None:
        ctx.error(f"metadata.annotations.{DEADLINE_ANNOTATION}", problem)


def check_sla(annotations: Mapping[str, str], ctx: Context) -> None:
    text = annotations.get(SLA_WAITING_TIME_ANNOTATION)
    if text is None:
        return
    path = f"metadata.annotations.{SLA_WAITING_TIME_ANNOTATION}"
    try:
        seconds = parse_duration(text)
    except DurationError:
        ctx.error(path, f"{schema.show(text)} is not a duration (expected e.g. 30m, 1h, 1h30m)")
        return
    if seconds < 0:
        ctx.error(path, f"must not be negative (got {text})")


def _check_values(operator: str, values: list[str], path: str, ctx: Context) -> None:
    """The pairing of operator and values that Kubernetes enforces on selector requirements."""
    if operator in ("In", "NotIn") and not values:
        ctx.error(f"{path}.values", f"must not be empty for operator {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        ctx.error(f"{path}.values", f"must be empty for operator {operator}")
    elif operator in ("Gt", "Lt") and (len(values) != 1 or not _is_integer(values[0])):
        ctx.error(
            f"{path}.values",
            f"must be a single integer for operator {operator} (got {json.dumps(values)})",
        )


def _is_integer(text: str) -> bool:
    try:
        to_int(text)
    except ValueError:
        return False
    return True


def requirements(
    expressions: Sequence[schema.SelectorRequirement | schema.NodeSelectorRequirement],
    path: str,
    ctx: Context,
) -> tuple[Requirement, ...]:
    result = []
    for index, expr in enumerate(expressions):
        _check_values(expr.operator, expr.values, f"{path}[{index}]", ctx)
        result.append(Requirement(expr.key, expr.operator, tuple(expr.values)))
    return tuple(result)


def label_selector(selector: schema.LabelSelector, path: str, ctx: Context) -> LabelSelector:
    labels = tuple(Requirement(k, "In", (v,)) for k, v in selector.match_labels.items())
    expressions = requirements(selector.match_expressions, f"{path}.matchExpressions", ctx)
    return LabelSelector(labels + expressions)
