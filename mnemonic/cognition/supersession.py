"""Does a new memory supersede an older neighbour? Pure judgment, tuned to miss.

A wrong ``supersedes`` link hides a true fact below another one, which is worse than a
missing link (the older fact then simply ranks as it always did). So every rule here asks
for *relational* evidence, not just similar wording:

1. **Gates** (never supersede): different projects; the "new" memory is not strictly
   newer; cosine below ``min_similarity``; the newer text is a question, a plan or
   proposal ("considering", "maybe", "should we"), or says nothing changed ("still",
   "kept", "remains").
2. **An update cue naming the old value** ("moved from X to Y", "instead of X", "replaced
   X with Y", "no longer X", "X -> Y", "took over from X"), where X is in the older text,
   Y (if named) is not, and the two share their subject (half of the older text's subject
   words are in the newer one). Strong: confidence 0.9.
3. **An update cue naming only the new value** ("bumped to 3.12", "moved to 10:00",
   "changed to 50 dollars"): Y is not in the older text and the older text has a value the
   newer one dropped. Strong: 0.85.
4. **Same sentence, different value**: the two texts align word by word except one short
   span (<= 3 words each side) right after a shared subject, the changed span holds a
   value, and the shared words describe a state ("is", "runs", "stored", "costs"...), not
   an event ("reviewed", "fixed"). 0.7, or 0.85 with a generic cue such as "now".
5. **Contradiction signals** (:func:`mnemonic.encoding.contradiction.opposing_pairs`) on
   the same subject: 0.65.
6. **A generic cue** ("now", "going forward", "new owner", "no more") plus a value
   dropped and a value added on the same subject: 0.65.

Anything weaker but plausible (a cue on another subject, a template match about events,
a historical mention) is *borderline*: no link without an LLM, and the LLM may confirm it
(:func:`combine`). Restatements ("moved from MySQL to Redis" after "moved from MySQL to
Redis") are recognised because the new value is already in the older text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mnemonic.cognition.supersession_text import (
    MAX_CHARS,
    NEGATORS,
    STATE_WORDS,
    Cue,
    Reading,
    align_tokens,
    content,
    read,
    spell,
    subject_words,
)
from mnemonic.encoding.contradiction import opposing_pairs
from mnemonic.llm.completion.base import CompletionRequest
from mnemonic.timeutil import ensure_utc

STRONG = 0.8
"""At or above: supersedes, whatever an LLM says (the evidence is relational)."""
POSITIVE = 0.6
"""At or above: supersedes without an LLM; an LLM "no" vetoes it."""
BORDERLINE = 0.35
"""At or above (and below POSITIVE): no link without an LLM; an LLM "yes" confirms it."""


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """The parts of a memory the detector reads. ``project`` None is its own project."""

    text: str
    timestamp: datetime
    project: str | None = None
    type: str = "general"
    concepts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """``reason`` is for ``explain``; ``ask_llm`` says an LLM judgment could change it."""

    supersedes: bool
    confidence: float
    reason: str
    ask_llm: bool = False


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_similarity: float = 0.45
    """Below this cosine no pair is even a candidate."""
    template_similarity: float = 0.45
    """Rule 4 (same sentence, different value) needs at least this cosine."""
    contradiction_similarity: float = 0.7
    """Rule 5 (opposite words) needs at least this cosine."""
    subject_share: float = 0.5
    """Share of the older text's subject words the newer one must repeat."""
    generic_similarity: float = 0.6
    """Rule 6 (a generic cue such as "now" plus changed values) fires only this close;
    below it the pair is borderline. Measured on the workflow simulation: "beacon
    releases are now cut every Monday instead of every Thursday" (0.51) superseded
    "beacon's default request timeout is 30s" on the shared word "beacon" alone."""


DEFAULT_THRESHOLDS = Thresholds()


def _no(reason: str) -> Verdict:
    return Verdict(False, 0.0, reason)


def _verdict(confidence: float, reason: str) -> Verdict:
    return Verdict(
        supersedes=confidence >= POSITIVE,
        confidence=round(confidence, 3),
        reason=reason,
        ask_llm=BORDERLINE <= confidence < STRONG,
    )


