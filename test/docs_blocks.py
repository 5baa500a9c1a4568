"""The documentation's structure as data: pages, links, heading anchors and shell blocks with their test markers.

Pure (no processes): test/test_docs.py checks and runs what this finds.

The convention for a fenced block in README.md or docs/*.md:

* ```` ```bash ```` (also `sh`, `shell`): commands a user types. Every one is exercised by a test. The line right
  before the fence (blank lines allowed between) may carry a marker, ``<!-- docs-test: KIND[: why] -->``:

  - ``offline`` (the default, no marker needed): run as written by ``bash -e`` in a scratch copy of the checkout (the
    repository's files linked in, outputs land in the scratch folder), with nothing else running; it must exit 0.
    Commands that start their own graph (``vasimov up --lockstep --duration S``) belong here.
  - ``graph``: run as written, in document order, while a real-time graph (`vasimov up`, what `make run` starts)
    runs in the test's own ROS domain; it must exit 0 and the graph must still be running afterwards.
  - ``covered-by: test/FILE.py ...``: another test runs this very block, reading it from this page; the named
    file must exist and must read this page (its path appears in that file).
  - ``skip: why``: cannot run in a test (a server in the foreground until Ctrl-C, the test suite itself, a
    full ROS 2 install); the reason is required and should say where the same path is tested, if anywhere.

* ```` ```text ````, ```` ```console ````, ```` ```yaml ````, no language, ...: output, file contents or diagrams;
  not run.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL_LANGS = {"bash", "sh", "shell"}
KINDS = {"offline", "graph", "covered-by", "skip"}
MARKER_RE = re.compile(r"<!--\s*docs-test:\s*([a-z-]+)\s*(?::\s*(.*?))?\s*-->", re.S)
FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")


def pages() -> list[Path]:
    """README.md, FIDELITY.md and every Markdown page under docs/ (what a reader follows links through)."""
    return [ROOT / "README.md", ROOT / "FIDELITY.md", *sorted((ROOT / "docs").rglob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository root
    index: int  # the n-th shell block of the page, from 0
    line: int  # 1-based line of the opening fence
    code: str
    kind: str
    why: str

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}(line {self.line})"


def split_fences(text: str) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """(fenced blocks as (line, language, body), prose lines as (line, text) outside any fence)."""
    blocks: list[tuple[int, str, str]] = []
    prose: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        blocks.append((start + 1, lang, "\n".join(body) + "\n"))
        i += 1
    return blocks, prose


def shell_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    lines = text.splitlines()
    out: list[Block] = []
    for line, lang, body in split_fences(text)[0]:
        if lang not in SHELL_LANGS:
            continue
        k = line - 2  # the line before the fence (0-based), skipping blank lines
        while k >= 0 and not lines[k].strip():
            k -= 1
        m = MARKER_RE.fullmatch(lines[k].strip()) if k >= 0 else None
        kind, why = (m.group(1), (m.group(2) or "").strip()) if m else ("offline", "")
        out.append(Block(rel(path), len(out), line, body, kind, why))
    return out


def all_shell_blocks() -> list[Block]:
    return [b for p in pages() for b in shell_blocks(p)]


# -- anchors and links ---------------------------------------------------------------------------------------------

_INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup reduced to its text, lower case, every character that is not a
    letter, digit, space, hyphen or underscore dropped, each space a hyphen (runs of hyphens are kept)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a link may name on this page: headings (duplicates numbered -1, -2, ... as GitHub does) and
    explicit HTML anchors."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in split_fences(path.read_text())[1]:
        m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        out.update(a.lower() for a in _HTML_ANCHOR.findall(line))
    return out


@dataclass(frozen=True)
class Link:
    page: str
    line: int
    target: str


def links(path: Path) -> list[Link]:
    """Relative links and images outside code (fenced blocks and inline code spans)."""
    return links_in(path, rel(path))


def links_in(path: Path, page: str) -> list[Link]:
    """`links` of a file anywhere, reported as `page`."""
    numbered = [(n, re.sub(r"(`+).*?\1", "", line)) for n, line in split_fences(path.read_text())[1]]
    text = "\n".join(line for _, line in numbered)  # joined, so a link whose text wraps over lines is found
    starts = []
    offset = 0
    for _, line in numbered:
        starts.append(offset)
        offset += len(line) + 1
    out: list[Link] = []
    for m in _INLINE_LINK.finditer(text):
        target = m.group(2)
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, ...
            continue
        k = max(i for i, st in enumerate(starts) if st <= m.start())
        out.append(Link(page, numbered[k][0], target))
    return out


def resolve(link: Link) -> tuple[Path, str]:
    """(the file a link points to, its anchor or '')."""
    target, _, anchor = link.target.partition("#")
    base = (ROOT / link.page).parent
    return ((base / target).resolve() if target else ROOT / link.page), anchor


def quoted_outputs(path: Path, heading_start: str) -> list[str]:
    """The ```text blocks of the section whose heading text starts with `heading_start` (troubleshooting quotes
    messages there; tests compare them with what the programs print)."""
    text = path.read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^#{1,6}\s+", line)
                 and re.sub(r"^#{1,6}\s+", "", line).startswith(heading_start))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^#{1,6}\s+", lines[i])), len(lines))
    section = "\n".join(lines[start:end]) + "\n"
    return [body for _, lang, body in split_fences(section)[0] if lang == "text"]
