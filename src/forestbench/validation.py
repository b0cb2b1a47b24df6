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


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping (plain YAML keeps the last one silently)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:  # the mapping's own keys; keys merged in by "<<" may be overridden
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first given on line {seen[key]})", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        except TypeError:  # an unhashable key: the mapping constructor reports it
            continue
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_yaml(path: str | Path) -> dict:
    """Read a YAML configuration file: a mapping at the top level, no key given twice in a mapping."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def check_workflow_config(config: dict, configfiles: list) -> None:
    """What the Snakefile checks before anything else: every config file reads without duplicate keys, and the
    merged configuration follows the schema; errors name the config file(s) and the key."""
    for path in configfiles:
        load_yaml(path)
    source = ", ".join(map(str, configfiles)) or "the configuration"
    validate(config, "config", source + (" (with --config overrides)" if config.get("select") else ""))


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
        elif err.validator == "pattern" and err.schema.get("description"):
            message += f" (expected {err.schema['description']})"
        elif err.validator == "required" and err.schema.get("description"):
            message += f" ({err.schema['description']})"
        lines.append(f"{source}: {where}: {message}")
    more = f"\n... and {len(errors) - 10} more" if len(errors) > 10 else ""
    raise ConfigError("invalid configuration:\n" + "\n".join(lines) + more)
