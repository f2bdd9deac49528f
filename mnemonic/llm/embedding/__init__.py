"""Embedding providers: the embedded ONNX model (default) and OpenAI-compatible endpoints.

Importing this package stays cheap: onnxruntime, tokenizers and the openai SDK are only
imported when a provider is constructed.
"""

from mnemonic.llm.embedding.base import EmbeddingError, EmbeddingProvider, Vectors
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "OnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "Vectors",
]
