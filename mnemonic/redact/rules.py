"""The rule table: one named, compiled pattern per kind of secret, plus the value checks.

Every pattern here uses bounded quantifiers only (``{m,n}``, ``?`` and their possessive
forms; never ``*`` or ``+``), so the work per match attempt is bounded by the pattern's
maximum width and a scan is linear in the input. A test parses each pattern and asserts
that its maximum width is finite and no larger than the engine's window overlap, which is
what lets the engine cut long input into overlapping windows without missing a match.
Measured elsewhere: plausible-looking unbounded patterns took over 90 s on one 100 KB line.

Bounded is not enough on its own: a pattern that scans its bound at every position of a
run (``eyJ`` + 1,024 token characters, retried at each ``eyJ`` of ``eyJaeyJaeyJa...``)
costs the input times the bound. So patterns start with a literal (the regex engine then
jumps between its occurrences), check the boundary before a token with a look-behind
placed *after* that literal (only the first of a run proceeds, see :func:`_glued_not`),
use possessive runs where giving characters back cannot help, and command rules scan each
command once (``within``). Case-insensitive keyword rules run on the lower-cased text
(``on_lower``), whose indexes match the original one for one; a case-insensitive first
character would disable the literal scan. A test repeats short units 5,000-20,000 times.

PEM private key blocks are not in the table: they span lines and can be long, so the
engine finds them with a dedicated linear scan (see :data:`PEM_BEGIN`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

# Priorities decide the kind of merged overlapping findings: the most specific rule wins.
VENDOR = 30
STRUCTURAL = 20
GENERIC = 10

# Minimum Shannon entropy (bits per character) for values of *_KEY/*_TOKEN/*_SECRET-style
# names. 3.5 needs at least 12 distinct characters, so words and short ids stay.
ENTROPY_THRESHOLD = 3.5

# How far a token may be extended past a bounded match when it keeps going (a token longer
# than the rule's bound is redacted whole instead of leaving its tail behind).
EXTEND_MAX = 4096

SEGMENT_MAX = 4096
"""The longest command a command rule (``within``) looks into."""

SEGMENT = re.compile(rf"(?:[^;|&\n\\]|\\[^\n]|\\\n){{0,{SEGMENT_MAX}}}")
"""The rest of a shell command: up to ``;``, ``|``, ``&`` or a newline not escaped by ``\\``."""

Check = Callable[[str, "re.Match[str]", int, int], bool]
"""``check(text, match, start, end)``: is ``text[start:end]`` (absolute indexes) a secret?"""


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret.

    ``triggers`` are lower-case substrings of which at least one must occur in the
    (lower-cased) window for the rule to run at all: most lines contain none, which is
    what keeps a typical history line in the low microseconds. ``groups`` name the capture
    groups holding the secret, the last groups of the pattern (the engine reads the one the
    match closed last); empty means the whole match. ``boundary`` rejects a command word
    glued to a letter or digit before it (``xmysql``). ``extend`` swallows further token
    characters after the match. ``check`` vets a candidate (placeholders are always
    skipped). ``rescan`` searches again from the start of a rejected value instead of
    after it, so a secret nested in a value that is not one itself (``key=a:password=x``)
    is still found, and the result does not depend on whether an earlier redaction
    shortened that value (idempotence). Values are at most 128 characters before their
    extension, so dense candidates (``key=key=key=...``) stay linear.

    A rule with ``within`` is a command rule: ``pattern`` finds the command word
    (``mysql``, ``curl``) and ``within`` finds the secret in the rest of that command, up to
    the next ``;``, ``|``, ``&`` or unescaped newline and at most :data:`SEGMENT_MAX`
    characters. Each command is scanned once, so a thousand ``mysql`` words in a row cost
    one pass, not a thousand look-aheads.
    """

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    priority: int
    groups: tuple[str, ...] = ()
    boundary: bool = False
    on_lower: bool = False
    extend: re.Pattern[str] | None = None
    check: Check | None = None
    within: re.Pattern[str] | None = None
    rescan: bool = False


# --------------------------------------------------------------------------- value checks

_PLACEHOLDER_WORDS = frozenset(
    {
        "",
        "-",
        "~",
        "test",
        "testing",
        "tests",
        "example",
        "sample",
        "dummy",
        "fake",
        "mock",
        "changeme",
        "changeit",
        "change_me",
        "change-me",
        "replace_me",
        "replaceme",
        "replace-me",
        "placeholder",
        "secret",
        "secrets",
        "password",
        "passwd",
        "pass",
        "pwd",
        "passphrase",
        "token",
        "key",
        "apikey",
        "api_key",
        "api-key",
        "credentials",
        "auth",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "redacted",
        "todo",
        "tbd",
        "fixme",
        "foo",
        "bar",
        "baz",
        "foobar",
        "value",
        "empty",
        "required",
        "optional",
        "hidden",
        "masked",
        "unset",
        "default",
    }
)

