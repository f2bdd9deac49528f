"""The rule table: one named, compiled pattern per kind of secret, plus the value checks.

Every pattern here uses bounded quantifiers only (``{m,n}``, ``?``; never ``*`` or ``+``),
so the work per match attempt is bounded by the pattern's maximum width and a scan is
linear in the input. A test parses each pattern and asserts that its maximum width is
finite and no larger than the engine's window overlap, which is what lets the engine cut
long input into overlapping windows without missing a match.

Patterns avoid a leading look-behind or a case-insensitive first character: either one
disables the regex engine's literal-prefix scan and made a 1 MB input several times
slower. Word boundaries before a token are checked in Python instead (``boundary``), and
case-insensitive keyword rules run on the lower-cased text (``on_lower``), whose indexes
match the original one for one.

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

Check = Callable[[str, "re.Match[str]", int, int], bool]
"""``check(text, match, start, end)``: is ``text[start:end]`` (absolute indexes) a secret?"""


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret.

    ``triggers`` are lower-case substrings of which at least one must occur in the
    (lower-cased) window for the rule to run at all: most lines contain none, which is
    what keeps a typical history line in the low microseconds. ``groups`` name the capture
    groups holding the secret (the first one that took part in the match wins); empty means
    the whole match. ``boundary`` rejects a match whose first character follows a letter or
    digit (``xghp_...`` is not a token). ``extend`` swallows further token characters after
    the match.
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

# Substrings that mark a stand-in wherever they occur (compared lower-cased).
_PLACEHOLDER_PARTS = (
    "xxxx",
    "***",
    "•••",
    "...",
    "…",
    "{{",
    "{%",
    "example",
    "changeme",
    "change_me",
    "change-me",
    "replaceme",
    "replace_me",
    "replace-me",
    "dummy",
    "placeholder",
    "redacted",
)
_PLACEHOLDER_PREFIXES = ("$", "my-", "my_", "some-", "some_", "the-", "the_")
_PLACEHOLDER_SUFFIXES = ("-here", "_here")
_YOUR_WORD = re.compile(r"(?:^|[^a-z])your(?:[^a-z]|$)")
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
    if low in _PLACEHOLDER_WORDS or len(set(low)) == 1:  # also aaaa, 0000, ----
        return True
    if low.startswith(_PLACEHOLDER_PREFIXES) or low.endswith(_PLACEHOLDER_SUFFIXES):
        return True
    if low[0] == "%" and len(low) > 1 and (low[1].isalnum() or low[1] in "_("):
        return True  # %VAR% %(name)s
    if low[0] == "<" and "<" not in low[1:-1] and ">" not in low[1:-1]:
        return True  # <token>
    if any(part in low for part in _PLACEHOLDER_PARTS):
        return True
    return "your" in low and _YOUR_WORD.search(low) is not None


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
    "/tmp/",
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
    classes = (
        any(c.isdigit() for c in body)
        + any(c.islower() for c in body)
        + any(c.isupper() for c in body)
    )
    return classes >= 2 and any(c.isdigit() for c in body) and shannon_entropy(body) >= 3.0


def _flag_value_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """A ``--token``/``--password`` value, unless it is a path or a ``key=value`` spec.

    Command lines hold literals, so no code heuristics apply here.

    ``docker build --secret id=npmrc,src=...`` and ``--private-key ~/.ssh/id_rsa`` name
    where a secret lives, not the secret.
    """
    value = text[start:end]
    if looks_like_path(value):
        return False
    return _quoted(match) or re.match(r"[a-z_]{1,20}=", value) is None


def _aws_secret_name_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """``secret_access_key`` always; a bare ``secret_key`` only as ``aws_secret_key``."""
    if match.group("access") is not None:
        return True
    before = text[max(0, match.start() - 4) : match.start()].lower()
    return before.endswith(("aws_", "aws"))


_REGISTRY_CLI = re.compile(r"(?:docker|podman|nerdctl|buildah|skopeo|helm[ \t]{1,8}registry)[ \t]{1,8}\Z")


def _registry_login(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """``login`` must be the subcommand of a container registry client."""
    return _REGISTRY_CLI.search(text, max(0, match.start() - 40), match.start()) is not None


_PASSWORD_SUFFIXES = frozenset({"password", "passwd", "pass", "pwd", "passphrase"})
_STRONG_EXACT = frozenset({"secret", "token"})
_JOINED_NAMES = (
    "apikey",
    "authkey",
    "secretkey",
    "accesskey",
    "privatekey",
    "masterkey",
    "signingkey",
    "apitoken",
    "authtoken",
    "accesstoken",
    "refreshtoken",
    "bearertoken",
    "apisecret",
    "clientsecret",
    "appsecret",
    "dbpass",
    "dbpassword",
    "rootpassword",
    "adminpassword",
    "userpassword",
)
# Keys that are identifiers, not credentials: public keys, Idempotency-Key headers, cache,
# sort and database keys.
_NOT_SECRET_NAME_WORDS = (
    "public",
    "publishable",
    "idempotency",
    "cache",
    "sort",
    "primary",
    "partition",
    "foreign",
    "routing",
    "shard",
    "dedup",
)
_WORDY = re.compile(r"[a-z._/:\-]{1,1024}")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_before(text: str, suffix_start: int) -> str:
    """The identifier that ends at the matched suffix word, scanning back at most 128."""
    i = suffix_start
    stop = max(0, suffix_start - 128)
    while i > stop and text[i - 1] in _NAME_CHARS:
        i -= 1
    return text[i:suffix_start]


def _assignment_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """Decide whether an assignment to a secret-looking name holds a secret.

    The suffix must end a name and start a word of it: after a separator (``DB_PASSWORD``,
    ``app.secret``, ``api-key``), as a camel-case word (``apiKey``), as one of a few common
    joined names (``apikey``), or as the whole name (``password``).

    Policy, by name:

    * password-like (``password``, ``passwd``, ``pass``, ``pwd``, ``passphrase``, as the
      whole name or its last word): any literal that is not a placeholder, code or a path,
      at least 3 characters. People choose passwords, so their entropy is low by nature;
      an entropy bar would let nearly every real password through.
    * exactly ``secret`` or ``token``: same as password-like.
    * anything else (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_CREDENTIALS``, ``*_AUTH``):
      Shannon entropy of the value >= :data:`ENTROPY_THRESHOLD`, unless the value is only
      lower-case words and punctuation (``app.kubernetes.io/name``): machine-made secrets
      mix in digits or capitals.
    * names naming public material or identifiers (``PUBLIC_KEY``, ``Idempotency-Key``,
      ``cache_key``, ``sort_key``, ``primary_key``...) are skipped.
    """
    s0 = match.start("suffix")
    suffix = match.group("suffix")
    prefix = _name_before(text, s0)
    name = (prefix + text[s0 : match.end("suffix")]).lower()
    if prefix:
        prev = prefix[-1]
        first = text[s0]
        joined = name.endswith(_JOINED_NAMES)
        camel = first.isupper() and (prev.islower() or prev.isdigit())
        if prev not in "_.-" and not camel and not joined:
            return False
    value = text[start:end]
    if len(value) < 3 or looks_like_path(value):
        return False
    if _quoted(match):
        if value[0].isspace():
            return False  # 'Password: ' ... : a prompt string, the quote closes it
        opener = text[s0 - len(prefix) - 1 : s0 - len(prefix)]
        if opener in ("'", '"') and opener not in match.group("nq") and text[start - 1] == opener:
            return False  # "Password: "); ... the name sits inside a string literal
    elif looks_like_code(text, start, end):
        return False
    if name.lstrip("_-.$@").lower() == value.lower():
        return False
    exact = not prefix
    if suffix in _PASSWORD_SUFFIXES or (exact and suffix in _STRONG_EXACT):
        return True
    if any(word in name for word in _NOT_SECRET_NAME_WORDS):
        return False
    if _WORDY.fullmatch(value):
        return False  # app.kubernetes.io/name, created_at: names, not machine secrets
    return shannon_entropy(value) >= ENTROPY_THRESHOLD


# --------------------------------------------------------------------------- patterns


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.VERBOSE)


# A gap between command-line words: blanks, optionally a backslash line continuation.
_GAP = r"[ \t]{1,8}(?:\\\r?\n[ \t]{0,8})?"
# One command-line word, not crossing a command separator.
_WORD = r"[^\s;|&]{1,512}"
# A secret value on a command line: quoted (the inside is the secret) or bare.
# A bare value never starts with "-": that is the next option (`pg_dump --password -f x`).
_CLI_VALUE = (
    r"""(?:"(?P<dq>[^"\n]{1,512})|'(?P<sq>[^'\n]{1,512})"""
    r"""|(?P<bare>[^\s"'<>|&;`\-][^\s"'<>|&;`]{0,511}))"""
)
_CLI_GROUPS = ("dq", "sq", "bare")
_VALUE_GROUPS = ("edq", "dq", "sq", "bare")

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]{1,%d}" % EXTEND_MAX)
_B64URL_TAIL = _TOKEN_TAIL

