"""The hourly ingest example's landing folder: without ``ICEBERG_DEMO_LANDING_ROOT``, this user's private folder, never
a fixed folder under the temp folder another local user could fill with files to ingest."""

from __future__ import annotations

import importlib
import os
import stat
import sys
import tempfile

import pytest


def _load(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(sys.modules, "iceberg_hourly_ingest", raising=False)
    monkeypatch.syspath_prepend(str(os.path.join(os.path.dirname(__file__), "..", "..", "dags")))
    return importlib.import_module("iceberg_hourly_ingest")


def test_the_default_landing_folder_is_this_user_s_private_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ICEBERG_DEMO_LANDING_ROOT", raising=False)
    landing = tmp_path / f"iceberg-provider-landing-{os.getuid()}"
    assert str(landing) == _load(monkeypatch).LANDING_ROOT
    assert stat.S_IMODE(landing.stat().st_mode) == 0o700 and landing.stat().st_uid == os.getuid()


def test_a_landing_folder_another_user_made_first_is_refused(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ICEBERG_DEMO_LANDING_ROOT", raising=False)
    planted = tmp_path / f"iceberg-provider-landing-{os.getuid()}"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, 65534)  # uid nobody: another local user
    with pytest.raises(PermissionError, match="is not a private directory of this user"):
        _load(monkeypatch)
