"""Where each effective setting came from: a flag, the environment, ``config.yaml`` or the
default.

pydantic-settings merges its sources into one dict and forgets which one supplied a value,
so ``mnemonic config show`` re-reads the sources here with the same rules as
``mnemonic.config.load_config`` and attributes every leaf of the effective configuration to
the strongest source that set it:

* precedence: flag > short-form environment alias (``MNEMONIC_PORT``) >
  ``MNEMONIC_<SECTION>__<KEY>`` > ``config.yaml`` > default;
* environment names are case-insensitive, nested with ``__``; a variable naming a section,
  a dict or a list holds JSON; nested variables are applied in environment order, a later
  whole-JSON value replacing earlier nested ones, exactly like pydantic-settings'
  ``explode_env_vars``; the section's own JSON variable (``MNEMONIC_SERVER``) is the base
  that nested variables update;
* sources are deep-merged, so a dict setting (``recall.relation_weights``) can take some
  keys from the file and others from the environment: provenance is kept per dict key.

Values always come from the loaded configuration itself, so the report can never show a
value the daemon would not use; a test checks the attribution against ``load_config`` for
random combinations of sources.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from mnemonic.config import Config
from mnemonic.yaml_bounded import load_bounded

ENV_PREFIX = "MNEMONIC_"
NESTED = "__"
MASK = "********"

SourceKind = Literal["flag", "env", "file", "default"]
Path_ = tuple[str, ...]

ENV_ALIASES: dict[str, Path_] = {"MNEMONIC_PORT": ("server", "port")}
"""Short environment forms the CLI honours, stronger than the long form they abbreviate."""

_SECRET_WORDS = frozenset({"key", "token", "secret", "password", "passwd", "apikey", "credentials"})


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A value in one source, with the exact place it was read from."""

    value: Any
    origin: str


