"""Resolve a policy spec (local ``.onnx`` file or pinned Hugging Face revision) to a verified file on disk.

Spec forms:

* a local path to an ``.onnx`` file (``policies/policy.onnx``, ``~/asimov/policy.onnx``);
* ``hf://<owner>/<repo>[/<file in repo>][@<revision>]``;
* a bare repo id ``<owner>/<repo>[@<revision>]`` (the file defaults to ``policy.onnx``).

The official ``Menlo/asimov1-locomotion-0818`` defaults to the revision pinned in the fact sheet and is checked against
the sheet's SHA-256, so a moved branch or a corrupted cache cannot silently change the robot's behaviour. Other repos
must name a revision: an unpinned download is a different policy every time someone pushes. Downloads go through
``huggingface_hub.hf_hub_download`` (imported only when needed); without it, or without network and an empty cache,
the error says how to pass a local file instead.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vasimov import joints

HF_SCHEME = "hf://"
DEFAULT_FILENAME = "policy.onnx"
_REPO_RE = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?P<file>(?:/[\w.\-/]+)?)(?:@(?P<rev>[\w.\-/]+))?$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class CheckpointError(ValueError):
    """The policy file could not be found, fetched or verified; the message says what to do instead.

    A ``ValueError`` because to the node it is a configuration error: a spec that cannot be honoured here.
    """


def _contract() -> dict[str, Any]:
    return joints.facts()["policy_contract"]


OFFICIAL_REPO: str = str(_contract()["model_id"])
PINNED_REVISION: str = str(_contract()["hf_revision_pinned_by_vasimov"])
OFFICIAL_SHA256: str = str(_contract()["files_sha256_per_vasimov"][DEFAULT_FILENAME]["sha256"])
OFFICIAL_SPEC: str = f"{HF_SCHEME}{OFFICIAL_REPO}@{PINNED_REVISION}"


@dataclass(frozen=True)
class HubSpec:
    """A parsed Hugging Face reference: which file, at which revision, and the checksum it must have (if known)."""

    repo_id: str
    filename: str
    revision: str
    expected_sha256: str | None


@dataclass(frozen=True)
class ResolvedCheckpoint:
    """A policy file on disk whose checksum has been computed (and verified when one was expected)."""

    path: Path
    sha256: str
    source: str  # the spec it came from
    verified: bool  # True when sha256 matched an expected value


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in chunks (the official policy is ~0.8 MB, but nothing stops a larger one)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_sha256(path: str | Path, expected: str) -> str:
    """Return the file's SHA-256, or raise :class:`CheckpointError` naming both values when it is not ``expected``."""
    want = expected.strip().lower()
    if not _SHA256_RE.match(want):
        raise CheckpointError(f"expected SHA-256 must be 64 hex digits, got {expected!r}")
    got = sha256_file(path)
    if got != want:
        raise CheckpointError(
            f"checksum mismatch for {path}: expected sha256 {want}, found {got}. The file is not the pinned "
            "checkpoint (corrupted download, different revision or a different model); delete it and fetch again, "
            "or pass the checksum of the file you mean to run."
        )
    return got


def is_local_spec(spec: str) -> bool:
    """True for specs naming a file on disk: an existing path, or anything ending in ``.onnx`` without ``hf://``."""
    if spec.startswith(HF_SCHEME):
        return False
    return spec.lower().endswith(".onnx") or Path(spec).expanduser().is_file()


def parse_hub_spec(spec: str) -> HubSpec:
    """Parse ``hf://owner/repo[/file][@rev]`` or ``owner/repo[@rev]``; the error lists the accepted forms."""
    body = spec.removeprefix(HF_SCHEME)
    m = _REPO_RE.match(body)
    if m is None:
        raise CheckpointError(
            f"cannot read policy spec {spec!r}; use a local file (path/to/policy.onnx), "
            f"'{HF_SCHEME}<owner>/<repo>[/<file>][@<revision>]' or '<owner>/<repo>[@<revision>]', "
            f"e.g. {OFFICIAL_SPEC}"
        )
    repo_id = m["repo"]
    filename = m["file"].lstrip("/") or DEFAULT_FILENAME
    revision = m["rev"]
    if revision is None:
        if repo_id != OFFICIAL_REPO:
            raise CheckpointError(
                f"policy spec {spec!r} names no revision; pin one ('{HF_SCHEME}{repo_id}@<commit sha>') so the "
                "same spec always loads the same weights"
            )
        revision = PINNED_REVISION
    official = repo_id == OFFICIAL_REPO and revision == PINNED_REVISION and filename == DEFAULT_FILENAME
    return HubSpec(repo_id, filename, revision, OFFICIAL_SHA256 if official else None)


def _local_file_hint(hub: HubSpec) -> str:
    return (
        f"pass a local file as the policy spec instead (e.g. /path/to/{Path(hub.filename).name}); fetch it on a "
        f"machine with network access with: hf download {hub.repo_id} {hub.filename} --revision {hub.revision} "
        "--local-dir <dir>"
    )


def _download(hub: HubSpec, cache_dir: str | Path | None) -> Path:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            HfHubHTTPError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError as exc:
        raise CheckpointError(
            f"policy {hub.repo_id}@{hub.revision} must be downloaded from Hugging Face, but huggingface_hub is not "
            f"installed ({exc}); install it (pip install huggingface_hub) or {_local_file_hint(hub)}"
        ) from exc
    try:
        path = hf_hub_download(
            repo_id=hub.repo_id,
            filename=hub.filename,
            revision=hub.revision,
            cache_dir=str(cache_dir) if cache_dir is not None else None,
        )
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise CheckpointError(f"{hub.repo_id}@{hub.revision} not found on Hugging Face: {exc}") from exc
    except (OfflineModeIsEnabled, EntryNotFoundError, OSError, HfHubHTTPError) as exc:
        # Offline mode with an empty cache raises LocalEntryNotFoundError (an EntryNotFoundError and OSError);
        # a missing file on a reachable Hub raises RemoteEntryNotFoundError. Both land here with the cause attached.
        raise CheckpointError(
            f"could not obtain {hub.filename} from {hub.repo_id}@{hub.revision}: the checkpoint needs network access "
            f"to Hugging Face (or a cached copy) or a local file; {_local_file_hint(hub)}. "
            f"Cause: {type(exc).__name__}: {exc}"
        ) from exc
    return Path(path)


def resolve_checkpoint(
    spec: str, *, expected_sha256: str | None = None, cache_dir: str | Path | None = None
) -> ResolvedCheckpoint:
    """Find (downloading if needed) and checksum the policy named by ``spec``.

    ``expected_sha256`` overrides the sheet's value; for a local file nothing is verified unless it is given.
    """
    if is_local_spec(spec):
        path = Path(spec).expanduser()
        if not path.is_file():
            raise CheckpointError(f"policy file {path} does not exist (spec {spec!r})")
        if expected_sha256 is not None:
            return ResolvedCheckpoint(path, verify_sha256(path, expected_sha256), spec, True)
        return ResolvedCheckpoint(path, sha256_file(path), spec, False)
    hub = parse_hub_spec(spec)
    path = _download(hub, cache_dir)
    want = expected_sha256 if expected_sha256 is not None else hub.expected_sha256
    if want is not None:
        return ResolvedCheckpoint(path, verify_sha256(path, want), spec, True)
    return ResolvedCheckpoint(path, sha256_file(path), spec, False)
