#!/usr/bin/env python3
"""A check of `scripts/speed.py --hold`'s orchestration, on any machine (no GPU, no torch):
fake workers that "compile" (sleep) and "time" (sleep), each writing when it used the
device. It checks what --hold promises: every worker is ready before the first timing,
no two timings overlap, a worker that raises is a row with its error and blocks nobody,
and one that dies breaks the barrier so that nobody times (none may be compiling still)
and the call ends instead of hanging.

    python3 scripts/speed_hold_check.py
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402


def log(path, what, name, t0, t1):
    with open(path, "a") as f:
        f.write(f"{what} {name} {t0:.4f} {t1:.4f}\n")


def fake_ready(path, name, part):
    """Gets ready for 0.1-0.5 s (a 'compile' on the device); `bad` raises, `dead` dies."""
    t0 = time.time()
    if name == "dead":
        os._exit(3)
    time.sleep(0.1 + 0.1 * (hash(name + part) % 5))
    if name == "bad":
        raise RuntimeError("export failed")
    log(path, "ready", f"{name}/{part}", t0, time.time())

    def run():
        t = time.time()
        time.sleep(0.05)
        log(path, "time", f"{name}/{part}", t, time.time())
        return 1.0

    return [(part, run)], {}


def fake_time(fn):
    return fn()


def intervals(path, what):
    with open(path) as f:
        return [(float(a), float(b)) for w, _, a, b in (ln.split() for ln in f) if w == what]


def main():
    d = tempfile.mkdtemp()
    # Six workers, two of them failing: every other one is timed, after all are ready.
    path = os.path.join(d, "ok.log")
    tasks = [(path, n, p) for n in ("m1", "m2", "bad") for p in ("eager", "inductor")]
    t = time.time()
    got = speed.held(tasks, fake_ready, fake_time, jobs=2, timeout=20)
    ready, timed = intervals(path, "ready"), intervals(path, "time")
    assert len(ready) == 4 and len(timed) == 4, (ready, timed)
    assert max(b for _, b in ready) <= min(a for a, _ in timed), "a timing began before every worker was ready"
    timed.sort()
    assert all(b0 <= a1 for (_, b0), (a1, _) in zip(timed, timed[1:])), f"timings overlap: {timed}"
    assert got[("m1", "eager")] == {"eager": 1.0}, got
    assert "export failed" in got[("bad", "inductor")]["error"], got
    assert time.time() - t < 15, "it waited out the barrier"
    # A worker that dies: the barrier breaks, nobody times, and it ends.
    path = os.path.join(d, "dead.log")
    tasks = [(path, n, "eager") for n in ("m1", "dead", "m2")]
    t = time.time()
    got = speed.held(tasks, fake_ready, fake_time, jobs=3, timeout=3)
    assert not os.path.exists(path) or not intervals(path, "time"), "timed with a worker dead"
    assert "not timed" in got[("m1", "eager")]["error"], got
    assert "died" in got[("dead", "eager")]["error"], got
    assert time.time() - t < 60, "it hung"
    print("speed.py --hold: ready before timing, one timing at a time, failures and deaths handled")


if __name__ == "__main__":
    main()
