"""The scripted stand-in for an LLM in ``lifecycle.py``: NOT a model.

It answers ``/v1/chat/completions`` of ``tests/support/openai_server.py`` with an object
that matches the request's ``response_format`` JSON schema and is faithful to the prompt
by construction: every word of an answer is copied from the prompt. It recognises the
four questions the daemon asks (by the schema's name, else by the required keys):

* ``memory_encoding`` (enrichment): the note's first line as gist, the note itself
  (whitespace collapsed, cut at a word) as summary, its most frequent content words as
  concepts, its capitalised or path-like words as entities, a type from keywords
  (decided -> decision, failed/error -> error, fixed -> insight, TIL/remember -> learning,
  handoff -> handoff) and a significance/salience per type (routine commands and edits low);
* ``episode`` (episoding): "<project>: w1, w2, w3" from the members' most frequent words as
  title, those words and the first member line as summary, the words as concepts;
* ``supersession`` (review of borderline pairs): ``supersedes`` is true only when the newer
  text contains an update cue (moved, now, instead, switched, bumped, upgraded, changed)
  and shares a content word with the older one;
* ``answer`` with a ``summary`` key (the merge gist): the distinct notes joined with "; ";
* ``abstraction`` (naming a pattern, principle or axiom): its first three concepts as title,
  the first evidence line as description;
* ``answer`` with an ``insight`` key (dreaming): the two recurring topics and the first note;
* ``probe_question`` (the metacognition self-test): "What about w1 w2 w3?" from the note's
  most frequent words (grounded, and not a copy of the note).

So it measures how often the daemon calls an LLM and what its faithful answers change,
not the quality of any model.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.openai_server import OpenAIServer, Reply, Request, chat_reply

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_+#'.-]*[A-Za-z0-9]|[A-Za-z]")
_STOP_TEXT = """the a an and or but of in on at to for from with by is are was were be been
it its this that these those as not no into than then so if else when what which who how
there their they we you i he she them our your his her has have had do does did can could
should would will just also only all any each more most some such very about after before
over under again out up down off set sets used uses use new one two"""
_STOP = frozenset(_STOP_TEXT.split())
UPDATE_CUES = ("moved", "now", "instead", "switched", "bumped", "upgraded", "changed")
_LINE = re.compile(r"^- \d{4}-\d\d-\d\d \d\d:\d\d \[[^\]]*\] ", re.MULTILINE)


def content_words(text: str) -> list[str]:
    """Lowercase words of three letters or more that are not function words, in order."""
    out = []
    for token in _TOKEN.findall(text):
        word = token.strip(".'-").lower()
        if len(word) >= 3 and word.isalpha() and word not in _STOP:
            out.append(word)
    return out


def _top(text: str, n: int) -> list[str]:
    counts = Counter(content_words(text))
    return [w for w, _ in counts.most_common(n)]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i:] if j < 0 else text[i:j]


# -- the four questions ----------------------------------------------------------------


def _type_of(note: str) -> str:
    low = note.lower()
    if "handoff" in low or "next:" in low:
        return "handoff"
    if "decided" in low or "decision" in low:
        return "decision"
    if low.startswith("fixed") or "root cause" in low:
        return "insight"
    if any(c in low for c in ("failed", "error", "panicked", "crashed", "exception", "flaky")):
        return "error"
    if any(c in low for c in ("til:", "remember", "reminder", "note:", "never ", "must ")):
        return "learning"
    return "general"


_WEIGHT = {  # (significance, salience) per type
    "decision": (0.8, 0.75),
    "error": (0.7, 0.7),
    "insight": (0.7, 0.65),
    "learning": (0.7, 0.65),
    "handoff": (0.6, 0.6),
    "general": (0.3, 0.35),
}


def encode_answer(user: str) -> dict[str, Any]:
    note = _between(user, "<<<\n", "\n>>>").strip() or user
    kind = _type_of(note)
    significance, salience = _WEIGHT[kind]
    first = note.splitlines()[0] if note else note
    entities = []
    for token in note.split():
        clean = token.strip(".,;:()'\"`")
        if clean and (clean[0].isupper() or "/" in clean or "_" in clean) and clean in note:
            entities.append(clean)
    return {
        "gist": _cut(first, 100),
        "summary": _cut(note, 300) or "note",
        "concepts": _top(note, 6) or [content_words(note + " note")[0]],
        "entities": list(dict.fromkeys(entities))[:6],
        "type": kind,
        "significance": significance,
        "salience": salience,
    }


def _member_lines(user: str) -> list[str]:
    lines = []
    for line in user.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        text = line[match.end() :]
        if text.endswith("…"):  # a cut line: drop the cut word, it is no word of the source
            text = text[:-1].rsplit(" ", 1)[0]
        lines.append(text)
    return lines


def episode_answer(user: str, schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    title_max = int(props.get("title", {}).get("maxLength", 80))
    summary_max = int(props.get("summary", {}).get("maxLength", 600))
    max_concepts = int(props.get("concepts", {}).get("maxItems", 8))
    project = _between(user, "Project: ", "\n").strip()
    lines = _member_lines(user)
    top = _top(" ".join(lines), max(3, max_concepts))
    head = top[:3] or ["work"]
    title = _cut(f"{project}: {', '.join(head)}", title_max)
    summary = f"Work on {', '.join(head)}"
    if lines:
        summary += f": {lines[0]}"
    return {
        "title": title,
        "summary": _cut(summary, summary_max),
        "concepts": top[:max_concepts],
    }


def supersession_answer(user: str) -> dict[str, Any]:
    older = _between(user, "OLDER memory", "\n\nNEWER memory").split("\n", 1)[-1]
    newer = _between(user, "NEWER memory", "\n\nDoes the NEWER").split("\n", 1)[-1]
    new_words = set(content_words(newer))
    cue = next((c for c in UPDATE_CUES if c in new_words), None)
    shared = [w for w in content_words(older) if w in new_words and w not in UPDATE_CUES]
    says = bool(cue and shared and newer.strip() != older.strip())
    subject = " ".join(dict.fromkeys(shared[:4])) or "unknown"
    reason = f"the newer memory says '{cue}'" if says else "no update cue on a shared subject"
    return {"supersedes": says, "subject": subject, "reason": reason}


def gist_answer(user: str, schema: dict[str, Any]) -> dict[str, Any]:
    limit = int(schema.get("properties", {}).get("summary", {}).get("maxLength", 300))
    body = _between(user, "Notes:\n", "\n\nAnswer with")
    notes = [" ".join(n.split()) for n in re.split(r"(?m)^\d+\. ", body) if n.strip()]
    distinct = list(dict.fromkeys(notes))
    joined = "; ".join(distinct)
    if len(joined) <= limit:
        return {"summary": joined}
    return {"summary": _cut(distinct[0] if distinct else joined, limit)}


def abstraction_answer(user: str, schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    title_max = int(props.get("title", {}).get("maxLength", 200))
    description_max = int(props.get("description", {}).get("maxLength", 1000))
    concepts = [c.strip() for c in _between(user, "Concepts: ", "\n").split(",") if c.strip()]
    lines = [ln[2:] for ln in _between(user, "<<<\n", "\n>>>").splitlines() if ln[2:].strip()]
    title = ", ".join(concepts[:3]) or (lines[0] if lines else "theme")
    return {
        "title": _cut(title, min(title_max, 80)),
        "description": _cut(lines[0] if lines else title, description_max),
    }


def insight_answer(user: str, schema: dict[str, Any]) -> dict[str, Any]:
    limit = int(schema.get("properties", {}).get("insight", {}).get("maxLength", 300))
    topics = re.findall(r'"([^"]+)"', _between(user, "Recurring topics: ", "\n"))
    body = _between(user, "Notes:\n", "\n\nAnswer with")
    notes = [" ".join(n.split()) for n in re.split(r"(?m)^\d+\. ", body) if n.strip()]
    head = " and ".join(topics[:2]) or "these topics"
    return {"insight": _cut(f"{head}: {notes[0]}" if notes else head, limit)}


def question_answer(user: str) -> dict[str, Any]:
    note = _between(user, "<<<\n", "\n>>>") or user
    words = _top(note, 3) or content_words(note + " note")[:1]
    return {"question": f"What about {' '.join(words)}?"}


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted answer object for one chat-completions request body."""
    messages = body.get("messages") or []
    user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    name = str(fmt.get("name", ""))
    schema = fmt.get("schema") or {}
    required = set(schema.get("required", []))
    if name == "memory_encoding" or "You encode developer notes" in system:
        return encode_answer(user)
    if name == "episode" or {"title", "concepts"} <= required:
        return episode_answer(user, schema)
    if name == "supersession" or "supersedes" in required:
        return supersession_answer(user)
    if name == "abstraction" or {"title", "description"} <= required:
        return abstraction_answer(user, schema)
    if "insight" in required:
        return insight_answer(user, schema)
    if name == "probe_question" or "question" in required:
        return question_answer(user)
    if "summary" in required or "merge near-duplicate" in system:
        return gist_answer(user, schema)
    return {}


def estimate_tokens(text: str) -> int:
    """About four characters a token: only so that llm_usage has plausible counts."""
    return max(1, len(text) // 4)


def reply_text(body: dict[str, Any]) -> tuple[str, int, int]:
    """The answer as JSON text, with estimated prompt and completion tokens."""
    text = json.dumps(answer(body))
    prompt = "".join(str(m.get("content", "")) for m in body.get("messages") or [])
    return text, estimate_tokens(prompt), estimate_tokens(text)


@contextmanager
def scripted_llm(enabled: bool) -> Iterator[tuple[dict[str, str], OpenAIServer | None]]:
    """The LLM settings of a run and the scripted server behind them (or none)."""
    if not enabled:
        yield {}, None
        return

    def handler(request: Request) -> Reply:
        text, prompt_tokens, completion_tokens = reply_text(request.json() or {})
        return chat_reply(text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    with OpenAIServer(model_name="scripted-stand-in") as server:
        server.set_handler("/v1/chat/completions", handler)
        settings = {
            "MNEMONIC_LLM__PROVIDER": "openai",
            "MNEMONIC_LLM__BASE_URL": server.base_url,
            "MNEMONIC_LLM__MODEL": "scripted-stand-in",
        }
        yield settings, server
