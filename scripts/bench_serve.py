"""The serve rows of the bench (scripts/bench.sh --serve-only): how fast `serve` takes
packages in, with one server and with two, on one PostgreSQL.

Like with like: every server on the same PostgreSQL (a throwaway cluster from Debian's
postgresql, scripts/setup-postgres.sh, default settings: commits synced) and the same
package directory, receiving only (--workers 0). Each server is confined to one core with
taskset: a server standing for a machine of its own, so that "two servers" means twice the
CPU, as two machines behind a load balancer would have. Rows:
  (s1)  one server on core 0
  (s2)  two servers, on cores 0 and 1, the uploads alternating between them
  (s0)  one server on both cores (no taskset), for reference
Each row: N distinct packages (made by hprof-shrink from fixtures/hotspot-android.hprof,
as `upload` would send them, each with an extra.info of its own) PUT by 8 concurrent clients (Python threads, raw bodies built
beforehand), into a fresh database; uploads per second, MB/s, and the CPU seconds each
server spent per wall second (1.0 = its core saturated: the bottleneck is the server's
CPU, the MD5 and `verify` of each body) next to PostgreSQL's.
Target: (s2) >= 1.6 x (s1).

Then the embedded default (SQLite and a package directory, one server on both cores) taking
the bench's own packages: the zips of the ~200 MB array- and object-heavy dumps, made by
hprof-shrink as (c) makes them (each with an extra.info of its own, so all are distinct),
PUT by 4 clients:
  (e0)  receiving only (--workers 0): package bytes received, hashed, verified and stored
        per second. Target: >= 200 MB/s.
  (e1)  the same with one analysis worker: the upload rate while analyses run beside it,
        how long until every package is analyzed, and the analysis rate.

With --baseline EXE every row runs again right after, with the other build on the same
packages (made by the measured build), and a table gives new/base for each row's rate.
"""

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pids):
    """utime + stime of the processes, in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def postgres_pids(data):
    out = subprocess.run(["pgrep", "-f", f"postgres.*{data}"], capture_output=True, text=True).stdout
    pids = [int(p) for p in out.split()]
    # The postmaster's children (backends) carry no -D in their command line.
    kids = []
    for p in pids:
        out = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout
        kids += [int(k) for k in out.split()]
    return pids + kids


class Postgres:
    """A throwaway cluster in a temp dir; as the postgres user when root."""

    def __init__(self, bindir):
        self.bin = Path(bindir)
        self.dir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        os.chmod(self.dir, 0o755)
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "pgdata"
        self.port = free_port()
        self.run("initdb", "-D", str(self.data), "-U", "hprof", "-A", "trust", "-E", "UTF8")
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "pg.log"), "-w", "-o", opts, "start")

    def run(self, prog, *args):
        cmd = [str(self.bin / prog), *args]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def new_database(self, name):
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "hprof", name)
        return f"postgres://hprof@127.0.0.1:{self.port}/{name}"

    def stop(self):
        try:
            self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def variants(exe, work, n):
    """n distinct packages as `upload` sends them: each made by hprof-shrink itself from
    fixtures/hotspot-android.hprof, with an extra.info of its own (two at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    def make(k):
        out = work / f"p{k}.zip"
        subprocess.run([exe, str(ROOT / "fixtures/hotspot-android.hprof"), str(out), "-q",
                        "--extra", f"appVersion=1.{k % 5}", "--extra", f"bench={k}"], check=True)
        body = out.read_bytes()
        out.unlink()
        return body

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(make, range(n)))


