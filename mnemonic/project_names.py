"""What a project name may be.

A project name is shown everywhere (lists, /projects, /stats, the event stream, the
dashboard) and used as a filter, so it must not carry a secret nor anything that breaks
the places it is printed. The rule, documented in the README and published as a schema
``pattern``: at most :data:`PROJECT_MAX_CHARS` characters, none of them a control
character or one of ``" ' ` < > { } [ ] \\ | ; $``; and a name that secret redaction
would change is refused rather than stored redacted (a redacted name would be a different
project, and ``[REDACTED:...]`` markers use brackets on purpose).

Names that come from the machine (a folder or repository name seen by perception) are
cleaned instead of refused: unsafe characters become ``-``, and a secret-looking one is
dropped (no project).
"""

from __future__ import annotations

import re
from collections.abc import Callable

PROJECT_MAX_CHARS = 200

_FORBIDDEN = "\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\"'`<>{}\\[\\]\\\\|;$"
PROJECT_PATTERN = f"^[^{_FORBIDDEN}]*$"
"""The character rule as a regular expression that means the same in Python and in
ECMA 262 (JSON Schema's dialect): explicit code points only, no ``\\s`` or ``\\w``."""

_UNSAFE = re.compile(f"[{_FORBIDDEN}]")


def project_problem(name: str, redact: Callable[[str], str]) -> str | None:
    """Why ``name`` (already stripped) cannot be a project name, or None when it can."""
    if len(name) > PROJECT_MAX_CHARS:
        return f"must be at most {PROJECT_MAX_CHARS} characters"
    if _UNSAFE.search(name):
        return "must not contain control characters or any of \" ' ` < > { } [ ] \\ | ; $"
    if redact(name) != name:
        return "looks like it contains a secret"
    return None


def clean_project(name: str, redact: Callable[[str], str]) -> str:
    """A project name perception found, made valid: unsafe characters become ``-``, the
    length is cut, and a name that looks like a secret becomes "" (no project)."""
    cleaned = _UNSAFE.sub("-", name.strip())[:PROJECT_MAX_CHARS].strip()
    return cleaned if redact(cleaned) == cleaned else ""
