"""``python -m mnemonic`` is the ``mnemonic`` command."""

from mnemonic.cli.main import main

main()
