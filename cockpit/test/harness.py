"""What the browser tests share: a real switchd, a real cockpit-ws serving
this package, Chromium driven by Playwright, and a plain client of the
daemon's socket to check its state after every step.

Each test module starts one switchd and one cockpit-ws (a cockpit-ws serves
one session), each in a process group of its own that is killed whole at the
end: the bridge leaves a session dbus-daemon and ssh-agent behind otherwise.
Readiness is waited for by connecting, never by sleeping.
"""

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "cockpit"
COCKPIT_WS = "/usr/lib/cockpit/cockpit-ws"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DEADLINE = 30.0  # seconds: generous, for a loaded 2-core CI machine


def binary(name):
    """switchd / switchctl: $SWITCHD_BIN / $SWITCHCTL_BIN, else the debug build."""
    explicit = os.environ.get(name.upper() + "_BIN")
    if explicit:
        return explicit
    for build in ("debug", "release"):
        path = REPO / ".build" / build / name
        if path.exists():
            return str(path)
    raise RuntimeError(f"{name} is not built: run swift build first")


def wait_until(what, check, deadline=DEADLINE, pause=None):
    """Polls `check` until it returns a true value; fails after `deadline`.
    `pause(ms)` waits between polls: a page's `wait_for_timeout` keeps
    Playwright's events (and a routed WebSocket) flowing meanwhile."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        if pause is not None:
            pause(50)
        else:
            time.sleep(0.05)


def kill_group(process, sig=signal.SIGTERM, deadline=10.0):
    """Ends `process` and everything in its process group."""
    if process is None or process.poll() is not None and not _group_alive(process.pid):
        return
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        pass
    # What the leader left in its group (the bridge's dbus-daemon and
    # ssh-agent): a pid stays taken while it names a live group, so this
    # reaches only our own group's processes.
    if _group_alive(process.pid):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


class Daemon:
    """A switchd in its own temp directory (config, socket, database by flag)."""

    def __init__(self, switches=None, policies=None, settings=""):
        self.directory = Path(tempfile.mkdtemp(prefix="switchd-cockpit-"))
        os.chmod(self.directory, 0o755)  # the non-administrator's bridge opens the socket
        self.config = self.directory / "config"
        shutil.copytree(REPO / "Config", self.config)
        # The test copy: no admin group (root administers), history kept;
        # `settings`: more lines of [Daemon].
        (self.config / "switchd.conf").write_text(
            "[Daemon]\nAdminGroup=\nSocketMode=0666\n" + settings)
        if switches is not None:
            for old in (self.config / "switches.d").glob("*.conf"):
                old.unlink()
            (self.config / "switches.d" / "10-test.conf").write_text(switches)
        for name, text in (policies or {}).items():
            (self.config / "policy.d" / name).write_text(text)
        self.socket = str(self.directory / "switchd.sock")
        self.database = str(self.directory / "state" / "switches.db")
        self.log = self.directory / "switchd.log"
        self.process = None

    def start(self):
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [binary("switchd"), "--config", str(self.config), "--socket", self.socket,
                 "--database", self.database],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        wait_until("switchd's socket", self._accepts)
        return self

    def _accepts(self):
        if self.process.poll() is not None:
            raise AssertionError(f"switchd exited: {self.log.read_text()}")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(self.socket)
            return True
        except OSError:
            return False

    def stop(self):
        if self.process is not None:
            kill_group(self.process)
            self.process = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def call(self, method, params=None):
        """One request on a fresh connection; returns the result or raises RpcError."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(DEADLINE)
            s.connect(self.socket)
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                  "params": params or {}}).encode() + b"\n")
            buffer = b""
            while b"\n" not in buffer:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionError("switchd closed the connection")
                buffer += chunk
        answer = json.loads(buffer.split(b"\n", 1)[0])
        if "error" in answer:
            raise RpcError(answer["error"])
        return answer["result"]

    def get(self, key):
        return self.call("get", {"key": key})

    def ctl(self, *arguments, user=None):
        """Runs switchctl against this daemon (as `user`, a name, if given)."""
        command = [binary("switchctl"), "--socket", self.socket, *arguments]
        if user is not None:
            command = as_user(user) + command
        return subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE)


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(error.get("message"))
        self.error = error
        self.name = error.get("data", {}).get("name")


def as_user(name):
    """The setpriv prefix that runs a command as `name` (no extra groups)."""
    entry = pwd.getpwnam(name)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
            "--reset-env"]


def ensure_user(name="switchd-cockpit-test"):
    """A human account (uid ≥ 1000) to run a non-administrator's session."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "-K", "UID_MIN=1000", name],
                       check=True)
    return pwd.getpwnam(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The superuser bridge's command, run by the session's bridge as the user:
# it hands its stdin (a socket: the privileged bridge first asks for the
# parent's stderr, passed as a descriptor) and what comes back on to
# RootBridges' socket, argv[1].
SUPERUSER_RELAY = """import os, socket, sys, threading
parent = socket.socket(fileno=0)
root = socket.socket(socket.AF_UNIX)
root.connect(sys.argv[1])
def back():
    while True:
        data = root.recv(65536)
        if not data:
            os._exit(0)
        os.write(1, data)
