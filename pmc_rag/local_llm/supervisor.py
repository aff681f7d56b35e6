"""Starting, reusing, watching and restarting the local model server (`pmc_rag.local_llm.server`).

A pipeline YAML that wants the embedded model declares it in a top-level `local_model:` section (Haystack
ignores unknown top-level keys), and its generator chain talks to that address with the stock
`OpenAIChatGenerator`:

    local_model:
      model: qwen2.5-0.5b-instruct
      url: &local_model_url http://127.0.0.1:1417/v1
      n_ctx: 4096
      weights: f16     # optional: the weights re-encoded once for faster prompt reading (pmc_rag.models)
      prompt_cache_mb: 256   # optional: memory for recent prompts' states, so one read before is not read again
      remembered_replies: 128   # optional: replies kept for requests asked again with temperature 0

pmc-rag starts the server when a pipeline that declares it warms up (`ask`, `serve`, `eval`, `setup`), or reuses
the one already running on that address; `serve` also watches it and restarts it when it dies or stops answering.
The server runs in a session of its own, so it outlives the command that started it and exits after
`idle_minutes` unused. Its state and log are in `PMC_RAG_HOME/llm/<port>/`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from pmc_rag.local_llm.fast_build import LIB_PATH_ENV, llama_build_environment
from pmc_rag.local_llm.spec import API_KEY_ENV, ForeignModelServer, LocalModelError, LocalModelSpec, api_key
from pmc_rag.paths import home

log = logging.getLogger("pmc_rag.local_llm")


class LocalModelServer:
    """The server for one spec; one instance per address in a process (see `local_model_server`)."""

    def __init__(self, spec: LocalModelSpec):
        self.spec = spec
        self.folder = home() / "llm" / str(spec.port)
        self.log_path = self.folder / "server.log"
        self.state_path = self.folder / "server.json"
        self.process: subprocess.Popen | None = None  # set when this process started it
        # A server started by `pmc-rag serve` goes when serve goes, even killed -9; one started by `pmc-rag ask`
        # stays for the next question until `idle_minutes` have passed.
        self.exit_with_this_process = False
        self.problem: str | None = None  # why it is not running, for notes and /health
        self.build: str | None = None  # which llama.cpp build the last start chose, and why
        self.restarts = 0
        self.last_exit: str | None = None
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stop_watching = threading.Event()
        self._watch_holders = 0  # apps in this process that watch it (see watch and unwatch)
        self._watch_lock = threading.Lock()
        self._unanswered_checks = 0
        self._incidents: list[tuple[float, str]] = []  # (time, what happened): deaths, hangs, failed starts
        self._last_start_attempt = 0.0
        self._exit_lock = threading.Lock()
        self._recorded_pid: int | None = None

    # -- asking it ------------------------------------------------------------------------------------------------

    def health(self, timeout: float = 2.0) -> dict[str, Any] | None:
        """The server's own health report, or None when nothing of ours answers on the address."""
        request = Request(self.spec.url.rsplit("/v1", 1)[0] + "/health",
                          headers={"Authorization": f"Bearer {api_key()}"})
        try:
            with urlopen(request, timeout=timeout) as response:
                report = json.loads(response.read())
        except HTTPError as error:
            if error.code == 401:
                raise ForeignModelServer(
                    f"another pmc-rag model server, started from another data folder (PMC_RAG_HOME), answers on "
                    f"{self.spec.url} and refuses this one's key: stop it (`pmc-rag model stop` with that "
                    f"PMC_RAG_HOME), or give `local_model.url` and the generator's `api_base_url` another port in "
                    f"the pipeline YAML") from None
            return None
        except (OSError, ValueError):
            return None
        return report if isinstance(report, dict) and report.get("status") == "ok" else None

    def status(self) -> dict[str, Any]:
        """What `pmc-rag status` and `/health` show. Asks the server (2 s at most) unless the watcher runs."""
        report: dict[str, Any] = {"model": self.spec.model, "url": self.spec.url, "log": str(self.log_path),
                                  "restarts": self.restarts}
        if self.build:
            report["llama_cpp_build"] = self.build
        if self.last_exit:
            report["last_exit"] = self.last_exit
        live = self._cached_health if self.watching else self._safe_health()
        if live:
            report.update(state="running", pid=live.get("pid"), busy_s=live.get("busy_s"),
                          llama_cpp=live.get("system_info"), llama_cpp_lib=live.get("llama_cpp_lib"),
                          weights=live.get("weights"), model_path=live.get("model_path"),
                          threads=live.get("n_threads"))
        elif self.problem:
            report.update(state="failed", problem=self.problem)
        else:
            report["state"] = "stopped (starts when an answer needs it)"
        return report

    def _safe_health(self, timeout: float = 2.0) -> dict[str, Any] | None:
        """`health()`, with a foreign server on the address kept as the `problem` instead of raised."""
        try:
            return self.health(timeout)
        except LocalModelError as error:
            self.problem = str(error)
            return None

    # -- starting and stopping ------------------------------------------------------------------------------------

    def ensure_running(self) -> dict[str, Any]:
        """Reuse the server on the address, or start one and wait until it answers.

        :raises LocalModelError: It cannot start; `problem` keeps the message for the answers' notes.
        """
        with self._lock:
            try:
                report = self.health()
                if report is not None and not self._serves_this_model(report):
                    # The YAML now names another model (`local_model.model` edited): the old server gives way.
                    log.info("the local model server on %s serves %s; restarting it with %s", self.spec.url,
                             report.get("model"), self.spec.model)
                    self.stop()
                    report = None
                if report is None:
                    self._last_start_attempt = time.monotonic()
                    report = self._start()
            except LocalModelError as error:
                self.problem = str(error)
                self._incidents.append((time.time(), self.problem))
                raise
            self.problem = None
            self._cached_health = report
            return report

    def _serves_this_model(self, report: dict[str, Any]) -> bool:
        if report.get("model") != self.spec.model or report.get("weights_asked", "packaged") != self.spec.weights:
            return False
        return not self.spec.model_path or Path(str(report.get("model_path"))) == Path(self.spec.model_path)

    def may_try_start(self, after_failure_s: float = 60.0) -> bool:
        """False for a while after a failed start, so that a broken model is not started again for every answer."""
        return self.problem is None or time.monotonic() - self._last_start_attempt >= after_failure_s

    def _start(self) -> dict[str, Any]:
        self.folder.mkdir(parents=True, exist_ok=True)
        # PMC_RAG_LLM_LAUNCHER runs the server under another command: `nice -n 10`, `taskset -c 2,3`, or an
        # emulated CPU (`qemu-x86_64 -cpu Nehalem`) to see what a build does on a CPU unlike this one.
        launcher = shlex.split(os.environ.get("PMC_RAG_LLM_LAUNCHER", ""))
        # -X faulthandler: a native crash, even while importing, leaves the Python stack in the log.
        command = [*launcher, sys.executable, "-X", "faulthandler", "-m", "pmc_rag.local_llm.server", "--model", self.spec.model,
                   "--host", self.spec.host, "--port", str(self.spec.port), "--n-ctx", str(self.spec.n_ctx),
                   "--idle-minutes", str(self.spec.idle_minutes), "--prompt-cache-mb", str(self.spec.prompt_cache_mb),
                   "--remembered-replies", str(self.spec.remembered_replies)]
        if self.spec.model_path:
            command += ["--model-path", str(self.spec.model_path)]
        else:
            command += ["--weights", self.spec.weights]
        if self.exit_with_this_process:
            command += ["--exit-with-parent"]
        taken = port_taken(self.spec.host, self.spec.port)
        if taken:
            raise LocalModelError(
                f"the local model server ({self.spec.model}) could not start: port {self.spec.port} on "
                f"{self.spec.host} is taken by another program ({taken}), which does not answer as a pmc-rag "
                f"model server. Fix: stop that program, or give `local_model.url` (and the generator's "
                f"`api_base_url`) another port in the pipeline YAML. Answers quote passages until it runs.")
        environment = {**os.environ, API_KEY_ENV: api_key(), "PYTHONUNBUFFERED": "1"}
        environment.pop(LIB_PATH_ENV, None)  # which llama.cpp build serves is decided here, after its trial
        build, self.build = llama_build_environment(self._model_file())
        environment.update(build)
        with self.log_path.open("ab") as log_file:
            log_file.write(f"\n== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(command)}\n"
                           f"== llama.cpp build: {self.build}\n".encode())
            log_file.flush()
            self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=environment,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.state_path.write_text(json.dumps({"pid": self.process.pid, "url": self.spec.url,
                                               "model": self.spec.model, "started": time.time()}))
        deadline = time.monotonic() + self.spec.start_timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:  # it never came up: a failed start, not a death to restart from
                self.last_exit = describe_exit(code)
                self.process = None
                raise LocalModelError(self._start_failure(code))
            report = self.health(timeout=1.0)
            if report:
                log.info("local model server %s started (pid %s) on %s", self.spec.model, report.get("pid"),
                         self.spec.url)
                return report
            time.sleep(0.2)
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None
        raise LocalModelError(
            f"the local model server did not answer within {self.spec.start_timeout:g} s of starting (its log: "
            f"`pmc-rag model status`); raise `local_model.start_timeout` in the YAML on a slow machine")

    def _model_file(self) -> str | None:
        """The GGUF the server will load, if it is in place (the fast build's trial loads it)."""
        from pmc_rag.models import EMBEDDED_LLMS, PACKAGED, reencoded_file

        if self.spec.model_path:
            return self.spec.model_path
        if self.spec.model not in EMBEDDED_LLMS:
            return None
        # The file it will serve, else (not re-encoded yet, or that failed) the packaged one it falls back to.
        served = reencoded_file(self.spec.model, self.spec.weights) or reencoded_file(self.spec.model, PACKAGED)
        return str(served) if served else None

    def _start_failure(self, code: int) -> str:
        lines = self.log_tail()
        reported = [line.split("error: ", 1)[1] for line in lines if line.startswith("pmc-rag-llm: error: ")]
        if reported:
            cause = reported[-1]
            fix = (f"check that `local_model.model_path` in the YAML names a GGUF file ({self.spec.model_path})"
                   if self.spec.model_path else "run `pmc-rag setup`, which rebuilds and verifies the model file")
        elif code < 0:
            cause = f"it was {describe_exit(code)} while loading the model (llama.cpp built for another CPU?)"
            fix = ("rebuild llama.cpp for a portable CPU target: `PMC_RAG_LLAMA_CPU=baseline scripts/install.sh "
                   "--rebuild-llama` (docs: 'The embedded model on your CPU')")
        else:
            cause = f"it exited with status {code}" + (f": {lines[-1]}" if lines else "")
            fix = "see the log"
        return (f"the local model server ({self.spec.model}) could not start: {cause}. Fix: {fix}; "
                f"`pmc-rag model status` shows its log. Answers quote passages until it runs.")

    def smoke_test(self, max_tokens: int = 16) -> tuple[float, float]:
        """Have the server write a few tokens; return (seconds, generated tokens per second).

        :raises LocalModelError: It failed or died doing so (the message names the signal, cause and fix).
        """
        body = json.dumps({"model": self.spec.model, "max_tokens": max_tokens, "temperature": 0.0,
                           "messages": [{"role": "user", "content": "Name three organs of the human body."}]})
        request = Request(f"{self.spec.url}/chat/completions", data=body.encode(), method="POST",
                          headers={"Authorization": f"Bearer {api_key()}", "Content-Type": "application/json"})
        started = time.monotonic()
        try:
            with urlopen(request, timeout=120) as response:
                reply = json.loads(response.read())
        except (OSError, ValueError) as error:
            died = self.process is not None and self.process.poll() is not None
            if died:
                cause = describe_exit(self.process.returncode)
                fix = ("rebuild llama.cpp for the most portable CPU target: `PMC_RAG_LLAMA_CPU=baseline "
                       "scripts/install.sh --rebuild-llama` (docs: 'The embedded model on your CPU')")
            else:
                cause, fix = f"{type(error).__name__}: {error}", "see the log"
            self.problem = (f"the local model server ({self.spec.model}) failed its first answer: {cause}. Fix: "
                            f"{fix}; `pmc-rag model status` shows its log. Answers quote passages until it runs.")
            raise LocalModelError(self.problem) from None
        seconds = time.monotonic() - started
        tokens = (reply.get("usage") or {}).get("completion_tokens") or 0
        return seconds, tokens / seconds if seconds else 0.0

    def log_tail(self, lines: int = 40) -> list[str]:
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(0, os.SEEK_END)
                log_file.seek(max(0, log_file.tell() - 16384))
                text = log_file.read().decode(errors="replace")
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()][-lines:]

    def stop(self) -> bool:
        """Stop the server on this address if it is ours; return whether one was running."""
        pid = None
        if self.process is not None and self.process.poll() is None:
            pid = self.process.pid
        else:
            with contextlib.suppress(LocalModelError):
                pid = (self.health() or {}).get("pid")
        if not pid:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not _alive(pid):
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        return True

    def _record_exit(self) -> None:
        """If the process this one started has exited, note how (once, whoever notices first)."""
        with self._exit_lock:
            if self.process is None or self.process.poll() is None or self._recorded_pid == self.process.pid:
                return
            self._recorded_pid = self.process.pid
            self.last_exit = describe_exit(self.process.returncode)
            self._incidents.append((time.time(), self.last_exit))

    def _dying(self, within_s: float = 10.0) -> bool:
        """Whether the process this one started is exiting: it does not answer its health check and its exit shows
        within `within_s`. A killed server's connections close while the kernel is still tearing it down, before
        its exit status can be read; on a busy machine that gap is long enough to be seen as a bare connection
        error, so the exit is waited for rather than guessed at."""
        if self.process is None or self.process.poll() is not None:
            return self.process is not None
        if not _exiting(self.process.pid):  # alive: hung or busy, which the watcher and the health check tell
            return False
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=within_s)
        return self.process.poll() is not None

    def trouble_since(self, started: float) -> str | None:
        """Why the server may not have answered a request made at `started` (a `time.time()`): a death, a hang or
        a failed start since then, or its present state; None when nothing is wrong."""
        self._record_exit()
        if not [when for when, _ in self._incidents if when >= started] and self._dying():
            self._record_exit()
        recent = [what for when, what in self._incidents if when >= started]
        if recent:
            what = recent[-1]
            if what.startswith("the local model server"):
                return what
            return (f"The local model server ({self.spec.model}) stopped while answering: {what}. It is restarted "
                    "for the next question; `pmc-rag model status` on the server shows its log.")
        if self.problem:
            return self.problem
        if self._safe_health(timeout=1.0) is None:
            return (f"The local model server ({self.spec.model}) stopped or stopped answering; it is restarted "
                    "(at once if it has gone, after three unanswered checks if it hangs); `pmc-rag model status` on "
                    "the server shows its log.")
        return None

    # -- watching -------------------------------------------------------------------------------------------------

    _cached_health: dict[str, Any] | None = None

    @property
    def watching(self) -> bool:
        return self._watcher is not None and self._watcher.is_alive()

    def watch(self, interval: float = 2.0, hung_after_checks: int = 3) -> None:
        """Check the server every `interval` seconds from a background thread; restart it when it has died or
        has not answered `hung_after_checks` checks in a row (it is then killed first). Each call holds the
        watching until a matching `unwatch()`: apps in one process that share the server share one watcher."""
        with self._watch_lock:
            self._watch_holders += 1
            if self.watching and not self._stop_watching.is_set():
                return
            if self._watcher is not None:  # one being stopped: let it finish first
                self._watcher.join(timeout=10)
            self._stop_watching.clear()
            self._watcher = threading.Thread(target=self._watch, args=(interval, hung_after_checks), daemon=True,
                                             name=f"pmc-rag-llm-watch-{self.spec.port}")
            self._watcher.start()

    def unwatch(self) -> None:
        """One holder of `watch()` is done (its app shut down); the last one stops the watching."""
        with self._watch_lock:
            self._watch_holders = max(0, self._watch_holders - 1)
            if self._watch_holders:
                return
        self.stop_watching()

    def stop_watching(self) -> None:
        """Stop the watching, whoever holds it."""
        self._watch_holders = 0
        self._stop_watching.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)

    def _watch(self, interval: float, hung_after_checks: int) -> None:
        while not self._stop_watching.wait(interval):
            try:
                self.check_once(hung_after_checks)
            except Exception:  # the watcher must outlive any one failure
                log.exception("checking the local model server failed")

    def check_once(self, hung_after_checks: int = 3, retry_start_after: float = 60.0) -> None:
        """One watcher step: note the health, restart a dead server, kill and restart a hung one (counted in
        `restarts`); start one that never ran, now and then, when it could not start (not counted)."""
        restarting = self.process is not None  # ours ran: what follows is a restart, not another try to start
        report = self._safe_health()
        self._cached_health = report
        if report:
            self._unanswered_checks = 0
            return
        if self.process is not None and self.process.poll() is None:
            self._unanswered_checks += 1  # alive but silent
            if self._unanswered_checks < hung_after_checks:
                return
            log.error("local model server (pid %s) has not answered %d health checks: killing it",
                      self.process.pid, self._unanswered_checks)
            with self._exit_lock:  # the kill is this incident: a request failing meanwhile must not record it
                self._recorded_pid = self.process.pid  # again as a bare "killed by SIGKILL"
                self.last_exit = (f"hung (it stopped answering: {self._unanswered_checks} health checks "
                                  f"unanswered), so it was killed")
                self._incidents.append((time.time(), self.last_exit))
            self.process.kill()
            self.process.wait(timeout=10)
        elif self.process is not None:
            self._record_exit()
            log.error("local model server died: %s; log: %s", self.last_exit, self.log_path)
        elif not self.may_try_start(retry_start_after):
            return  # it could not start; /health and the answers' notes say why; tried again now and then
        self._unanswered_checks = 0
        self.restarts += restarting
        with contextlib.suppress(LocalModelError):
            self.ensure_running()
        self._cached_health = self._safe_health()


