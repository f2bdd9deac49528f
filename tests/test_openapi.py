"""``/openapi.json`` and ``/docs``: the document covers every route of the daemon's app,
is valid OpenAPI 3.1, and its response schemas match what the routes really answer."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN, query, sibling

from mnemonic.api.docs import docs_routes, web_dir
from mnemonic.api.openapi import (
    ROUTE_DOCS,
    WEBSOCKET,
    RouteDoc,
    build_spec,
    error_statuses,
    route_keys,
    stale,
    undocumented,
)
from mnemonic.api.schemas import AmendBody, FeedbackBody, ListParams, QueryBody, RememberBody
from mnemonic.config import load_config
from mnemonic.daemon import Daemon
from mnemonic.paths import Paths

# ---- the table covers the app ------------------------------------------------------------


def test_every_route_of_the_daemon_has_exactly_one_entry(paths: Paths) -> None:
    """Adding a route without a ``RouteDoc`` (or leaving a stale one) fails here."""
    app = Daemon(load_config(None), paths, TOKEN).app()
    assert undocumented(app.routes, ROUTE_DOCS) == []
    assert stale(app.routes, ROUTE_DOCS) == []
    keys = [doc.key for doc in ROUTE_DOCS]
    assert len(keys) == len(set(keys))


async def _ok(request: Any) -> PlainTextResponse:
    return PlainTextResponse("")


@pytest.mark.parametrize(
    ("routes", "docs", "missing", "unused"),
    [
        ([Route("/a", _ok, methods=["GET"])], [RouteDoc("GET", "/a", "a")], [], []),
        (
            [Route("/a", _ok, methods=["GET", "POST"])],
            [RouteDoc("GET", "/a", "a")],
            ["POST /a"],
            [],
        ),
        ([Route("/a", _ok)], [RouteDoc("GET", "/b", "b")], ["GET /a"], ["GET /b"]),
        ([WebSocketRoute("/ws", _ok)], [RouteDoc(WEBSOCKET, "/ws", "ws")], [], []),
        (
            [WebSocketRoute("/ws", _ok)],
            [RouteDoc("GET", "/ws", "ws")],
            ["WEBSOCKET /ws"],
            ["GET /ws"],
        ),
        ([Mount("/mcp", app=_ok)], [RouteDoc("POST", "/mcp", "mcp")], [], []),
        ([Mount("/mcp", app=_ok)], [], ["* /mcp"], []),
    ],
)
def test_undocumented_and_stale(
    routes: list[Any], docs: list[RouteDoc], missing: list[str], unused: list[str]
) -> None:
    assert undocumented(routes, docs) == missing
    assert stale(routes, docs) == unused


def test_head_is_implied_by_get() -> None:
    assert route_keys([Route("/a", _ok, methods=["GET"])]) == [("GET", "/a")]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (RouteDoc("GET", "/livez", "", auth=False), [403, 421]),
        (RouteDoc("GET", "/api/v1/health", ""), [401, 403, 421]),
        (RouteDoc("GET", "/api/v1/raw/{raw_id}", ""), [401, 403, 404, 421]),
        (RouteDoc("GET", "/api/v1/memories", "", query=ListParams), [401, 403, 421, 422]),
        (
            RouteDoc("POST", "/api/v1/memories", "", body=RememberBody),
            [400, 401, 403, 413, 415, 421, 422, 503],
        ),
        (
            RouteDoc("POST", "/api/v1/feedback", "", body=FeedbackBody, errors=(404,)),
            [400, 401, 403, 404, 413, 415, 421, 422, 503],
        ),
        (RouteDoc("DELETE", "/api/v1/memories/{memory_id}", ""), [401, 403, 404, 421, 503]),
        (RouteDoc(WEBSOCKET, "/ws", ""), [403, 404]),
    ],
)
def test_error_statuses_follow_from_the_entry(doc: RouteDoc, expected: list[int]) -> None:
    assert error_statuses(doc) == expected


# ---- the document ------------------------------------------------------------------------


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_document_is_valid_openapi_31(client: TestClient) -> None:
    import schemathesis

    anonymous = sibling(client, base_url=BASE_URL)
    response = anonymous.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    spec = response.json()
    assert spec["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(spec).validate()  # the official 3.1 meta-schema
    defined = spec["components"]["schemas"]
    for ref in _refs(spec):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in defined, ref
    assert "$defs" not in str(spec)
    assert anonymous.get("/openapi.json", headers={"Host": "evil.example"}).status_code == 403


def test_operations_carry_security_parameters_bodies_and_errors(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}

    remember_op = paths["/api/v1/memories"]["post"]
    assert remember_op["security"] == [{"bearer": []}]
    body = remember_op["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/RememberBody"}
    assert set(remember_op["responses"]) == {
        "201",
        "202",
        "400",
        "401",
        "403",
        "413",
        "415",
        "421",
        "422",
        "503",
    }
    invalid = remember_op["responses"]["422"]["content"]["application/json"]["schema"]
    assert invalid == {"$ref": "#/components/schemas/ValidationError"}
    assert [p["name"] for p in remember_op["parameters"]] == ["wait"]

    listing = paths["/api/v1/memories"]["get"]
    by_name = {p["name"]: p for p in listing["parameters"]}
    assert set(by_name) == set(ListParams.model_fields)
    assert by_name["state"]["schema"]["type"] == "array"
    assert by_name["state"]["explode"] is True
    assert by_name["limit"]["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 200,
        "default": 50,
    }
    assert by_name["since"]["schema"]["format"] == "date-time"

    one = paths["/api/v1/memories/{memory_id}"]
    assert set(one) == {"get", "patch", "delete"}
    assert one["get"]["parameters"][0]["in"] == "path"
    assert one["get"]["parameters"][0]["required"] is True

    assert paths["/livez"]["get"]["security"] == []
    assert "401" not in paths["/livez"]["get"]["responses"]
    assert "text/plain" in paths["/metrics"]["get"]["responses"]["200"]["content"]
    ws = paths["/ws"]["get"]
    assert ws["x-websocket"] is True
    assert "101" in ws["responses"]

    error = spec["components"]["schemas"]["Error"]
    assert error["required"] == ["error", "status"]
    assert error["additionalProperties"] is False


# ---- the schemas match real answers ------------------------------------------------------


class _Responses:
    """Validates a real response against the schema the document gives its status."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.checked: set[tuple[str, str, int]] = set()

    def check(self, method: str, template: str, response: Any) -> None:
        answers = self.spec["paths"][template][method.lower()]["responses"]
        status = str(response.status_code)
        assert status in answers, (method, template, status, response.text)
        schema = answers[status]["content"]["application/json"]["schema"]
        document = {**schema, "components": self.spec["components"]}
        errors = [
            e.message for e in jsonschema_rs.validator_for(document).iter_errors(response.json())
        ]
        assert errors == [], (method, template, status, errors[:3])
        self.checked.add((method, template, response.status_code))


