"""Volcano's ``topology.volcano.sh/v1alpha1 HyperNode`` and the ``networkTopology`` block that
PodGroups and Jobs carry."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictInt, StrictStr, model_validator

from berth.api.schema.base import Model, NonEmpty, fail, show
from berth.api.schema.meta import LabelSelector, ObjectMeta

TOPOLOGY_API = "topology.volcano.sh/v1alpha1"


def _check_pattern(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise fail(f"{show(value)} is not a regular expression ({exc})") from None
    return value


class ExactMatch(Model):
    name: NonEmpty


class RegexMatch(Model):
    pattern: Annotated[NonEmpty, AfterValidator(_check_pattern)]


class MemberSelector(Model):
    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> MemberSelector:
        # The CRD's own rules: one way of naming members, and at least one.
        given = [s for s in (self.exact_match, self.regex_match, self.label_match) if s is not None]
        if not given:
            raise fail("expected one of exactMatch, regexMatch or labelMatch")
        if len(given) > 1:
            raise fail("set only one of exactMatch, regexMatch and labelMatch")
        return self


class HyperNodeMemberSpec(Model):
    type: Literal["Node", "HyperNode"]
    selector: MemberSelector


class HyperNodeSpec(Model):
    tier: Annotated[StrictInt, Field(ge=0)]
    tier_name: StrictStr = ""
    members: list[HyperNodeMemberSpec] = Field(min_length=1)


class HyperNodeDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: HyperNodeSpec
    ignored = frozenset({"status"})


class NetworkTopologySpec(Model):
    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: Annotated[StrictInt, Field(ge=0)] | None = None
    unsupported = frozenset({"highestTierName"})
