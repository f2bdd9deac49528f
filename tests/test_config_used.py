"""Every configuration option does something: each leaf key of ``Config`` (nested sections,
models inside lists and mappings too) must be read by some module under ``mnemonic/``
other than ``config.py`` itself, as an attribute (``cfg.key``) or by name (``"key"``).
A key nothing reads is a knob that silently does nothing; genuine exceptions are listed
below with the reason."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from pydantic import BaseModel

from mnemonic.config import Config

ROOT = Path(__file__).resolve().parent.parent / "mnemonic"

# "section.key" -> why no module reads it by name
EXCEPTIONS: dict[str, str] = {}


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def leaf_keys(
    model: type[BaseModel], prefix: str = "", parent: tuple[str, ...] = ()
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(dotted path, key name, names of its parent: field and model classes) of every
    leaf; a field holding models is walked into."""
    keys: list[tuple[str, str, tuple[str, ...]]] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        inner = _models_in(info.annotation)
        if inner:
            if not (isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)):
                keys.append((path, name, parent))  # a list or mapping of models: the key
            names = (name, *(m.__name__ for m in inner))
            for sub in inner:
                keys += leaf_keys(sub, path + ".", names)
        else:
            keys.append((path, name, parent))
    return keys


def _sources() -> list[str]:
    return [
        p.read_text(encoding="utf-8") for p in sorted(ROOT.rglob("*.py")) if p.name != "config.py"
    ]


def _mentions(name: str) -> str:
    return rf"\.{re.escape(name)}\b|[\"']{re.escape(name)}[\"']"


def unread(sources: list[str]) -> list[str]:
    """Keys no module reads: a key counts as read in a module that reads it by name
    (``.key`` or ``"key"``) and deals with its parent section (names it as ``.section``
    or ``"section"``, or its model class, e.g. a module handed ``cfg: RecallConfig``)."""
    missing = []
    for path, name, parent in leaf_keys(Config):
        if path in EXCEPTIONS:
            continue
        key = re.compile(_mentions(name))
        section, *classes = parent
        near = re.compile("|".join([_mentions(section), *classes]))
        if not any(key.search(src) and near.search(src) for src in sources):
            missing.append(path)
    return missing


def test_the_walk_sees_nested_keys() -> None:
    keys = {path for path, _, _ in leaf_keys(Config)}
    assert "metacognition.self_test_k" in keys
    assert "orchestrator.self_test_interval_s" in keys
    assert "recall.relation_weights" in keys
    assert len(keys) > 200


def test_the_check_catches_an_unread_key() -> None:
    assert len(unread([""])) == len(leaf_keys(Config))
    assert "metacognition.self_test_k" not in unread(["cfg.metacognition.self_test_k"])
    # the key read in a module that has nothing to do with its section does not count
    assert "metacognition.self_test_k" in unread(["cfg.recall.self_test_k"])


def test_every_config_option_is_read_somewhere() -> None:
    assert unread(_sources()) == []


def test_exceptions_name_real_keys() -> None:
    keys = {path for path, _, _ in leaf_keys(Config)}
    assert set(EXCEPTIONS) <= keys
