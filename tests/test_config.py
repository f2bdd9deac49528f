"""The shipped config.yaml documents every key, and precedence works as documented."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mnemonic.config import (
    RELATION_WEIGHTS,
    SOURCE_WEIGHTS,
    TYPE_WEIGHTS,
    Config,
    load_config,
    render_default_yaml,
)
from mnemonic.store.models import MemoryType, Relation, Source

REPO = Path(__file__).resolve().parents[1]


def test_shipped_config_yaml_is_the_rendered_default() -> None:
    shipped = (REPO / "config.yaml").read_text(encoding="utf-8")
    assert shipped == render_default_yaml(), "regenerate: mnemonic config default > config.yaml"


def test_every_key_is_documented_and_loads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MNEMONIC_SHELL_HISTORY__ENABLED", "MNEMONIC_GIT__ENABLED"):
        monkeypatch.delenv(name, raising=False)  # set by conftest for hermetic daemons
    text = render_default_yaml()
    parsed = yaml.safe_load(text)
    for section, field in Config.model_fields.items():
        assert field.description, section
        sub = field.annotation
        assert sub is not None
        for key, info in sub.model_fields.items():  # type: ignore[union-attr]
            assert info.description, f"{section}.{key} has no description"
            assert key in parsed[section], f"{section}.{key} missing from config.yaml"
    assert load_config(None).model_dump() == Config.model_validate(parsed).model_dump()


def test_precedence_override_env_file_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("server:\n  port: 7001\nrecall:\n  spread_hops: 2\n", encoding="utf-8")
    assert load_config(path).server.port == 7001
    assert load_config(path).recall.spread_hops == 2
    assert load_config(path).recall.spread_decay == 0.7
    monkeypatch.setenv("MNEMONIC_SERVER__PORT", "7002")
    assert load_config(path).server.port == 7002
    assert load_config(path, server={"port": 7003}).server.port == 7003


def test_unknown_and_invalid_keys_fail_clearly(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("recall:\n  spread_hopz: 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="spread_hopz"):
        load_config(path)
    path.write_text("server:\n  port: 70000\n", encoding="utf-8")
    with pytest.raises(ValueError, match="port"):
        load_config(path)


def test_one_weight_set_alone_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One relation's weight from the environment or a file used to replace the whole
    mapping, so every relation it left out stopped carrying activation."""
    monkeypatch.setenv("MNEMONIC_RECALL__RELATION_WEIGHTS__RELATED", "0.25")
    assert load_config(None).recall.relation_weights == {**RELATION_WEIGHTS, "related": 0.25}
    monkeypatch.delenv("MNEMONIC_RECALL__RELATION_WEIGHTS__RELATED")
    path = tmp_path / "config.yaml"
    path.write_text("recall:\n  source_weights:\n    clipboard: 0.5\n", encoding="utf-8")
    cfg = load_config(path)
    assert cfg.recall.source_weights == {**SOURCE_WEIGHTS, "clipboard": 0.5}
    assert cfg.recall.type_weights == TYPE_WEIGHTS


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("recall:\n  relation_weights:\n    relatd: 0.2\n", "relatd"),
        ("recall:\n  type_weights:\n    decison: 2\n", "decison"),
        ("recall:\n  source_weights:\n    git: -1\n", ">= 0"),
    ],
)
def test_a_misspelt_or_negative_weight_is_refused_by_name(
    tmp_path: Path, yaml_text: str, message: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_config(path)


def test_weight_defaults_name_every_relation_type_and_source() -> None:
    """A key the defaults leave out could not be set at all (the validator refuses it)."""
    assert set(RELATION_WEIGHTS) == {r.value for r in Relation}
    assert set(TYPE_WEIGHTS) == {t.value for t in MemoryType}
    assert set(SOURCE_WEIGHTS) == {s.value for s in Source}


def test_every_recall_weight_changes_behaviour_somewhere() -> None:
    """Guards against knobs that are documented but never read."""
    source = "\n".join(
        p.read_text(encoding="utf-8")
        for p in (REPO / "mnemonic").rglob("*.py")
        if p.name != "config.py"
    )
    for section in ("recall", "encoding", "feedback", "storage", "server", "embedding"):
        model = Config.model_fields[section].annotation
        for key in model.model_fields:  # type: ignore[union-attr]
            assert f".{key}" in source, f"{section}.{key} is never read"


def test_first_start_writes_a_template_that_sets_nothing(tmp_path: Path) -> None:
    """config.yaml written on first start only comments: every setting stays a default
    (so ``config show`` says "default" and a better default in an upgrade applies)."""
    from mnemonic.config_sources import explain
    from mnemonic.daemon import write_default_config
    from mnemonic.paths import resolve_paths

    paths = resolve_paths(tmp_path / "home")
    write_default_config(paths)
    text = paths.config_file.read_text(encoding="utf-8")
    assert yaml.safe_load(text) is None
    assert all(not line or line.startswith("#") for line in text.splitlines())
    cfg = load_config(paths.config_file)
    settings = explain(cfg, file=paths.config_file, environ={})
    assert {s.source for s in settings} == {"default"}
    # uncommented, it is the documented reference: every key with its default
    uncommented = [line.removeprefix("# ") for line in text.splitlines()]
    body = "\n".join(uncommented).split("\nserver:", 1)[1]
    assert yaml.safe_load("server:" + body) == yaml.safe_load(render_default_yaml())
    paths.config_file.write_text("server:\n  port: 7001\n", encoding="utf-8")
    write_default_config(paths)  # never overwrites the user's file
    assert paths.config_file.read_text(encoding="utf-8") == "server:\n  port: 7001\n"
