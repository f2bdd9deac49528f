"""Issue 9 §3: every text field of every write path goes through the same redaction.

The test reads the daemon's own ``/openapi.json``, plants a distinct secret in every string
field (body, query and nested metadata, keys included) of every write operation, sends each
request to a real ``mnemonic serve``, and then looks for the secrets everywhere they could
land: the database file and its WAL, the log folder, the daemon's output, every ``/ws``
frame and ``/api/v1/activity``. A new write route or field is covered without touching
this file.
"""

from __future__ import annotations

import itertools
import string
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.daemon_proc import running
from support.ws import FrameRecorder

WRITE_METHODS = ("post", "put", "patch", "delete")
Planting = Callable[[str], "Planter | None"]
_ALPHABET = string.ascii_letters + string.digits


class Planter:
    """Hands out unique, recognisable secrets of several kinds and remembers them."""

    def __init__(self) -> None:
        self.planted: dict[str, str] = {}  # secret value -> where it was planted
        self._counter = itertools.count(1)

    def _unique(self, width: int) -> str:
        n = next(self._counter)
        digits = []
        for _ in range(width):
            n, r = divmod(n * 7919 + 104729, len(_ALPHABET))
            digits.append(_ALPHABET[r])
        return "".join(digits)

    def secret(self, where: str) -> str:
        """A value a rule recognises; kinds rotate so several rules are exercised."""
        kind = len(self.planted) % 3
        if kind == 0:
            value = "ghp_" + self._unique(36)
        elif kind == 1:
            value = "AKIA" + self._unique(16).upper().replace("O", "Q")
        else:
            value = "sk_live_" + self._unique(24)
        self.planted[value] = where
        return value


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return _resolve(options[0], spec)
    return schema


def _value(schema: dict[str, Any], spec: dict[str, Any], where: str, plant: Planting) -> Any:
    """A valid value for ``schema``; a string (or free-form object) at a place ``plant``
    chooses carries planted secrets, every other one benign text."""
    schema = _resolve(schema, spec)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties")
        if props:
            return {k: _value(v, spec, f"{where}.{k}", plant) for k, v in props.items()}
        planter = plant(where)
        if planter is None:
            return {"note": "benign"}
        # free-form (metadata): secrets as values, under secret-looking keys, nested, in keys
        return {
            "note": f"see {planter.secret(where + '.note')}",
            "password": "Hunter2-" + planter.secret(where + ".password"),
            "nested": {"api_key": planter.secret(where + ".nested.api_key")},
            planter.secret(where + ".<key>"): "value",
        }
    if kind == "array":
        return [_value(schema.get("items", {}), spec, f"{where}.0", plant)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 0.5))
    if kind == "boolean":
        return False
    if schema.get("format") == "date-time":
        return "2026-11-23T10:00:00Z"
    planter = plant(where)
    secret = planter.secret(where) if planter is not None else "benign"
    if schema.get("pattern", "").startswith("^[/~]"):  # an absolute path
        return f"/tmp/mnemonic-planted/{secret}"
    return f"a note with {secret} inside"


def _operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method in WRITE_METHODS:
            if method in item:
                yield path, method, item[method]


def _found_in(planter: Planter, haystacks: dict[str, str]) -> list[str]:
    return [
        f"{where} leaked into {name}"
        for value, where in planter.planted.items()
        for name, text in haystacks.items()
        if value in text
    ]


