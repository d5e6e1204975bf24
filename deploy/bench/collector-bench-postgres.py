#!/usr/bin/env python3
"""The PostgreSQL side of the collector bench: a private PostgreSQL with
N sessions, M of them holding row locks (and so relation locks) in open
transactions over T tables behind Rails Query Logs comments, the rest idle;
then the collector's query (HOLDERS_SQL, read from
crates/collector/src/postgres.rs, so the bench measures what ships) timed
over --polls polls, and `longtx collect --once` on the same state. Every
poll must return exactly the tables the holders lock. Exits 1 otherwise.

    python3 deploy/bench/collector-bench-postgres.py --sessions 1000 --holders 300 --tables 200 \\
        --longtx target/release/longtx

Needs PostgreSQL's server programs and psycopg2 (PyPI psycopg2-binary, or
Debian's python3-psycopg2). Bounded by --deadline; cleans up after itself.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_once import collect_once, describe, open_waiters  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def shipped_sql(name):
    """A query of crates/collector/src/postgres.rs as it is now (`HOLDERS_SQL`
    or `WAITING_SQL`), in psycopg2's placeholders."""
    source = open(os.path.join(HERE, "../../crates/collector/src/postgres.rs")).read()
    sql = re.search(rf'const {name}: &str = r"(.*?)";', source, re.S).group(1)
    return sql.replace("%", "%%").replace("$1", "%s")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def as_postgres(cmd):
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.getuid() == 0 else cmd


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--holders", type=int, default=300)
    p.add_argument("--tables", type=int, default=200)
    p.add_argument("--waiters", type=int, default=0,
                   help="more sessions, blocked behind the holders: an ALTER TABLE, then reads queued behind it")
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--longtx", metavar="BINARY")
    p.add_argument("--deadline", type=float, default=600.0)
    args = p.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("deadline reached"))
    signal.alarm(int(args.deadline))

    bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    work = tempfile.mkdtemp(prefix="longtx-pg-bench.")
    os.chmod(work, 0o755)
    data = os.path.join(work, "data")
    os.mkdir(data)
    if os.getuid() == 0:
        shutil.chown(data, "postgres")
        shutil.chown(work, "postgres")
    port = free_port()
    conns = []
    ok = True
    try:
        subprocess.run(as_postgres([f"{bindir}/initdb", "-D", data, "-U", "app", "-A", "trust"]),
                       check=True, capture_output=True)
        subprocess.run(as_postgres([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(work, "log"), "-w", "-o",
                                    f"-p {port} -k {work} -c listen_addresses=127.0.0.1 "
                                    f"-c max_connections={args.sessions + args.waiters + 20} -c shared_buffers=64MB",
                                    "start"]), check=True, capture_output=True)
        dsn = dict(host="127.0.0.1", port=port, user="app", dbname="postgres")
        root = psycopg2.connect(**dsn)
        root.autocommit = True
        cur = root.cursor()
        cur.execute("SELECT version()")
        version = cur.fetchone()[0].split(" on ")[0]
        for t in range(args.tables):
            cur.execute(f"CREATE TABLE t_{t} (id int PRIMARY KEY, v int); INSERT INTO t_{t} VALUES (1, 0)")
        expected = set()
        started = time.time()
        for s in range(args.sessions):
            c = psycopg2.connect(**dsn)
            conns.append(c)
            if s < args.holders:
                table = f"t_{s % args.tables}"
                expected.add(table)
                c.cursor().execute(
                    f"SELECT * FROM {table} WHERE id = 1 FOR SHARE "
                    f"/*action='update',namespaced_controller='admin%2Fthings{s % 50}'*/")
            else:
                c.autocommit = True
        print(f"{len(conns)} sessions open ({args.holders} holders) in {time.time() - started:.1f} s",
              file=sys.stderr)
        if args.waiters:
            def connect():
                c = psycopg2.connect(**dsn)
                c.autocommit = True
                return c
            conns += open_waiters(connect, args.waiters, args.holders, args.tables,
                                  lambda w, table: f"ALTER TABLE {table} ADD COLUMN w{w} int")
            deadline = time.time() + 60
            while time.time() < deadline:
                cur.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'")
                if cur.fetchone()[0] >= args.waiters:
                    break
                time.sleep(0.2)
        sql = shipped_sql("HOLDERS_SQL")
        waiting_sql = shipped_sql("WAITING_SQL")
        waiting_times = []
        times = []
        for _ in range(args.polls):
            t0 = time.perf_counter()
            cur.execute(sql, ("ddl_in_progress",))
            rows = cur.fetchall()
            times.append(time.perf_counter() - t0)
            got = {r[0] for r in rows}
            if got != expected:
                ok = False
                print(f"  poll: tables {len(got)} vs {len(expected)} held", file=sys.stderr)
            if args.waiters:
                t0 = time.perf_counter()
                cur.execute(waiting_sql)
                waiting = cur.fetchall()
                waiting_times.append(time.perf_counter() - t0)
                if len(waiting) != args.waiters:
                    ok = False
                    print(f"  poll: {len(waiting)} waiting vs {args.waiters} opened", file=sys.stderr)
        print(f"{version}: {args.sessions} sessions, {args.holders} holders, {args.waiters} waiters, "
              f"{args.tables} tables, {args.polls} polls")
        print(f"  longtx's query  median {statistics.median(times) * 1000:8.1f} ms  max {max(times) * 1000:8.1f} ms"
              f"  (every poll: the {len(expected)} tables held: {'yes' if ok else 'NO'})")
        if args.waiters:
            whole = [a + b for a, b in zip(times, waiting_times)]
            print(f"  the waiting query median {statistics.median(waiting_times) * 1000:8.1f} ms"
                  f"  max {max(waiting_times) * 1000:8.1f} ms; a whole poll median {statistics.median(whole) * 1000:.1f} ms"
                  f"  max {max(whole) * 1000:.1f} ms")
        if args.longtx:
            ran, tables, poll, wall, stderr = collect_once(args.longtx, f"postgres://app@127.0.0.1:{port}/postgres")
            same = ran and tables == expected
            ok = ok and same
            print(describe(poll, wall, tables) + f" ({'the same' if same else 'DIFFERENT: ' + stderr[-300:]})")
    finally:
        signal.alarm(0)
        for c in conns:
            try:
                c.close()
            except Exception:
                pass
        subprocess.run(as_postgres([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
