"""JSON-Schema validation of the YAML configuration files with messages that name the file and the key."""
from __future__ import annotations

from pathlib import Path

import yaml

from forestbench.errors import ConfigError

SCHEMA_DIR_DEFAULT = Path("workflow") / "schemas"


def schema_path(name: str, schema_dir: str | Path | None = None) -> Path:
    """Locate ``<name>.schema.yaml``: the given folder, else ``workflow/schemas`` of the working directory or of the
    source checkout this package was installed from."""
    candidates = [Path(schema_dir)] if schema_dir else [SCHEMA_DIR_DEFAULT,
                                                       Path(__file__).resolve().parents[2] / SCHEMA_DIR_DEFAULT]
    for folder in candidates:
        path = folder / f"{name}.schema.yaml"
        if path.exists():
            return path
    raise ConfigError(f"schema {name}.schema.yaml not found in {', '.join(map(str, candidates))}")


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def validate(data: dict, schema: str, source: str, schema_dir: str | Path | None = None) -> None:
    """Raise a ConfigError naming ``source`` and the offending key path when ``data`` violates the schema."""
    import jsonschema

    spec = yaml.safe_load(schema_path(schema, schema_dir).read_text())
    validator = jsonschema.Draft202012Validator(spec)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    lines = []
    for err in errors[:10]:
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        message = err.message
        if err.validator == "additionalProperties":
            unknown = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            message = f"unknown key(s) {', '.join(map(repr, unknown))}; allowed: " \
                      f"{', '.join(sorted(err.schema.get('properties', {})))}"
        lines.append(f"{source}: {where}: {message}")
    more = f"\n... and {len(errors) - 10} more" if len(errors) > 10 else ""
    raise ConfigError("invalid configuration:\n" + "\n".join(lines) + more)
