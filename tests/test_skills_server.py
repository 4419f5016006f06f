"""The same library code against a chromadb server (`chroma run` on loopback) instead of a local folder."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from agentkit.skills import Skill, SkillLibrary

DATA = Path(__file__).parent / "data" / "skills"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        pytest.skip("the chromadb CLI (`chroma`) is not installed")
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([exe, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(data / "db")],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log.close()
            pytest.fail(f"chroma server did not start: {(data / 'server.log').read_text()[-2000:]}")
        time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_library_with_its_index_on_a_chromadb_server(tmp_path, chroma_url):
    library = SkillLibrary.open(tmp_path / "lib", index=chroma_url)
    assert library.index.is_server and library.index.location == chroma_url
    assert not (tmp_path / "lib" / "index").exists()  # nothing indexed locally
    results = library.import_dir(DATA)
    assert all(r.status == "added" for r in results)
    found = library.retrieve("undo the last git commit")
    assert found[0].skill.name == "undo-git-commit"
    assert library.search("rename lots of files at once", k=3)[0].skill.name == "batch-rename-files"
    # A second handle (another process would do the same) sees the first one's writes at once.
    other = SkillLibrary.open(tmp_path / "lib")  # the server URL is remembered in library.json
    assert other.index.location == chroma_url
    rng = np.random.default_rng(0)
    vector = rng.standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    assert other.add(Skill(name="from-other", description="x"), embedding=vector).status == "added"
    assert library.retrieve(vector, k=1)[0].skill.name == "from-other"
    removed = library.remove("from-other")
    assert removed.name == "from-other" and other.index.count() == len(results)


def test_two_libraries_share_one_server_without_mixing(tmp_path, chroma_url):
    a = SkillLibrary.open(tmp_path / "a", index=chroma_url)
    b = SkillLibrary.open(tmp_path / "b", index=chroma_url)
    a.import_dir(DATA / "unit-conversion")
    assert a.index.count() == 1 and b.index.count() == 0
    assert b.retrieve("convert miles to kilometres") == []
