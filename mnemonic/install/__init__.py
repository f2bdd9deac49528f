"""Run mnemonic as a per-user background service: a systemd user unit on Linux, a
LaunchAgent on macOS, and the foreground command everywhere else.

``common`` holds what the backends share, ``systemd`` and ``launchd`` render and drive
their manager, ``ready`` waits for the daemon to answer, ``manager`` puts it together.
"""

from mnemonic.install.common import Context, ServiceError, ServiceStatus, Step
from mnemonic.install.manager import (
    InstallPlan,
    UninstallResult,
    backend_for,
    foreground_command,
    install,
    plan_install,
    restart,
    status,
    uninstall,
)

__all__ = [
    "Context",
    "InstallPlan",
    "ServiceError",
    "ServiceStatus",
    "Step",
    "UninstallResult",
    "backend_for",
    "foreground_command",
    "install",
    "plan_install",
    "restart",
    "status",
    "uninstall",
]
