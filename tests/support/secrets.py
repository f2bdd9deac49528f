"""The secret-bearing fixture: fake but format-valid credentials, and what must vanish.

``tests/fixtures/secrets.txt`` holds one secret-bearing item per line, except multi-line
PEM blocks; ``tests/fixtures/secrets_expected.json`` lists, for every item, its first line
(1-based), the finding kinds the redactor must report and the secret values that must not
survive. An item runs from its line to the line before the next item's.

Every value was generated from a fixed seed (random characters of the right charset and
length, e.g. ``ghp_`` + 36 alphanumerics); none is a real credential. End-to-end tests
push each item through a write path and then grep the database, its WAL and the logs for
every value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SECRETS_TXT = FIXTURES / "secrets.txt"
SECRETS_EXPECTED = FIXTURES / "secrets_expected.json"


@dataclass(frozen=True, slots=True)
class SecretCase:
    """One fixture item: its text, its first line, expected kinds and secret values."""

    line: int
    text: str
    kinds: tuple[str, ...]
    secrets: tuple[str, ...]


def load_secret_cases() -> list[SecretCase]:
    """Every fixture item with its expectations, in file order."""
    lines = SECRETS_TXT.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    entries = json.loads(SECRETS_EXPECTED.read_text(encoding="utf-8"))
    cases: list[SecretCase] = []
    for i, entry in enumerate(entries):
        first = int(entry["line"])
        stop = int(entries[i + 1]["line"]) if i + 1 < len(entries) else len(lines) + 1
        text = "\n".join(lines[first - 1 : stop - 1])
        secrets = tuple(str(s) for s in entry["secrets"])
        missing = [s for s in secrets if s not in text]
        if missing or not secrets:
            raise ValueError(f"secrets_expected.json line {first}: values not in the item")
        cases.append(SecretCase(first, text, tuple(entry["kinds"]), secrets))
    return cases


def load_secret_fixture() -> list[tuple[str, list[str]]]:
    """``(line or block, secret values)`` for every fixture item."""
    return [(case.text, list(case.secrets)) for case in load_secret_cases()]


def all_secret_values() -> list[str]:
    """Every secret value of the fixture, for grepping files that must not contain any."""
    return [value for case in load_secret_cases() for value in case.secrets]