@dataclass(frozen=True, slots=True)
class Layer:
    """One source's values as a nested tree whose leaves are ``_Leaf``."""

    kind: SourceKind
    tree: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective setting: dotted key, value (masked if secret) and its source."""

    key: str
    value: Any
    source: SourceKind
    origin: str
    secret: bool

    @property
    def label(self) -> str:
        """``flag``, ``env (MNEMONIC_X__Y)``, ``file (<path>)`` or ``default``."""
        return f"{self.source} ({self.origin})" if self.origin else self.source

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "origin": self.origin or None,
            "label": self.label,
            "secret": self.secret,
        }


def is_secret_key(key: str) -> bool:
    """A setting whose name has a word like key/token/secret/password holds a secret.

    Names ending in ``_env`` name an environment variable that holds the secret (for
    example ``embedding.api_key_env``): the name is not secret and is worth showing.
    Matching whole words keeps ``max_tokens`` visible.
    """
    name = key.rsplit(".", 1)[-1].lower()
    if name.endswith("_env"):
        return False
    return any(word in _SECRET_WORDS for word in name.replace("-", "_").split("_"))


def mask(value: Any) -> Any:
    """Hide a secret value but keep "unset" recognisable."""
    return value if value in (None, "") else MASK


# --- building the layers --------------------------------------------------------------


def _tag(value: Any, origin: str) -> Any:
    """Turn a plain value into a tree of ``_Leaf``; an empty dict stays a leaf so that a
    source setting ``{}`` is still visible."""
    if isinstance(value, dict) and value:
        return {str(k): _tag(v, origin) for k, v in value.items()}
    return _Leaf(value, origin)


def _merge(lower: Any, higher: Any) -> Any:
    """pydantic-settings' ``deep_update`` on tagged trees: dicts merge, anything else is
    replaced by the higher value; an empty dict merges as nothing."""
    if isinstance(higher, _Leaf) and higher.value == {} and isinstance(lower, dict):
        return lower
    if isinstance(lower, _Leaf) and lower.value == {} and isinstance(higher, dict):
        return higher
    if isinstance(lower, dict) and isinstance(higher, dict):
        merged = dict(lower)
        for key, value in higher.items():
            merged[key] = _merge(merged[key], value) if key in merged else value
        return merged
    return higher


def flag_layer(overrides: Mapping[str, Any]) -> Layer:
    return Layer("flag", _tag(dict(overrides), "") if overrides else {})


def file_layer(path: Path | None) -> Layer:
    """The YAML file; top-level names are matched case-insensitively like the settings
    model does, names inside a section exactly."""
    if path is None or not path.exists():
        return Layer("file", {})
    data = load_bounded(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return Layer("file", {})
    return Layer("file", {str(k).lower(): _tag(v, str(path)) for k, v in data.items()})


def alias_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """``load_config`` overrides for the short environment forms (``MNEMONIC_PORT``)."""
    out: dict[str, Any] = {}
    for name, path in ENV_ALIASES.items():
        value = environ.get(name)
        if value:
            node = out
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = value
    return out


def alias_layer(environ: Mapping[str, str]) -> Layer:
    tree: dict[str, Any] = {}
    for name, path in ENV_ALIASES.items():
        value = environ.get(name)
        if value:
            node = tree
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = _Leaf(value, name)
    return Layer("env", tree)


def env_layer(environ: Mapping[str, str], model: type[BaseModel] = Config) -> Layer:
    """``MNEMONIC_<SECTION>[__<KEY>[__<SUBKEY>]]`` variables, read like pydantic-settings."""
    lowered: dict[str, tuple[str, str]] = {}
    for name, value in environ.items():
        lowered[name.lower()] = (name, value)
    tree: dict[str, Any] = {}
    prefix = ENV_PREFIX.lower()
    for section, info in model.model_fields.items():
        whole = lowered.get(prefix + section)
        exploded = _explode(prefix + section + NESTED, info.annotation, lowered)
        if whole is not None and whole[1] != "":
            name, raw = whole
            decoded = json.loads(raw) if _is_complex(info.annotation) else raw
            base = _tag(decoded, name)
            tree[section] = _merge(base, exploded) if exploded else base
        elif exploded:
            tree[section] = exploded
    return Layer("env", tree)


def _explode(prefix: str, annotation: Any, lowered: Mapping[str, tuple[str, str]]) -> Any:
    """Nested variables under ``prefix`` as a tagged tree (the order of the environment
    decides between a JSON dict and nested keys of it, as in pydantic-settings)."""
    result: dict[str, Any] = {}
    for low, (name, raw) in lowered.items():
        if not low.startswith(prefix):
            continue
        *keys, last = low[len(prefix) :].split(NESTED)
        node: Any = result
        target = annotation
        for key in keys:
            target = _child(target, key)
            if isinstance(node, dict):
                node = node.setdefault(key, {})
        target = _child(target, last)
        value: Any = raw
        if raw and target is not None and _is_complex(target):
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        if isinstance(node, dict):
            node[last] = _tag(value, name)
    return result


def _child(annotation: Any, key: str) -> Any:
    """The annotation of ``key`` inside ``annotation`` (a model field or a dict value)."""
    annotation = _strip_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if name.lower() == key:
                return info.annotation
        return None
    if get_origin(annotation) is dict:
        args = get_args(annotation)
        return args[1] if len(args) == 2 else Any
    return None


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        arms = [a for a in get_args(annotation) if a is not type(None)]
        if len(arms) == 1:
            return arms[0]
    return annotation


def _is_complex(annotation: Any) -> bool:
    """Values that the environment must spell as JSON: models, dicts, lists, sets, tuples."""
    annotation = _strip_optional(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_complex(arm) for arm in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    container = get_origin(annotation) or annotation
    return container in (dict, list, set, frozenset, tuple)


# --- attributing the effective configuration ----------------------------------------------


def leaves(value: Any, model: type[BaseModel], prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every setting of a dumped config: section fields, and each key of a dict field."""
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        current = value.get(name) if isinstance(value, dict) else None
        annotation = _strip_optional(info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from leaves(current, annotation, path)
        elif get_origin(annotation) is dict and isinstance(current, dict) and current:
            for key, item in current.items():
                yield (*path, str(key)), item
        else:
            yield path, current


def _find(tree: Mapping[str, Any], path: Path_) -> _Leaf | None:
    node: Any = tree
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, _Leaf) else None


