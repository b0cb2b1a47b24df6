"""JSON-Schema validation of the YAML configuration files with messages that name the file and the key."""
from __future__ import annotations

from pathlib import Path

import yaml

from forestbench.errors import ConfigError

SCHEMA_DIR_DEFAULT = Path("workflow") / "schemas"


def schema_path(name: str, schema_dir: str | Path | None = None) -> Path:
    """Locate ``<name>.schema.yaml``: the given folder, else ``workflow/schemas`` of the source checkout this
    package runs from (an editable install), else that of the working directory (a regular install, run in its
    checkout). The code's own checkout comes first: the schema describes what this code reads, so a command run
    from another checkout (another version's worktree, say) must not validate against that checkout's schema."""
    candidates = [Path(schema_dir)] if schema_dir else [Path(__file__).resolve().parents[2] / SCHEMA_DIR_DEFAULT,
                                                       SCHEMA_DIR_DEFAULT]
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


# ------------------------------------------------------------------ command-line overrides (`--config KEY=VALUE`)
# Snakemake parses a top-level `--config` value as an integer, a number or a boolean when it can, and a nested one
# (`select={available: true}`) with YAML's base loader, which keeps every nested scalar a string. The schema knows
# which type each key takes, so a string typed on the command line is read as that type here, before validation.

_NAMES = {"boolean": "a boolean", "integer": "an integer", "number": "a number", "array": "a list",
          "object": "a mapping", "null": "empty"}
_EXAMPLES = {"boolean": "true", "integer": "1", "number": "0.5", "array": "[a, b]", "object": "{key: value}"}


def parse_cli_config(items: list[str]) -> dict:
    """``--config`` items read as Snakemake reads them (``KEY=VALUE``; top-level integers, numbers and booleans
    typed, anything else through YAML's base loader, which leaves nested scalars as strings)."""
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config {item!r}: expected KEY=VALUE, e.g. 'select={{available: true}}'")
        out[key] = _snakemake_value(value, item)
    return out


def _snakemake_value(text: str, item: str):
    if text == "":
        return None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return yaml.load(text, Loader=yaml.BaseLoader)  # noqa: S506 - the base loader builds only str/list/dict
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {item!r}: the value is not valid YAML ({' '.join(str(exc).split())})") from None


def coerce_overrides(overrides: dict, schema: str = "config", schema_dir: str | Path | None = None) -> dict:
    """``overrides`` with each string that stands where the schema wants a boolean, an integer, a number, a list
    or a mapping read as YAML into that type (``'true'`` -> True, ``'3'`` -> 3, ``'[a, b]'`` -> ['a', 'b']).
    A string that reads as none of the accepted types raises a ConfigError showing the accepted form."""
    spec = yaml.safe_load(schema_path(schema, schema_dir).read_text())
    return _coerce(overrides, spec, spec, ())


def apply_cli_overrides(config: dict, overrides: dict, schema: str = "config",
                        schema_dir: str | Path | None = None) -> dict:
    """Merge the typed ``overrides`` into ``config`` in place (mappings key by key, as Snakemake merges them)."""

    def merge(target: dict, update: dict) -> None:
        for key, value in update.items():
            if isinstance(value, dict) and isinstance(target.get(key), dict):
                merge(target[key], value)
            else:
                target[key] = value

    merge(config, coerce_overrides(overrides or {}, schema, schema_dir))
    return config


def _resolve(node: dict, root: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ConfigError(f"schema reference {ref!r}: only references inside the schema are supported")
        node = root
        for part in ref[2:].split("/"):
            node = node[part]
    return node if isinstance(node, dict) else {}


def _alternatives(node: dict, root: dict) -> list[dict]:
    node = _resolve(node, root)
    alts = node.get("oneOf") or node.get("anyOf")
    if not alts:
        return [node]
    out = [node] if "type" in node else []
    for alt in alts:
        out.extend(_alternatives(alt, root))
    return out


def _types(node: dict) -> set[str]:
    declared = node.get("type")
    if declared is None:
        return set()
    return {declared} if isinstance(declared, str) else set(declared)


def _matches(value, kind: str) -> bool:
    return {"boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
            "array": isinstance(value, list), "object": isinstance(value, dict),
            "string": isinstance(value, str), "null": value is None}.get(kind, False)


def _child(node: dict, root: dict, key) -> dict | None:
    for alt in _alternatives(node, root):
        props = alt.get("properties") or {}
        if key in props:
            return props[key]
        extra = alt.get("additionalProperties")
        if isinstance(extra, dict):
            return extra
    return None


def _items(node: dict, root: dict) -> dict | None:
    for alt in _alternatives(node, root):
        if isinstance(alt.get("items"), dict):
            return alt["items"]
    return None


def _coerce(value, node: dict, root: dict, path: tuple):
    alts = _alternatives(node, root)
    kinds = set().union(*(_types(a) for a in alts)) if alts else set()
    if isinstance(value, str) and kinds and "string" not in kinds:
        value = _read_typed(value, kinds, path)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            child = _child(node, root, key)
            out[key] = _coerce(item, child, root, path + (key,)) if child is not None else item
        return out
    if isinstance(value, list):
        items = _items(node, root)
        return [_coerce(v, items, root, path + (i,)) for i, v in enumerate(value)] if items else value
    return value


def _read_typed(text: str, kinds: set[str], path: tuple):
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    if "boolean" in kinds and not isinstance(value, bool) and value in (0, 1) and isinstance(value, int):
        value = bool(value)
    if any(_matches(value, kind) for kind in kinds):
        return value
    wanted = " or ".join(_NAMES.get(kind, kind) for kind in sorted(kinds))
    example = _EXAMPLES.get(sorted(kinds)[0], "...")
    raise ConfigError(f"--config: {'.'.join(map(str, path))}: {text!r} is not {wanted}; "
                      f"write it as {_cli_form(path, example)}")


def _cli_form(path: tuple, example: str) -> str:
    """The ``--config`` argument that sets ``path`` to ``example``: ``select={available: true}``."""
    keys = [str(p) for p in path if not isinstance(p, int)]
    text = example
    for key in reversed(keys[1:]):
        text = f"{{{key}: {text}}}"
    return f"'{keys[0]}={text}'" if keys else example