def test_answers_match_their_documented_schemas(client: TestClient) -> None:
    docs = _Responses(client.get("/openapi.json").json())
    first = client.post(
        "/api/v1/memories",
        params={"wait": "true"},
        json={"content": "Rotate the TLS certificates every 60 days.", "project": "ops"},
    )
    docs.check("POST", "/api/v1/memories", first)
    memory_id, raw_id = first.json()["memory_id"], first.json()["raw_id"]
    batch = client.post(
        "/api/v1/memories/batch",
        params={"wait": "true"},
        json={"memories": [{"content": "TLS renewals run from the certbot timer"}]},
    )
    docs.check("POST", "/api/v1/memories/batch", batch)
    answer = client.post("/api/v1/query", json={"query": "TLS certificates", "explain": True})
    docs.check("POST", "/api/v1/query", answer)
    assert "explain" in answer.json()["results"][0]
    plain = query(client, "certbot timer")
    feedback = client.post(
        "/api/v1/feedback", json={"query_id": plain["query_id"], "quality": "helpful"}
    )
    docs.check("POST", "/api/v1/feedback", feedback)
    amended = client.patch(
        f"/api/v1/memories/{memory_id}",
        json={"content": "Rotate the TLS certificates every 30 days.", "reason": "policy"},
    )
    docs.check("PATCH", "/api/v1/memories/{memory_id}", amended)

    reads = {
        "/api/v1/memories/{memory_id}": f"/api/v1/memories/{memory_id}",
        "/api/v1/memories/{memory_id}/context": f"/api/v1/memories/{memory_id}/context",
        "/api/v1/raw/{raw_id}": f"/api/v1/raw/{raw_id}",
        "/api/v1/memories": "/api/v1/memories?limit=1",
        "/api/v1/graph": "/api/v1/graph",
        "/api/v1/associations": "/api/v1/associations",
        "/api/v1/projects": "/api/v1/projects",
        "/api/v1/activity": "/api/v1/activity",
        "/api/v1/health": "/api/v1/health",
        "/api/v1/stats": "/api/v1/stats",
        "/livez": "/livez",
        "/readyz": "/readyz",
    }
    for template, url in reads.items():
        docs.check("GET", template, client.get(url))
    context = client.get(f"/api/v1/memories/{memory_id}/context").json()
    assert context["amendments"], "the amendment must be part of what was validated"
    docs.check(
        "DELETE", "/api/v1/memories/{memory_id}", client.delete(f"/api/v1/memories/{memory_id}")
    )

    # and the failures
    anonymous = sibling(client, base_url=BASE_URL)
    docs.check("GET", "/api/v1/health", anonymous.get("/api/v1/health"))
    docs.check("GET", "/api/v1/raw/{raw_id}", client.get("/api/v1/raw/nope"))
    docs.check("POST", "/api/v1/query", client.post("/api/v1/query", json={"limit": 0}))
    bad_json = client.post(
        "/api/v1/query", content=b"{", headers={"Content-Type": "application/json"}
    )
    docs.check("POST", "/api/v1/query", bad_json)
    form = client.post("/api/v1/query", content=b"q=x", headers={"Content-Type": "text/plain"})
    docs.check("POST", "/api/v1/query", form)
    docs.check("GET", "/api/v1/memories", client.get("/api/v1/memories?limit=0"))
    statuses = {status for _, _, status in docs.checked}
    assert {200, 201, 400, 401, 404, 415, 422} <= statuses


