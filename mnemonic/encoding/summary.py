"""Faithful extractive summaries: the first sentence (or command line) of a text.

Without an LLM the safest summary is one that never invents anything. The
result is always a prefix of the text's first sentence with whitespace
collapsed (plus ``…`` when it had to be cut), so it can be shown in lists and
used for lexical matching without misrepresenting the memory.

Rules, in order:

1. Blank text gives ``""``.
2. A Python traceback is summarised by its exception line
   (``ValueError: bad input``), the only line that says what went wrong.
3. If the first non-blank line looks like a shell command or code, it is the
   summary (sentence splitting would cut ``echo "Done. Next"`` in half).
4. Otherwise leading Markdown markers (``#``, ``-``, ``*``, ``>``, ``1.``) are
   dropped and the first sentence is taken from the first paragraph. A line
   break ends the sentence unless the next line is a lower-case continuation
   of a soft-wrapped line. Sentences end at ``.``, ``!``, ``?`` or ``…``
   followed by whitespace or the end, or at CJK ``。！？``. A ``.`` does not
   end a sentence after titles (``Mr.``, ``Dr.``, ``vs.``), initials and
   dotted abbreviations (``J.``, ``e.g.``, ``U.S.``), or after ``etc.``,
   ``approx.``, ``fig.`` and similar when a lower-case word or digit follows;
   an ellipsis followed by a lower-case word does not end it either.
   Decimals, versions, file names and URLs never qualify because no
   whitespace follows their dots.
5. Longer than ``max_chars``: cut at the last word boundary that fits and add
   ``…``; the result, ellipsis included, is at most ``max_chars`` long.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"

_WS_RE = re.compile(r"\s+")
_TRACEBACK_HEAD_RE = re.compile(r"Traceback \(most recent call last\):?")
# "KeyError: 'x'", "django.core.exceptions.ImproperlyConfigured: ...", "KeyboardInterrupt"
_EXCEPTION_LINE_RE = re.compile(r"[A-Za-z_][\w.]{0,200}(?::\s|:?$)")
_MARKDOWN_PREFIX_RE = re.compile(r"(?:#{1,6}|[-*+•]|>{1,3}|\d{1,3}[.)])\s+")
_SENTENCE_END_RE = re.compile(r"[.!?…]{1,10}[\"'”’)\]]{0,3}(?=\s|$)|[。！？]")
_LINE_END_PUNCT = frozenset(".!?:;…。！？")

# "ms" is deliberately absent: in developer notes it is milliseconds, not "Ms.".
_TITLES = frozenset({"mr", "mrs", "dr", "prof", "sr", "jr", "st", "mt", "vs", "cf"})
_ABBREVIATIONS_TEXT = """
etc approx inc incl ltd co corp no nos fig figs eq al dept est ca resp viz esp
"""
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())

_PROMPT_RE = re.compile(
    r"(?:\$|%|>>>|PS [^>\n]{0,200}>"
    r"|[\w.-]{1,64}@[\w.-]{1,64}(?::[^\s$#]{0,200})?[$#]"
    r"|\[[^\]\n]{1,200}\][$#])\s+"
)
_ENV_PREFIX_RE = re.compile(r"(?:[A-Z_][A-Z0-9_]{0,60}=\S{0,200}\s+){1,10}")
_SHELL_COMMANDS_TEXT = """
apt apt-get awk aws az brew bun cargo cat cd chmod chown clang cmake code cp
curl deno docker dotnet echo env export find gcc gcloud git go gradle grep
head helm java journalctl kill kubectl less ln ls make mkdir mnemonic mv mvn
mypy nano node npm npx pip pip3 pnpm poetry ps psql pytest python python3 rg
rm rsync ruff rustc scp sed source sqlite3 ssh sudo systemctl tail tar
terraform tmux touch uv vim wget which yarn
"""
_SHELL_COMMANDS = frozenset(_SHELL_COMMANDS_TEXT.split())
_PROSE_SECOND_WORDS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "their"}
    | {"it", "is", "are", "was", "were", "has", "had", "will", "would", "can", "should"}
)
_SHELL_SYNTAX_RE = re.compile(r"(?:^|\s)--?\w|[|&;<>`$=]|\S/|/\S|\w\.\w")
_CODE_LINE_RE = re.compile(
    r"(?:async\s+)?def\s+\w+\s*\("
    r"|class\s+\w+\s*[(:{<]"
    r"|class\s+\w+\s+(?:extends|implements)\b"
    r"|import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+){0,20};?$"
    r"|from\s+[\w.]+\s+import\s"
    r"|(?:const|let|var)\s+\w+\s*[:=]"
    r"|(?:pub\s+)?fn\s+\w+\s*[<(]"
    r"|function\s*\w*\s*\("
    r"|#include\b|#!/"
    r"|@\w+(?:\(|$)"
    r"|SELECT\s.{1,500}\sFROM\s|INSERT INTO\s|UPDATE\s+\w+\s+SET\s|DELETE FROM\s"
    r"|(?:CREATE|ALTER|DROP) (?:TABLE|INDEX|VIEW)\s"
    r"|(?:if|elif|while|for|with|except)\s.{0,500}:$|(?:else|try|finally):$"
    r"|.{0,500}[{;]$"
)


def extract_summary(text: str, max_chars: int = 200) -> str:
    """Return the first sentence of ``text``, at most ``max_chars`` long.

    See the module docstring for the rules. Never adds words that are not in
    the text; the only added character is the ``…`` of a cut sentence.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    lines = _Lines(text)
    first = lines.next_nonblank()
    if first is None:
        return ""
    stripped = first.strip()
    if _TRACEBACK_HEAD_RE.fullmatch(stripped):
        exception = _exception_line(lines)
        return _fit(_collapse(exception or stripped), max_chars)
    if looks_like_command_or_code(stripped):
        return _fit(_collapse(stripped), max_chars)
    paragraph = _paragraph(_strip_markdown(stripped), lines, budget=4 * max_chars + 200)
    return _fit(_first_sentence(paragraph), max_chars)


