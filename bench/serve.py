"""Load on loopback: 16 concurrent clients asking `hoprag serve` (offline engine, HotpotQA demo index).

Two bounded phases of ``--seconds`` each: ``POST /api/ask`` and ``GET /api/ask/stream``. Reports
requests/s, p50/p95/p99 latency, errors, the server's peak RSS, and for the stream the time to the
first hop event and to the first answer token. The server runs in its own process on 127.0.0.1.

    python bench/serve.py [--index demo-output/hotpotqa/index] [--clients 16] [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
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


def _phase(url: str, questions: list[str], clients: int, seconds: float, stream: bool) -> dict[str, object]:
    latencies: list[float] = []
    first_hop: list[float] = []
    first_token: list[float] = []
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
                hop = token = None
                try:
                    if stream:
                        with http.stream("GET", "/api/ask/stream", params={"q": q}) as r:
                            ok = r.status_code == 200
                            final = False
                            for line in r.iter_lines():
                                if line.startswith("event: hop") and hop is None:
                                    hop = time.perf_counter() - t0
                                elif line.startswith("event: token") and token is None:
                                    token = time.perf_counter() - t0
                                elif line.startswith("event: answer"):
                                    final = True
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
                    else:
                        errors.append(str(getattr(r, "status_code", r))[:80])

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ms = [x * 1000 for x in latencies]
    out: dict[str, object] = {"requests": len(latencies), "errors": len(errors), "wall_s": round(wall, 1),
                              "rps": round(len(latencies) / wall, 1),
                              "p50_ms": round(_pct(ms, 0.5), 1), "p95_ms": round(_pct(ms, 0.95), 1),
                              "p99_ms": round(_pct(ms, 0.99), 1)}
    if stream and first_hop:
        out["first_hop_p50_ms"] = round(statistics.median(first_hop) * 1000, 1)
        out["first_token_p50_ms"] = round(statistics.median(first_token) * 1000, 1)
    if errors:
        out["error_sample"] = errors[:5]
    return out


def _rss_peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        index = _index(args.index, work)
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "hoprag.cli", "serve", str(index), "--port", str(port),
                                   "--store", str(work / "bench.db"), "--unlabelled", "public", "--run-id", "bench"],
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
            results = {"clients": args.clients, "seconds": args.seconds, "questions": len(questions),
                       "ask": _phase(url, questions, args.clients, args.seconds, stream=False),
                       "stream": _phase(url, questions, args.clients, args.seconds, stream=True),
                       "server_peak_rss_mib": _rss_peak_mib(server.pid)}
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
