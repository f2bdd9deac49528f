"""``python -m mnemonic`` is the ``mnemonic`` command.

Guarded: a worker process (anyio's ``to_process``, like multiprocessing's spawn) loads the
parent's main module as ``__mp_main__``, and must not run the command again."""

from mnemonic.cli.main import main

if __name__ == "__main__":
    main()
