"""Precision and recall of the supersession detector, without and with an LLM judgment.

Run: ``.venv/bin/python bench/supersession.py [--json] [--error-rate 0.1] [--seed 12]``
(about 20 s: loading the embedder dominates).

Scenarios: ``tests/data/supersession_scenarios.json`` (hand-written pairs; split ``dev`` was
used while tuning the heuristics, split ``holdout`` was written afterwards and never tuned
on). The cosine of each pair comes from the real embedder (``OnnxEmbedder``), as in the
encoder.

The "LLM" is a SIMULATION, not a model: the scripted OpenAI-compatible server of
``tests/support/openai_server.py`` answers every judgment with the pair's true label,
flipped for a fixed, seeded ``--error-rate`` share of the pairs (default 10%). It stands
for a good-but-imperfect model and measures how :func:`combine` uses such answers; it
says nothing about any real model. Requests go through the real completion client
(``mnemonic.llm.completion.build.build_completer``: the openai SDK, a socket, JSON
parsing and schema checks). Only pairs whose heuristic verdict has ``ask_llm`` are sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mnemonic.cognition.supersession import (  # noqa: E402
    MemoryFacts,
    Verdict,
    combine,
    detect,
    judgment_request,
)
from mnemonic.config import LlmConfig  # noqa: E402
from mnemonic.llm.completion.build import build_completer  # noqa: E402
from mnemonic.llm.embedding.onnx import OnnxEmbedder  # noqa: E402
from tests.support.openai_server import OpenAIServer, Reply, Request, chat_reply  # noqa: E402

SCENARIOS = ROOT / "tests" / "data" / "supersession_scenarios.json"


@dataclass(frozen=True, slots=True)
class Pair:
    id: str
    label: bool
    category: str
    split: str
    old: MemoryFacts
    new: MemoryFacts


def _facts(raw: dict[str, Any]) -> MemoryFacts:
    return MemoryFacts(
        text=raw["text"],
        timestamp=datetime.fromisoformat(raw["timestamp"]),
        project=raw.get("project"),
        type=raw.get("type", "general"),
    )


def load_pairs(path: Path = SCENARIOS) -> list[Pair]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [
        Pair(
            p["id"],
            p["label"],
            p["category"],
            p.get("split", "dev"),
            _facts(p["old"]),
            _facts(p["new"]),
        )
        for p in doc["pairs"]
    ]


def similarities(pairs: list[Pair], embedder: OnnxEmbedder) -> list[float]:
    vectors = embedder.embed([t for p in pairs for t in (p.old.text, p.new.text)])
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def simulated_answers(pairs: list[Pair], error_rate: float, seed: int) -> dict[str, bool]:
    """The simulated model's answer per pair: the true label, wrong for a seeded share."""
    rng = random.Random(seed)
    return {p.id: (p.label if rng.random() >= error_rate else not p.label) for p in pairs}


def _handler(by_prompt: dict[str, tuple[str, bool]]) -> Callable[[Request], Reply]:
    def answer(request: Request) -> Reply:
        messages = (request.json() or {}).get("messages", [])
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        pair_id, says = by_prompt.get(user, ("?", False))
        reply = {"supersedes": says, "subject": pair_id, "reason": "simulated judgment"}
        return chat_reply(json.dumps(reply))

    return answer


async def _judge_all(
    pairs: list[Pair], verdicts: list[Verdict], answers: dict[str, bool]
) -> tuple[list[Verdict], int]:
    with OpenAIServer() as server:
        prompts = {judgment_request(p.new, p.old).user: (p.id, answers[p.id]) for p in pairs}
        server.set_handler("/v1/chat/completions", _handler(prompts))
        cfg = LlmConfig(provider="openai", base_url=server.base_url, model=server.model_name)
        completer = build_completer(cfg, None)
        final: list[Verdict] = []
        for pair, verdict in zip(pairs, verdicts, strict=True):
            if not verdict.ask_llm:
                final.append(verdict)
                continue
            answer = await completer.complete_json(judgment_request(pair.new, pair.old))
            final.append(combine(verdict, answer))
        calls = len(server.requests_to("/v1/chat/completions"))
        close = getattr(completer, "aclose", None)
        if close is not None:
            await close()
    return final, calls


