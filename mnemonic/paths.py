"""Where mnemonic keeps its config, data and logs.

``MNEMONIC_HOME`` puts all three under one folder (tests and benchmarks use it); otherwise
the platform's conventions apply through platformdirs (XDG on Linux, ~/Library on macOS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "mnemonic"


@dataclass(frozen=True, slots=True)
class Paths:
    config_dir: Path
    data_dir: Path
    log_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.yaml"

    @property
    def database(self) -> Path:
        return self.data_dir / "mnemonic.db"

    @property
    def token_file(self) -> Path:
        return self.data_dir / "token"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "daemon.pid"

    def ensure(self) -> None:
        """Create the folders, private to the user (memory is personal data)."""
        for folder in (self.config_dir, self.data_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)


def resolve_paths(home: str | os.PathLike[str] | None = None) -> Paths:
    """Paths from an explicit home, else ``MNEMONIC_HOME``, else the platform defaults."""
    root = home if home is not None else os.environ.get("MNEMONIC_HOME")
    if root:
        base = Path(root).expanduser().resolve()
        return Paths(base / "config", base / "data", base / "logs")
    return Paths(
        Path(platformdirs.user_config_dir(APP_NAME)),
        Path(platformdirs.user_data_dir(APP_NAME)),
        Path(platformdirs.user_log_dir(APP_NAME)),
    )
