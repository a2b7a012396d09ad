"""Scheduler configuration files: reading one whatever its format, and telling them from
manifests, so that ``berth validate`` checks each file for what it is: a
KubeSchedulerConfiguration, a Volcano scheduler configuration (or the ConfigMap holding one) or
a berth configuration is checked as a configuration, anything else as manifests."""

from __future__ import annotations

from pathlib import Path

from berth.api.configuration_shape import looks_like_configuration
from berth.api.documents import DocumentError, load_one_yaml, load_yaml
from berth.framework.config import DEFAULT_CONFIG, ConfigError, SchedulerConfig, parse_config
from berth.framework.kube_config import is_kube_scheduler_configuration, parse_kube_config


def is_scheduler_configuration(path: str | Path) -> bool:
    """Whether ``path`` holds one scheduler configuration. A file that cannot be read or
    parsed is not one: the manifest loader reports what is wrong with it."""
    try:
        docs = [d for d in load_yaml(Path(path).read_text()) if d is not None]
    except (OSError, UnicodeDecodeError, DocumentError):
        return False
    if len(docs) != 1 or not isinstance(docs[0], dict):
        return False
    # A Volcano ConfigMap holds its configuration as a string.
    return docs[0].get("kind") == "ConfigMap" or looks_like_configuration(docs[0])


def describe(config: SchedulerConfig) -> str:
    """One line on what a configuration runs."""
    plugins = dict.fromkeys(spec.name for tier in config.tiers for spec in tier)
    text = f"actions {', '.join(config.actions)}; plugins {', '.join(plugins)}"
    if config.scheduler_names:
        text += f"; schedulerName {config.scheduler_names[0]}"
    return text


#: The name ``--config`` takes for berth's built-in configuration.
DEFAULT_NAME = "default"


def load_config(path: str | Path | None) -> SchedulerConfig:
    """The configuration in ``path`` (berth's or Volcano's, bare or in a ConfigMap, or a
    KubeSchedulerConfiguration), or berth's default without one or for the name ``default``
    (as every command's ``--config`` takes it)."""
    if path is None or str(path) == DEFAULT_NAME:
        return parse_config(DEFAULT_CONFIG, "<default>")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: is not a UTF-8 text file (expected YAML)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        raw = load_one_yaml(text)
    except DocumentError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    # A Volcano ConfigMap keeps the configuration as a string under data.
    if isinstance(raw, dict) and raw.get("kind") == "ConfigMap":
        data = raw.get("data") or {}
        inner = next(iter(data.values()), None) if data else None
        if not isinstance(inner, str):
            raise ConfigError(f"{path}: ConfigMap: data: expected one scheduler configuration")
        try:
            raw = load_one_yaml(inner)
        except DocumentError as exc:
            raise ConfigError(f"{path}: ConfigMap: data: {exc}") from exc
    if is_kube_scheduler_configuration(raw):
        return parse_kube_config(raw, str(path))
    return parse_config(raw, str(path))
