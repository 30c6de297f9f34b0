"""``_allocator.keep_freed_memory``: when glibc's malloc limits are raised, and when they are left alone.

Values never depend on it (every other test runs with it, and with ``DUALGRAD_FASTPATH=0``
without it); these tests check its conditions, with ``mallopt`` replaced by a recorder.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualgrad import _allocator

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch):
    made = []

    def mallopt(param, value):
        made.append((param, value))
        return 1

    monkeypatch.setattr(_allocator, "_mallopt", lambda: mallopt)
    return made


def test_both_thresholds_are_raised(calls):
    assert _allocator.keep_freed_memory(True, environ={})
    assert calls == [(_allocator.M_MMAP_THRESHOLD, 32 * 2**20), (_allocator.M_TRIM_THRESHOLD, 512 * 2**20)]


def test_nothing_is_set_with_the_fast_paths_off(calls):
    assert not _allocator.keep_freed_memory(False, environ={})
    assert calls == []


@pytest.mark.parametrize("name", _allocator.USER_SETTINGS)
def test_the_users_own_malloc_settings_are_left_as_they_are(calls, name):
    assert not _allocator.keep_freed_memory(True, environ={name: "65536"})
    assert calls == []


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch):
    monkeypatch.setattr(_allocator, "_mallopt", lambda: None)
    assert not _allocator.keep_freed_memory(True, environ={})


def test_a_refused_setting_reports_false(monkeypatch):
    monkeypatch.setattr(_allocator, "_mallopt", lambda: lambda param, value: 0)
    assert not _allocator.keep_freed_memory(True, environ={})


@pytest.mark.parametrize("switch, expected", [("1", sys.platform == "linux"), ("0", False)])
def test_the_import_follows_the_fast_path_switch(switch, expected):
    env = {k: v for k, v in os.environ.items() if k not in _allocator.USER_SETTINGS}
    env["DUALGRAD_FASTPATH"] = switch
    out = subprocess.run([sys.executable, "-c", "import dualgrad.fastpath as f; print(f.KEEPS_FREED_MEMORY)"],
                         env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
    if switch == "0" or out == "True":  # (a Linux without glibc keeps its malloc as it is)
        assert out == str(expected)
