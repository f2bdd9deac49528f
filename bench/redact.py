"""Benchmark secret redaction: per history line, per megabyte, and on pathological input.

Run: ``.venv/bin/python bench/redact.py`` (about a minute). Prints a Markdown table for
BENCHMARKS.md, with the targets from the issue:

* median <= 50 µs per typical history line: every line of the benign corpus
  (tests/fixtures/benign_commands.txt, 6,000 lines), each timed alone, 3 rounds;
* 1 MB of mixed input <= 200 ms: the benign corpus with the secret fixture's items
  interleaved (about 1 in 90 lines carries a secret), cut to 1,000,000 characters;
* the worst of the pathological repeated units: every short unit of the tests (issue's
  units and each rule's literal prefix, no secret) and the dense-candidate units (every
  repeat a name=value or -p<value>), each repeated 20,000 times;
* metadata: ``redact_json`` over a watcher-like metadata dict (a dozen keys, two levels,
  one secret key), median of 2,000 runs.

Times are wall-clock (``perf_counter``) and CPU (``process_time``), best of 3 for the big
inputs; on a shared machine the CPU figure is the fairer one.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.secrets import load_secret_cases  # noqa: E402
from test_redact import DENSE_UNITS, SHORT_UNITS  # noqa: E402

from mnemonic.redact import redact, redact_json  # noqa: E402

BENIGN = (ROOT / "tests" / "fixtures" / "benign_commands.txt").read_text("utf-8").splitlines()


def timed(fn: Callable[[], object], repeat: int = 3) -> tuple[float, float]:
    """Best wall and best CPU seconds of ``fn`` over ``repeat`` runs."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def per_line_us() -> list[float]:
    """Microseconds per benign line (each line's best of 3 rounds)."""
    best = [float("inf")] * len(BENIGN)
    for _ in range(3):
        for i, line in enumerate(BENIGN):
            t0 = time.perf_counter_ns()
            redact(line)
            best[i] = min(best[i], (time.perf_counter_ns() - t0) / 1000)
    return best


def mixed_megabyte() -> str:
    secrets = [case.text for case in load_secret_cases()]
    lines: list[str] = []
    for i, line in enumerate(BENIGN):
        lines.append(line)
        if i % 90 == 0:
            lines.append(secrets[(i // 90) % len(secrets)])
    block = "\n".join(lines) + "\n"
    return (block * (1_000_000 // len(block) + 1))[:1_000_000]


METADATA = {
    "cwd": "/home/alice/src/webapp",
    "shell": "zsh",
    "exit_code": 0,
    "duration_ms": 1234,
    "history_file": "/home/alice/.zsh_history",
    "command": "git push origin feature/login-form",
    "model": {"name": "claude", "max_tokens": 1024, "temperature": 0.2},
    "tags": ["deploy", "billing"],
    "env": {"DATABASE_PASSWORD": "Tr0ub4dor&3xyz", "LANG": "en_US.UTF-8"},
    "session_id": "3b342a33-e00b-48ff-b588-e0791c5cae4f",
}


def metadata_us() -> float:
    """Median microseconds of one ``redact_json`` over :data:`METADATA`."""
    runs = []
    for _ in range(2_000):
        t0 = time.perf_counter_ns()
        redact_json(METADATA, lambda t: redact(t).text)
        runs.append((time.perf_counter_ns() - t0) / 1000)
    return statistics.median(runs)


def main() -> None:
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    print()
    us = sorted(per_line_us())
    median = statistics.median(us)
    p95 = us[int(len(us) * 0.95)]
    mb = mixed_megabyte()
    mb_wall, mb_cpu = timed(lambda: redact(mb))
    findings = len(redact(mb).findings)

    def worst(units: list[str]) -> tuple[str, float, float, int]:
        rows = []
        for unit in units:
            text = unit * 20_000
            wall, cpu = timed(lambda text=text: redact(text))
            rows.append((unit, wall, cpu, len(text)))
        return max(rows, key=lambda row: row[2])

    meta = metadata_us()
    short = worst(SHORT_UNITS)
    dense = worst(DENSE_UNITS)
    print("| measure | wall | CPU | target |")
    print("|---|---|---|---|")
    print(f"| median per history line ({len(us)} lines) | {median:.1f} µs | | <= 50 µs |")
    print(f"| p95 per history line | {p95:.1f} µs | | |")
    print(f"| max per history line | {us[-1]:.1f} µs | | |")
    print(
        f"| 1 MB mixed input ({findings} findings) | {mb_wall * 1000:.0f} ms "
        f"| {mb_cpu * 1000:.0f} ms | <= 200 ms |"
    )
    print(f"| metadata dict ({len(METADATA)} keys, 2 levels), redact_json | {meta:.1f} µs | | |")
    for label, (unit, wall, cpu, size) in (
        (f"worst short unit x 20,000 (of {len(SHORT_UNITS)})", short),
        (f"worst dense-candidate unit x 20,000 (of {len(DENSE_UNITS)})", dense),
    ):
        print(
            f"| {label}: {unit!r}, {size:,} chars | {wall * 1000:.1f} ms | {cpu * 1000:.1f} ms "
            f"| {'< 50 ms' if label.startswith('worst short') else 'linear'} |"
        )


if __name__ == "__main__":
    main()
