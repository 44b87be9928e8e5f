"""Reading a run config file: YAML, registry names expanded to model specs, validated into a RunConfig, every
error as one line naming the file and field. Apart from `cluster.config` because the registry builds its model
specs from that module's types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cluster.config import ConfigError, RunConfig, read_yaml_mapping
from cluster.registry import expand_models
from evalcore.validation import first_error


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    path = Path(path)
    raw = read_yaml_mapping(path, str(path))
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    # registry names and groups (cluster/models.yaml) become full model specs
    raw = expand_models(raw, source=path)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        loc, msg = first_error(e, "(top level)")
        raise ConfigError(f"{path}: field {loc}: {msg}") from None
