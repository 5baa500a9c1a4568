"""The documentation is tested: every relative link and anchor resolves, and every shell block a user runs is run.

The block convention (markers, kinds) is in test/docs_blocks.py. In short: ```bash blocks are commands and are run
(`offline` by default; `graph` against a real-time graph this file starts), unless a marker says another test runs
them (`covered-by`) or why nothing can (`skip`). Output goes in ```text/```console blocks, which are not run.

Isolation as in the other graph tests: each graph and each block that starts one gets its own ROS_DOMAIN_ID and the
loopback DDS profile (harness.graph_env); the SDK's fixed ports are private to the session's network namespace
(tools/run_tests.sh). Blocks run in a scratch folder that links in the repository's files, so what they write (bags,
bench results, the CLI's robot list in HOME) never lands in the checkout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from pathlib import Path

import docs_blocks as db
import pytest
from harness import ROOT, VENV_BIN, Graph, graph_env, http_json_when_ready, next_domain_id, wait_for

#: pages other work delivers; a link to one is checked once it exists. When it lands, take it out of this set
#: (test_pending_pages_are_listed_only_while_missing fails until then, so the list cannot go stale).
PENDING: set[str] = set()
BLOCK_TIMEOUT_S = 300
API = "http://127.0.0.1:3000"

BLOCKS = db.all_shell_blocks()
OFFLINE = [b for b in BLOCKS if b.kind == "offline"]
GRAPH = [b for b in BLOCKS if b.kind == "graph"]


# -- links and anchors -----------------------------------------------------------------------------------------------

def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    checked = 0
    for page in db.pages():
        for link in db.links(page):
            path, anchor = db.resolve(link)
            where = f"{link.page}:{link.line}: {link.target}"
            try:
                shown = path.relative_to(ROOT).as_posix()
            except ValueError:
                broken.append(f"{where} (outside the repository)")
                continue
            if shown in PENDING and not path.exists():
                continue
            checked += 1
            if not path.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in db.anchors(path):
                broken.append(f"{where} (no heading with anchor #{anchor} in {shown})")
            elif anchor and path.suffix != ".md":
                broken.append(f"{where} (an anchor into a file that is not Markdown)")
    assert checked > 40, checked  # the parser found the docs' links
    assert not broken, "\n".join(broken)


def test_pending_pages_are_listed_only_while_missing() -> None:
    landed = sorted(p for p in PENDING if (ROOT / p).exists())
    assert not landed, f"these exist now: remove them from test_docs.PENDING so links to them are checked: {landed}"


def test_slugs_follow_the_forges_rules() -> None:
    assert db.slug("Composed mode (`vasimov up --compose`)") == "composed-mode-vasimov-up---compose"
    assert db.slug("Replay (`vasimov replay`)") == "replay-vasimov-replay"
    assert db.slug("HTTP API (:3000)") == "http-api-3000"
    assert db.slug("Supervision: control nodes and observers") == "supervision-control-nodes-and-observers"
    assert db.slug("VAS1 state packet (300 bytes)") == "vas1-state-packet-300-bytes"
    assert db.slug("[Link](x.md) and *emphasis*") == "link-and-emphasis"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    """The checker itself: a page with a missing file, a missing anchor and a good one."""
    page = ROOT / "docs" / "getting-started.md"
    good = db.Link("docs/getting-started.md", 1, "../README.md#first-ten-minutes")
    missing_anchor = db.Link("docs/getting-started.md", 1, "../README.md#no-such-section")
    missing_file = db.Link("docs/getting-started.md", 1, "nope.md")
    assert db.resolve(good)[1] in db.anchors(db.resolve(good)[0])
    assert db.resolve(missing_anchor)[1] not in db.anchors(db.resolve(missing_anchor)[0])
    assert not db.resolve(missing_file)[0].exists()
    assert page.exists()
    md = tmp_path / "x.md"
    md.write_text("# Title\n\n```bash\n# [not](a-link.md)\n```\n\n"
                  "See [a wrapped\nlink](y.md#title) and `[code](z.md)`.\n")
    found = [(lk.line, lk.target) for lk in db.links_in(md, "x.md")]
    assert found == [(7, "y.md#title")]


# -- shell blocks: the convention ------------------------------------------------------------------------------------

def test_every_shell_block_has_a_known_kind_and_a_reason_where_needed() -> None:
    assert BLOCKS, "no shell blocks found"
    bad = []
    for b in BLOCKS:
        if b.kind not in db.KINDS:
            bad.append(f"{b.id}: unknown docs-test kind {b.kind!r} (one of {sorted(db.KINDS)})")
        elif b.kind == "skip" and len(b.why) < 20:
            bad.append(f"{b.id}: a skipped block needs its reason (docs-test: skip: why)")
        elif b.kind == "covered-by":
            test_file = b.why.split()[0] if b.why else ""
            path = ROOT / test_file
            if not test_file.startswith("test/") or not path.is_file():
                bad.append(f"{b.id}: covered-by names no test file: {b.why!r}")
            elif b.page not in path.read_text():
                bad.append(f"{b.id}: {test_file} does not read {b.page}")
    assert not bad, "\n".join(bad)


def test_the_readme_flow_blocks_are_the_ones_test_readme_flow_runs() -> None:
    """test_readme_flow cuts its two blocks out of README.md by position: they must be the ones marked as covered."""
    covered = [b for b in BLOCKS if b.page == "README.md" and b.kind == "covered-by"]
    assert [b.why.split()[0] for b in covered] == ["test/test_readme_flow.py"] * 2
    assert "menlo stand -y && " in covered[0].code and "api/sim/restart" in covered[1].code


# -- shell blocks: running them --------------------------------------------------------------------------------------

def sandbox(tmp: Path) -> Path:
    """A scratch folder that looks like the checkout: every top-level entry linked in, so `.venv/bin/...`,
    `config/...` and suite paths work, while new files land here."""
    work = tmp / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "bags", "bench_out"):
            (work / entry.name).symlink_to(entry)
    (tmp / "home").mkdir()
    return work


def run_block(block: db.Block, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = dict(env, HOME=str(work.parent / "home"), PATH=f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               NO_COLOR="1", TERM="dumb")
    return subprocess.run(["bash", "-e", "-c", block.code], cwd=work, env=env, text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=BLOCK_TIMEOUT_S)


@pytest.mark.graph  # some of these start their own graph (vasimov up --lockstep); all are user commands
@pytest.mark.parametrize("block", OFFLINE, ids=[b.id for b in OFFLINE])
def test_offline_block_runs_as_written(block: db.Block) -> None:
    with tempfile.TemporaryDirectory(prefix="docs-block-") as tmp:
        work = sandbox(Path(tmp))
        r = run_block(block, work, graph_env(next_domain_id()))
    assert r.returncode == 0, f"{block.id} exited {r.returncode}:\n{block.code}\n--- stdout\n{r.stdout[-4000:]}" \
                              f"\n--- stderr\n{r.stderr[-4000:]}"


@pytest.mark.graph
class TestAgainstARunningGraph:
    """The `graph` blocks, in document order, against one real-time graph: what `make run` starts."""

    @pytest.fixture(scope="class")
    def graph(self):
        g = Graph()
        try:
            wait_for(lambda: ("SDK bridge ready" in g.output() and "plant ready" in g.output())
                     or g.proc.poll() is not None, 90, "the graph to start")
            assert g.proc.poll() is None, g.output()[-3000:]
            http_json_when_ready(f"{API}/api/version")
            yield g
        finally:
            g.stop()
            assert g.leftovers() == []

    @pytest.fixture(scope="class")
    def workdirs(self):
        """One scratch checkout and HOME per page, so a page's blocks build on each other as a reader's would."""
        with tempfile.TemporaryDirectory(prefix="docs-graph-") as tmp:
            made: dict[str, Path] = {}

            def get(page: str) -> Path:
                if page not in made:
                    base = Path(tmp) / str(len(made))
                    base.mkdir()
                    made[page] = sandbox(base)
                return made[page]

            yield get

    def test_the_readme_flow_first(self, graph: Graph, workdirs) -> None:
        """The README's covered blocks set up the CLI's robot (`menlo robots add`) that later README blocks use: run
        them once here too, as a reader does before step 2 (test_readme_flow checks their outcome)."""
        for b in [b for b in BLOCKS if b.page == "README.md" and b.kind == "covered-by"]:
            r = run_block(b, workdirs(b.page), graph.env)
            assert r.returncode == 0, f"{b.id}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"

    @pytest.mark.parametrize("block", GRAPH, ids=[b.id for b in GRAPH])
    def test_graph_block_runs_as_written(self, graph: Graph, workdirs, block: db.Block) -> None:
        r = run_block(block, workdirs(block.page), graph.env)
        assert r.returncode == 0, f"{block.id} exited {r.returncode}:\n{block.code}\n--- stdout\n" \
                                  f"{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-4000:]}"
        assert graph.proc.poll() is None, f"the graph stopped during {block.id}:\n{graph.output()[-3000:]}"

    def test_a_second_vasimov_up_says_a_twin_is_running(self, graph: Graph) -> None:
        """docs/troubleshooting.md, "A twin is already running": a second `vasimov up` (what a second `make run`
        runs) while this graph serves stops at once, naming the port and what to do, and starts no node."""
        r = subprocess.run([str(VENV_BIN / "vasimov"), "up"], env=graph_env(next_domain_id()), cwd=ROOT, text=True,
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "3000/tcp" in r.stderr and "A twin is already running" in r.stderr, r.stderr
        assert "Ctrl-C" in r.stderr and "sdk_http_port:=4000" in r.stderr, r.stderr
        assert "plant ready" not in r.stdout + r.stderr
        assert graph.proc.poll() is None
        quoted = db.quoted_outputs(ROOT / "docs" / "troubleshooting.md", "`vasimov up: cannot start:")
        assert r.stderr.strip() == quoted[0].strip(), "docs/troubleshooting.md quotes another message"

    def test_a_second_sdk_client_meets_the_state_port_taken(self, graph: Graph, tmp_path: Path) -> None:
        """docs/troubleshooting.md, "could not bind the state port": the SDK's own message when 8851 is held."""
        home = tmp_path / "home"
        home.mkdir()
        env = dict(graph.env, HOME=str(home), NO_COLOR="1", TERM="dumb")
        menlo = str(VENV_BIN / "menlo")
        add = subprocess.run([menlo, "robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1"], env=env,
                             text=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        assert add.returncode == 0, add.stdout + add.stderr
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
            holder.bind(("0.0.0.0", 8851))
            r = subprocess.run([menlo, "status"], env=env, text=True, capture_output=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        out = " ".join((r.stdout + r.stderr).split())
        assert r.returncode != 0, out
        assert "could not bind the state port 0.0.0.0:8851" in out and "Another SDK process" in out, out
