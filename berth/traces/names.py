"""Trace identifiers as Kubernetes object names.

Manifests need DNS-style names (lowercase letters, digits, '-'), while traces use whatever their
system used: ``application_1506638472019_14199`` (Philly), ``vcJkd`` (Helios), ``m_1`` (Alibaba).
Underscores and other separators become '-'. Lowercasing can merge names that differed only in
case, so a name that had capitals gets a short hash of the original appended, which keeps it
distinct and stable from run to run.
"""

from __future__ import annotations

import hashlib
import re

_INVALID = re.compile(r"[^a-z0-9-]+")
_MAX_LENGTH = 200  # leaves room for "-<role>-<index>" under Kubernetes' 253


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (``hash()`` is salted)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def dns_name(text: str) -> str:
    """``text`` as a valid object name; unchanged when it already is one."""
    name = _INVALID.sub("-", text.lower()).strip("-")[:_MAX_LENGTH].strip("-")
    if name and text.lower() == text:
        return name
    suffix = f"{stable_hash(text) & 0xFFFFFF:06x}"
    return f"{name}-{suffix}" if name else f"x-{suffix}"