def test_a_method_a_path_does_not_allow_answers_405_listing_all_its_methods(
    client: TestClient,
) -> None:
    """Several routes share ``/api/v1/memories/{memory_id}``; Allow names them all, and a
    body-less write reaches the router (405) instead of the content-type guard (415)."""
    response = client.put("/api/v1/memories/some-id")
    assert response.status_code == 405
    assert response.headers["allow"] == "DELETE, GET, HEAD, PATCH"
    assert response.json() == {"error": "Method Not Allowed", "status": 405}
    batch = client.options("/api/v1/memories/batch")  # not the {memory_id} template
    assert (batch.status_code, batch.headers["allow"]) == (405, "POST")
    options = client.options("/api/v1/stats")
    assert (options.status_code, options.headers["allow"]) == (405, "GET, HEAD")
    form = client.put("/api/v1/stats", content=b"a=1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 415, "a body that is not JSON is still refused first"


def test_spec_building_is_deterministic_and_refuses_duplicates() -> None:
    assert build_spec(ROUTE_DOCS, version="1") == build_spec(ROUTE_DOCS, version="1")
    twice = (RouteDoc("GET", "/a", "a"), RouteDoc("GET", "/a", "again"))
    with pytest.raises(ValueError, match="two entries"):
        build_spec(twice, version="1")


# ---- the docs page -----------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0
        self.inline_styles = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]
        self.inline_styles += "style" in values or tag == "style"
        self._in_script = tag == "script" and "src" not in values

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline_scripts += 1