# Substrings that mark a stand-in wherever they occur (searched in the lower-cased value;
# one regex is three times faster than a loop of `in` tests).
_PLACEHOLDER_PARTS = re.compile(
    r"xxxx|\*\*\*|•••|\.\.\.|…|\{[{%]|example|change[-_]?me|replace[-_]?me|dummy|placeholder"
    r"|redacted|(?:^|[^a-z])your(?:[^a-z]|$)"
)
_PLACEHOLDER_PREFIXES = ("$", "my-", "my_", "some-", "some_", "the-", "the_")
_PLACEHOLDER_SUFFIXES = ("-here", "_here")
_PLACEHOLDER_HEAD = 64
_PLACEHOLDER_TAIL = 32


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is an obvious stand-in (``your-api-key``, ``${TOKEN}``, ``xxxx``).

    Placeholders fill documentation, templates and example configs; redacting them would
    only destroy useful context. A redaction marker also counts, which keeps redaction
    idempotent. Placeholders are short, so only the head and tail of a long value are
    examined: that keeps the cost per candidate constant however long the value is.
    """
    v = value.strip().strip("\"'`")
    if len(v) > _PLACEHOLDER_HEAD + _PLACEHOLDER_TAIL:
        v = v[:_PLACEHOLDER_HEAD] + " " + v[-_PLACEHOLDER_TAIL:]
    low = v.lower()
    if not low:
        return True
    if low in _PLACEHOLDER_WORDS or low == low[0] * len(low):  # also aaaa, 0000, ----
        return True
    if low.startswith(_PLACEHOLDER_PREFIXES) or low.endswith(_PLACEHOLDER_SUFFIXES):
        return True
    if low[0] == "%" and len(low) > 1 and (low[1].isalnum() or low[1] in "_("):
        return True  # %VAR% %(name)s
    if low[0] == "<" and "<" not in low[1:-1] and ">" not in low[1:-1]:
        return True  # <token>
    return _PLACEHOLDER_PARTS.search(low) is not None


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s character distribution (0.0 for empty)."""
    n = len(value)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


_CODE_WORDS = frozenset(
    {
        "str",
        "string",
        "bytes",
        "int",
        "bool",
        "any",
        "object",
        "optional",
        "secretstr",
        "self",
        "this",
        "cls",
        "await",
        "new",
        "lambda",
        "function",
        "async",
        "yield",
        "not",
        "return",
        "os",
        "env",
        "process",
        "getpass",
        "input",
        "read",
        "prompt",
        "field",
        "column",
        "config",
        "settings",
        "args",
        "kwargs",
        "options",
        "opts",
        "params",
        "request",
        "req",
        "ctx",
        "data",
    }
)
# self.token, settings.SECRET_KEY, process.env.API_KEY: a lower-case first part, like the
# objects code reads settings from (a random password with a dot rarely starts so).
_DOTTED_IDENT = re.compile(r"[a-z_]{1,30}(?:\.[A-Za-z_]\w{0,80}){1,10}")
_IDENT = re.compile(r"[A-Za-z_]\w{0,200}")
_WELL_KNOWN_ROOTS = (
    "/home/",
    "/users/",
    "/root/",
    "/etc/",
    "/var/",
    "/run/",
    "/tmp/",  # noqa: S108 - a prefix to recognise in a value, not a file we create
    "/opt/",
    "/usr/",
    "/srv/",
    "/mnt/",
    "/secrets/",
    "/data/",
    "/app/",
    "/workspace/",
)
_FILE_EXT = re.compile(r"\.(?:json|pem|key|txt|ya?ml|env|p12|pfx|crt|cer|conf|cfg|ini|toml)$")


def looks_like_path(value: str) -> bool:
    """A file path, not a secret: ``~/.ssh/id_rsa``, ``/run/secrets/db``, ``./key.pem``.

    Base64 secrets may start with ``/`` too, so a bare leading slash is not enough: the
    path must start at home or a relative dot, or begin with a well-known root directory,
    or name a hidden component or a config file extension.
    """
    v = value.lower()
    if v.startswith(("~/", "./", "../")):
        return True
    if not v.startswith("/"):
        return v.startswith(("c:\\", "c:/"))
    return v.startswith(_WELL_KNOWN_ROOTS) or "/." in v or _FILE_EXT.search(v) is not None


