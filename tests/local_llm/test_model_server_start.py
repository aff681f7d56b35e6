"""Starting the local model server: what is already on its port, a damaged or unconvertible model file, another
model named in the YAML, the AVX-512 build's trial, and one watcher shared by the apps that use it."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from pmc_rag.local_llm.spec import LocalModelSpec
from pmc_rag.local_llm.supervisor import LocalModelServer

from conftest import PROJECT_ROOT, free_port

pytestmark = pytest.mark.integration  # the real model's server: starts, fails to start, restarts

MODEL = "qwen2.5-0.5b-instruct"

def test_apps_sharing_a_model_server_share_its_watcher_until_the_last_one_goes():
    server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{free_port()}/v1"))
    server.watch(interval=3600)
    server.watch(interval=3600)
    server.unwatch()
    assert server.watching
    server.unwatch()
    assert not server.watching
    server.watch(interval=3600)   # watched again later, by a new app
    assert server.watching
    server.stop_watching()
    assert not server.watching


def test_a_port_taken_by_another_program_is_named_with_its_fix():
    import socket

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{port}/v1"))
        with pytest.raises(Exception, match=rf"port {port} on 127.0.0.1 is taken by another program .*Fix: stop "
                                            r"that program, or give `local_model.url`"):
            server.ensure_running()
        assert server.process is None and "is taken" in server.problem  # nothing started; /health says why


def test_a_truncated_model_file_is_named_with_its_fix_not_a_crash(tmp_path):
    from pmc_rag.models import assemble_llm

    whole = assemble_llm(MODEL)
    cut = tmp_path / "cut-short.gguf"
    with whole.open("rb") as source:  # a download or copy that stopped a tenth of the way
        cut.write_bytes(source.read(whole.stat().st_size // 10))
    server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{free_port()}/v1",
                                             model_path=str(cut)))
    with pytest.raises(Exception, match=r"could not start: could not load the model .*Fix: check that "
                                        r"`local_model.model_path`"):
        server.ensure_running()
    assert server.process is None and "signal" not in server.problem.lower()


def test_weights_that_cannot_be_re_encoded_leave_the_packaged_file_serving_and_say_why(tmp_path, monkeypatch):
    # A disk that fills while the f16 copy is written: the server is run with a 50 MB limit on the size of any
    # file it or its children write (RLIMIT_FSIZE), far below the 1.2 GB of the copy.
    from pmc_rag.models import EMBEDDED_LLMS, assemble_llm

    packaged = assemble_llm(MODEL)
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    for source in (packaged, packaged.with_suffix(".verified")):   # the verified packaged file, and no copy yet
        (home / "models" / source.name).symlink_to(source)
    limit = tmp_path / "small_disk.py"
    limit.write_text("import os, resource, sys\n"
                     "resource.setrlimit(resource.RLIMIT_FSIZE, (50 << 20, 50 << 20))\n"
                     "os.execv(sys.argv[1], sys.argv[1:])\n")
    monkeypatch.setenv("PMC_RAG_HOME", str(home))
    monkeypatch.setenv("PMC_RAG_LLM_LAUNCHER", f"{sys.executable} {limit}")
    server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{free_port()}/v1",
                                             weights="f16", idle_minutes=1))
    try:
        report = server.ensure_running()
        assert report["weights_asked"] == "f16" and report["weights"] == "packaged"
        assert Path(report["model_path"]).name == EMBEDDED_LLMS[MODEL].file_name
        warning = [line for line in server.log_tail() if "warning" in line]
        assert warning and "could not re-encode" in warning[-1] and "serving the packaged weights" in warning[-1]
        assert sorted(path.name for path in (home / "models").iterdir()) == sorted(
            [packaged.name, packaged.with_suffix(".verified").name])   # no partial copy left behind
        assert server.smoke_test(max_tokens=4)[0] > 0   # and it answers
        # and its log says what the reply cost
        assert any(re.fullmatch(r"pmc-rag-llm: (streamed )?reply 1: \d+ prompt tokens, [1-4] written, \d+ computed, "
                                r"[\d.]+ s, request [0-9a-f]{12}", line) for line in server.log_tail()), server.log_tail()
    finally:
        server.stop()


def test_a_yaml_that_names_another_model_restarts_the_server_with_it(tmp_path):
    """`local_model.model` (or `model_path`) edited while a server for the old one runs on the address: the old
    server gives way; answers never come from a model the YAML no longer names."""
    from pmc_rag.models import assemble_llm

    url = f"http://127.0.0.1:{free_port()}/v1"
    other_file = tmp_path / "the-same-weights-under-another-name.gguf"
    os.link(assemble_llm(MODEL), other_file)
    old = LocalModelServer(LocalModelSpec(model=MODEL, url=url, idle_minutes=2))
    new = LocalModelServer(LocalModelSpec(model=MODEL, url=url, model_path=str(other_file), idle_minutes=2))
    try:
        old_pid = old.ensure_running()["pid"]
        report = new.ensure_running()
        assert report["pid"] != old_pid and report["model_path"] == str(other_file)
        assert new.ensure_running()["pid"] == report["pid"]  # the right one is reused, not restarted again
    finally:
        new.stop()
        old.stop()


@pytest.fixture
def fake_fast_build(tmp_path, monkeypatch):
    """A "fast build" folder holding copies of the installed (portable) libraries, so that a passing trial is a
    real one, on a CPU said to have AVX-512 whether or not it has; trial markers go to a home of the test's own."""
    import shutil

    import llama_cpp

    from pmc_rag.local_llm import fast_build

    folder = tmp_path / "llama-cpp-fast"
    shutil.copytree(Path(llama_cpp.__file__).parent / "lib", folder / "lib", symlinks=True)
    monkeypatch.setattr(fast_build, "FAST_BUILD_DIR", folder)
    monkeypatch.setattr(fast_build, "cpu_flags", lambda: {"avx512f", "avx2"})
    monkeypatch.setattr(fast_build, "home", lambda: tmp_path / "home")
    return folder / "lib"


