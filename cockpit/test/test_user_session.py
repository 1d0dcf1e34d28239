"""The page in a non-administrator's Cockpit session: cockpit-ws and its
bridge run as an ordinary human account, so switchd sees that uid."""

import json
import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from harness import Cockpit, Daemon, as_user, ensure_user, wait_until

USER = "switchd-cockpit-test"

# One request on the socket, run as USER: argv is the socket and the request.
CALL = """import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\\n")
answer = b""
while b"\\n" not in answer:
    answer += s.recv(65536)
print(answer.decode())
"""


# Holds one connection to the socket (argv[1]) until stdin closes.
HOLD = """import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "status"}\\n')
answer = b""
while b"\\n" not in answer:
    answer += s.recv(65536)
print("connected", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def account():
    return ensure_user(USER)


@pytest.fixture(scope="module")
def daemon():
    d = Daemon().start()
    yield d
    d.cleanup()


@pytest.fixture(scope="module")
def page(browser, account, daemon):
    cockpit = Cockpit(user=USER).start()
    context = browser.new_context()
    page = context.new_page()
    page.goto(cockpit.url(daemon.socket))
    expect(page.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
    yield page
    context.close()
    cockpit.stop()


def test_the_daemon_sees_the_user_not_root(page, daemon, account):
    before = daemon.get("bluetooth")
    page.get_by_role("switch", name="Bluetooth", exact=True).click()
    wait_until("bluetooth flipped", lambda: daemon.get("bluetooth")["checked"] != before["checked"],
               pause=page.wait_for_timeout)
    newest = daemon.call("history", {"key": "bluetooth", "limit": 1})["entries"][0]
    assert newest["actor"]["uid"] == account.pw_uid
    expect(page.get_by_role("switch", name="Bluetooth", exact=True)).to_have_attribute(
        "aria-checked", "false" if before["checked"] else "true")


def test_no_administrator_controls(page, daemon):
    for s in daemon.call("list")["switches"]:
        page.get_by_role("button", name=f"Why? History of {s['label']}", exact=True).click()
        panel = page.get_by_role("region", name=f"Why: {s['label']}", exact=True)
        expect(panel.get_by_text(re.compile(r"^It is (on|off)"))).to_be_visible()
    for name in ("Lock", "Lock again", "Disable"):
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    # Lock…, Unlock, Disable…, Enable: named with their switch ("Unlock Wi-Fi").
    expect(page.get_by_role("button", name=re.compile(r"^(Lock|Unlock|Disable|Enable)\b"))).to_have_count(0)
    expect(page.get_by_label("Reason for the lock")).to_have_count(0)
    expect(page.get_by_role("heading", name="Administrator")).to_have_count(0)


def test_a_switch_an_administrator_holds_is_read_only_here_too(page, daemon):
    assert daemon.ctl("lock", "wifi", "--reason", "Managed by IT.").returncode == 0
    control = page.get_by_role("switch", name="Wi-Fi", exact=True)
    expect(control).to_have_attribute("aria-readonly", "true")
    expect(control).to_have_accessible_description(re.compile("Managed by IT."))
    before = daemon.get("wifi")
    control.click()
    page.keyboard.press("Space")
    # The panel's history call is answered after anything sent before it.
    why = page.get_by_role("button", name="Why? History of Wi-Fi", exact=True)
    if why.get_attribute("aria-expanded") == "true":
        why.click()
    why.click()
    expect(page.get_by_role("region", name="Why: Wi-Fi", exact=True)
           .get_by_text(re.compile("Held read-only by an administrator"))).to_be_visible()
    assert daemon.get("wifi")["revision"] == before["revision"]


@pytest.fixture(scope="module")
def not_a_writer(browser, account):
    """A daemon whose `Writers` group the account is not in (Writers=root),
    Bluetooth held by an administrator before the page loads, and the page."""
    daemon = Daemon(settings="Writers=root\n").start()
    assert daemon.ctl("lock", "bluetooth", "--reason", "Held by IT.").returncode == 0
    cockpit = Cockpit(user=USER).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(cockpit.url(daemon.socket))
        expect(page.get_by_role("switch", name="Wi-Fi", exact=True)).to_be_visible(timeout=30000)
        yield daemon, page
    finally:
        context.close()
        cockpit.stop()
        daemon.cleanup()


def test_a_switch_this_account_may_not_change_says_why(not_a_writer):
    """Outside the `Writers` group the account changes no system switch: the
    page says so with the daemon's own sentence, the one a write gets."""
    daemon, page = not_a_writer
    control = page.get_by_role("switch", name="Wi-Fi", exact=True)
    expect(control).to_have_attribute("aria-readonly", "true")
    refused = daemon.ctl("toggle", "wifi", user=USER)
    reason = "You may not change wifi: only members of the group root may change system switches."
    assert refused.returncode == 6 and reason in refused.stderr, refused.stderr
    expect(control).to_have_accessible_description(re.compile(re.escape(reason)))
    expect(page.get_by_text(reason, exact=True)).to_be_visible()
    expect(page.get_by_text("Read-only for you", exact=False)).to_have_count(0)