def looks_like_code(text: str, start: int, end: int) -> bool:
    """A bare (unquoted) value that is program text rather than a literal.

    ``token: str``, ``password=None``, ``secret = settings.SECRET``, ``key=os.environ[...]``
    or ``password=pw)`` in a call are references, not secrets.
    """
    value = text[start:end]
    if value.lower() in _CODE_WORDS:
        return True
    after = text[end : end + 1]
    if after in ("(", "["):
        return True
    if _DOTTED_IDENT.fullmatch(value):
        return True
    return after in (",", ")") and _IDENT.fullmatch(value) is not None


def _quoted(match: re.Match[str]) -> bool:
    return match.lastgroup in ("dq", "sq", "edq")


# --------------------------------------------------------------------------- token checks


def _looks_random(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """A generic ``sk-`` key must look machine-made: mixed character classes, high entropy.

    ``sk-`` also starts ordinary kebab-case words; the ``sk-proj-``/``sk-ant-`` forms are
    distinctive enough on their own.
    """
    value = text[start:end]
    if value.startswith(("sk-proj-", "sk-ant-", "sk-svcacct-", "sk-admin-")):
        return True
    body = value[3:]
    if not any(c.isdigit() for c in body):
        return _random_letters(body)
    classes = 1 + any(c.islower() for c in body) + any(c.isupper() for c in body)
    return classes >= 2 and shannon_entropy(body) >= 3.0


def _random_letters(body: str) -> bool:
    """A key body of letters only: one generated key in about 5,000 has no digit (48
    random letters and digits), and it is still a key. In random letters a quarter of
    neighbouring pairs are two capitals and one letter in eight is a small one between
    two capitals; a CamelCase name has one capital a word, so almost none of either, and
    its acronyms ("HTTPServer") no small letter alone (a kebab-case name has joiners and
    is no ``isalpha``)."""
    if len(body) < 32 or not body.isascii() or not body.isalpha():
        return False
    cases = "".join("U" if c.isupper() else "l" for c in body)
    capital_pairs = len(_CAPITAL_PAIR.findall(cases))
    lone_small = len(_LONE_SMALL.findall(cases))
    return capital_pairs >= len(body) // 10 and lone_small >= 2 and shannon_entropy(body) >= 4.0


_CAPITAL_PAIR = re.compile(r"(?=UU)")  # overlapping: "UUU" holds two
_LONE_SMALL = re.compile(r"(?=UlU)")


def _password_flag_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """A ``--password`` value, unless it is a path. Command lines hold literals, so no code
    heuristics apply here."""
    return not looks_like_path(text[start:end])


_KEY_VALUE_SPEC = re.compile(r"[a-z_]{1,20}=")


def _token_flag_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """A ``--token``/``--secret``/``--api-key`` value, unless it is a path or a spec.

    ``docker build --secret id=npmrc,src=...`` and ``--private-key ~/.ssh/id_rsa`` name
    where a secret lives, not the secret.
    """
    value = text[start:end]
    if looks_like_path(value):
        return False
    return _quoted(match) or _KEY_VALUE_SPEC.match(value) is None


def _aws_secret_name_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """``secret_access_key`` always; a bare ``secret_key`` only as ``aws_secret_key``."""
    if match.group("access") is not None:
        return True
    before = text[max(0, match.start() - 4) : match.start()].lower()
    return before.endswith(("aws_", "aws"))


# Secret words whose values are redacted whatever their entropy (see _assignment_ok).
_LITERAL_SUFFIXES = frozenset(
    {"password", "passwd", "pass", "pwd", "passphrase", "secret", "token"}
)
# Joined names whose secret word follows without a separator (apikey, clientsecret): the
# part before the secret word.
_JOINED_PREFIXES = (
    "api",
    "auth",
    "secret",
    "access",
    "private",
    "master",
    "signing",
    "refresh",
    "bearer",
    "client",
    "app",
    "db",
    "root",
    "admin",
    "user",
)
# Keys that are identifiers, not credentials: public keys, Idempotency-Key headers, cache,
# sort and database keys.
_NOT_SECRET_NAME = re.compile(
    r"public|publishable|idempotency|cache|sort|primary|partition|foreign|routing|shard|dedup"
)
# Words that start a sentence about where a password is, never a password themselves.
_PROSE_REFERRALS = frozenset(
    {"see", "ask", "use", "via", "from", "the", "same", "stored", "read", "check", "sent"}
)
_WORDY = re.compile(r"[a-z._/:\-]{1,1024}")
_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


def _name_before(text: str, suffix_start: int) -> str:
    """The identifier that ends at the matched suffix word, scanning back at most 128.

    A name never spans "--": ``--api-token`` is named ``api-token``, and a PEM footer's
    dashes (``-----END ... KEY-----token:``) are not part of the name that follows.
    """
    before = text[max(0, suffix_start - 128) : suffix_start]
    name = before[len(before.rstrip(_NAME_CHARS)) :]
    return name.rsplit("--", 1)[-1]


def _assignment_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """Decide whether an assignment to a secret-looking name holds a secret.

    The suffix must end a name and start a word of it: after a separator (``DB_PASSWORD``,
    ``app.secret``, ``api-key``), as a camel-case word (``apiKey``), as one of a few common
    joined names (``apikey``), or as the whole name (``password``).

    Policy, by name:

    * the last word is ``password``, ``passwd``, ``pass``, ``pwd``, ``passphrase``,
      ``secret`` or ``token`` (``password=``, ``DB_PASSWORD=``, ``client_secret:``,
      ``csrfToken``): any literal that is not a placeholder, code or a path, at least 3
      characters. People choose passwords, so their entropy is low by nature; an entropy bar
      would let nearly every real password through. The rule does not depend on whether
      the word is the whole name: what precedes it may itself be redacted text, and the
      decision must not change when it is (idempotence).
    * anything else (``*_KEY``, ``*_CREDENTIALS``, ``*_AUTH``): Shannon entropy of the
      value >= :data:`ENTROPY_THRESHOLD`, unless the value is only lower-case words and
      punctuation (``app.kubernetes.io/name``): machine-made secrets mix in digits or
      capitals.
    * names naming public material or identifiers (``PUBLIC_KEY``, ``Idempotency-Key``,
      ``cache_key``, ``sort_key``, ``primary_key``...) are skipped.
    """
    s0 = match.start("suffix")
    suffix = match.group("suffix")
    # separators alone are no part of a name: "-----token:" after a PEM footer, "--token="
    raw_prefix = _name_before(text, s0)
    prefix = raw_prefix.lstrip("_.-")
    if prefix:
        prev = prefix[-1]
        camel = text[s0].isupper() and (prev.islower() or prev.isdigit())
        if prev not in "_.-" and not camel and not prefix.lower().endswith(_JOINED_PREFIXES):
            return False
    value = text[start:end]
    if len(value) < 3:
        return False
    password_like = suffix in _LITERAL_SUFFIXES
    if not password_like and len(set(value)) < 12:
        # entropy <= log2(distinct characters): fewer than 12 never reach 3.5 bits
        return False
    if looks_like_path(value):
        return False
    if _quoted(match):
        if value[0].isspace():
            return False  # 'Password: ' ... : a prompt string, the quote closes it
        opener = text[s0 - len(raw_prefix) - 1 : s0 - len(raw_prefix)]
        if opener in ("'", '"') and opener not in match.group("nq") and text[start - 1] == opener:
            return False  # "Password: "); ... the name sits inside a string literal
    elif looks_like_code(text, start, end):
        return False
    name = (prefix + text[s0 : match.end("suffix")]).lower()
    if name.lstrip("_-.$@") == value.lower():
        return False
    if password_like:
        # "Password: see the vault entry": a sentence, not a password
        return _quoted(match) or value.lower() not in _PROSE_REFERRALS
    if _NOT_SECRET_NAME.search(name) or _WORDY.fullmatch(value):
        return False  # cache_key=...; app.kubernetes.io/name: names, not machine secrets
    return shannon_entropy(value) >= ENTROPY_THRESHOLD


# ------------------------------------------------------------------------- prose checks

# Words a password never is in prose, though they hold a digit or a symbol.
_PROSE_NOT = frozenset({"1password", "e.g.", "i.e.", "etc.", "n/a"})
# Parts of a value that name a technique, not a secret ("sha256-hashed", "aes-256").
_TECH_PARTS = frozenset(
    {
        "md5",
        "sha",
        "sha1",
        "sha2",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "bcrypt",
        "scrypt",
        "argon2",
        "argon2i",
        "argon2d",
        "argon2id",
        "pbkdf2",
        "base64",
        "utf",
        "utf8",
        "aes",
        "aes128",
        "aes256",
        "rsa",
        "2fa",
        "mfa",
        "totp",
        "hotp",
        "hmac",
        "oauth2",
        "1password",
    }
)
_VALUE_PARTS = re.compile(r"[a-z0-9]{1,128}")
# Words, hyphenated or dotted words, contractions: "required", "write-only", "don't".
_WORDS_ONLY = re.compile(r"[A-Za-z]{1,64}(?:['’.\-][A-Za-z]{1,64}){0,8}\.?")
# A length or a size: "16-character", "8+", "12chars", "256-bit".
_QUANTITY = re.compile(
    r"\d{1,4}[+\-]?(?:chars?|characters?|digits?|letters?|bytes?|bits?|words?|symbols?"
    r"|long|min|max|days?|hours?|months?)?"
)
# getpass(), os.environ["X"], settings.DATABASES["default"]: code reading a value
_CODE_REF = re.compile(r"[A-Za-z_][\w.]{0,80}[(\[]")
# A passphrase made of words: "correct-horse-battery-staple", "correct horse battery staple".
_PASSPHRASE_WORDS = re.compile(r"[A-Za-z]{2,24}(?:[ \-_.][A-Za-z]{2,24}){2,11}")
# Names whose "NAME: value" and "NAME=value" the assignment rule already judges.
_ASSIGNED_WORDS = frozenset(
    {"password", "passwd", "passphrase", "pwd", "credential", "credentials"}
)


def looks_like_credential(value: str, *, pin: bool = False) -> bool:
    """Whether a word of prose that follows "the password is" looks like a credential.

    Prose says "the password is required", "is stored in vault", "is set via $DB_PASS",
    "is 16-character", "is sha256-hashed": words, references and quantities. A credential
    someone types into a note has a digit or a symbol (``Tr0ub4dor&3xyz``, ``hunter2x``)
    and at least 6 characters; a PIN (``pin``) may be 4 to 12 digits. A password made of
    letters only is let through, mixed case included: it cannot be told from a word or a
    product name ("the password is KeePass-generated").
    """
    if pin and value.isdigit():
        return 4 <= len(value) <= 12
    if len(value) < 6 or value[0] in "{[(" or "://" in value or looks_like_path(value):
        return False
    if _WORDS_ONLY.fullmatch(value) or _QUANTITY.fullmatch(value.lower()):
        return False
    if _DOTTED_IDENT.fullmatch(value) or _CODE_REF.match(value):
        return False  # settings.password, getpass(): code, not a literal
    low = value.lower()
    if low in _PROSE_NOT or any(p in _TECH_PARTS for p in _VALUE_PARTS.findall(low)):
        return False
    return any(c.isdigit() or not (c.isalnum() or c.isspace()) for c in value)


def _prose_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """A credential stated in prose: "db password is: X", "pw: X", "creds are bob:X".

    "password: X" and "password=X" without a "for ..." are left to the assignment rule,
    which judges them as names (code heuristics included); this rule takes what it cannot
    see: a verb ("is", "was changed to"), a target ("password for prod is"), and words it
    does not know ("pw", "passcode", "creds"). A bare space ("passphrase X") is allowed
    only after passphrase and passcode (the pattern ensures it) and needs a
    credential-looking value like every other form. A passphrase stated with a verb may
    be three or more words (``correct-horse-battery-staple``).
    """
    word = match.group("w")
    value = text[start:end]
    if match.group("op") is not None and match.group("target") is None and word in _ASSIGNED_WORDS:
        return False
    connected = match.group("verb") is not None or match.group("op") is not None
    if word == "passphrase" and connected and _PASSPHRASE_WORDS.fullmatch(value):
        return True
    return looks_like_credential(value.strip(), pin=word == "passcode")


# --------------------------------------------------------------------------- patterns


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.VERBOSE)