def detect(
    new: MemoryFacts,
    old: MemoryFacts,
    similarity: float,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Verdict:
    """Whether ``new`` supersedes ``old`` (see the module docstring for the rules)."""
    gate = _gate(new, old, similarity, thresholds)
    if gate is not None:
        return gate
    r_new, r_old = read(new.text), read(old.text)
    if r_new.question:
        return _no("the newer text is a question")
    if r_new.hedged:
        return _no("the newer text is a plan or proposal, not a decision")
    if r_new.unchanged:
        return _no("the newer text says the old state stayed")
    found = _strongest(
        [
            _by_cues(r_new, r_old, thresholds),
            _by_alignment(r_new, r_old, similarity, thresholds),
            _by_contradiction(new.text, old.text, r_new, r_old, similarity, thresholds),
            _by_generic_cue(r_new, r_old, similarity, thresholds),
        ]
    )
    if found is None:
        return _no("no update cue or changed value on a shared subject")
    confidence, reason = found
    if r_new.historical:
        confidence, reason = min(confidence, 0.45), reason + "; told as history"
    if "error" in (new.type, old.type):
        confidence, reason = min(confidence, 0.45), reason + "; errors are events"
    return _verdict(confidence, reason)


def _gate(
    new: MemoryFacts, old: MemoryFacts, similarity: float, thresholds: Thresholds
) -> Verdict | None:
    if new.project != old.project:
        return _no("different projects")
    if ensure_utc(new.timestamp) <= ensure_utc(old.timestamp):
        return _no("the other memory is not older")
    if not similarity >= thresholds.min_similarity:  # also rejects NaN
        return _no(f"similarity {similarity:.2f} below {thresholds.min_similarity:.2f}")
    return None


_Found = tuple[float, str] | None


def _strongest(found: Sequence[_Found]) -> _Found:
    best: _Found = None
    for item in found:
        if item is not None and (best is None or item[0] > best[0]):
            best = item
    return best


def _shares_subject(r_new: Reading, r_old: Reading, exclude: frozenset[str], share: float) -> bool:
    """Half (``share``) of the older text's subject words, minus the changed values, recur
    in the newer text. An older text with no subject words left is judged by the cue."""
    subject = subject_words(r_old) - exclude
    if not subject:
        return True
    return len(subject & r_new.stems) / len(subject) >= share


def _by_cues(r_new: Reading, r_old: Reading, th: Thresholds) -> _Found:
    best: _Found = None
    for cue in r_new.cues:
        best = _strongest([best, _one_cue(cue, r_new, r_old, th)])
    return best


def _one_cue(cue: Cue, r_new: Reading, r_old: Reading, th: Thresholds) -> _Found:
    named_old = cue.old - STATE_WORDS
    named_new = cue.new - STATE_WORDS
    if named_old and len(named_old & r_old.stems) * 2 < len(named_old):
        return None  # the cue is about something the older text never said
    if named_new and named_new <= r_old.stems and not named_old:
        return None  # the older text already says the new value: a restatement
    if named_old:
        if any(c.old & named_old for c in r_old.cues):
            return None  # the older text made the same change: a restatement
        said = spell(r_old, named_old & r_old.stems)
        if _shares_subject(r_new, r_old, cue.old | cue.new, th.subject_share):
            if named_new and named_new <= r_old.stems:
                # Both values already in the older text: an update ("the main branch is
                # called master" -> "renamed from master to main") or a restatement in
                # other words ("Vite replaced webpack"): weak, an LLM may veto.
                return 0.65, f"update cue '{cue.kind}': {said}, new value already mentioned"
            return 0.9, f"update cue '{cue.kind}': the older memory said {said}"
        return 0.4, f"update cue '{cue.kind}' names {said}, but the subject differs"
    if not named_new:
        return None
    dropped = r_old.values - r_new.stems
    if dropped and _shares_subject(r_new, r_old, dropped | cue.new, th.subject_share):
        old_v, new_v = spell(r_old, dropped, 3), spell(r_new, named_new)
        return 0.85, f"update cue '{cue.kind}': {old_v} -> {new_v}"
    return 0.4, f"update cue '{cue.kind}' without a replaced value"


def _by_alignment(r_new: Reading, r_old: Reading, similarity: float, th: Thresholds) -> _Found:
    """Rule 4: the texts agree except one short span holding a value."""
    if similarity < th.template_similarity or r_new.additive:
        return None
    a, b = align_tokens(r_old), align_tokens(r_new)
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    b = _without_reason(a, b, p)
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    mid_old, mid_new = a[p : len(a) - s], b[p : len(b) - s]
    if not (1 <= len(mid_old) <= 3 and 1 <= len(mid_new) <= 3):
        return None
    if (p + s) < 2 or (p + s) / max(len(a), len(b)) < 0.5:
        return None
    if NEGATORS.intersection(mid_old + mid_new):
        return None  # a negation flip: rule 5 judges it
    added = content(mid_new) - set(a)
    removed = content(mid_old) - set(b)
    if not added or not removed:
        return None
    prefix = a[:p]
    if not content(prefix) - STATE_WORDS:
        return None  # the difference is the subject itself: "Logs …" / "Backups …"
    change = f"{spell(r_old, mid_old)} -> {spell(r_new, mid_new)}"
    shared = set(prefix) | set(a[len(a) - s :])
    if not STATE_WORDS.intersection(shared):
        return 0.45, f"same sentence about an event, value changed: {change}"
    if not (added & r_new.values or removed & r_old.values):
        if len(mid_old) == len(mid_new) == 1 and s == 0:
            return 0.6, f"same subject, last word changed: {change}"
        return 0.5, f"same sentence, wording changed: {change}"
    if r_new.generic_cues:
        return 0.85, f"same subject, value changed: {change} (cue '{r_new.generic_cues[0]}')"
    return 0.7, f"same subject, value changed: {change}"


_CONNECTIVES = frozenset(
    {"after", "because", "since", "due", "following", "as", "when", "for", "until"}
    | {"while", "so", "but", "and", "which"}
)


def _without_reason(old: tuple[str, ...], new: tuple[str, ...], start: int) -> tuple[str, ...]:
    """A changed value often comes with a reason the older text lacks ("pinned at 2.6.1
    after the crash fix"): the newer text is cut at the first connective after the shared
    prefix that the older text does not use."""
    for i in range(start, len(new)):
        if new[i] in _CONNECTIVES and new[i] not in old:
            return new[:i]
    return new


def _by_contradiction(
    new_text: str,
    old_text: str,
    r_new: Reading,
    r_old: Reading,
    similarity: float,
    th: Thresholds,
) -> _Found:
    if similarity < th.contradiction_similarity:
        return None
    pairs = opposing_pairs(old_text[:MAX_CHARS], new_text[:MAX_CHARS])
    if not pairs:
        return None
    flipped = frozenset(w for pair in pairs for phrase in pair for w in phrase.split())
    if not _shares_subject(r_new, r_old, flipped, th.subject_share):
        return 0.4, f"opposite words {pairs[0][0]!r}/{pairs[0][1]!r} on another subject"
    return 0.65, f"same subject, opposite state: {pairs[0][0]!r} -> {pairs[0][1]!r}"


def _by_generic_cue(r_new: Reading, r_old: Reading, similarity: float, th: Thresholds) -> _Found:
    if not r_new.generic_cues:
        return None
    dropped = r_old.values - r_new.stems
    added = r_new.values - r_old.stems
    cue = r_new.generic_cues[0]
    if not _shares_subject(r_new, r_old, dropped | added, th.subject_share):
        return None
    if dropped and added:
        old_v, new_v = spell(r_old, dropped, 3), spell(r_new, added, 3)
        if similarity < th.generic_similarity:
            return 0.45, f"update cue '{cue}': {old_v} -> {new_v}, but loosely similar"
        return 0.65, f"update cue '{cue}': {old_v} -> {new_v}"
    return 0.4, f"update cue '{cue}' on the same subject, no value changed"


# -- the LLM judgment -------------------------------------------------------------------

PROMPT_CHARS = 1500
"""Characters of each memory shown to the LLM (small local models, short prompts)."""

_SYSTEM = """You judge whether a NEWER memory updates (supersedes) an OLDER memory of the \
same software project. It supersedes only when both talk about the same subject and the \
newer one says that subject's value, owner, schedule, version, setting, location or \
decision has changed, so the older statement is no longer current. Answer false when the \
newer memory adds a different fact about the same subject, repeats the same change, talks \
about a different subject with similar words, describes someone else's past, asks a \
question, proposes or plans something not yet decided, or confirms nothing changed. \
Answer with JSON only."""

JUDGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "supersedes": {"type": "boolean"},
        "subject": {"type": "string", "maxLength": 200},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["supersedes", "subject", "reason"],
    "additionalProperties": False,
}