def test_a_hold_lifted_leaves_it_read_only_for_who_may_not_write_it(not_a_writer):
    """Held when the page loaded, Bluetooth's `writable: false` said nothing
    of this account's right to write it; once the hold is lifted the page asks
    the daemon rather than guess: still read-only, with the daemon's sentence,
    and a click sends nothing."""
    daemon, page = not_a_writer
    control = page.get_by_role("switch", name="Bluetooth", exact=True)
    expect(control).to_have_attribute("aria-readonly", "true")
    expect(control).to_have_accessible_description(re.compile("Held by IT."))
    assert daemon.ctl("unlock", "bluetooth").returncode == 0
    reason = "You may not change bluetooth: only members of the group root may change system switches."
    expect(control).to_have_accessible_description(re.compile(re.escape(reason)))
    expect(control).to_have_attribute("aria-readonly", "true")
    before = daemon.get("bluetooth")
    control.click()
    page.keyboard.press("Space")
    why = page.get_by_role("button", name="Why? History of Bluetooth", exact=True)
    why.click()  # answered after anything sent before it
    expect(page.get_by_role("region", name="Why: Bluetooth", exact=True)
           .get_by_text(re.compile(r"^It is (on|off)"))).to_be_visible()
    assert daemon.get("bluetooth")["revision"] == before["revision"]
    row = page.locator('li[data-key="bluetooth"]')
    expect(row.get_by_role("alert", include_hidden=True)).to_have_text("")
    expect(control).to_have_attribute("aria-checked", "true" if before["checked"] else "false")


def test_a_connection_switchd_turns_away_says_why(browser, account):
    """Beyond MaxConnectionsPerUser switchd answers a new connection with an
    Overloaded error (id null) and closes it: the page shows that sentence,
    not a guess that switchd stopped, and connects once there is room."""
    daemon = Daemon(settings="MaxConnectionsPerUser=1\n").start()
    # The account's one connection, held until its stdin closes.
    holder = subprocess.Popen(as_user(USER) + [sys.executable, "-c", HOLD, daemon.socket],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    cockpit = Cockpit(user=USER).start()
    context = browser.new_context()
    try:
        assert holder.stdout.readline().strip() == "connected"
        page = context.new_page()
        page.goto(cockpit.url(daemon.socket))
        expect(page.get_by_role("status")).to_contain_text(
            "The daemon is at a limit: too many connections for uid", timeout=30000)
        expect(page.get_by_role("status")).to_contain_text("MaxConnectionsPerUser=1")
        expect(page.get_by_role("status")).not_to_contain_text("stopped or restarted")
        holder.stdin.close()
        holder.wait(timeout=30)
        expect(page.get_by_role("switch", name="Wi-Fi", exact=True)).to_be_visible(timeout=30000)
        expect(page.get_by_role("status")).to_be_hidden()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        context.close()
        cockpit.stop()
        daemon.cleanup()


def test_a_tried_change_shows_its_count_down_and_only_its_maker_settles_it(page, daemon, account):
    # root's tried change (outliving its connection): this user sees the
    # count-down, not Keep or Undo (the daemon would refuse them), and is
    # not asked a question they cannot answer (an audit).
    daemon.call("set", {"key": "wifi", "checked": not daemon.get("wifi")["checked"], "confirmWithin": 600,
                        "revertOnDisconnect": False})
    row = page.locator('li[data-key="wifi"]')
    expect(row.get_by_text("Someone is trying this change.")).to_be_visible()
    expect(row.get_by_text(re.compile(r"It goes back in \d+ seconds\."))).to_be_visible()
    expect(row.get_by_text("Keep this change?")).to_have_count(0)
    expect(page.get_by_role("button", name="Keep this change of Wi-Fi", exact=True)).to_have_count(0)
    daemon.call("revert", {"key": "wifi"})
    expect(row.get_by_text("Someone is trying this change.")).to_be_hidden()
    # This account's own, made with switchctl: Keep and Undo here too.
    before = daemon.get("bluetooth")
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "set", "params": {
        "key": "bluetooth", "checked": not before["checked"], "confirmWithin": 600, "revertOnDisconnect": False}})
    result = subprocess.run(as_user(USER) + [sys.executable, "-c", CALL, daemon.socket, request],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and '"result"' in result.stdout, result.stdout + result.stderr
    row = page.locator('li[data-key="bluetooth"]')
    expect(row.get_by_text("Keep this change?")).to_be_visible()
    # (The page asks the history who made it: Undo comes once it knows.)
    expect(page.get_by_role("button", name="Undo this change of Bluetooth", exact=True)).to_be_visible()
    page.get_by_role("switch", name="Bluetooth", exact=True).focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Undo this change of Bluetooth", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    wait_until("bluetooth reverted", lambda: daemon.get("bluetooth")["pendingUntil"] is None,
               pause=page.wait_for_timeout)
    assert daemon.get("bluetooth")["checked"] == before["checked"]
    newest = daemon.call("history", {"key": "bluetooth", "limit": 1})["entries"][0]
    assert newest["cause"] == "revert" and newest["actor"]["uid"] == account.pw_uid
