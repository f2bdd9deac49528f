"""``config show`` provenance: every effective setting is attributed to the source that
really supplied it, checked against ``load_config`` itself for random mixes of flags,
environment variables (in every spelling pydantic-settings accepts) and the YAML file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemonic.cli.runtime import merge_overrides
from mnemonic.config import RELATION_WEIGHTS, TYPE_WEIGHTS, Config, load_config
from mnemonic.config_sources import (
    MASK,
    alias_overrides,
    attribute,
    env_layer,
    explain,
    file_layer,
    flag_layer,
    is_secret_key,
)

Leaf = tuple[str, ...]
SOURCES = ("flag", "alias", "env", "file")  # strongest first


@contextmanager
def environment(values: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """os.environ without MNEMONIC_* variables plus ``values``; restored afterwards."""
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.upper().startswith("MNEMONIC_")]:
            del os.environ[name]
        os.environ.update(values)
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def by_key(cfg: Any, file: Path | None, environ: Mapping[str, str], flags: Any) -> dict[str, Any]:
    return {s.key: s for s in explain(cfg, file=file, environ=environ, flags=flags)}


# --- table tests of the pieces ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("llm.api_key", True),
        ("server.token", True),
        ("proxy.upstream_secret", True),
        ("db.password", True),
        ("x.apikey", True),
        ("embedding.api_key_env", False),  # names the variable, holds no secret
        ("embedding.max_tokens", False),  # a count, not a token
        ("server.port", False),
        ("recall.relation_weights.similar", False),
        ("keyboard.layout", False),
    ],
)
def test_secret_looking_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {}),
        ({"MNEMONIC_PORT": "9998"}, {"server": {"port": "9998"}}),
        ({"MNEMONIC_PORT": ""}, {}),
        ({"MNEMONIC_SERVER__PORT": "1"}, {}),
    ],
)
def test_alias_overrides(environ: dict[str, str], expected: dict[str, Any]) -> None:
    assert alias_overrides(environ) == expected


def test_env_names_are_case_insensitive_and_keep_their_spelling() -> None:
    layer = env_layer({"mnemonic_Server__PORT": "1", "MNEMONIC_TOKEN": "t", "OTHER": "x"})
    assert layer.tree["server"]["port"].value == "1"
    assert layer.tree["server"]["port"].origin == "mnemonic_Server__PORT"
    assert set(layer.tree) == {"server"}


def test_nested_variables_update_the_section_json() -> None:
    environ = {"MNEMONIC_SERVER__PORT": "6", "MNEMONIC_SERVER": '{"port": 5, "host": "localhost"}'}
    with environment(environ):
        cfg = load_config(None)
        found = by_key(cfg, None, environ, None)
    assert (cfg.server.port, cfg.server.host) == (6, "localhost")
    assert found["server.port"].origin == "MNEMONIC_SERVER__PORT"
    assert found["server.host"].origin == "MNEMONIC_SERVER"


@pytest.mark.parametrize("json_first", [True, False])
def test_a_dict_as_json_and_as_nested_keys_follows_environment_order(json_first: bool) -> None:
    """pydantic-settings applies nested variables in environment order, and a later JSON
    value for the whole dict replaces earlier nested keys; provenance must agree."""
    whole = ("MNEMONIC_RECALL__RELATION_WEIGHTS", '{"similar": 0.2}')
    nested = ("MNEMONIC_RECALL__RELATION_WEIGHTS__TEMPORAL", "0.4")
    environ = dict([whole, nested] if json_first else [nested, whole])
    with environment(environ) as env:
        cfg = load_config(None)
        found = by_key(cfg, None, env, None)
    weights = cfg.recall.relation_weights
    set_here = {"similar": 0.2, "temporal": 0.4} if json_first else {"similar": 0.2}
    # the keys no source names keep their defaults, and say so
    assert weights == {**RELATION_WEIGHTS, **set_here}
    assert {k for k in found if k.startswith("recall.relation_weights.")} == {
        f"recall.relation_weights.{k}" for k in weights
    }
    assert found["recall.relation_weights.similar"].origin == whole[0]
    if json_first:
        assert found["recall.relation_weights.temporal"].origin == nested[0]
    else:
        assert found["recall.relation_weights.temporal"].source == "default"
    assert found["recall.relation_weights.related"].source == "default"


def test_dict_keys_merge_across_sources(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("RECALL:\n  type_weights:\n    decision: 2.0\n", encoding="utf-8")
    environ = {"MNEMONIC_RECALL__TYPE_WEIGHTS__ERROR": "3"}
    flags = {"recall": {"type_weights": {"insight": 4.0}}}
    with environment(environ) as env:
        cfg = load_config(path, **flags)
        found = by_key(cfg, path, env, flags)
    named = {"decision": 2.0, "error": 3.0, "insight": 4.0}
    assert cfg.recall.type_weights == {**TYPE_WEIGHTS, **named}
    assert found["recall.type_weights.decision"].label == f"file ({path})"
    assert found["recall.type_weights.error"].label == "env (MNEMONIC_RECALL__TYPE_WEIGHTS__ERROR)"
    assert found["recall.type_weights.insight"].label == "flag"
    assert found["recall.type_weights.general"].label == "default"
    assert found["recall.spread_hops"].label == "default"


def test_an_empty_dict_from_a_source_is_reported_as_that_source(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("encoding:\n  salience: {}\n", encoding="utf-8")
    with environment({}) as env:
        cfg = load_config(path)
        found = by_key(cfg, path, env, None)
    assert cfg.encoding.salience == {}
    assert found["encoding.salience"].value == {}
    assert found["encoding.salience"].source == "file"


def test_missing_or_empty_file_means_defaults(tmp_path: Path) -> None:
    assert file_layer(tmp_path / "absent.yaml").tree == {}
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n", encoding="utf-8")
    assert file_layer(empty).tree == {}
    with environment({}) as env:
        found = by_key(load_config(empty), empty, env, None)
    assert {s.source for s in found.values()} == {"default"}


class _LlmSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    api_key: str = Field("", description="a secret")
    model: str = Field("m", description="not a secret")


class _SecretConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMONIC_", env_nested_delimiter="__")
    llm: _LlmSection = Field(default_factory=_LlmSection)


def test_secret_values_are_masked_but_their_source_is_shown() -> None:
    environ = {"MNEMONIC_LLM__API_KEY": "sk-very-secret"}
    with environment(environ) as env:
        cfg = _SecretConfig()
        found = {s.key: s for s in explain(cfg, file=None, environ=env)}
        revealed = {s.key: s for s in explain(cfg, file=None, environ=env, show_secrets=True)}
    assert cfg.llm.api_key == "sk-very-secret"
    assert found["llm.api_key"].value == MASK
    assert found["llm.api_key"].label == "env (MNEMONIC_LLM__API_KEY)"
    assert "sk-very-secret" not in json.dumps([s.to_json() for s in found.values()])
    assert revealed["llm.api_key"].value == "sk-very-secret"
    assert found["llm.model"].value == "m"
    with environment({}) as env:
        unset = {s.key: s for s in explain(_SecretConfig(), file=None, environ=env)}
    assert unset["llm.api_key"].value == ""  # "unset" stays recognisable


def test_layers_are_consulted_strongest_first() -> None:
    cfg = load_config(None, server={"port": 1234})
    layers = [
        flag_layer({"server": {"port": 1234}}),
        env_layer({"MNEMONIC_SERVER__PORT": "1"}),
    ]
    found = {s.key: s for s in attribute(cfg, layers)}
    assert found["server.port"].source == "flag"
    assert found["server.port"].value == 1234


# --- property: agreement with load_config over random source mixes ----------------------


@dataclass(frozen=True)
class LeafSpec:
    path: Leaf
    candidates: tuple[Any, ...]


def _candidates(default: Any, annotation: Any) -> list[Any]:
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if isinstance(default, bool):
        return [True, False]
    if isinstance(default, int):
        return [default + 1, default + 2, default * 2, max(default - 1, 0), 1, 16, 17]
    if isinstance(default, float):
        return [round(default * 0.5, 4), round(default + 0.25, 4), 0.125, 0.75, 2.5, 1.0]
    if isinstance(default, str):
        return [default + "-x", "alt", "127.0.0.1" if default != "127.0.0.1" else "localhost"]
    if isinstance(default, list):
        return [["active"], ["active", "fading", "archived"], []]
    return []


def _valid(section_model: type[BaseModel], field: str, value: Any) -> bool:
    try:
        section_model.model_validate({field: value})
    except ValidationError:
        return False
    return True


def _leaf_specs() -> list[LeafSpec]:
    specs: list[LeafSpec] = []
    defaults = Config.model_construct()
    for section, info in Config.model_fields.items():
        model = info.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        current = getattr(defaults, section)
        for name, field in model.model_fields.items():
            default = getattr(current, name)
            if isinstance(default, dict):
                for sub, sub_default in default.items():
                    values = [
                        v for v in _candidates(sub_default, None) if _valid(model, name, {sub: v})
                    ]
                    if values:
                        specs.append(LeafSpec((section, name, sub), tuple(values)))
                continue
            values = [
                v
                for v in _candidates(default, field.annotation)
                if v != default and _valid(model, name, v)
            ]
            if values:
                specs.append(LeafSpec((section, name), tuple(values)))
    return specs


SPECS = _leaf_specs()


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def _set(tree: dict[str, Any], path: Leaf, value: Any) -> None:
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = value


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(SPECS), max_size=8, unique_by=lambda s: s.path))
    assigned: dict[Leaf, dict[str, Any]] = {}
    for spec in chosen:
        allowed = ["flag", "env", "file"] + (["alias"] if spec.path == ("server", "port") else [])
        sources = draw(st.lists(st.sampled_from(allowed), min_size=1, unique=True))
        values = draw(
            st.lists(
                st.sampled_from(spec.candidates),
                min_size=len(sources),
                max_size=len(sources),
            )
        )
        assigned[spec.path] = dict(zip(sources, values, strict=True))
    json_sections = draw(st.sets(st.sampled_from(sorted(Config.model_fields))))
    upper = draw(st.booleans())
    return {"assigned": assigned, "json_sections": json_sections, "upper": upper}


def _build(
    scenario: dict[str, Any], file: Path
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """flags, environment, and the variable each leaf was set by (``key/env``, ``key/alias``)."""
    flags: dict[str, Any] = {}
    file_tree: dict[str, Any] = {}
    environ: dict[str, str] = {}
    origins: dict[str, str] = {}
    section_json: dict[str, dict[str, Any]] = {}
    for path, by_source in scenario["assigned"].items():
        for source, value in by_source.items():
            if source == "flag":
                _set(flags, path, value)
            elif source == "file":
                _set(file_tree, path, value)
            elif source == "alias":
                environ["MNEMONIC_PORT"] = str(value)
                origins[f"{'.'.join(path)}/alias"] = "MNEMONIC_PORT"
            elif path[0] in scenario["json_sections"]:
                _set(section_json.setdefault(path[0], {}), path[1:], value)
                origins[f"{'.'.join(path)}/env"] = f"MNEMONIC_{path[0].upper()}"
            else:
                name = "MNEMONIC_" + "__".join(path)
                name = name.upper() if scenario["upper"] else name
                environ[name] = _env_text(value)
                origins[f"{'.'.join(path)}/env"] = name
    for section, body in section_json.items():
        environ[f"MNEMONIC_{section.upper()}"] = json.dumps(body)
    file.write_text(yaml.safe_dump(file_tree), encoding="utf-8")
    return flags, environ, origins


MERGED_DICTS = frozenset({"relation_weights", "type_weights", "source_weights"})


def _effective(cfg: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, body in cfg.model_dump(mode="json").items():
        for name, value in body.items():
            if isinstance(value, dict) and value:
                out.update({f"{section}.{name}.{k}": v for k, v in value.items()})
            else:
                out[f"{section}.{name}"] = value
    return out


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(scenario=scenarios())
def test_provenance_agrees_with_load_config(scenario: dict[str, Any], tmp_path: Path) -> None:
    file = tmp_path / "config.yaml"
    flags, environ, origins = _build(scenario, file)
    with environment(environ) as env:
        overrides = merge_overrides(alias_overrides(env), flags)
        cfg = load_config(file, **overrides)
        found = by_key(cfg, file, env, flags)
    effective = _effective(cfg)
    assert set(found) == set(effective)
    touched_dicts = {path[:2] for path in scenario["assigned"] if len(path) == 3}
    for key, value in effective.items():
        setting = found[key]
        assert setting.value == value, key
        path = tuple(key.split("."))
        by_source = scenario["assigned"].get(path)
        if by_source is None:
            assert setting.source == "default", key
            if path[:2] in touched_dicts:
                # the recall weights keep the defaults a source leaves out; other dicts
                # are replaced whole by the source that sets them
                assert path[1] in MERGED_DICTS, f"{key}: a set dict drops its defaults"
            continue
        winner = next(s for s in SOURCES if s in by_source)
        assert value == by_source[winner], key
        expected_kind = "env" if winner == "alias" else winner
        assert setting.source == expected_kind, (key, by_source)
        if expected_kind == "env":
            assert setting.origin == origins[f"{key}/{winner}"]
        elif expected_kind == "file":
            assert setting.origin == str(file)


def test_the_property_covers_every_section() -> None:
    assert {spec.path[0] for spec in SPECS} == set(Config.model_fields)
    assert any(len(spec.path) == 3 for spec in SPECS)