# A type annotation between a name and "=" (password: Optional[str] = None), read
# possessively so a "name:" without "=" after it fails in a few steps. The operator group is
# atomic: once "name: type =" is read, the value must follow it; falling back to "name:"
# with the type as the value would redact "str" once the real value had been redacted.
_TYPE = r"[a-z_][a-z0-9_.]{0,40}+(?:\[[a-z0-9_.,\ |\[\]]{0,60}\])?"
# A long option's "--" at the start of a word, then up to three words before the last one
# (--db-password, --client-secret); --no-password is a switch, not a value.
_OPTION = r"""--(?<![^\s"'(]--)(?!no-)(?:[a-z0-9]{1,20}-){0,3}"""
# Type names and keywords that follow "token:" or "password =" in code; rejected inside the
# pattern (cheap) rather than by looks_like_code (a Python call per candidate).
_NOT_CODE_WORD = (
    r"(?!(?:str|string|bytes|int|bool|any|none|null|nil|true|false|undefined|optional"
    r"|secretstr|self|this|await|new|lambda|function)(?![a-z0-9_]))"
)
# A secret value on a command line: quoted (the inside is the secret) or bare.
# A bare value never starts with "-": that is the next option (`pg_dump --password -f x`).
_CLI_VALUE = (
    r"""(?:"(?P<dq>[^"\n]{1,512})|'(?P<sq>[^'\n]{1,512})"""
    r"""|(?P<bare>[^\s"'<>|&;`\-][^\s"'<>|&;`]{0,511}))"""
)
_CLI_GROUPS = ("dq", "sq", "bare")
_VALUE_GROUPS = ("edq", "dq", "sq", "bare")