threading.Thread(target=back, daemon=True).start()
while True:
    data, fds, _, _ = socket.recv_fds(parent, 65536, 4)
    if not data:
        break
    socket.send_fds(root, [data], fds)
    for fd in fds:
        os.close(fd)
root.shutdown(socket.SHUT_WR)
threading.Event().wait()
"""


class RootBridges:
    """Cockpit's administrative access ("superuser") for an ordinary
    account's session, without sudo or a change to the system: a package
    in the session's XDG_DATA_DIRS declares a privileged bridge whose
    command (SUPERUSER_RELAY) connects to a socket only that account may
    open, and this test process, root, runs `cockpit-bridge --privileged`
    on each connection, as sudo would."""

    def __init__(self, directory, user):
        entry = pwd.getpwnam(user)
        package = directory / "share" / "cockpit" / "switchd-test-superuser"
        package.mkdir(parents=True)
        path = str(directory / "superuser.sock")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        os.chown(path, entry.pw_uid, entry.pw_gid)
        os.chmod(path, 0o600)
        self.listener.listen()
        (package / "manifest.json").write_text(json.dumps({"bridges": [{
            "privileged": True, "spawn": ["/usr/bin/python3", "-c", SUPERUSER_RELAY, path]}]}))
        self.bridges = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            with connection:
                self.bridges.append(subprocess.Popen(
                    ["cockpit-bridge", "--privileged"], stdin=connection.fileno(), stdout=connection.fileno(),
                    env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
                         "HOME": "/root", "USER": "root", "LOGNAME": "root"},
                    start_new_session=True))

    def stop(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        except OSError:
            pass
        self.listener.close()
        self.thread.join()
        for bridge in self.bridges:
            kill_group(bridge)


def start_superuser(page):
    """Turns on the session's administrative access (cockpit.Superuser on
    the bridge's internal bus, as Cockpit's shell does) and reloads the page,
    whose channels then open as root."""
    outcome = page.evaluate("""() => new Promise(resolve => {
        const proxy = cockpit.dbus(null, { bus: "internal" }).proxy("cockpit.Superuser", "/superuser");
        proxy.wait(() => proxy.call("Start", [proxy.Bridges[0]]).then(() => resolve("started"),
                                                                   e => resolve(String(e))));
    })""")
    assert outcome == "started", outcome
    page.reload()


class Cockpit:
    """cockpit-ws with a local session (no login), serving this package;
    `superuser`: the session may turn on administrative access (RootBridges)."""

    def __init__(self, user=None, superuser=False):
        self.user = user
        self.directory = Path(tempfile.mkdtemp(prefix="cockpit-ws-"))
        os.chmod(self.directory, 0o755)
        # XDG_DATA_DIRS/cockpit/switchd is the package: a copy, so that an
        # account that cannot read the checkout still can.
        shutil.copytree(PACKAGE, self.directory / "share" / "cockpit" / "switchd",
                        ignore=shutil.ignore_patterns("test"))
        self.root_bridges = RootBridges(self.directory, user) if superuser else None
        self.port = free_port()
        self.process = None

    def start(self):
        environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "XDG_DATA_DIRS": f"{self.directory / 'share'}:/usr/local/share:/usr/share",
            "LANG": "C.UTF-8",
        }
        command = [COCKPIT_WS, "--no-tls", "--address", "127.0.0.1", "--port", str(self.port),
                   "--local-session=cockpit-bridge"]
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            home = self.directory / "home"
            home.mkdir()
            os.chown(home, entry.pw_uid, entry.pw_gid)
            runtime = self.directory / "runtime"
            runtime.mkdir(mode=0o700)
            os.chown(runtime, entry.pw_uid, entry.pw_gid)
            environment.update(HOME=str(home), USER=self.user, LOGNAME=self.user,
                               XDG_RUNTIME_DIR=str(runtime))
            command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                       "--init-groups"] + command
        else:
            environment.update(HOME=str(self.directory), USER="root", LOGNAME="root")
        self.log = open(self.directory / "cockpit-ws.log", "ab")
        self.process = subprocess.Popen(command, env=environment, stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=self.log, start_new_session=True)
        wait_until("cockpit-ws's port", self._listening)
        return self

    def _listening(self):
        if self.process.poll() is not None:
            raise AssertionError("cockpit-ws exited: " +
                                 (self.directory / "cockpit-ws.log").read_text(errors="replace"))
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def url(self, socket_path):
        return f"http://127.0.0.1:{self.port}/cockpit/@localhost/switchd/index.html?socket={socket_path}"

    def stop(self):
        kill_group(self.process)
        self.process = None
        if self.root_bridges is not None:
            self.root_bridges.stop()
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def launch_browser(playwright):
    arguments = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=CHROMIUM, args=arguments)
