"""Telling scheduler configuration files from manifests, so that ``berth validate`` checks
each file for what it is: a KubeSchedulerConfiguration, a Volcano scheduler configuration (or
the ConfigMap holding one) or a berth configuration is checked as a configuration, anything
else as manifests."""

from __future__ import annotations

from pathlib import Path

import yaml

from berth.framework.config import SchedulerConfig

#: Keys only a berth or Volcano scheduler configuration has at its top level.
_CONFIG_KEYS = {"actions", "tiers"}
_CONFIG_KINDS = {"KubeSchedulerConfiguration", "ConfigMap"}


def is_scheduler_configuration(path: str | Path) -> bool:
    """Whether ``path`` holds one scheduler configuration. A file that cannot be read or
    parsed is not one: the manifest loader reports what is wrong with it."""
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d is not None]
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if len(docs) != 1 or not isinstance(docs[0], dict):
        return False
    doc = docs[0]
    if doc.get("kind") in _CONFIG_KINDS:
        return True
    return "kind" not in doc and "apiVersion" not in doc and bool(_CONFIG_KEYS & set(doc))


def describe(config: SchedulerConfig) -> str:
    """One line on what a configuration runs."""
    plugins = dict.fromkeys(spec.name for tier in config.tiers for spec in tier)
    text = f"actions {', '.join(config.actions)}; plugins {', '.join(plugins)}"
    if config.scheduler_names:
        text += f"; schedulerName {config.scheduler_names[0]}"
    return text