# Prose: "<word> [for <up to 3 words>] <verb or operator> <value>", or "passphrase <value>".
# The words end a word and do not continue one (1password, OLDPWD); the look-behinds come
# after the literal so the scan keeps jumping between "p"s.
_PROSE_TARGET = r"(?P<target>[ \t]{1,4}(?:for|of|on|to|at)(?:[ \t]{1,4}[^\s:=]{1,64}+){1,3}?)?"
_PROSE_VERB = (
    r"(?:(?:is|was|has\ been)\ (?:now\ |still\ )?(?:set|changed|reset|updated)\ to"
    r"|(?:is|was|are)\ (?:now|still)|is|was|are|remains|became|becomes|will\ be"
    r"|should\ be|(?:set|changed|reset|updated)\ to)(?![a-z0-9_])"
)
_PROSE_CONNECT = (
    r"(?:"
    + _PROSE_TARGET
    + r"(?:[ \t]{1,4}(?P<verb>"
    + _PROSE_VERB
    + r")[ \t]{0,4}:?|[ \t]{0,4}(?P<op>:=|=>|->|:(?!:)|=(?!=)))"
    r"|(?:(?<=passphrase)|(?<=passcode))[ \t])[ \t]{0,4}"
)
# Quoted (the inside, spaces allowed) or a run up to white space without trailing
# punctuation ("is hunter2x." keeps its full stop); a final "!" stays in: passwords end
# with one far more often than a note shouts.
_PROSE_VALUE = (
    r"""(?:"(?P<dq>[^"\n]{1,128})"|'(?P<sq>[^'\n]{1,128})'|`(?P<bq>[^`\n]{1,128})`"""
    r"""|(?P<v>[^\s"'`](?:[^\s]{0,126}[^\s.,;:?)\]}"'`])?))"""
)
_PROSE_GROUPS = ("dq", "sq", "bq", "v")