def test_a_fast_build_that_crashes_in_its_trial_is_passed_over_for_the_portable_one(fake_fast_build, monkeypatch):
    from pmc_rag.local_llm import fast_build
    from pmc_rag.models import assemble_llm

    monkeypatch.setattr(fast_build, "TRIAL_SCRIPT", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{free_port()}/v1",
                                             model_path=str(assemble_llm(MODEL)), idle_minutes=2))
    try:
        report = server.ensure_running()
        assert report["llama_cpp_lib"].startswith("portable")  # it serves, with the build that works
        assert "the fast build failed its trial on this CPU: killed by signal 11" in server.build
        assert "killed by signal 11" in "\n".join(server.log_tail())
        assert server.smoke_test(max_tokens=4)[0] > 0
    finally:
        server.stop()
    assert not list((fake_fast_build.parents[1] / "home").rglob("*.works-on-*"))  # tried again at the next start


def test_a_fast_build_that_passes_its_trial_serves_and_the_pass_is_remembered(fake_fast_build, monkeypatch):
    from pmc_rag.local_llm import fast_build
    from pmc_rag.models import assemble_llm

    model_path = str(assemble_llm(MODEL))
    environment, why = fast_build.llama_build_environment(model_path)
    assert environment == {"LLAMA_CPP_LIB_PATH": str(fake_fast_build)} and why.startswith("fast")
    [marker] = (fake_fast_build.parents[1] / "home").rglob("*.works-on-*")
    assert Path(model_path).name in marker.name
    server = LocalModelServer(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{free_port()}/v1",
                                             model_path=model_path, idle_minutes=2))
    try:
        assert server.ensure_running()["llama_cpp_lib"] == str(fake_fast_build)
        assert server.smoke_test(max_tokens=4)[0] > 0
    finally:
        server.stop()
    monkeypatch.setenv("PMC_RAG_LLAMA_BUILD", "portable")
    assert fast_build.llama_build_environment(model_path)[0] == {}
    monkeypatch.delenv("PMC_RAG_LLAMA_BUILD")
    monkeypatch.setattr(fast_build, "cpu_flags", lambda: {"avx2"})
    assert fast_build.llama_build_environment(model_path) == ({}, "portable (this CPU has no AVX-512)")


def test_the_fast_build_never_compiles_amx_kernels():
    """AMX kernels run only on weights repacked for them, which the model loader keeps off; compiled in, they died
    of SIGILL on a KVM Xeon whose kernel does not enable AMX state (evaluation/results/2026-11-27-xeon-amx/)."""
    script = (PROJECT_ROOT / "scripts" / "install.sh").read_text()
    commands = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert [line for line in commands if "GGML_AVX512=ON" in line]  # the fast build is still there
    assert not [line for line in commands if "GGML_AMX" in line]
