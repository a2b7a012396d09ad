"""Whether a pod can move from one template revision to another in place, as OpenKruise
decides it: only when the two revisions differ in nothing but container images and template
metadata. Anything else (requests, environment, a container added) needs a new pod."""

from __future__ import annotations

from dataclasses import dataclass

from berth.api.workloads import PodTemplate


@dataclass(frozen=True, slots=True)
class InPlaceUpdate:
    """What changes in place: new images by container name (empty when only metadata
    changes, which restarts nothing)."""

    images: dict[str, str]


def in_place_update(old: PodTemplate | None, new: PodTemplate) -> InPlaceUpdate | None:
    """The in-place update from ``old`` to ``new``, or None when the pod must be recreated
    (or the old revision is unknown)."""
    if old is None or old.layout != new.layout:
        return None
    images = {
        name: image
        for (name, image), (_, before) in zip(new.pod.containers, old.pod.containers, strict=True)
        if image != before
    }
    return InPlaceUpdate(images)