@pytest.mark.slow
def test_a_secret_in_any_string_field_of_any_write_is_stored_nowhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    planter = Planter()
    with running(home, env={"MNEMONIC_LOGGING__LEVEL": "DEBUG"}) as daemon:
        frames = FrameRecorder(f"ws://127.0.0.1:{daemon.port}/ws")
        with daemon.client() as http:
            spec = http.get("/openapi.json").json()
            ids = _existing_ids(http)
            statuses = _send_everything(http, spec, ids, planter)
            time.sleep(1.5)  # encoding, query records and events settle
            activity = http.get("/api/v1/activity", params={"limit": 1000}).text
        frames.close()
        haystacks = {
            "database": _read(home / "data" / "mnemonic.db"),
            "wal": _read(home / "data" / "mnemonic.db-wal"),
            "ws frames": "\n".join(frames.frames),
            "activity": activity,
            **{f"log {p.name}": _read(p) for p in (home / "logs").glob("*")},
        }
        assert len(planter.planted) >= 20, planter.planted
        assert frames.frames, "the /ws client saw no event"
        assert not [s for s in statuses if s >= 500], statuses
        leaks = _found_in(planter, haystacks)
        daemon_output = daemon.output()
    leaks += _found_in(planter, {"daemon output": daemon_output})
    assert leaks == []
    # the writes did land, redacted (so "nothing leaked" is not "nothing was written"); the
    # store itself may hold none of them by now, as the walk includes purge
    seen = haystacks["activity"] + haystacks["ws frames"]
    assert all(f"[REDACTED:{kind}]" in seen for kind in ("github_token", "aws_access_key_id"))


def _existing_ids(http: httpx.Client) -> dict[str, str]:
    made = http.post(
        "/api/v1/memories", params={"wait": "true"}, json={"content": "the build uses make"}
    ).json()
    query = http.post("/api/v1/query", json={"query": "build"}).json()
    return {
        "memory_id": made["memory_id"],
        "raw_id": made["raw_id"],
        "query_id": query["query_id"],
    }


def _send_everything(
    http: httpx.Client, spec: dict[str, Any], ids: dict[str, str], planter: Planter
) -> list[int]:
    """Each write operation once per text field, with the secret in that field alone: a
    field that is refused (a secret-looking project name is a 422) must not hide the
    others behind it."""
    statuses: list[int] = []
    for path, method, op in _operations(spec):
        places: list[str] = []
        _request(spec, path, method, op, ids, _collect(places))
        for place in places:
            args = _request(
                spec, path, method, op, ids, lambda where, p=place: planter if where == p else None
            )
            statuses.append(http.request(*args[:2], params=args[2], json=args[3]).status_code)
    return statuses


def _collect(places: list[str]) -> Planting:
    def note(where: str) -> None:
        places.append(where)

    return note


def _request(
    spec: dict[str, Any],
    path: str,
    method: str,
    op: dict[str, Any],
    ids: dict[str, str],
    plant: Planting,
) -> tuple[str, str, dict[str, Any] | None, Any]:
    url = path
    for name, real in ids.items():
        url = url.replace("{" + name + "}", real)
    params: dict[str, Any] = {}
    for param in op.get("parameters", []):
        if param["in"] == "query":
            where = f"{method} {path} ?{param['name']}"
            value = _value(param.get("schema", {}), spec, where, plant)
            params[param["name"]] = "true" if isinstance(value, bool) else value
    body = None
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content is not None:
        body = _value(content["schema"], spec, f"{method} {path}", plant)
        _use_real_ids(body, ids)
    return method.upper(), url, params or None, body


def _use_real_ids(body: Any, ids: dict[str, str]) -> None:
    """Ids must name something, or the write is refused before it stores anything."""
    if isinstance(body, dict):
        if "query_id" in body:
            body["query_id"] = ids["query_id"]
        if "memory_ids" in body:
            body["memory_ids"] = [ids["memory_id"]]
        for value in body.values():
            _use_real_ids(value, ids)
    elif isinstance(body, list):
        for value in body:
            _use_real_ids(value, ids)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace") if path.exists() else ""


def test_the_planter_makes_distinct_recognised_secrets() -> None:
    from mnemonic.redact import redact

    planter = Planter()
    values = [planter.secret(str(i)) for i in range(30)]
    assert len(set(values)) == 30
    assert all(redact(f"x {v} y").text != f"x {v} y" for v in values)
