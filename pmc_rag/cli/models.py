"""`pmc-rag model` and the local model server lines that `setup` and `status` print."""

from __future__ import annotations

import argparse
import sys


def _check_local_model(pipeline_name: str) -> None:
    """Start the answering pipeline's local model server and have it write a few tokens: a model that crashes on
    this CPU shows here, with the fix, rather than at the first question. Not fatal: answers then quote passages."""
    from pmc_rag.local_llm.spec import LocalModelError
    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.pipelines import declared_local_models

    for spec in declared_local_models(pipeline_name):
        server = local_model_server(spec)
        try:
            server.ensure_running()
            seconds, tokens_per_s = server.smoke_test()
        except LocalModelError as error:
            print(f"WARNING: {error}", file=sys.stderr)
            continue
        print(f"Local model server ({spec.model}) at {spec.url}: answered a test prompt in {seconds:.1f} s "
              f"({tokens_per_s:.0f} tokens/s); log {server.log_path}")
        if server.build:  # known when this command started it
            print(f"  llama.cpp build: {server.build}")


def _local_model_lines(pipeline_name: str) -> list[str]:
    """`pmc-rag status`'s lines about the pipeline's local model server."""
    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.pipelines import declared_local_models

    specs = declared_local_models(pipeline_name)
    if not specs:
        return [f"Local model server: none declared in {pipeline_name}"]
    lines: list[str] = []
    for spec in specs:
        report = local_model_server(spec).status()
        lines.append(f"Local model server ({spec.model}) at {spec.url}: {report['state']}"
                     + (f", pid {report['pid']}" if report.get("pid") else ""))
        if report.get("problem"):
            lines.append(f"  {report['problem']}")
        if report.get("weights"):   # what it serves: a re-encoding that failed falls back to the packaged file
            lines.append(f"  weights: {report['weights']} ({report.get('model_path')}), generating with "
                         f"{report.get('threads')} threads")
        if report.get("llama_cpp"):
            lines.append(f"  llama.cpp: {report['llama_cpp']}")
        if report.get("llama_cpp_build") or report.get("llama_cpp_lib"):
            lines.append(f"  llama.cpp build: {report.get('llama_cpp_build') or report['llama_cpp_lib']}")
        lines.append(f"  log: {report['log']}")
    return lines


def _model(args: argparse.Namespace) -> int:
    from pmc_rag.local_llm.spec import LocalModelError
    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.models import EMBEDDED_LLMS, install_llm, is_verified
    from pmc_rag.pipelines import declared_local_models, resolve_pipeline_path

    if args.action == "list":
        for name, registered in EMBEDDED_LLMS.items():
            state = "installed" if is_verified(registered) else f"not installed: pmc-rag model install {name}"
            print(f"{name}: {registered.description}; {registered.licence}; {state}")
        return 0
    if args.action == "install":
        if not args.name:
            raise ValueError(f"name the model to install, one of: {', '.join(EMBEDDED_LLMS)}")
        path = install_llm(args.name)
        helpers = [spec.url for spec in declared_local_models(args.pipeline)[1:] if spec.model == args.name]
        use = (f"{resolve_pipeline_path(args.pipeline).name} already asks it (`other_local_models`, {helpers[0]})"
               if helpers else f"To answer with it, set `local_model.model: {args.name}` in the pipeline YAML "
                               "(pipelines/rag.yml)")
        print(f"Installed {args.name} ({EMBEDDED_LLMS[args.name].description}): checksum verified, {path}. {use}.")
        return 0
    specs = declared_local_models(args.pipeline)
    if not specs:
        raise ValueError(f"{resolve_pipeline_path(args.pipeline)} declares no `local_model:`")
    if args.action == "status":
        print("\n".join(_local_model_lines(args.pipeline)))
        return 0
    for spec in specs:
        server = local_model_server(spec)
        if args.action == "start":
            try:
                report = server.ensure_running()
            except LocalModelError as error:
                if spec is specs[0]:
                    raise
                print(f"WARNING: {error}", file=sys.stderr)  # a helper's model: its component fails over
                continue
            print(f"Local model server ({spec.model}) running at {spec.url}, pid {report.get('pid')}; it exits "
                  f"after {spec.idle_minutes:g} min unused")
        else:
            print(f"Stopped the local model server at {spec.url}." if server.stop()
                  else f"No local model server was running at {spec.url}.")
    return 0
