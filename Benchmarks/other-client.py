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
                                       [--kinds toggle,get,...] [--shipped]

Kinds: `toggle` and `get` (the default), `set` (`set` with `checked`
alternating, each connection its own switch, against SET), `shared` (all
eight connections toggle one switch, against SET of one key), `user` (a
user-scope switch toggled from all eight connections; all are root's, so
they toggle one value, against SET of one key). `--shipped` runs switchd
with the repository's Config/ and toggles (or gets) the shipped `wifi`,
which lists `airplane-mode`, from all eight connections (so Redis sets one
key too), and for `user` the shipped `notifications.chat` (a key past 15
bytes: every copy of it is a reference count); `set` and `shared` are not
taken with it.

Needs valgrind and redis-server (`apt-get install -y valgrind redis-server`)
and a release build (`swift build -c release`). About 2 minutes a kind
with the default 150 calls a connection.
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


def switchd_config(directory, shipped):
    config = os.path.join(directory, "config")
    if shipped:
        # A copy: switchd trusts only files of root (or its own user) that
        # nobody else may write, and the clone's may be anyone's.
        here = os.path.dirname(os.path.abspath(__file__))
        shutil.copytree(os.path.join(here, "..", "Config"), config)
        for folder, _, files in os.walk(config):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        # Who administers does not matter to root; the shipped group may not
        # exist here, which switchd would warn of at each start.
        conf = os.path.join(config, "switchd.conf")
        with open(conf) as f:
            text = re.sub(r"(?m)^AdminGroup=.*$", "AdminGroup=", f.read())
        with open(conf, "w") as f:
            f.write(text)
        return config
    os.makedirs(os.path.join(config, "switches.d"))
    with open(os.path.join(config, "switchd.conf"), "w") as f:
        f.write("[Daemon]\nAdminGroup=\n")
    with open(os.path.join(config, "switches.d", "10-bench.conf"), "w") as f:
        for c in range(CONNECTIONS):
            f.write(f"[b{c}]\nLabel=B{c}\nDefault=off\n\n")
        # Each connection's own value (all are root's: one value, toggled by all).
        f.write("[u0]\nLabel=U0\nDefault=off\nScope=user\n")
    return config


def start(server, directory, switchd, out, shipped):
    data = os.path.join(directory, "data")
    os.makedirs(data, mode=0o700)
    if server == "switchd":
        path = os.path.join(directory, "s.sock")
        argv = [switchd, "--config", switchd_config(directory, shipped), "--socket", path,
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


def switchd_key(kind, c, shipped):
    if kind == "user":
        return "notifications.chat" if shipped else "u0"
    if shipped:
        return "wifi"
    return "b0" if kind in ("get", "shared") else f"b{c}"


def request(server, kind, i, c, shipped):
    if server == "switchd":
        key = switchd_key(kind, c, shipped)
        method, extra = ("get" if kind == "get" else "toggle"), ""
        if kind == "set":
            # Every call a change: each connection's switch starts off.
            method, extra = "set", ',"checked":' + ("false" if i % 2 else "true")
        return (f'{{"jsonrpc":"2.0","id":{i},"method":"{method}",'
                f'"params":{{"key":"{key}"{extra}}}}}\n').encode()
    if kind != "get":
        value = b"1" if i % 2 else b"0"
        # One key where switchd's connections share one value.
        own = kind in ("toggle", "set") and not shipped
        key = (f"k{c}" if own else "k0").encode()
        return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n%s\r\n" % (len(key), key, value)
    return b"*2\r\n$3\r\nGET\r\n$2\r\nk0\r\n"


def client(server, kind, path, c, calls, failures, shipped):
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
            s.sendall(request(server, kind, i, c, shipped))
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


def count(server, kind, calls, switchd, shipped):
    directory = tempfile.mkdtemp(prefix="switchd-other-client-")
    try:
        out = os.path.join(directory, "callgrind.out")
        process, path = start(server, directory, switchd, out, shipped)
        failures = []
        threads = [threading.Thread(target=client,
                                    args=(server, kind, path, c, calls, failures, shipped))
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


def per_call(server, kind, calls, switchd, shipped):
    short = count(server, kind, calls, switchd, shipped)
    long = count(server, kind, 3 * calls, switchd, shipped)
    return (long - short) / (2 * calls * CONNECTIONS)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150, help="calls a connection (shorter run)")
    parser.add_argument("--switchd", default=os.path.join(here, "..", ".build", "release", "switchd"))
    parser.add_argument("--kinds", default="toggle,get",
                        help="comma-separated: toggle, get, set, shared, user")
    parser.add_argument("--shipped", action="store_true",
                        help="the repository's Config/ and its wifi (notifications.chat for user)")
    options = parser.parse_args()
    targets = {"toggle": 2.0, "set": 2.0, "shared": 2.0, "user": 2.0, "get": 1.5}
    kinds = options.kinds.split(",")
    for kind in kinds:
        if kind not in targets:
            raise SystemExit(f"unknown kind {kind!r}: one of {', '.join(targets)}")
        if options.shipped and kind in ("set", "shared"):
            # One shipped switch from all connections: a set would often set
            # the value it has, and shared is what toggle is then.
            raise SystemExit(f"--shipped does not take {kind!r}")
    for tool in ["valgrind", "redis-server"]:
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed")
    for kind in kinds:
        target = targets[kind]
        ours = per_call("switchd", kind, options.calls, options.switchd, options.shipped)
        theirs = per_call("redis", kind, options.calls, options.switchd, options.shipped)
        ratio = ours / theirs
        verdict = "pass" if ratio <= target else "FAIL"
        key = switchd_key(kind, 0, options.shipped)
        if kind in ("toggle", "set") and not options.shipped:
            key = f"b0…b{CONNECTIONS - 1}"
        print(f"{kind} ({key}), {CONNECTIONS} connections: switchd {ours:,.0f}, "
              f"Redis {theirs:,.0f} instructions a call, {ratio:.2f}x (target <= {target}x): "
              f"{verdict}", flush=True)


if __name__ == "__main__":
    main()
