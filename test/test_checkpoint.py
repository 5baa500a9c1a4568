"""Policy spec resolution: parsing, local files, SHA-256 verification, and the offline / no-library error paths.

There is no network here. Hub paths run in a fresh interpreter with ``HF_HUB_OFFLINE=1`` and a private ``HF_HOME``
because huggingface_hub reads both when it is first imported.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vasimov import joints
from vasimov_edge.policy.checkpoint import (
    DEFAULT_FILENAME,
    OFFICIAL_REPO,
    OFFICIAL_SHA256,
    PINNED_REVISION,
    CheckpointError,
    is_local_spec,
    parse_hub_spec,
    resolve_checkpoint,
    verify_sha256,
)

CONTRACT = joints.facts()["policy_contract"]
OTHER_REV = "0123456789abcdef0123456789abcdef01234567"


def test_official_constants_come_from_the_sheet() -> None:
    assert OFFICIAL_REPO == "Menlo/asimov1-locomotion-0818" == CONTRACT["model_id"]
    assert PINNED_REVISION == "18114a730668a983423e6361f0522eb62c76cb74"
    assert CONTRACT["files_sha256_per_vasimov"]["policy.onnx"]["sha256"] == OFFICIAL_SHA256
    assert len(OFFICIAL_SHA256) == 64


@pytest.mark.parametrize(
    ("spec", "repo", "filename", "revision", "sha"),
    [
        (f"hf://{OFFICIAL_REPO}", OFFICIAL_REPO, DEFAULT_FILENAME, PINNED_REVISION, OFFICIAL_SHA256),
        (f"hf://{OFFICIAL_REPO}@{PINNED_REVISION}", OFFICIAL_REPO, DEFAULT_FILENAME, PINNED_REVISION, OFFICIAL_SHA256),
        (OFFICIAL_REPO, OFFICIAL_REPO, DEFAULT_FILENAME, PINNED_REVISION, OFFICIAL_SHA256),
        (f"{OFFICIAL_REPO}@{OTHER_REV}", OFFICIAL_REPO, DEFAULT_FILENAME, OTHER_REV, None),
        (f"hf://{OFFICIAL_REPO}/exported/walk.onnx", OFFICIAL_REPO, "exported/walk.onnx", PINNED_REVISION, None),
        (f"hf://someone/recovery/getup.onnx@{OTHER_REV}", "someone/recovery", "getup.onnx", OTHER_REV, None),
        ("someone/recovery@v1.2", "someone/recovery", DEFAULT_FILENAME, "v1.2", None),
    ],
)
def test_parse_hub_spec(spec: str, repo: str, filename: str, revision: str, sha: str | None) -> None:
    hub = parse_hub_spec(spec)
    assert (hub.repo_id, hub.filename, hub.revision, hub.expected_sha256) == (repo, filename, revision, sha)
    assert not is_local_spec(spec)


def test_unpinned_third_party_repo_is_refused() -> None:
    with pytest.raises(CheckpointError, match=r"names no revision; pin one \('hf://someone/recovery@<commit sha>'\)"):
        parse_hub_spec("hf://someone/recovery")


@pytest.mark.parametrize("spec", ["walk", "hf://", "hf://only-owner", "a b/c"])
def test_unreadable_spec_lists_forms(spec: str) -> None:
    with pytest.raises(CheckpointError, match="use a local file"):
        parse_hub_spec(spec)


def test_local_file_is_hashed(tmp_path: Path) -> None:
    f = tmp_path / "policy.onnx"
    f.write_bytes(b"not really onnx")
    digest = hashlib.sha256(b"not really onnx").hexdigest()
    assert is_local_spec(str(f))
    got = resolve_checkpoint(str(f))
    assert (got.path, got.sha256, got.verified) == (f, digest, False)
    got = resolve_checkpoint(str(f), expected_sha256=digest.upper())
    assert got.verified


def test_local_checksum_mismatch_names_both_values(tmp_path: Path) -> None:
    f = tmp_path / "policy.onnx"
    f.write_bytes(b"tampered")
    found = hashlib.sha256(b"tampered").hexdigest()
    with pytest.raises(CheckpointError, match=f"expected sha256 {OFFICIAL_SHA256}, found {found}"):
        resolve_checkpoint(str(f), expected_sha256=OFFICIAL_SHA256)
    with pytest.raises(CheckpointError, match="64 hex digits"):
        verify_sha256(f, "abc")


def test_missing_local_file(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        resolve_checkpoint(str(tmp_path / "nope.onnx"))


def test_without_huggingface_hub_the_error_says_how_to_pass_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # makes the lazy import fail
    with pytest.raises(CheckpointError, match="huggingface_hub is not installed") as err:
        resolve_checkpoint(f"hf://{OFFICIAL_REPO}")
    assert "pass a local file as the policy spec" in str(err.value)
    assert f"hf download {OFFICIAL_REPO} policy.onnx --revision {PINNED_REVISION}" in str(err.value)


def run_offline(hf_home: Path, code: str) -> str:
    """Run ``code`` in a fresh interpreter with the Hub offline and an empty private cache; return its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(hf_home))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


RESOLVE = """
from vasimov_edge.policy.checkpoint import CheckpointError, resolve_checkpoint
try:
    got = resolve_checkpoint({spec!r}{extra})
    print("OK", got.path, got.sha256, got.verified)
except CheckpointError as exc:
    print("CheckpointError", exc)
"""


def test_offline_with_empty_cache_needs_network_or_local_file(tmp_path: Path) -> None:
    out = run_offline(tmp_path, RESOLVE.format(spec=f"hf://{OFFICIAL_REPO}", extra=""))
    assert out.startswith("CheckpointError"), out
    assert "needs network access" in out and "or a local file" in out
    assert f"hf download {OFFICIAL_REPO} policy.onnx --revision {PINNED_REVISION}" in out
    assert "LocalEntryNotFoundError" in out  # the cause is kept for whoever debugs it


def cache_file(hf_home: Path, repo: str, revision: str, filename: str, data: bytes) -> Path:
    """Place a file where huggingface_hub's cache keeps a commit's snapshot (documented cache layout)."""
    snap = hf_home / "hub" / f"models--{repo.replace('/', '--')}" / "snapshots" / revision
    path = snap / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_cached_official_file_is_verified_against_the_sheet(tmp_path: Path) -> None:
    cache_file(tmp_path, OFFICIAL_REPO, PINNED_REVISION, DEFAULT_FILENAME, b"a different model")
    out = run_offline(tmp_path, RESOLVE.format(spec=f"hf://{OFFICIAL_REPO}", extra=""))
    found = hashlib.sha256(b"a different model").hexdigest()
    assert out.startswith("CheckpointError checksum mismatch"), out
    assert f"expected sha256 {OFFICIAL_SHA256}, found {found}" in out


def test_cached_pinned_third_party_file_resolves(tmp_path: Path) -> None:
    data = b"third-party weights"
    digest = hashlib.sha256(data).hexdigest()
    path = cache_file(tmp_path, "someone/recovery", OTHER_REV, "getup.onnx", data)
    spec = f"hf://someone/recovery/getup.onnx@{OTHER_REV}"
    out = run_offline(tmp_path, RESOLVE.format(spec=spec, extra=f", expected_sha256={digest!r}"))
    assert out.split() == ["OK", str(path), digest, "True"], out