_TOKEN_TAIL = re.compile(rf"[A-Za-z0-9_\-]{{1,{EXTEND_MAX}}}")


def _glued_not(literal: str) -> str:
    """``literal``, not glued to a letter or digit before it (``xghp_...`` is no token).

    The check is a look-behind placed *after* the literal, so the pattern still starts with
    the literal and the scan jumps between its occurrences; and inside a long run such as
    ``ghp_ghp_ghp_...`` only the first occurrence goes on to scan the token body. A JSON or
    C escape (``\\n``, ``\\t``, ``\\r``) right before counts as a boundary.
    """
    e = re.escape(literal)
    return rf"{e}(?:(?<![A-Za-z0-9]{e})|(?<=\\[ntr]{e}))"


RULES: tuple[Rule, ...] = (
    Rule(
        "aws_access_key_id",
        _rx(_glued_not("A") + r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
        ("akia", "asia", "abia", "acca", "a3t"),
        VENDOR,
    ),
    Rule(
        "aws_secret_access_key",
        # Anchored on "secret" (a literal prefix scans fast); secret_key needs "aws" before.
        _rx(
            r"""secret_?(?P<access>access_?)?key
                \\{0,2}["']?[ \t]{0,4}(?::=|=>|=|:)[ \t]{0,4}\\{0,2}["']?
                (?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"""
        ),
        ("secret_access", "secretaccess", "aws_secret", "awssecret"),
        VENDOR,
        groups=("v",),
        on_lower=True,
        check=_aws_secret_name_ok,
    ),
    Rule(
        "github_token",
        _rx(_glued_not("gh") + r"[pousr]_[A-Za-z0-9]{36,251}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "github_token",
        _rx(_glued_not("github_pat_") + r"[A-Za-z0-9_]{50,251}"),
        ("github_pat_",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "gitlab_token",
        _rx(_glued_not("gl") + r"(?:pat|ptt|dt|rt)-[A-Za-z0-9_\-.]{20,255}"),
        ("glpat-", "glptt-", "gldt-", "glrt-"),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "slack_webhook",
        _rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,250}"),
        ("hooks.slack.com",),
        VENDOR + 1,  # a webhook URL may contain other token-like text; the URL is the secret
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "slack_token",
        _rx(_glued_not("xox") + r"(?:[abprs]|e\.xox[bp]|e)-[A-Za-z0-9\-]{10,250}"),
        ("xox",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "slack_token",
        _rx(_glued_not("xapp-") + r"[0-9]-[A-Za-z0-9\-]{10,250}"),
        ("xapp-",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    # Stripe: one rule per prefix, so each scan can jump between literal prefixes.
    Rule(
        "stripe_key",
        _rx(_glued_not("sk_") + r"(?:live|test)_[A-Za-z0-9]{10,247}"),
        ("sk_live_", "sk_test_"),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "stripe_key",
        _rx(_glued_not("rk_") + r"(?:live|test)_[A-Za-z0-9]{10,247}"),
        ("rk_live_", "rk_test_"),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "stripe_key",
        _rx(_glued_not("whsec_") + r"[A-Za-z0-9]{24,128}"),
        ("whsec_",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "anthropic_key",
        _rx(_glued_not("sk-ant-") + r"[A-Za-z0-9_\-]{20,400}"),
        ("sk-ant-",),
        VENDOR + 1,  # more specific than the generic sk- form below
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "openai_key",
        _rx(_glued_not("sk-") + r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,400}"),
        ("sk-",),
        VENDOR,
        extend=_TOKEN_TAIL,
        check=_looks_random,
    ),
    Rule(
        "google_api_key",
        _rx(_glued_not("AIza") + r"[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        ("aiza",),
        VENDOR,
    ),
    Rule(
        "npm_token",
        _rx(_glued_not("npm_") + r"[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        ("npm_",),
        VENDOR,
    ),
    Rule(
        "pypi_token",
        _rx(_glued_not("pypi-AgE") + r"[A-Za-z0-9_\-]{50,2000}"),
        ("pypi-age",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "jwt",
        # Possessive runs: the segment classes exclude the "." that ends them, so giving
        # characters back could never help, and a long run fails in one pass.
        _rx(
            _glued_not("eyJ")
            + r"[A-Za-z0-9_\-]{5,1024}+\.[A-Za-z0-9_\-]{5,8192}+\.[A-Za-z0-9_\-]{0,1024}+"
        ),
        ("eyj",),
        VENDOR,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "auth_header",
        _rx(
            r"""authorization\\{0,2}["']?[ \t]{0,4}[:=][ \t]{0,4}\\{0,2}["']?[ \t]{0,4}
                (?:bearer|basic|token|bot)[ \t]{1,4}
                (?P<v>[A-Za-z0-9._~+/=\-:]{1,4096})"""
        ),
        ("authorization",),
        STRUCTURAL,
        groups=("v",),
        on_lower=True,
    ),
    Rule(
        "url_password",
        # userinfo ends at the *last* @ before the host, so a raw @ in a password is kept
        # inside the redaction.
        _rx(r"""://(?P<user>[^\s:/?#@\[\]"'<>]{0,256}):(?P<v>[^\s/?"'<>]{1,256})@"""),
        ("://",),
        STRUCTURAL,
        groups=("v",),
    ),
    Rule(
        "password_flag",
        _rx(
            _OPTION + r"(?:password|passwd|pass|pwd|passphrase)"
            r"(?:=|[ \t]{1,8})" + _CLI_VALUE
        ),
        ("--",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        check=_password_flag_ok,
    ),
    Rule(
        "token_flag",
        _rx(
            _OPTION + r"(?:token|api-?key|secret|secret-key|access-key|private-key|client-secret)"
            r"(?:=|[ \t]{1,8})" + _CLI_VALUE
        ),
        ("--",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        check=_token_flag_ok,
    ),
    Rule(
        "password_flag",
        # mysql -p<pw>: only attached (a lone -p prompts) and only for the MySQL clients.
        _rx(
            r"m(?:ysql(?:dump|admin|import|check|show|pump|sh|binlog)?|ariadb(?:-dump)?)"
            r"(?=[ \t])"
        ),
        ("mysql", "mariadb"),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        boundary=True,
        within=_rx(r"[ \t]-p" + _CLI_VALUE),
    ),
    Rule(
        "password_flag",
        # sshpass [-f file|-d fd|-P prompt|-e|-v]... -p <pw>: only its own options come
        # before -p (the wrapped command's -p is ssh's port). Possessive runs keep a failed
        # attempt to one pass over the options.
        _rx(
            r"sshpass(?:[ \t]{1,8}(?:-[fdP][ \t]{0,8}[^\s]{1,256}+|-[evhV]|--[a-z\-]{1,30}+))"
            r"{0,4}[ \t]{1,8}-p[ \t]{0,8}" + _CLI_VALUE
        ),
        ("sshpass",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        boundary=True,
    ),
    Rule(
        "password_flag",
        # docker login ... -p <pw> (--password is the generic flag rule's). Anchored on
        # "login" with the client's name in look-behinds, so the scan keeps a literal prefix.
        _rx(
            r"login(?:(?<=docker\ login)|(?<=podman\ login)|(?<=nerdctl\ login)"
            r"|(?<=buildah\ login)|(?<=skopeo\ login)|(?<=registry\ login))(?=[ \t])"
        ),
        ("login",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        within=_rx(r"[ \t]-p(?:=|[ \t]{1,8})?" + _CLI_VALUE),
    ),
    Rule(
        "password_flag",
        # openssl -passin/-passout/-pass pass:<pw>
        _rx(r"-pass(?:in|out)?[ \t]{1,8}pass:" + _CLI_VALUE),
        ("pass:",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
    ),
    Rule(
        "basic_auth",
        # curl -u user:pass / --user user:pass / -U (proxy); only the password goes.
        _rx(r"curl(?=[ \t])"),
        ("curl",),
        STRUCTURAL,
        groups=("v",),
        boundary=True,
        within=_rx(
            r"""[ \t](?:-u|-U|--user|--proxy-user)(?:=|[ \t]{1,8})?["']?"""
            r"""(?P<user>[^\s:"']{0,256}):(?P<v>[^\s"']{1,256})"""
        ),
    ),
    Rule(
        "secret_assignment",
        # NAME=value, export NAME=value, NAME: value, "name": "value", name := value,
        # name: type = value. Anchored on the secret word (lower-cased text) and checked
        # backwards for the rest of the name, see _assignment_ok.
        _rx(
            # the words are factored by first letter: the scan rejects a candidate after one
            # comparison instead of trying eleven alternatives
            r"""(?P<suffix>p(?:ass(?:phrase|word|wd)?|wd)|c(?:redentials?)|s(?:ecret)|t(?:oken)
                         |k(?:ey)|a(?:uth))s?(?![a-z0-9_\-])
                (?P<nq>\\{0,2}["']?)[ \t]{0,4}
                (?>=>|=(?!=)|:=|:(?!:)(?:[ \t]{0,4}+"""
            + _TYPE
            + r"""(?:[ \t]{0,4}+\|[ \t]{0,4}+"""
            + _TYPE
            + r"""){0,3}+[ \t]{0,4}+=(?!=))?+)
                [ \t]{0,4}
                (?:\\"(?P<edq>[^"\\\n]{3,1024})
                 |"(?P<dq>[^"\n]{3,1024})
                 |'(?P<sq>[^'\n]{3,1024})
                 |"""
            + _NOT_CODE_WORD
            # A bare value never ends with ":" (``token: password: x`` is a nested key)
            # unless the run hit its bound: failing there would cost a full-length scan per
            # candidate on input such as "key:key:key:...", where the match skips the run.
            + r"""(?P<bare>[^\s"'`,;&|<>(){}\[\]\-][^\s"'`,;&|<>(){}\[\]]{2,127}+
                    (?:(?<!:)|(?=[^\s"'`,;&|<>(){}\[\]]))))"""
        ),
        ("key", "token", "secret", "pass", "pwd", "credential", "auth"),
        GENERIC,
        groups=_VALUE_GROUPS,
        on_lower=True,
        check=_assignment_ok,
        extend=re.compile(rf"[^\s\"'`,;&|<>(){{}}\[\]]{{1,{EXTEND_MAX}}}"),
        rescan=True,
    ),
    Rule(
        "password_prose",
        _rx(
            r"(?P<w>p(?:assword(?<![a-z0-9]password)|asswd(?<![a-z0-9]passwd)"
            r"|assphrase(?<![a-z0-9]passphrase)|asscode(?<![a-z0-9]passcode)"
            r"|w(?<![a-z0-9]pw)d?))(?![a-z0-9_])" + _PROSE_CONNECT + _PROSE_VALUE
        ),
        ("pass", "pw"),
        GENERIC - 1,  # where it meets the assignment rule, the finding is an assignment
        groups=_PROSE_GROUPS,
        on_lower=True,
        check=_prose_ok,
        rescan=True,
    ),
    Rule(
        "password_prose",
        # "creds are bob:X", "credentials for staging: bob:X"
        _rx(
            r"(?P<w>c(?:reds(?<![a-z0-9]creds)|redential(?<![a-z0-9]credential)s?))"
            r"(?![a-z0-9_])" + _PROSE_CONNECT + _PROSE_VALUE
        ),
        ("cred",),
        GENERIC - 1,
        groups=_PROSE_GROUPS,
        on_lower=True,
        check=_prose_ok,
        rescan=True,
    ),
)
"""Every in-place rule, in no particular order (overlaps are merged by priority)."""

FIELD_KIND = "secret_key"
"""The kind of a JSON value replaced whole because its key names a secret
(``{"password": ...}``, see :mod:`mnemonic.redact.keys`); text redaction never reports it."""

KINDS: frozenset[str] = frozenset({r.kind for r in RULES} | {"private_key", FIELD_KIND})
"""Every kind a marker can have: the findings of text redaction, and :data:`FIELD_KIND`."""

# ----------------------------------------------------------------------- PEM private keys

PEM_BEGIN = re.compile(r"-----BEGIN[ ](?:[A-Z0-9]{1,20}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----")
"""The header of a PEM/OpenSSH/PGP private key block."""
PEM_END = re.compile(r"-----END[ ](?:[A-Z0-9]{1,20}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----")
"""The footer that closes a block."""
PEM_MAX_CHARS = 32_768
"""The longest block searched for its END line; a block with no END within this many
characters is redacted up to here (or to the end of the input). The largest common key,
an RSA 16384-bit PKCS#8 PEM, is about 12.5 KB."""
