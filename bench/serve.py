"""Load on loopback: concurrent clients asking `hoprag serve` (offline engine, HotpotQA demo index).

Two bounded phases of ``--seconds`` each: ``POST /api/ask`` and ``GET /api/ask/stream``. The server
runs in its own process(es) on 127.0.0.1 (``--workers N`` worker processes, passed to ``hoprag serve``).
Per phase it reports requests/s, p50/p95/p99 latency, errors, and CPU cost:

* server CPU seconds per request: user + system time of the server's processes (the parent and every
  worker, read from ``/proc``) over the phase, divided by the requests answered;
* client CPU seconds per request: the same for this process (its client threads);
* the CPU-bound limit: ``usable cores / (server CPU per request + client CPU per request)`` requests/s,
  the rate at which the cores would be busy all the time, since clients and server share them;
* the achieved share: requests/s / the CPU-bound limit.

For the stream also the time to the first hop event, to the first answer token, and the gap between
the last ``token`` event and the ``answer`` event (p50/p95) as the client receives them. The load
average before and after is reported beside the figures: on a shared machine they are floors.

    python bench/serve.py [--index demo-output/hotpotqa/index] [--clients 16] [--seconds 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _index(path: Path | None, work: Path) -> Path:
    if path is not None:
        return path
    demo = ROOT / "demo-output" / "hotpotqa" / "index"
    if (demo / "manifest.json").exists():
        return demo
    from hoprag.datasets.importers import import_dataset, write_import
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_corpora

    result = import_dataset("hotpotqa", sorted((ROOT / "data" / "hotpotqa").glob("*.json")))
    write_import(result, work / "hotpot")
    build_index(load_corpora([work / "hotpot" / "corpus.jsonl"]), work / "index")
    return work / "index"


def _questions() -> list[str]:
    from hoprag.datasets.importers import import_dataset

    result = import_dataset("hotpotqa", sorted((ROOT / "data" / "hotpotqa").glob("*.json")))
    return [c.query for c in result.cases]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, is index 0)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the server's worker processes)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(_stat(int(entry.name))[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _cpu_seconds(server: int) -> float:
    """User + system CPU seconds of the server and its worker processes so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in _tree(server):
        try:
            fields = _stat(pid)
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _phase(url: str, questions: list[str], clients: int, seconds: float, stream: bool,
           server: int) -> dict[str, object]:
    latencies: list[float] = []
    first_hop: list[float] = []
    first_token: list[float] = []
    answer_gap: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(n: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            i = n
            while time.perf_counter() < stop_at:
                q = questions[i % len(questions)]
                i += clients
                t0 = time.perf_counter()
                hop = token = last_token = gap = None
                try:
                    if stream:
                        with http.stream("GET", "/api/ask/stream", params={"q": q}) as r:
                            ok = r.status_code == 200
                            final = False
                            for line in r.iter_lines():
                                if line.startswith("event: hop") and hop is None:
                                    hop = time.perf_counter() - t0
                                elif line.startswith("event: token"):
                                    last_token = time.perf_counter()
                                    token = last_token - t0 if token is None else token
                                elif line.startswith("event: answer"):
                                    final = True
                                    gap = None if last_token is None else time.perf_counter() - last_token
                                elif line.startswith("event: error"):
                                    ok = False
                            ok = ok and final
                    else:
                        r = http.post("/api/ask", json={"question": q})
                        ok = r.status_code == 200
                except httpx.HTTPError as exc:
                    ok = False
                    r = exc
                elapsed = time.perf_counter() - t0
                with lock:
                    if ok:
                        latencies.append(elapsed)
                        if hop is not None:
                            first_hop.append(hop)
                        if token is not None:
                            first_token.append(token)
                        if gap is not None:
                            answer_gap.append(gap)
                    else:
                        errors.append(str(getattr(r, "status_code", r))[:80])

    start = time.perf_counter()
    server_cpu, client_cpu = _cpu_seconds(server), time.process_time()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    server_cpu, client_cpu = _cpu_seconds(server) - server_cpu, time.process_time() - client_cpu
    ms = [x * 1000 for x in latencies]
    out: dict[str, object] = {"requests": len(latencies), "errors": len(errors), "wall_s": round(wall, 1),
                              "rps": round(len(latencies) / wall, 1),
                              "p50_ms": round(_pct(ms, 0.5), 1), "p95_ms": round(_pct(ms, 0.95), 1),
                              "p99_ms": round(_pct(ms, 0.99), 1)}
    done = max(1, len(latencies) + len(errors))
    per_request = (server_cpu + client_cpu) / done
    cores = len(os.sched_getaffinity(0))
    limit = cores / per_request if per_request > 0 else float("inf")
    out.update({"server_cpu_ms_per_request": round(server_cpu / done * 1000, 2),
                "client_cpu_ms_per_request": round(client_cpu / done * 1000, 2),
                "cpu_bound_limit_rps": round(limit, 1), "share_of_limit": round(len(latencies) / wall / limit, 3)})
    if stream and first_hop:
        out["first_hop_p50_ms"] = round(statistics.median(first_hop) * 1000, 1)
        out["first_token_p50_ms"] = round(statistics.median(first_token) * 1000, 1)
    if stream and answer_gap:
        gaps = [x * 1000 for x in answer_gap]
        out["last_token_to_answer_p50_ms"] = round(_pct(gaps, 0.5), 2)
        out["last_token_to_answer_p95_ms"] = round(_pct(gaps, 0.95), 2)
    if errors:
        out["error_sample"] = errors[:5]
    return out


def _rss_peak_mib(server: int) -> list[float]:
    """Peak resident memory of the server and of each worker process (MiB; shared index pages count in each)."""
    peaks = []
    for pid in _tree(server):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        peaks += [round(int(line.split()[1]) / 1024, 1) for line in status.splitlines() if line.startswith("VmHWM:")]
    return peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", default="1", help="worker processes of the server (hoprag serve --workers)")
    parser.add_argument("--threads", type=int, help="answering threads per worker (hoprag serve --threads)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        index = _index(args.index, work)
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "hoprag.cli", "serve", str(index), "--port", str(port),
                                   "--store", str(work / "bench.db"), "--unlabelled", "public", "--run-id", "bench",
                                   "--workers", str(args.workers),
                                   *(["--threads", str(args.threads)] if args.threads else [])],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(url + "/api/whoami", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start: " + server.stderr.read().decode()[-500:])
                time.sleep(0.2)
            questions = _questions()
            warm = httpx.post(url + "/api/ask", json={"question": questions[0]}, timeout=60)
            warm.raise_for_status()
            proc = server.pid
            load_before = os.getloadavg()
            results = {"clients": args.clients, "seconds": args.seconds, "questions": len(questions),
                       "workers": args.workers, "usable_cores": len(os.sched_getaffinity(0)),
                       "ask": _phase(url, questions, args.clients, args.seconds, stream=False, server=proc),
                       "stream": _phase(url, questions, args.clients, args.seconds, stream=True, server=proc),
                       "server_peak_rss_mib": _rss_peak_mib(proc),
                       "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
