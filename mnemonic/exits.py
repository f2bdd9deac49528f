"""Process exit codes, after BSD ``sysexits.h``, shared by the daemon, the CLI and the
service installer, so scripts and service managers can tell "you typed it wrong" from
"the daemon is down" from "try later"."""

from __future__ import annotations

EX_OK = 0
EX_USAGE = 64
EX_DATAERR = 65
EX_UNAVAILABLE = 69
EX_SOFTWARE = 70
EX_TEMPFAIL = 75
EX_CONFIG = 78
