"""The litellm extra: pinned to one known-good release that is none of the releases
compromised on PyPI, imported lazily, quietly and offline."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from support.openai_server import OpenAIServer, chat_reply

from mnemonic.llm.completion.litellm_provider import INSTALL_HINT, LitellmMissing, import_litellm
from mnemonic.llm.completion.provider import Message

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
COMPROMISED = ("1.82.7", "1.82.8", "1.107.0")
HAVE_LITELLM = importlib.util.find_spec("litellm") is not None


def litellm_requirements() -> list[Requirement]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    extras: dict[str, list[str]] = data["project"]["optional-dependencies"]
    found = [
        Requirement(item)
        for items in extras.values()
        for item in items
        if Requirement(item).name.lower() == "litellm"
    ]
    found += [
        Requirement(item)
        for item in data["project"]["dependencies"]
        if Requirement(item).name.lower() == "litellm"
    ]
    return found


def test_the_litellm_pin_is_exact_and_admits_no_compromised_release() -> None:
    requirements = litellm_requirements()
    assert requirements, "the litellm extra is missing from pyproject.toml"
    for requirement in requirements:
        specs = list(requirement.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"not an exact pin: {requirement}"
        assert "*" not in specs[0].version, f"a wildcard admits many releases: {requirement}"
        for bad in COMPROMISED:
            assert not requirement.specifier.contains(bad, prereleases=True), (requirement, bad)
        pinned = Version(specs[0].version)
        assert str(pinned) not in COMPROMISED
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert "litellm" in extras["optional-dependencies"]  # an extra, never a core dependency
    assert not any(Requirement(d).name == "litellm" for d in extras["dependencies"])


@pytest.mark.parametrize(
    ("spec", "admits_bad"),
    [
        ("litellm==1.106.10", False),
        ("litellm>=1.80", True),
        ("litellm==1.82.7", True),
        ("litellm~=1.82.0", True),
        ("litellm>=1.100,<1.108", True),
        ("litellm<=1.82.6", False),
    ],
)
def test_the_check_itself_catches_loose_pins(spec: str, admits_bad: bool) -> None:
    """The check above must fail for specifiers that would admit a bad release."""
    requirement = Requirement(spec)
    assert any(requirement.specifier.contains(v) for v in COMPROMISED) == admits_bad


@pytest.mark.skipif(HAVE_LITELLM, reason="litellm is installed here")
def test_without_litellm_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.delenv("LITELLM_TELEMETRY", raising=False)
    with pytest.raises(LitellmMissing, match=r"pip install 'mnemonic\[litellm\]'"):
        import_litellm()
    assert INSTALL_HINT == "pip install 'mnemonic[litellm]'"
    # set before the import was tried: a later install never downloads a cost map
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_importing_the_llm_layer_does_not_import_litellm() -> None:
    import sys

    import mnemonic.daemon  # the composition root imports the whole layer
    import mnemonic.llm.completion.build  # noqa: F401

    assert "litellm" not in sys.modules or HAVE_LITELLM


@pytest.mark.skipif(not HAVE_LITELLM, reason="litellm is not installed (optional extra)")
def test_litellm_provider_round_trip_against_the_scripted_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # pragma: no cover - runs only where the extra is installed
    from mnemonic.llm.completion.litellm_provider import LitellmProvider

    with OpenAIServer() as server:
        server.set_handler(
            "/v1/chat/completions",
            lambda r: chat_reply('{"a": 1}', prompt_tokens=3, completion_tokens=2),
        )
        provider = LitellmProvider("openai/test-model", api_key="k", base_url=server.base_url)

        async def ask() -> object:
            return await provider.complete(
                [Message("user", "hi")],
                schema=None,
                schema_name="answer",
                max_tokens=16,
                temperature=0.0,
                timeout_s=5.0,
            )

        answer = asyncio.run(ask())
    assert getattr(answer, "text", None) == '{"a": 1}'
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"