def judgment_request(new: MemoryFacts, old: MemoryFacts) -> CompletionRequest:
    """The question for the LLM about one candidate pair (built from stored, redacted text)."""
    user = (
        f"OLDER memory ({ensure_utc(old.timestamp).isoformat()}):\n"
        f"{old.text[:PROMPT_CHARS]}\n\n"
        f"NEWER memory ({ensure_utc(new.timestamp).isoformat()}):\n"
        f"{new.text[:PROMPT_CHARS]}\n\n"
        'Does the NEWER memory supersede the OLDER one? Reply as {"supersedes": true|false, '
        '"subject": "<what both are about>", "reason": "<one short sentence>"}.'
    )
    return CompletionRequest(
        operation="supersession",
        agent="encoding",
        system=_SYSTEM,
        user=user,
        schema=JUDGMENT_SCHEMA,
        max_tokens=160,
        schema_name="supersession",
    )


def read_judgment(answer: Mapping[str, Any] | None) -> bool | None:
    """The LLM's yes/no, or None when there is no usable answer (then the heuristic rules).

    Only a real JSON boolean counts: a small model answering ``"maybe"``, ``1`` or
    ``"true"`` (a string) has not followed the schema, and guessing its intent could turn
    a veto into a link.
    """
    if not isinstance(answer, Mapping):
        return None
    value = answer.get("supersedes")
    return value if isinstance(value, bool) else None


