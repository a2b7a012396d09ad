"""Pydantic models of the manifest shapes berth reads, and the translation of their verdicts into
plain problem lines.

The models stop at the boundary: they check types, ranges and enumerations of the raw documents,
and ``berth.api.manifest`` turns the validated models into the dataclasses of
``berth.api.objects`` and ``berth.api.selectors``. Field names are the Kubernetes camelCase
spellings, produced by an alias generator so the Python side stays snake_case.

Unknown fields are found by walking the raw document against the models instead of reading
``model_extra``: the walk works on documents that fail validation too, and a misspelt field is
usually what makes a required one "missing", so reporting both together is what helps.
"""

from berth.api.schema.base import *  # noqa: F403
from berth.api.schema.dra import *  # noqa: F403
from berth.api.schema.kubeflow import *  # noqa: F403
from berth.api.schema.meta import *  # noqa: F403
from berth.api.schema.namespaces import *  # noqa: F403
from berth.api.schema.nodes import *  # noqa: F403
from berth.api.schema.paddle import *  # noqa: F403
from berth.api.schema.pods import *  # noqa: F403
from berth.api.schema.topology import *  # noqa: F403
from berth.api.schema.volcano import *  # noqa: F403
from berth.api.schema.workloads import *  # noqa: F403