def looks_like_command_or_code(line: str) -> bool:
    """True if a single (stripped) line reads as a shell command or source code.

    Shell: a prompt (``$ ``, ``>>> ``, ``user@host$ ``), or a known command
    name followed by shell syntax (flags, pipes, paths, ``=``) or by at most two
    more words (``git status``, ``make all``). ``FOO=1`` prefixes and ``sudo``
    are skipped; a determiner, pronoun or auxiliary as second word means prose
    (``git is great``, ``find the bug in src/app.py``), as does a line ending
    in sentence punctuation right after a letter. Code:
    definition/import keywords (``def``, ``class X(``, ``from x import``,
    ``const x =``, ...), SQL statements, lower-case block headers ending in
    ``:`` (``if x:``), or a line ending in ``{`` or ``;``.
    """
    if _PROMPT_RE.match(line):
        return True
    if _CODE_LINE_RE.match(line):
        return True
    env = _ENV_PREFIX_RE.match(line)
    rest = line[env.end() :] if env else line
    tokens = rest.split()
    if not tokens or tokens[0] not in _SHELL_COMMANDS:
        return False
    if tokens[0] == "sudo" and len(tokens) > 1:
        tokens = tokens[1:]
    if line[-1] in ".?!" and line[-2:-1].isalpha():
        return False  # ends like an English sentence
    if len(tokens) > 1 and tokens[1].lower() in _PROSE_SECOND_WORDS:
        return False  # "find the bug in src/app.py", "cat is asleep"
    if _SHELL_SYNTAX_RE.search(rest):
        return True
    return len(tokens) <= 3  # "git status", "make all", "ls"


class _Lines:
    """Lazy line iterator, so a 100 KB paste costs only what the summary reads."""

    __slots__ = ("_pos", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0

    def next(self) -> str | None:
        if self._pos > len(self._text):
            return None
        end = self._text.find("\n", self._pos)
        if end < 0:
            end = len(self._text)
        line = self._text[self._pos : end].rstrip("\r")
        self._pos = end + 1
        return line

    def peek(self) -> str | None:
        saved = self._pos
        line = self.next()
        self._pos = saved
        return line

    def next_nonblank(self) -> str | None:
        while (line := self.next()) is not None:
            if line.strip():
                return line
        return None


def _collapse(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def _strip_markdown(line: str) -> str:
    match = _MARKDOWN_PREFIX_RE.match(line)
    if match and match.end() < len(line):
        return line[match.end() :]
    return line


def _exception_line(lines: _Lines) -> str | None:
    """First unindented ``Name: message`` (or bare ``Name``) line after the header.

    Frames are indented and the chaining notice ("During handling of ...")
    contains spaces before its colon, so neither matches.
    """
    while (line := lines.next()) is not None:
        if line[:1].isspace():
            continue
        if _EXCEPTION_LINE_RE.match(line):
            return line
    return None


def _paragraph(first: str, lines: _Lines, budget: int) -> str:
    """Join soft-wrapped continuation lines onto ``first`` (up to ``budget`` chars).

    A following line continues the sentence only if the current line does not
    end in sentence punctuation or a colon and the next line starts with a
    lower-case letter; a blank line always ends the paragraph.
    """
    parts = [first]
    size = len(first)
    current = first
    while size < budget:
        nxt = lines.peek()
        if nxt is None:
            break
        head = nxt.strip()
        tail = current.rstrip("\"'”’)] ")
        if not head or not head[0].islower() or (tail and tail[-1] in _LINE_END_PUNCT):
            break
        lines.next()
        parts.append(head)
        size += len(head) + 1
        current = head
    return _collapse(" ".join(parts))


def _first_sentence(paragraph: str) -> str:
    for match in _SENTENCE_END_RE.finditer(paragraph):
        if _is_sentence_end(paragraph, match.start(), match.end()):
            return paragraph[: match.end()]
    return paragraph


def _is_sentence_end(text: str, start: int, end: int) -> bool:
    """Decide whether terminal punctuation at ``text[start:end]`` ends a sentence."""
    if text[start] not in ".…":
        return True  # ! ? and CJK terminators are unambiguous enough
    following = text[end + 1 : end + 2]
    if end - start > 1 or text[start] == "…":
        return not following.islower()  # "Wait... what" continues; "done... Next" ends
    space = text.rfind(" ", 0, start)
    previous = text[space + 1 : start].lstrip("([\"'“‘").lower()
    if previous in _TITLES:
        return False  # "Mr. Smith", "A vs. B"
    if previous and all(len(p) == 1 and p.isalpha() for p in previous.split(".")):
        return False  # initials and dotted abbreviations: "J.", "e.g", "U.S"
    # "apples etc. are", "see fig. 3": an abbreviation followed by more sentence
    return previous not in _ABBREVIATIONS or not (following.islower() or following.isdigit())


def _fit(text: str, max_chars: int) -> str:
    """Cut ``text`` at a word boundary so that ``text + "…"`` fits ``max_chars``."""
    if len(text) <= max_chars:
        return text
    limit = max_chars - len(ELLIPSIS)
    if limit <= 0:
        return ELLIPSIS[:max_chars]
    cut = text[:limit]
    if text[limit] != " ":
        space = cut.rfind(" ")
        if space > 0:
            cut = cut[:space]
    cut = cut.rstrip(" ,;:-–—(/[{")
    if not cut:
        cut = text[:limit]
    return cut + ELLIPSIS