def combine(verdict: Verdict, llm_answer: Mapping[str, Any] | None) -> Verdict:
    """The final verdict from the heuristic one and the LLM's answer (None: no LLM).

    The rule, and why:

    * Strong heuristic positives (>= STRONG) stand even if the LLM says no: they rest on
      relational evidence (the old value named by an update cue is in the older text),
      which a small local model judging two short texts is more likely to misread than
      the rule is to be wrong.
    * Weak heuristic positives (POSITIVE..STRONG) are vetoed by an LLM "no": template and
      contradiction matches are where look-alikes (complementary facts, events) slip in.
    * Borderline negatives (BORDERLINE..POSITIVE) become positives on an LLM "yes": the
      heuristic saw a cue or a changed value but could not tie it to the subject.
    * Anything below BORDERLINE is never asked and never changed: an LLM error there
      would be a link with no evidence at all.
    """
    said = read_judgment(llm_answer)
    if said is None or verdict.confidence < BORDERLINE:
        return verdict
    why = _llm_reason(llm_answer)
    if verdict.confidence >= STRONG:
        note = "" if said else f"; kept although the LLM disagreed{why}"
        return replace(verdict, reason=verdict.reason + note, ask_llm=False)
    if said:
        return Verdict(True, max(verdict.confidence, 0.75), f"{verdict.reason}; LLM agrees{why}")
    return Verdict(False, verdict.confidence, f"{verdict.reason}; LLM says no{why}")


def _llm_reason(answer: Mapping[str, Any] | None) -> str:
    reason = answer.get("reason") if isinstance(answer, Mapping) else None
    return f" ({reason[:120]})" if isinstance(reason, str) and reason.strip() else ""