def port_taken(host: str, port: int) -> str | None:
    """Why `port` cannot be listened on (another program holds it), or None when it is free."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind((host, port))
        except OSError as error:
            return error.strerror or str(error)
    return None


def _exiting(pid: int) -> bool:
    """Whether the kernel is tearing the process down (PF_EXITING in /proc/<pid>/stat, or a zombie): its sockets
    may already be closed though its exit status cannot be read yet."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return Path("/proc/self").exists()  # gone already (the wait that follows is short); without /proc: unknown
    return fields[0] in ("Z", "X") or bool(int(fields[6]) & 0x4)


def describe_exit(code: int | None) -> str:
    """'killed by SIGSEGV (a crash in native code)', 'exited with status 2' ..."""
    if code is None:
        return "running"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
        crash = " (a crash in native code)" if name in {"SIGSEGV", "SIGILL", "SIGBUS", "SIGABRT", "SIGFPE"} else ""
        return f"killed by {name}{crash}"
    return f"exited with status {code}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child that has exited but was not reaped yet is a zombie: not alive for our purposes.
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


_servers: dict[tuple[str, int], LocalModelServer] = {}
_servers_lock = threading.Lock()


def local_model_server(spec: LocalModelSpec) -> LocalModelServer:
    """The one `LocalModelServer` of this process for the spec's address."""
    with _servers_lock:
        key = (str(home()), spec.port)
        server = _servers.get(key)
        if server is None or server.spec != spec:
            server = _servers[key] = LocalModelServer(spec)
        return server


def started_servers() -> list[LocalModelServer]:
    return list(_servers.values())
