"""The common ground of the manifest models: a base model, field types (quantities, names),
and the translation of pydantic's verdicts into problem lines."""

from __future__ import annotations

import difflib
import json
import re
import types
from functools import cache
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from berth.resources import MAX_QUANTITY, QuantityError, parse_quantity

NODE_API = "v1"
NAMESPACE_API = "v1"
POD_API = "v1"
LIST_API = "v1"
NODE_POOL_API = "berth.io/v1alpha1"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"
BATCH_API = "batch.volcano.sh/v1alpha1"
BUS_API = "bus.volcano.sh/v1alpha1"

#: pydantic error type of the checks below, so their text passes through untranslated.
_OWN_ERROR = "berth"


#: The severity of a field the schema does not know: an error, or a warning where the reader
#: is lenient (``--unknown-fields warn``, or an object a live API server has accepted).
UNKNOWN = "unknown"


class Issue(NamedTuple):
    severity: str  # "error" | "warning" | UNKNOWN
    path: str
    message: str


#: How much of an offending value a message quotes: one line, this many characters at most.
SHOWN_CHARACTERS = 60


def show(value: object) -> str:
    """A value as it would read in the manifest, for quoting it back in a message: one line of
    it at most, shortened (a whole file read as one string must not fill the terminal)."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, int | float | bool) or value is None:
        return json.dumps(value)
    text = str(value)
    first = text.split("\n", 1)[0]
    if len(first) > SHOWN_CHARACTERS:
        first = first[:SHOWN_CHARACTERS]
    if first != text:
        return json.dumps(first + "...")
    return json.dumps(text)


def fail(message: str) -> PydanticCustomError:
    # The message goes through the context so that braces in user input are not format fields.
    return PydanticCustomError(_OWN_ERROR, "{message}", {"message": message})


def _check_quantity(value: object) -> str | int | float:
    """Accept what Kubernetes accepts as a quantity; canonical units depend on the resource name,
    which only the caller knows, so the raw value is kept."""

    # Messages are built only on failure: this runs for every quantity of every object.
    def expected() -> PydanticCustomError:
        return fail(f"{show(value)} is not a quantity (expected e.g. 500m, 2, 4Gi)")

    def too_large() -> PydanticCustomError:
        return fail(f"{show(value)} is too large (expected at most {MAX_QUANTITY:g})")

    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise expected()
    try:
        amount = parse_quantity(value)
    except QuantityError:
        raise expected() from None
    except ArithmeticError:  # decimal overflow on exponents like 1e999999999
        raise too_large() from None
    if amount < 0:
        raise fail(f"must be >= 0 (got {show(value)})")
    if amount > MAX_QUANTITY:
        # Converting it to canonical units would build an integer of arbitrary size.
        raise too_large()
    return value


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_LABEL_RE = re.compile(_DNS_LABEL)


def _check_name(value: str) -> str:
    if len(value) > 253 or not _SUBDOMAIN_RE.fullmatch(value):
        raise fail(
            f"{show(value)} is not a valid name (expected lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)"
        )
    return value


def _check_namespace(value: str) -> str:
    if len(value) > 63 or not _LABEL_RE.fullmatch(value):
        raise fail(
            f"{show(value)} is not a valid namespace (expected lowercase letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )
    return value


def _stringify_values(value: object) -> object:
    """Read unquoted YAML scalars in string maps as the text the user meant.

    ``berth.io/duration: 300`` is the natural thing to write; Kubernetes rejects it, so the walk
    below warns, but a simulation should still run.
    """
    if not isinstance(value, dict):
        return value
    return {k: _as_text(v) for k, v in value.items()}


def _as_text(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


_STRING_MAP = BeforeValidator(_stringify_values)

Quantity = Annotated[str | int | float, PlainValidator(_check_quantity)]
ResourceList = dict[StrictStr, Quantity]
StringMap = Annotated[dict[StrictStr, StrictStr], _STRING_MAP]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Name = Annotated[StrictStr, AfterValidator(_check_name)]
Namespace = Annotated[StrictStr, AfterValidator(_check_namespace)]
Weight = Annotated[StrictInt, Field(ge=1, le=100)]
Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="ignore")

    #: Kubernetes fields berth has no use for: accepted without a word.
    ignored: ClassVar[frozenset[str]] = frozenset()
    #: Kubernetes fields that change what the object means but that berth does not model yet:
    #: accepted with a warning, because silently dropping them would change the outcome.
    unsupported: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Kubernetes reads ``field: null`` (and YAML's bare ``field:``) as an absent field."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


# -- validation -----------------------------------------------------------------------------------

M = TypeVar("M", bound=Model)


def validate(model: type[M], data: dict[str, Any]) -> tuple[M | None, list[Issue]]:
    """The validated model (None when invalid) and every issue found, warnings included."""
    issues = _walk(model, data, "")
    try:
        return model.model_validate(data), issues
    except ValidationError as exc:
        issues += [_translate(error) for error in exc.errors(include_url=False)]
        return None, issues


def join(path: str, key: str | int) -> str:
    """Dotted path with list indices, the form every problem line uses."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _walk(model: type[Model], data: object, path: str) -> list[Issue]:
    if not isinstance(data, dict):
        return []  # validation reports the wrong type
    fields = _fields_by_alias(model)
    issues: list[Issue] = []
    for key, value in data.items():
        sub = join(path, str(key))
        info = fields.get(key)
        if info is None:
            if key in model.unsupported:
                issues.append(Issue("warning", sub, "not supported by berth, ignored"))
            elif key not in model.ignored:
                issues.append(Issue(UNKNOWN, sub, f"unknown field{_closest(key, fields)}"))
        elif value is not None:
            if _STRING_MAP in info.metadata:
                issues += _unquoted(value, sub)
            issues += _walk_type(info.annotation, value, sub)
    return issues