RULES: tuple[Rule, ...] = (
    Rule(
        "aws_access_key_id",
        _rx(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
        ("akia", "asia", "abia", "acca", "a3t"),
        VENDOR,
        boundary=True,
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
        _rx(r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,251}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "gitlab_token",
        _rx(r"gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_\-.]{20,255}"),
        ("glpat-", "glptt-", "gldt-", "glrt-"),
        VENDOR,
        boundary=True,
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
        _rx(r"xox(?:[abprs]|e\.xox[bp]|e)-[A-Za-z0-9\-]{10,250}|xapp-[0-9]-[A-Za-z0-9\-]{10,250}"),
        ("xox", "xapp-"),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    # Stripe: one rule per prefix, so each scan can jump between literal prefixes.
    Rule(
        "stripe_key",
        _rx(r"sk_(?:live|test)_[A-Za-z0-9]{10,247}"),
        ("sk_live_", "sk_test_"),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "stripe_key",
        _rx(r"rk_(?:live|test)_[A-Za-z0-9]{10,247}"),
        ("rk_live_", "rk_test_"),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "stripe_key",
        _rx(r"whsec_[A-Za-z0-9]{24,128}"),
        ("whsec_",),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "anthropic_key",
        _rx(r"sk-ant-[A-Za-z0-9_\-]{20,400}"),
        ("sk-ant-",),
        VENDOR + 1,  # more specific than the generic sk- form below
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "openai_key",
        _rx(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,400}"),
        ("sk-",),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
        check=_looks_random,
    ),
    Rule(
        "google_api_key",
        _rx(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
        ("aiza",),
        VENDOR,
        boundary=True,
    ),
    Rule(
        "npm_token",
        _rx(r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        ("npm_",),
        VENDOR,
        boundary=True,
    ),
    Rule(
        "pypi_token",
        _rx(r"pypi-AgE[A-Za-z0-9_\-]{50,2000}"),
        ("pypi-age",),
        VENDOR,
        boundary=True,
        extend=_TOKEN_TAIL,
    ),
    Rule(
        "jwt",
        _rx(r"eyJ[A-Za-z0-9_\-]{5,1024}\.[A-Za-z0-9_\-]{5,8192}\.[A-Za-z0-9_\-]{0,1024}"),
        ("eyj",),
        VENDOR,
        boundary=True,
        extend=_B64URL_TAIL,
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
            r"--(?!no-)(?:[a-z0-9]{1,20}-){0,3}(?:password|passwd|pass|pwd|passphrase)"
            r"(?:=|[ \t]{1,8})" + _CLI_VALUE
        ),
        ("--",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        check=_flag_value_ok,
    ),
    Rule(
        "token_flag",
        _rx(
            r"--(?!no-)(?:[a-z0-9]{1,20}-){0,3}"
            r"(?:token|api-?key|secret|secret-key|access-key|private-key|client-secret)"
            r"(?:=|[ \t]{1,8})" + _CLI_VALUE
        ),
        ("--",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        check=_flag_value_ok,
    ),
    Rule(
        "password_flag",
        # mysql -p<pw>: only attached (a lone -p prompts) and only for the MySQL clients.
        _rx(
            r"m(?:ysql(?:dump|admin|import|check|show|pump|sh|binlog)?|ariadb(?:-dump)?)"
            r"(?:" + _GAP + _WORD + r"){0,24}?" + _GAP + r"-p" + _CLI_VALUE
        ),
        ("mysql", "mariadb"),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        boundary=True,
    ),
    Rule(
        "password_flag",
        # sshpass [-f file|-d fd|-e|-P prompt|-v]... -p <pw>: only its own options come
        # before -p (the wrapped command's -p is ssh's port).
        _rx(
            r"sshpass(?:" + _GAP + r"-[A-Za-oq-z][^\s]{0,256}"
            r"(?:" + _GAP + r"[^\s\-][^\s]{0,256})?){0,4}?"
            + _GAP + r"-p(?:[ \t]{1,8})?" + _CLI_VALUE
        ),
        ("sshpass",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        boundary=True,
    ),
    Rule(
        "password_flag",
        # docker login ... -p <pw>; anchored on "login", the CLI name is checked backwards.
        _rx(
            r"login(?:" + _GAP + _WORD + r"){0,12}?" + _GAP + r"-p(?:=|[ \t]{1,8})?" + _CLI_VALUE
        ),
        ("login",),
        STRUCTURAL,
        groups=_CLI_GROUPS,
        boundary=True,
        check=_registry_login,
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
        _rx(
            r"curl(?:" + _GAP + _WORD + r"){0,24}?" + _GAP
            + r"""(?:-u|-U|--user|--proxy-user)(?:=|[ \t]{1,8})?["']?"""
            r"""(?P<user>[^\s:"']{0,256}):(?P<v>[^\s"']{1,256})"""
        ),
        ("curl",),
        STRUCTURAL,
        groups=("v",),
        boundary=True,
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
                (?::[ \t]{0,4}[a-z_][a-z0-9_.\[\],\ |]{0,60}?[ \t]{0,4}=(?!=)
                 |:=|=>|=(?!=)|:(?!:))
                [ \t]{0,4}
                (?:\\"(?P<edq>[^"\\\n]{1,1024})
                 |"(?P<dq>[^"\n]{1,1024})
                 |'(?P<sq>[^'\n]{1,1024})
                 |(?P<bare>[^\s"'`,;&|<>(){}\[\]]{1,1024}))"""
        ),
        ("key", "token", "secret", "pass", "pwd", "credential", "auth"),
        GENERIC,
        groups=_VALUE_GROUPS,
        on_lower=True,
        check=_assignment_ok,
    ),
)
"""Every in-place rule, in no particular order (overlaps are merged by priority)."""

KINDS: frozenset[str] = frozenset({r.kind for r in RULES} | {"private_key"})
"""Every kind a finding can have."""

# ----------------------------------------------------------------------- PEM private keys

PEM_BEGIN = re.compile(r"-----BEGIN[ ]([A-Z0-9]{1,20}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----")
"""The header of a PEM/OpenSSH/PGP private key block."""
PEM_END = re.compile(r"-----END[ ](?:[A-Z0-9]{1,20}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----")
"""The footer that closes a block."""
PEM_MAX_CHARS = 32_768
"""The longest block searched for its END line; a block with no END within this many
characters is redacted up to here (or to the end of the input). The largest common key,
an RSA 16384-bit PKCS#8 PEM, is about 12.5 KB."""
