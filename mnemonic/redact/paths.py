"""Secret files: paths whose contents are never stored (a metadata-only event may remain).

In-place redaction cannot be trusted with these: a ``.env`` or a private key is secret as a
whole, in formats the rules need not know. Matching is on the path alone (no I/O) and
case-insensitive, because macOS and Windows file systems usually are.
"""

from __future__ import annotations

from pathlib import PurePath, PureWindowsPath

_SECRET_NAMES = frozenset(
    {
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".vault-token",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    }
)
_SECRET_SUFFIXES = (".pem", ".key", ".kdbx", ".p12", ".pfx", ".keystore", ".jks", ".ppk")
# (parent directory, file name) pairs: ~/.aws/credentials, ~/.docker/config.json, ...
_SECRET_PAIRS = frozenset(
    {
        (".aws", "credentials"),
        (".docker", "config.json"),
        (".kube", "config"),
        ("gh", "hosts.yml"),  # GitHub CLI's OAuth token
    }
)
_SECRET_DIRS = frozenset({".ssh", ".gnupg"})
# .env.example and friends are committed templates, not secrets.
_ENV_TEMPLATE_WORDS = frozenset({"example", "sample", "template", "tmpl", "tpl", "dist"})


def is_secret_path(path: str | PurePath) -> bool:
    """Whether the file at ``path`` holds secrets as a whole and must not be read.

    True for ``.env`` and ``.env.*`` (not ``.env.example``/``.sample``/``.template``),
    ``*.env`` (``prod.env``, the docker ``--env-file`` convention), private keys and
    stores (``*.pem``, ``*.key``, ``id_rsa``..., ``*.p12``, ``*.pfx``, ``*.jks``,
    ``*.keystore``, ``*.kdbx``, ``*.ppk``), credential files (``.netrc``, ``.pgpass``,
    ``.git-credentials``, ``.npmrc``, ``.pypirc``, ``.aws/credentials``,
    ``.docker/config.json``, kubeconfigs, ``gh/hosts.yml``, ``.vault-token``) and anything
    under ``.ssh/`` or ``.gnupg/``. A string with backslashes is also read as a Windows
    path.
    """
    candidates = [PurePath(path)]
    if isinstance(path, str) and "\\" in path:
        candidates.append(PureWindowsPath(path))
    return any(_is_secret_parts(tuple(p.lower() for p in c.parts)) for c in candidates)


def _is_secret_parts(parts: tuple[str, ...]) -> bool:
    if not parts:
        return False
    if _SECRET_DIRS.intersection(parts):
        return True
    name = parts[-1]
    if name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES):
        return True
    if name.startswith("kubeconfig"):
        return True
    if len(parts) >= 2 and (parts[-2], name) in _SECRET_PAIRS:
        return True
    if name == ".env":
        return True
    if name.startswith(".env."):
        return _ENV_TEMPLATE_WORDS.isdisjoint(name[len(".env.") :].split("."))
    if name.endswith(".env"):
        return _ENV_TEMPLATE_WORDS.isdisjoint(name[: -len(".env")].split("."))
    return False
