"""`longtx collect --once` on a database a bench has set up: the tables it
reports and how long its poll took; and the sessions blocked behind the
holders, for both collector benches."""

import re
import subprocess
import threading
import time


def open_waiters(connect, waiters, holders, tables, alter):
    """W sessions blocked behind the holders, each in a thread of its own
    (the statement does not return until the holders end): every third
    `alter(w, table)` on a held table, the rest a read queued behind it.
    `connect()` opens an autocommit session. Returns the connections; the
    server's stop ends them."""
    held = sorted({i % tables for i in range(holders)})
    conns = []

    def blocked(conn, sql):
        try:
            conn.cursor().execute(sql)
        except Exception:
            pass

    for w in range(waiters):
        c = connect()
        table = f"t_{held[(w // 3) % len(held)]}"
        sql = alter(w, table) if w % 3 == 0 else f"SELECT * FROM {table} /*action:show,controller:bench*/"
        threading.Thread(target=blocked, args=(c, sql), daemon=True).start()
        conns.append(c)
        time.sleep(0.01)
    return conns


def collect_once(binary, dsn):
    """Returns (ok, tables, poll seconds or None, process seconds, stderr)."""
    t0 = time.perf_counter()
    out = subprocess.run([binary, "collect", "--once", "--dsn", dsn], capture_output=True, text=True, timeout=60)
    wall = time.perf_counter() - t0
    tables = set(re.findall(r'^longtx_mdl_holder_max_tx_duration_seconds\{table="([^"]+)"', out.stdout, re.M))
    poll = re.search(r"^longtx_collector_scrape_duration_seconds (\S+)", out.stdout, re.M)
    return out.returncode == 0, tables, float(poll.group(1)) if poll else None, wall, out.stderr


def describe(poll, wall, tables):
    shown = f"{poll * 1000:.1f} ms" if poll is not None else "unknown"
    return f"  longtx collect --once: poll (connect included) {shown}, process {wall * 1000:.0f} ms, {len(tables)} tables"