def put_all(ports, bodies, clients=CLIENTS):
    """PUTs every body, `clients` at a time, alternating over the ports; returns seconds.
    The MD5s are computed before the clock starts: the client shares the cores with the
    servers and should take as little of them as it can."""
    jobs = [(i, body, base64.b64encode(hashlib.md5(body).digest()).decode())
            for i, body in enumerate(bodies)]
    lock = threading.Lock()
    errors = []

    def client():
        conns = {}
        while True:
            with lock:
                if not jobs:
                    return
                i, body, md5 = jobs.pop()
            port = ports[i % len(ports)]
            c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conns[port] = c
            c.request("PUT", f"/api/packages/p{i}.zip", body=body,
                      headers={"Content-MD5": md5, "Content-Type": "application/zip"})
            r = c.getresponse()
            r.read()
            if r.status != 201:
                errors.append(f"{r.status} for package {i}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    if errors:
        raise SystemExit(f"bench serve: {len(errors)} uploads refused, e.g. {errors[0]}")
    return took


def wait_listening(port, proc, log):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"bench serve: serve exited: {Path(log).read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("bench serve: serve did not listen within 60 s")


def stop_servers(procs, data):
    """Stops the servers and removes their data directory."""
    for p in procs:
        p.terminate()
        p.wait()
    shutil.rmtree(data, ignore_errors=True)


def row(exe, pg, name, cores, bodies, work):
    """Starts one server per entry of `cores` (a CPU list for taskset, or None), uploads
    `bodies`, stops them. Returns the row's figures."""
    db = pg.new_database(name)
    data = work / name
    procs, ports = [], []
    env = dict(os.environ, HPROF_SHRINK_DATABASE_URL=db)
    for k, cpu in enumerate(cores):
        port = free_port()
        log = work / f"{name}-{k}.log"
        # A data directory each: one is one server's (it locks it); the database is shared.
        cmd = [exe, "serve", "--data", str(data / str(k)), "--listen", f"127.0.0.1:{port}",
               "--workers", "0", "--public-read"]
        if cpu is not None:
            cmd = ["taskset", "-c", cpu] + cmd
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        wait_listening(port, p, log)
        procs.append(p)
        ports.append(port)
    pg_pids = postgres_pids(pg.data)
    cpu0 = cpu_seconds([p.pid for p in procs])
    pg0 = cpu_seconds(pg_pids)
    me0 = cpu_seconds([os.getpid()])
    load0 = os.getloadavg()[0]
    took = put_all(ports, bodies)
    cpu = cpu_seconds([p.pid for p in procs]) - cpu0
    pg_cpu = cpu_seconds(postgres_pids(pg.data)) - pg0
    client_cpu = cpu_seconds([os.getpid()]) - me0
    stop_servers(procs, data)
    total = sum(len(b) for b in bodies)
    return {
        "row": name,
        "servers": len(cores),
        "cores": [c or "all" for c in cores],
        "uploads": len(bodies),
        "mb": total / 1e6,
        "seconds": took,
        "uploads_per_s": len(bodies) / took,
        "mb_per_s": total / 1e6 / took,
        "server_cpu_per_wall_s": cpu / took / len(cores),
        "postgres_cpu_per_wall_s": pg_cpu / took,
        "client_cpu_per_wall_s": client_cpu / took,
        # The machine's 1-minute load average when the row started: other work competing.
        "load_before": load0,
    }


def bench_packages(exe, dump, work, n):
    """n distinct packages of `dump`, as (c) makes them, each with an extra.info of its own."""
    bodies = []
    for k in range(n):
        out = work / "e.zip"
        subprocess.run([exe, str(dump), str(out), "-q", "--force", "--extra", f"bench={k}"], check=True)
        bodies.append(out.read_bytes())
        out.unlink()
    return bodies


def analyzed(port):
    """How many packages are done or failed (GET /api/packages)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/api/packages")
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return sum(1 for p in body["packages"] if p.get("state") in ("done", "failed"))


def embedded_row(exe, name, bodies, work, workers):
    """One server, both cores, SQLite and a directory; PUTs the bodies (4 clients) and,
    with workers, waits until every package is analyzed."""
    data = work / name
    port = free_port()
    log = work / f"{name}.log"
    cmd = [exe, "serve", "--data", str(data), "--listen", f"127.0.0.1:{port}",
           "--workers", str(workers), "--public-read"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        wait_listening(port, p, log)
        cpu0 = cpu_seconds([p.pid])
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        took = put_all([port], bodies, clients=4)
        cpu = cpu_seconds([p.pid]) - cpu0
        all_done = None
        if workers:
            deadline = time.monotonic() + 600
            while analyzed(port) < len(bodies):
                if time.monotonic() > deadline:
                    raise SystemExit(f"bench serve: {name}: not all analyzed within 10 minutes")
                time.sleep(0.05)
            all_done = time.monotonic() - t0
    finally:
        stop_servers([p], data)
    total = sum(len(b) for b in bodies)
    return {
        "row": name,
        "workers": workers,
        "uploads": len(bodies),
        "mb": total / 1e6,
        "seconds": took,
        "mb_per_s": total / 1e6 / took,
        "server_cpu_per_wall_s": cpu / took,
        "all_analyzed_s": all_done,
        "analyzed_mb_per_s": total / 1e6 / all_done if all_done else None,
        "load_before": load0,
    }


def embedded(exe, generate, n, baseline=None):
    """The (e) rows for the array- and object-heavy ~200 MB bench dumps; `generate(shape,
    mb)` gives a dump's path (bench.py's cache)."""
    work = Path(tempfile.mkdtemp(prefix="bench-serve-e-"))
    rows = []
    try:
        for shape in ["array", "object"]:
            dump = generate(shape, 200)
            bodies = bench_packages(exe, dump, work, n)
            for name, workers in [("e0", 0), ("e1", 1)]:
                r = embedded_row(exe, f"{name}-{shape}", bodies, work, workers)
                r["dump"] = dump.name
                if baseline:
                    b = embedded_row(baseline, f"{name}-{shape}-base", bodies, work, workers)
                    r["base_mb_per_s"] = b["mb_per_s"]
                    r["base_all_analyzed_s"] = b["all_analyzed_s"]
                rows.append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nserve ingest, embedded (SQLite + directory, one server on both cores): {n} distinct packages of "
          "each ~200 MB bench dump, as (c) makes them, PUT by 4 clients; cpu/s = the server's CPU seconds "
          "per wall second while receiving")
    print(f"{'row':4} {'dump':18} {'MB each':>8} {'MB/s':>7} {'cpu/s':>6} {'all analyzed':>13} {'analyzed MB/s':>14} {'load':>5}")
    for r in rows:
        done = f"{r['all_analyzed_s']:12.2f}s" if r["all_analyzed_s"] else f"{'-':>13}"
        rate = f"{r['analyzed_mb_per_s']:14.1f}" if r["analyzed_mb_per_s"] else f"{'-':>14}"
        print(f"{r['row'][:2]:4} {r['dump']:18} {r['mb'] / r['uploads']:8.1f} {r['mb_per_s']:7.1f} "
              f"{r['server_cpu_per_wall_s']:6.2f} {done} {rate} {r['load_before']:5.1f}")
    if baseline:
        pairs = []
        for r in rows:
            name = f"{r['row'][:2]} {r['dump'].split('.')[0]}"
            pairs.append((name, "received MB/s", r["mb_per_s"], r["base_mb_per_s"]))
            if r["all_analyzed_s"]:
                pairs.append((name, "all analyzed s", r["all_analyzed_s"], r["base_all_analyzed_s"]))
        ratios("serve ingest, embedded", pairs)
    ok = all(r["mb_per_s"] >= 200 for r in rows if r["workers"] == 0)
    print(f"  {'PASS' if ok else 'FAIL'}  (e0) >= 200 MB/s received, checked and stored")
    return rows, ok


def ratios(title, pairs):
    """Prints new/base for each (row, what, new, base, higher_is_better)."""
    print(f"\n{title} against the baseline (new/base > 1 is faster for a rate, < 1 for a time):")
    print(f"{'row':14} {'what':14} {'new':>9} {'base':>9} {'new/base':>9}")
    for name, what, new, base in pairs:
        if new and base:
            print(f"{name:14} {what:14} {new:9.2f} {base:9.2f} {new / base:9.2f}")


def run(exe, n=150, generate=None, baseline=None):
    setup = subprocess.run(["bash", str(ROOT / "scripts/setup-postgres.sh")], capture_output=True, text=True)
    if setup.returncode != 0:
        raise SystemExit(f"bench serve: no PostgreSQL: {setup.stderr.strip()}")
    if shutil.which("taskset") is None:
        raise SystemExit("bench serve: taskset (util-linux) is needed to give each server one core")
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    pg = Postgres(setup.stdout.strip())
    try:
        # The same packages for every row: each row has a database and a directory of its own.
        bodies = variants(exe, work, n)
        rows, base_rows = [], []
        for name, cores in [("s1", ["0"]), ("s2", ["0", "1"]), ("s0", [None])]:
            rows.append(row(exe, pg, name, cores, bodies, work))
            if baseline:
                # Right after, on the same packages: the machine's load alike for both.
                base_rows.append(row(baseline, pg, f"{name}-base", cores, bodies, work))
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nserve ingest: {n} distinct packages of {rows[0]['mb'] / n * 1e3:.0f} KB, PUT by {CLIENTS} clients; "
          "PostgreSQL + package directory; cpu/s = CPU seconds per wall second (per server; PostgreSQL's; "
          "the client's); load = the load average before the row")
    print(f"{'row':4} {'servers':>7} {'cores':>8} {'uploads/s':>10} {'MB/s':>7} {'cpu/s':>6} {'pg cpu/s':>9} "
          f"{'client cpu/s':>13} {'load':>5}")
    for r in rows:
        print(f"{r['row']:4} {r['servers']:7} {','.join(r['cores']):>8} {r['uploads_per_s']:10.1f} "
              f"{r['mb_per_s']:7.1f} {r['server_cpu_per_wall_s']:6.2f} {r['postgres_cpu_per_wall_s']:9.2f} "
              f"{r['client_cpu_per_wall_s']:13.2f} {r['load_before']:5.1f}")
    s1, s2 = rows[0], rows[1]
    ratio = s2["uploads_per_s"] / s1["uploads_per_s"]
    # Uploads per CPU second the servers spent: equal in both rows when sharing the
    # database and the directory costs the servers nothing.
    per_cpu = [r["uploads_per_s"] / (r["server_cpu_per_wall_s"] * r["servers"]) for r in (s1, s2)]
    print(f"  (s2)/(s1) = {ratio:.2f}; uploads per server CPU second: (s1) {per_cpu[0]:.0f}, (s2) {per_cpu[1]:.0f}")
    ok = ratio >= 1.6
    print(f"  {'PASS' if ok else 'FAIL'}  (s2) >= 1.6 x (s1): two servers, one core each")
    if base_rows:
        ratios("serve ingest", [(r["row"], "uploads/s", r["uploads_per_s"], b["uploads_per_s"])
                                for r, b in zip(rows, base_rows)])
    e_rows, e_ok = embedded(exe, generate, 12, baseline) if generate else ([], None)
    dest = ROOT / "target/bench/bench-serve.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"rows": rows, "base_rows": base_rows, "s2_over_s1": ratio, "pass": ok,
                                "embedded": e_rows, "embedded_pass": e_ok}, indent=2) + "\n")
    print(f"\nfigures: {dest}")
