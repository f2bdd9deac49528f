"""The serving daemon's process-wide settings (``daemon.apply_process_settings``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from mnemonic.config import Config
from mnemonic.daemon import apply_process_settings


@pytest.fixture
def restore_switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


@pytest.mark.parametrize("ms", [0.5, 2.0])
def test_the_gil_switch_interval_follows_the_config(
    restore_switch_interval: None, ms: float
) -> None:
    cfg = Config.model_validate({"agents": {"gil_switch_interval_ms": ms}})
    apply_process_settings(cfg)
    assert sys.getswitchinterval() == pytest.approx(ms / 1000)


def test_the_default_is_shorter_than_pythons(restore_switch_interval: None) -> None:
    sys.setswitchinterval(0.005)
    apply_process_settings(Config())
    assert sys.getswitchinterval() == pytest.approx(0.001)


@pytest.mark.parametrize("ms", [0, -1, 101])
def test_an_interval_out_of_range_is_refused(ms: float) -> None:
    with pytest.raises(ValueError, match="gil_switch_interval_ms"):
        Config.model_validate({"agents": {"gil_switch_interval_ms": ms}})
