#!/usr/bin/env python3
"""Instructions per call with a client that is not switchbench's.

switchbench counts with its own Swift client and stores the ~600-byte
Switch object in Redis. This counts again the way an outside check might:
eight Python threads, one connection each, closed loop, toggling their own
switch (or getting one), against Redis SET/GET of a 2-byte key and a 1-byte
value. Each server runs under `valgrind --tool=callgrind`, started fresh
for each count; two runs of N and 3N calls a connection are differenced,
so start-up and shutdown cancel out.

    python3 Benchmarks/other-client.py [--calls N] [--switchd PATH]

Needs valgrind and redis-server (`apt-get install -y valgrind redis-server`)
and a release build (`swift build -c release`). About 4 minutes with the
default 150 calls a connection.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

CONNECTIONS = 8


def switchd_config(directory):
    config = os.path.join(directory, "config")
    os.makedirs(os.path.join(config, "switches.d"))
    with open(os.path.join(config, "switchd.conf"), "w") as f:
        f.write("[Daemon]\nAdminGroup=\n")
    with open(os.path.join(config, "switches.d", "10-bench.conf"), "w") as f:
        for c in range(CONNECTIONS):
            f.write(f"[b{c}]\nLabel=B{c}\nDefault=off\n\n")
    return config


def start(server, directory, switchd, out):
    data = os.path.join(directory, "data")
    os.makedirs(data, mode=0o700)
    if server == "switchd":
        path = os.path.join(directory, "s.sock")
        argv = [switchd, "--config", switchd_config(directory), "--socket", path,
                "--database", os.path.join(data, "switches.db")]
    else:
        path = os.path.join(directory, "r.sock")
        argv = ["redis-server", "--port", "0", "--unixsocket", path, "--appendonly", "yes",
                "--appendfsync", "always", "--dir", data, "--save", ""]
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--trace-children=no", "--callgrind-out-file=" + out]
        + argv,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            probe = socket.socket(socket.AF_UNIX)
            probe.connect(path)
            probe.close()
            return process, path
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{server} did not start")
            time.sleep(0.1)


def request(server, kind, i, c):
    if server == "switchd":
        method, key = ("toggle", f"b{c}") if kind == "toggle" else ("get", "b0")
        return (f'{{"jsonrpc":"2.0","id":{i},"method":"{method}",'
                f'"params":{{"key":"{key}"}}}}\n').encode()
    if kind == "toggle":
        value = b"1" if i % 2 else b"0"
        key = f"k{c}".encode()
        return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n%s\r\n" % (len(key), key, value)
    return b"*2\r\n$3\r\nGET\r\n$2\r\nk0\r\n"


def client(server, kind, path, c, calls, failures):
    """Makes `calls` calls; anything but an answer (an error, the end of
    the connection, no answer within 60 s) is a failure, which voids the
    count."""
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(60)
        s.connect(path)
        f = s.makefile("rb")
        if server == "redis" and kind == "get":
            s.sendall(b"*3\r\n$3\r\nSET\r\n$2\r\nk0\r\n$1\r\n1\r\n")
            f.readline()
        for i in range(calls):
            s.sendall(request(server, kind, i, c))
            line = f.readline()
            if line == b"" or (server == "switchd" and b'"error"' in line) or (
                    server == "redis" and line.startswith(b"-")):
                failures.append(line or b"the connection ended")
                return
            if server == "redis" and line.startswith(b"$") and not line.startswith(b"$-1"):
                f.readline()
        s.close()
    except OSError as error:
        failures.append(repr(error))


def count(server, kind, calls, switchd):
    directory = tempfile.mkdtemp(prefix="switchd-other-client-")
    try:
        out = os.path.join(directory, "callgrind.out")
        process, path = start(server, directory, switchd, out)
        failures = []
        threads = [threading.Thread(target=client, args=(server, kind, path, c, calls, failures))
                   for c in range(CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        process.send_signal(signal.SIGTERM)
        process.wait()
        if failures:
            raise SystemExit(f"{server} refused a call: {failures[0]!r}")
        with open(out) as f:
            for line in f:
                found = re.match(r"(totals|summary): (\d+)", line)
                if found:
                    return int(found.group(2))
        raise SystemExit(f"no total in {out}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def per_call(server, kind, calls, switchd):
    short = count(server, kind, calls, switchd)
    long = count(server, kind, 3 * calls, switchd)
    return (long - short) / (2 * calls * CONNECTIONS)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150, help="calls a connection (shorter run)")
    parser.add_argument("--switchd", default=os.path.join(here, "..", ".build", "release", "switchd"))
    options = parser.parse_args()
    for tool in ["valgrind", "redis-server"]:
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed")
    for kind, target in [("toggle", 2.0), ("get", 1.5)]:
        ours = per_call("switchd", kind, options.calls, options.switchd)
        theirs = per_call("redis", kind, options.calls, options.switchd)
        ratio = ours / theirs
        verdict = "pass" if ratio <= target else "FAIL"
        print(f"{kind}, {CONNECTIONS} connections: switchd {ours:,.0f}, Redis {theirs:,.0f} "
              f"instructions a call, {ratio:.2f}x (target <= {target}x): {verdict}", flush=True)


if __name__ == "__main__":
    main()
