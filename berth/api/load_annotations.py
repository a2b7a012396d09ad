"""Reading a Deployment's load-curve annotations into its scaling rule
(``berth.api.load_curves``), each problem filed against the annotation it is in."""

from __future__ import annotations

import math
from pathlib import Path

from berth.api.load_curves import (
    BUILTIN_SHAPES,
    DAY,
    DEFAULT_SCALE_DOWN_WINDOW,
    DEFAULT_SCALE_INTERVAL,
    LOAD_CURVE_ANNOTATION,
    LOAD_PERIOD_ANNOTATION,
    LOAD_SCALE_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    MIN_REPLICAS_ANNOTATION,
    REQUESTS_PER_REPLICA_ANNOTATION,
    SCALE_DOWN_WINDOW_ANNOTATION,
    SCALE_INTERVAL_ANNOTATION,
    CurveError,
    LoadCurve,
    LoadScaling,
    builtin_curve,
    read_curve_csv,
)
from berth.api.loaded import Context
from berth.api.numbers import to_float


def load_scaling(annotations: dict[str, str], ctx: Context) -> LoadScaling | None:
    """The scaling a Deployment's annotations ask for, or None without ``berth.io/load-curve``;
    each problem is filed against the annotation it is in."""
    name = annotations.get(LOAD_CURVE_ANNOTATION)
    if name is None:
        return None
    base = "metadata.annotations."
    ok = True

    def number(key: str, default: float | None, minimum: float, whole: bool = False) -> float:
        nonlocal ok
        text = annotations.get(key)
        if text is None:
            if default is None:
                ctx.error(f"{base}{key}", f"required with {LOAD_CURVE_ANNOTATION}")
                ok = False
                return 0.0
            return default
        try:
            value = to_float(text)
        except ValueError:
            value = math.nan
        kind = "an integer" if whole else "a number"
        if not math.isfinite(value) or value < minimum or (whole and value != int(value)):
            ctx.error(f"{base}{key}", f"{text!r} is not {kind} >= {minimum:g}")
            ok = False
        return value

    per_replica = number(REQUESTS_PER_REPLICA_ANNOTATION, None, 1e-9)
    scale = number(LOAD_SCALE_ANNOTATION, 1.0, 0.0)
    period = number(LOAD_PERIOD_ANNOTATION, DAY, 1.0)
    low = number(MIN_REPLICAS_ANNOTATION, 1, 0, whole=True)
    high = number(MAX_REPLICAS_ANNOTATION, math.inf, 1, whole=True)
    interval = number(SCALE_INTERVAL_ANNOTATION, DEFAULT_SCALE_INTERVAL, 1.0)
    window = number(SCALE_DOWN_WINDOW_ANNOTATION, DEFAULT_SCALE_DOWN_WINDOW, 0.0)
    if ok and high < low:
        ctx.error(
            f"{base}{MAX_REPLICAS_ANNOTATION}",
            f"{annotations[MAX_REPLICAS_ANNOTATION]} is below {MIN_REPLICAS_ANNOTATION} {low:g}",
        )
        ok = False
    curve = _curve(name, period, ctx)
    if curve is None or not ok:
        return None
    return LoadScaling(
        curve,
        per_replica,
        scale,
        int(low),
        None if math.isinf(high) else int(high),
        interval,
        window,
    )


def _curve(name: str, period: float, ctx: Context) -> LoadCurve | None:
    path = f"metadata.annotations.{LOAD_CURVE_ANNOTATION}"
    if name in BUILTIN_SHAPES:
        return builtin_curve(name, period)
    if not name.lower().endswith(".csv"):
        ctx.error(
            path,
            f"{name!r} is neither a built-in shape ({', '.join(sorted(BUILTIN_SHAPES))}) "
            "nor a .csv file",
        )
        return None
    file = Path(name)
    if not file.is_absolute() and ctx.file not in ("", "-", "<builtin>"):
        file = Path(ctx.file).parent / file
    try:
        return read_curve_csv(file, period)
    except CurveError as exc:
        ctx.error(path, str(exc))
        return None