def test_docs_page_works_offline(client: TestClient) -> None:
    anonymous = sibling(client, base_url=BASE_URL)
    page = anonymous.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp
    assert "'unsafe-inline'" not in csp and "http" not in csp
    links = _Links()
    links.feed(page.text)
    assert links.inline_scripts == 0 and links.inline_styles == 0
    assert links.urls, "the page loads its script and stylesheet"
    for url in links.urls:
        assert url.startswith("/") and not url.startswith("//"), url
    types = {"/docs/docs.js": "text/javascript", "/docs/docs.css": "text/css"}
    for url, media in types.items():
        assert url in links.urls
        asset = anonymous.get(url)
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(media)
        assert "default-src 'self'" in asset.headers["content-security-policy"]
        assert not re.search(r"https?://", asset.text), f"{url} must not load anything external"
    assert "/openapi.json" in anonymous.get("/docs/docs.js").text
    missing = anonymous.get("/docs/../../pyproject.toml")
    assert missing.status_code == 404
    assert anonymous.get("/docs/index.html").status_code == 404
    assert anonymous.get("/docs", headers={"Host": "evil.example"}).status_code == 403


def test_docs_script_is_valid_javascript() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; cannot syntax-check docs.js")
    script = web_dir() / "docs" / "docs.js"
    done = subprocess.run(
        [node, "--check", str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr


def test_docs_assets_come_from_the_web_folder(tmp_path: Path) -> None:
    assert (web_dir() / "docs" / "index.html").is_file()
    (tmp_path / "index.html").write_text("<p>custom</p>", encoding="utf-8")
    (tmp_path / "docs.js").write_text("// js", encoding="utf-8")
    from starlette.applications import Starlette

    with TestClient(Starlette(routes=docs_routes(tmp_path))) as client:
        assert client.get("/docs").text == "<p>custom</p>"
        assert client.get("/docs/docs.js").text == "// js"
        assert client.get("/docs/docs.css").status_code == 404  # not in that folder
    with TestClient(Starlette(routes=docs_routes(tmp_path / "absent"))) as client:
        gone = client.get("/docs")
        assert gone.status_code == 404
        assert "not installed" in gone.json()["error"]


# ---- what the schema says is valid, the server accepts ------------------------------------

_SPEC = build_spec(ROUTE_DOCS, version="1")
# Every Python whitespace character (U+001C..U+001F and U+0085 are not whitespace in
# ECMA 262, the dialect of schema patterns), U+FEFF (whitespace in ECMA, not in Python),
# and ordinary text.
_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()] + ["\ufeff"]
_TEXTS = st.text(
    alphabet=st.sampled_from(_SPACES) | st.characters(exclude_categories=["Cs"]), max_size=8
)  # lone surrogates: a Rust validator cannot hold them


def _accepts(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


@given(_TEXTS)
def test_text_fields_mean_the_same_in_the_schema_and_the_server(text: str) -> None:
    """A fuzzer sent "\\x1e" as content: valid by an ECMA ``\\S``, blank to the server.
    The published pattern must agree with the server in any regex dialect."""
    schemas = _SPEC["components"]["schemas"]
    for model, field in ((AmendBody, "content"), (RememberBody, "content"), (QueryBody, "query")):
        published = schemas[model.__name__]["properties"][field]
        in_ecma = jsonschema_rs.validator_for(published).is_valid(text)
        in_python = re.search(published["pattern"], text) is not None
        expected = bool(text.strip())
        assert (in_ecma, in_python) == (expected, expected), (model.__name__, text)
        assert _accepts(model, {field: text}) == expected, (model.__name__, text)


@pytest.mark.parametrize(
    ("limit", "accepted"), [(68.0, True), (68, True), (68.5, False), (True, False), ("68", False)]
)
def test_integral_numbers_are_integers_as_json_schema_says(limit: Any, accepted: bool) -> None:
    """JSON Schema's ``integer`` includes 68.0; a strict int field refused it (422)."""
    assert _accepts(QueryBody, {"query": "x", "limit": limit}) == accepted
    schema = _SPEC["components"]["schemas"]["QueryBody"]["properties"]["limit"]
    assert jsonschema_rs.validator_for(schema).is_valid(limit) == accepted
