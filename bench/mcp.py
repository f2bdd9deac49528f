"""Issue 14: the MCP recall tool's round trip over stdio and streamable HTTP, at 10k
memories, against a real ``mnemonic serve``.

A home with N synthetic memories (10k by default) is filled once through the store layer
(``bench/latency.py``'s ``fill_direct``) in a temp folder; then one daemon serves it, and
the same queries go:

* ``rest``: ``POST /api/v1/query`` (the floor every MCP path builds on);
* ``http``: the ``recall`` tool over ``/mcp`` with the official ``mcp`` client (current
  protocol revision; the tool calls the REST API in-process and records its usage);
* ``stdio``: the ``recall`` tool through ``mnemonic mcp`` (a subprocess forwarding every
  call to the daemon over REST).

    python bench/mcp.py [--n 10000] [--calls 200] [--json]

Not a test: a table (p50/p95/mean ms per path) goes to stdout, progress to stderr.
Queries are never repeated within one path, so a query cache cannot flatter the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# This file is named mcp.py: the SDK's ``mcp`` must not resolve to it, so the bench folder
# joins sys.path only after the SDK is imported (python puts the script's folder first).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

sys.path.insert(0, str(_HERE))
import latency as lat  # noqa: E402


def progress(message: str) -> None:
    sys.stderr.write(f"[mcp bench] {message}\n")
    sys.stderr.flush()


def fill(home: Path, n: int) -> None:
    pool = multiprocessing.get_context("fork").Pool(2)
    try:
        with lat.daemon(home):
            pass
        asyncio.run(lat.fill_direct(home, n, 3, max_minutes=10_000.0, pool=pool))
    finally:
        pool.close()
        pool.join()


def stats(samples: list[float]) -> dict[str, float]:
    return {
        "calls": len(samples),
        "p50_ms": round(lat.pct(samples, 0.50), 2),
        "p95_ms": round(lat.pct(samples, 0.95), 2),
        "mean_ms": round(sum(samples) / len(samples), 2),
    }


async def time_tool(client: Client, queries: list[str]) -> list[float]:
    await client.call_tool("recall", {"query": "warm up", "all_projects": True})
    out = []
    for q in queries:
        started = time.perf_counter()
        result = await client.call_tool("recall", {"query": q, "all_projects": True, "limit": 10})
        out.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            raise RuntimeError(f"recall failed: {result.content}")
    return out


async def over_http(base: str, queries: list[str]) -> list[float]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {lat.TOKEN}"}, timeout=60)
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c:
        return await time_tool(c, queries)


async def over_stdio(home: Path, port: int, queries: list[str], errlog: Any) -> list[float]:
    env = dict(os.environ)
    env.update(
        {"MNEMONIC_HOME": str(home), "MNEMONIC_PORT": str(port), "MNEMONIC_TOKEN": lat.TOKEN}
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mnemonic", "mcp"], env=env, cwd=str(home)
    )
    async with Client(stdio_client(params, errlog=errlog)) as c:
        return await time_tool(c, queries)


def over_rest(client: Any, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        started = time.perf_counter()
        client.post("/api/v1/query", json={"query": q, "limit": 10}).raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    queries = [q for q, _ in lat.make_queries(args.calls * 3, set())]
    rest_q, http_q, stdio_q = (queries[i::3][: args.calls] for i in range(3))
    with tempfile.TemporaryDirectory(prefix="mnemonic-mcp-bench-") as tmp:
        home = Path(tmp) / "home"
        progress(f"filling {args.n} memories")
        fill(home, args.n)
        with lat.daemon(home) as running:
            base = str(running.client.base_url).rstrip("/")
            port = int(base.rsplit(":", 1)[1])
            progress("rest")
            rest = over_rest(running.client, rest_q)
            progress("http")
            http = asyncio.run(over_http(base, http_q))
            progress("stdio")
            with (Path(tmp) / "stdio.err").open("w") as errlog:
                stdio = asyncio.run(over_stdio(home, port, stdio_q, errlog))
            usage = running.client.get("/api/v1/tool/usage").json()
    result = {
        "memories": args.n,
        "rest_query": stats(rest),
        "mcp_http_recall": stats(http),
        "mcp_stdio_recall": stats(stdio),
        "server_side_recall_tool": next((t for t in usage["tools"] if t["tool"] == "recall"), None),
    }
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    sys.stdout.write(f"MCP recall round trip at {args.n} memories ({args.calls} calls each)\n")
    sys.stdout.write(f"{'path':<18} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}\n")
    for name in ("rest_query", "mcp_http_recall", "mcp_stdio_recall"):
        s = result[name]
        sys.stdout.write(f"{name:<18} {s['p50_ms']:>8} {s['p95_ms']:>8} {s['mean_ms']:>8}\n")


if __name__ == "__main__":
    main()
