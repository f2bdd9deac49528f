"""Errors that cross layers. Expected outcomes are return values; these mean the caller
asked for something that cannot be done, and faces map them to 4xx answers."""

from __future__ import annotations


class MnemonicError(Exception):
    """Base class for errors the faces turn into clear client answers."""


class NotFoundError(MnemonicError):
    """An id that names nothing."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} not found")
        self.kind = kind
        self.ident = ident


class InvalidInputError(MnemonicError):
    """Input that passed schema validation but breaks a rule of the domain."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class StorageUnavailable(MnemonicError):
    """The store cannot take writes right now (disk full, read-only folder, I/O error).

    Reads keep working; faces answer writes with 503 and health turns degraded until a
    write succeeds again, so recovery needs no restart.
    """
