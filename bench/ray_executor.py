"""Ray executor speed-up with an LLM-bound engine: 1 → 2 workers, against the local loop.

The engine is the multi-hop engine over the bundled HotpotQA dev sample whose synthesiser is a real
OpenAI-compatible HTTP backend (``--synth-llm openai:slow``) talking to a tiny server on loopback
that sleeps ``--latency-ms`` (default 200) before every reply, so each question spends most of its
time waiting on the model, as with a hosted LLM. The same questions are run

- by the local executor with one worker (today's loop), and with two threads;
- by a Ray instance started here (``ray.init(num_cpus=2)``) with one and with two workers (actors).

Reports seconds per configuration (a Ray figure includes starting its actors, each importing
hoprag and loading the index, but not ``ray.init``), questions/s end to end, the time to the first
trace, the steady rate after it (once the workers are up), the speed-up of 2 Ray workers over 1
both ways, and checks that every configuration wrote the same traces (ids, hits, answers) as the
local loop (exit 1 otherwise, or when a model call fell back).

    python bench/ray_executor.py [--cases 109] [--latency-ms 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPLY = {"answer": "unknown", "claims": [{"text": "the passages name it", "citations": ["E1"]}],
         "insufficient": False, "conflicts": []}


def slow_server(latency_s: float) -> ThreadingHTTPServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that sleeps, then answers one fixed JSON reply."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send({"data": [{"id": "slow"}]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            self._send({"choices": [{"message": {"role": "assistant", "content": json.dumps(REPLY)},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def comparable(path: Path) -> list[tuple]:
    from hoprag.io.traces import read_traces

    return [(t.case_id, [[h.chunk_id for h in s.hits] for s in t.steps], t.answer.text, t.stop_reason)
            for t in read_traces(path)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=109, help="questions of the HotpotQA sample to run")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="the model server's sleep per call")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    import ray

    from hoprag.datasets.importers import import_dataset
    from hoprag.executors import LocalExecutor, RayExecutor
    from hoprag.index.store import build_index, load_index
    from hoprag.llm.settings import LLMSettings
    from hoprag.pipeline.engine_recipe import EngineRecipe
    from hoprag.pipeline.spec import EngineSpec
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import questions_from_cases, run_questions

    server = slow_server(args.latency_ms / 1000)
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = Path(tempfile.mkdtemp(prefix="hoprag-ray-bench-"))
    imported = import_dataset("hotpotqa", sorted((ROOT / "data" / "hotpotqa").glob("*.json")))
    build_index(imported.documents, work / "index")
    index = load_index(work / "index")
    questions = questions_from_cases(imported.cases)[: args.cases]
    settings = LLMSettings(base_url=base_url, api_key="none", retries=0)
    spec = EngineSpec.from_options("multihop", synth_llm="openai:slow", llm_settings=settings)
    engine = make_engine(spec, index)
    recipe = EngineRecipe.over(work / "index", spec=spec, config_hash=engine.config_hash,
                               artifact_id=index.manifest.artifact_id)

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray_init_s = time.perf_counter() - started
    rows = []
    configs = [("local, 1 worker (the loop)", LocalExecutor(workers=1), None),
               ("local, 2 threads", LocalExecutor(workers=2), None),
               ("ray, 1 worker", RayExecutor(workers=1), recipe),
               ("ray, 2 workers", RayExecutor(workers=2), recipe)]
    reference = None
    for label, executor, setup in configs:
        out = work / f"{label.split(',')[0]}-{executor.workers}.jsonl"
        arrivals: list[float] = []
        started = time.perf_counter()
        summary = run_questions(engine, questions, out, run_id="bench", resume=False, executor=executor, setup=setup,
                                progress=lambda done, total: arrivals.append(time.perf_counter()))
        seconds = time.perf_counter() - started
        # after the first trace the workers are up: the rate from there on is the steady state
        steady = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0
        traces = comparable(out)
        reference = reference or traces
        rows.append({"executor": label, "questions": summary.written, "seconds": round(seconds, 2),
                     "questions_per_s": round(summary.written / seconds, 2),
                     "first_trace_s": round(arrivals[0] - started, 2) if arrivals else None,
                     "steady_questions_per_s": round(steady, 2), "fallbacks": summary.fallback_total,
                     "same_traces_as_the_loop": traces == reference})
    ray.shutdown()
    server.shutdown()
    by = {r["executor"]: r["seconds"] for r in rows}
    rate = {r["executor"]: r["steady_questions_per_s"] for r in rows}
    result = {"cases": len(questions), "latency_ms": args.latency_ms, "ray_init_s": round(ray_init_s, 2),
              "rows": rows, "ray_speedup_1_to_2": round(by["ray, 1 worker"] / by["ray, 2 workers"], 2),
              "ray_steady_speedup_1_to_2": round(rate["ray, 2 workers"] / rate["ray, 1 worker"], 2),
              "local_thread_speedup_1_to_2": round(by["local, 1 worker (the loop)"] / by["local, 2 threads"], 2)}
    print(f"{len(questions)} HotpotQA questions, one {args.latency_ms:.0f} ms model call each "
          f"(ray.init {ray_init_s:.1f} s, not counted)")
    print(f"{'executor':30} {'s':>7} {'q/s':>6} {'1st trace s':>11} {'steady q/s':>10}  same traces")
    for r in rows:
        print(f"{r['executor']:30} {r['seconds']:7.2f} {r['questions_per_s']:6.2f} {r['first_trace_s']:11.2f} "
              f"{r['steady_questions_per_s']:10.2f}  {r['same_traces_as_the_loop']}")
    print(f"speed-up 1 -> 2 workers: ray {result['ray_speedup_1_to_2']}x end to end, "
          f"{result['ray_steady_speedup_1_to_2']}x once the workers are up; "
          f"local threads {result['local_thread_speedup_1_to_2']}x")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    if not all(r["same_traces_as_the_loop"] for r in rows) or any(r["fallbacks"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
