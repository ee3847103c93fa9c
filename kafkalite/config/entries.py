"""One config as DescribeConfigs and CreateTopics describe it: name, value, source, type, synonyms, flags."""
from __future__ import annotations

from dataclasses import dataclass

# DescribeConfigs v1+ ConfigSource
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, int], ...] = ()  # (name, value, source), winning one first
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG
