"""The dashboard's third-party files (``web/vendor/``) and their manifest.

``web/vendor/MANIFEST.json`` lists each npm package the dashboard vendors::

    {"packages": [{"name": "sigma", "version": "3.0.3",
                   "source": "https://registry.npmjs.org/sigma/-/sigma-3.0.3.tgz",
                   "files": {"sigma/sigma.min.js": "<sha256>", "sigma/LICENSE.txt": "<sha256>"},
                   "extract": {"sigma/sigma.min.js": "package/dist/sigma.min.js"}}]}

``files`` maps each vendored file (relative to ``web/vendor``) to its sha256; ``extract``
(optional) names where the file is in the package tarball, else the one tarball member
with the same base name is taken. ``problems()`` is what the test checks; ``python
tests/support/vendor.py fetch`` (``make web``) downloads each tarball from ``source``
again, copies the files and rewrites the hashes: no Node needed.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "web" / "vendor"
MANIFEST = VENDOR / "MANIFEST.json"
LICENSE_NAMES = ("license", "licence", "copying")
REGISTRY = "https://registry.npmjs.org/"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(manifest: Path = MANIFEST) -> list[dict[str, Any]]:
    packages: list[dict[str, Any]] = json.loads(manifest.read_text(encoding="utf-8"))["packages"]
    return packages


def problems(vendor: Path = VENDOR) -> list[str]:
    """Everything wrong between ``vendor`` and its manifest (empty when all is well)."""
    found: list[str] = []
    listed: set[str] = set()
    for package in load(vendor / "MANIFEST.json"):
        name = package.get("name", "?")
        for key in ("name", "version", "source", "files"):
            if not package.get(key):
                found.append(f"{name}: no {key}")
        source = str(package.get("source", ""))
        if not (source.startswith(f"{REGISTRY}{name}/-/") and source.endswith(".tgz")):
            found.append(f"{name}: source is not its npm tarball: {source}")
        files: dict[str, str] = package.get("files") or {}
        if not any(Path(f).name.lower().startswith(LICENSE_NAMES) for f in files):
            found.append(f"{name}: no licence file vendored")
        for rel, digest in files.items():
            listed.add(rel)
            path = vendor / rel
            if not path.is_file():
                found.append(f"{name}: {rel} is missing")
            elif sha256(path) != digest:
                found.append(f"{name}: {rel} does not match its sha256")
    for path in sorted(vendor.rglob("*")):
        rel = path.relative_to(vendor).as_posix()
        if path.is_file() and rel != "MANIFEST.json" and rel not in listed:
            found.append(f"{rel} is not in MANIFEST.json")
    return found


def _member(tar: tarfile.TarFile, rel: str, extract: dict[str, str]) -> bytes:
    wanted = extract.get(rel)
    names = [m.name for m in tar.getmembers() if m.isfile()]
    if wanted is None:
        matches = [n for n in names if Path(n).name == Path(rel).name]
        if len(matches) != 1:
            raise SystemExit(f"{rel}: {len(matches)} tarball members match; add it to extract")
        wanted = matches[0]
    handle = tar.extractfile(wanted)
    if handle is None:
        raise SystemExit(f"{rel}: {wanted} is not a file in the tarball")
    return handle.read()


def fetch(manifest: Path = MANIFEST) -> None:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for package in data["packages"]:
        with urllib.request.urlopen(package["source"], timeout=60) as answer:
            blob = answer.read()
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            for rel in package["files"]:
                content = _member(tar, rel, package.get("extract") or {})
                target = manifest.parent / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                package["files"][rel] = hashlib.sha256(content).hexdigest()
        print(f"{package['name']} {package['version']}: {len(package['files'])} files")
    manifest.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        fetch()
    else:
        issues = problems()
        print("\n".join(issues) or "web/vendor matches MANIFEST.json")
        sys.exit(1 if issues else 0)