def attribute(cfg: BaseModel, layers: list[Layer], *, show_secrets: bool = False) -> list[Setting]:
    """Each effective setting with the strongest layer (listed strongest first) that set it."""
    settings: list[Setting] = []
    for path, value in leaves(cfg.model_dump(mode="json"), type(cfg)):
        key = ".".join(path)
        kind: SourceKind = "default"
        origin = ""
        for layer in layers:
            leaf = _find(layer.tree, path)
            if leaf is not None:
                kind, origin = layer.kind, leaf.origin
                break
        secret = is_secret_key(key)
        shown = mask(value) if secret and not show_secrets else value
        settings.append(Setting(key, shown, kind, origin, secret))
    return settings


def explain(
    cfg: BaseModel,
    *,
    file: Path | None,
    environ: Mapping[str, str],
    flags: Mapping[str, Any] | None = None,
    show_secrets: bool = False,
) -> list[Setting]:
    """Every effective setting of ``cfg`` and where it came from.

    ``cfg`` must be the result of ``load_config(file, **overrides)`` where ``overrides``
    combines ``flags`` and ``alias_overrides(environ)`` (flags winning), with ``environ``
    the environment it was loaded under.
    """
    layers = [
        flag_layer(flags or {}),
        alias_layer(environ),
        env_layer(environ, type(cfg)),
        file_layer(file),
    ]
    return attribute(cfg, layers, show_secrets=show_secrets)


# --- explaining a configuration that does not validate ------------------------------------

_VALUE_CHARS = 80


def _locate(layers: list[Layer], loc: tuple[str | int, ...]) -> tuple[SourceKind, str] | None:
    """The strongest layer holding ``loc`` (or the list/section value around it)."""
    for layer in layers:
        node: Any = layer.tree
        for part in loc:
            if isinstance(node, _Leaf):
                break  # a list or a JSON value holds the rest of the location
            if not isinstance(node, dict) or str(part) not in node:
                node = None
                break
            node = node[str(part)]
        while isinstance(node, dict) and node:  # a section: any leaf of it names the source
            node = next(iter(node.values()))
        if isinstance(node, _Leaf):
            return layer.kind, node.origin
    return None


def _dotted(loc: tuple[str | int, ...]) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


def _shown(value: Any, key: str) -> str:
    if is_secret_key(key):
        return str(mask(value))
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def _message(error: Mapping[str, Any]) -> str:
    """pydantic's message without its internals (error type, input type, docs URL)."""
    if error.get("type") == "extra_forbidden":
        return "unknown setting (all keys: mnemonic config default)"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


def config_errors(
    errors: Sequence[Mapping[str, Any]],
    *,
    file: Path | None,
    environ: Mapping[str, str],
    flags: Mapping[str, Any] | None = None,
) -> list[str]:
    """One line per validation error of ``load_config``: the key, the value given and the
    source that gave it, then what is wrong, e.g. ``server.port = 70000 (file
    /home/me/.config/mnemonic/config.yaml): Input should be less than or equal to 65535``.

    ``errors`` is ``ValidationError.errors()`` of a load with the same sources; a source
    that cannot even be read (broken JSON in a variable) is simply not attributed."""
    import yaml

    builders: list[Callable[[], Layer]] = [
        partial(flag_layer, flags or {}),
        partial(alias_layer, environ),
        partial(env_layer, environ),
        partial(file_layer, file),
    ]
    layers: list[Layer] = []
    for build in builders:
        try:
            layers.append(build())
        except (ValueError, TypeError, OSError, yaml.YAMLError):
            continue
    lines = []
    for error in errors:
        loc = tuple(error.get("loc") or ())
        key = _dotted(loc) or "(configuration)"
        found = _locate(layers, loc)
        where = "default" if found is None else (f"{found[0]} {found[1]}".strip())
        value = f" = {_shown(error['input'], key)}" if "input" in error and loc else ""
        lines.append(f"{key}{value} ({where}): {_message(error)}")
    return lines