def _closest(key: str, fields: dict[str, FieldInfo]) -> str:
    """`` (did you mean X?)`` for the known field most like ``key``, or nothing."""
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


@cache
def _fields_by_alias(model: type[Model]) -> dict[str, FieldInfo]:
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _walk_type(annotation: Any, value: object, path: str) -> list[Issue]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _walk_type(get_args(annotation)[0], value, path)
    if origin is Union or origin is types.UnionType:
        models = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _walk_type(models[0], value, path) if len(models) == 1 else []
    if origin is list and isinstance(value, list):
        (item,) = get_args(annotation)
        return [issue for i, v in enumerate(value) for issue in _walk_type(item, v, join(path, i))]
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return _walk(annotation, value, path)
    return []


def _unquoted(value: object, path: str) -> list[Issue]:
    if not isinstance(value, dict):
        return []
    return [
        Issue(
            "warning",
            join(path, str(key)),
            f"{show(item)} is not a string, read as {show(_as_text(item))} "
            "(quote it: Kubernetes accepts only strings here)",
        )
        for key, item in value.items()
        if not isinstance(item, str)
    ]


def _translate(error: Any) -> Issue:
    """pydantic's verdict in the words of a Kubernetes user: no class names, no URLs."""
    loc = list(error["loc"])
    is_key = bool(loc) and loc[-1] == "[key]"
    if is_key:
        loc.pop()
    path = ""
    for part in loc:
        path = join(path, part)
    kind, ctx, got = error["type"], error.get("ctx", {}), show(error.get("input"))
    messages = {
        "missing": "field required",
        "int_type": f"{got} is not an integer",
        "int_parsing": f"{got} is not an integer",
        "int_from_float": f"{got} is not an integer",
        "bool_type": f"{got} is not a boolean (expected true or false)",
        "bool_parsing": f"{got} is not a boolean (expected true or false)",
        "string_type": f"{got} is not a string",
        "list_type": f"expected a list (got {got})",
        "dict_type": f"expected a mapping (got {got})",
        "model_type": f"expected a mapping (got {got})",
        "model_attributes_type": f"expected a mapping (got {got})",
        "greater_than_equal": f"must be >= {ctx.get('ge')} (got {got})",
        "greater_than": f"must be > {ctx.get('gt')} (got {got})",
        "less_than_equal": f"must be <= {ctx.get('le')} (got {got})",
        "less_than": f"must be < {ctx.get('lt')} (got {got})",
        "string_too_short": "must not be empty",
        "too_short": f"must have at least {ctx.get('min_length')} item(s)",
    }
    if kind == _OWN_ERROR:
        message = str(ctx["message"])
    elif kind == "literal_error":
        allowed = [v for v in re.findall(r"'([^']*)'", str(ctx.get("expected", ""))) if v]
        message = f"{got} is not a valid value (expected one of {', '.join(allowed)})"
        if len(allowed) == 1:
            message = f"{got} is not a valid value (expected {allowed[0]})"
    else:
        message = messages.get(kind, str(error["msg"]))
    if is_key:
        message = f"key {message}"
    return Issue("error", path, message)
