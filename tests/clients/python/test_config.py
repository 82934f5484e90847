"""Configuration is read as the sbx CLI reads it: SBX_URL / SBX_API_KEY first, then
E2B_API_URL / E2B_API_KEY, then the state dir's url and keys files."""

import os

import pytest

from sbx import AuthError, Config, Sbx, SbxConnectionError


def test_sbx_variables_win_over_e2b_ones(monkeypatch):
    monkeypatch.setenv("SBX_URL", "http://127.0.0.1:1")
    with pytest.raises(SbxConnectionError):
        Sbx.list(config=Config.resolve(max_retries=0))
    monkeypatch.setenv("SBX_URL", os.environ["E2B_API_URL"] + "/")  # a trailing slash is fine
    monkeypatch.setenv("SBX_API_KEY", "e2b_" + "1" * 40)
    with pytest.raises(AuthError):
        Sbx.list()
    monkeypatch.delenv("SBX_API_KEY")
    assert isinstance(Sbx.list(), list)  # E2B_API_KEY


def test_the_state_dir_when_nothing_is_exported(monkeypatch):
    url, key = os.environ["E2B_API_URL"], os.environ["E2B_API_KEY"]
    for v in ("SBX_URL", "SBX_API_KEY", "E2B_API_URL", "E2B_API_KEY"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("SBX_STATE_DIR", os.environ["SBX_TEST_STATE"])  # sbxd wrote url and keys
    cfg = Config.resolve()
    assert (cfg.url, cfg.api_key) == (url, key)
    assert isinstance(Sbx.list(), list)
    monkeypatch.setenv("SBX_STATE_DIR", "/nonexistent")
    cfg = Config.resolve()
    assert (cfg.url, cfg.api_key) == ("http://127.0.0.1:3000", None)