def scores(pairs: list[Pair], predicted: list[bool]) -> dict[str, Any]:
    tp = sum(p.label and y for p, y in zip(pairs, predicted, strict=True))
    fp = sum((not p.label) and y for p, y in zip(pairs, predicted, strict=True))
    fn = sum(p.label and not y for p, y in zip(pairs, predicted, strict=True))
    tn = len(pairs) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return {
        "n": len(pairs),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
    }


def breakdown(pairs: list[Pair], predicted: list[bool]) -> dict[str, Any]:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        groups[f"split:{p.split}"].append(i)
        groups[f"{'update' if p.label else 'look-alike'}:{p.category}"].append(i)
    out = {"all": scores(pairs, predicted)}
    for key in sorted(groups):
        idx = groups[key]
        out[key] = scores([pairs[i] for i in idx], [predicted[i] for i in idx])
    return out


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def print_table(result: dict[str, Any]) -> None:
    heur, llm = result["heuristic"], result["with_llm"]
    print(
        f"Supersession detector on {heur['all']['n']} pairs "
        f"(LLM = scripted simulation, error rate {result['error_rate']:.0%}, "
        f"{result['llm_calls']} judgments asked)\n"
    )
    print("| group | n | heuristic P | heuristic R | FP | with LLM P | with LLM R | FP |")
    print("|---|---|---|---|---|---|---|---|")
    for key in heur:
        h, w = heur[key], llm[key]
        # Look-alike groups have no positives: precision/recall are undefined, FP is what counts.
        print(
            f"| {key} | {h['n']} | {_fmt(h['precision'])} | {_fmt(h['recall'])} | {h['fp']} "
            f"| {_fmt(w['precision'])} | {_fmt(w['recall'])} | {w['fp']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--error-rate",
        type=float,
        default=0.1,
        help="share of simulated LLM answers that are wrong",
    )
    parser.add_argument("--seed", type=int, default=12, help="seed of the simulated errors")
    args = parser.parse_args()
    pairs = load_pairs()
    sims = similarities(pairs, OnnxEmbedder())
    verdicts = [detect(p.new, p.old, s) for p, s in zip(pairs, sims, strict=True)]
    answers = simulated_answers(pairs, args.error_rate, args.seed)
    final, calls = asyncio.run(_judge_all(pairs, verdicts, answers))
    result = {
        "scenarios": str(SCENARIOS.relative_to(ROOT)),
        "error_rate": args.error_rate,
        "seed": args.seed,
        "llm_calls": calls,
        "simulated_llm_wrong_on_asked": sum(
            answers[p.id] != p.label for p, v in zip(pairs, verdicts, strict=True) if v.ask_llm
        ),
        "heuristic": breakdown(pairs, [v.supersedes for v in verdicts]),
        "with_llm": breakdown(pairs, [v.supersedes for v in final]),
        "errors": [
            {
                "id": p.id,
                "label": p.label,
                "category": p.category,
                "similarity": round(s, 3),
                "heuristic": v.supersedes,
                "with_llm": f.supersedes,
                "reason": f.reason,
            }
            for p, s, v, f in zip(pairs, sims, verdicts, final, strict=True)
            if v.supersedes != p.label or f.supersedes != p.label
        ],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print_table(result)
    print("\nMisjudged pairs:")
    for e in result["errors"]:
        print(
            f"  {e['id']} label={e['label']} heuristic={e['heuristic']} "
            f"llm={e['with_llm']} sim={e['similarity']}: {e['reason']}"
        )


if __name__ == "__main__":
    main()
