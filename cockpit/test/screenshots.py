"""Takes the README's screenshots of the page (light and dark) into
docs/screenshots/: a root session over the shipped Config with a policy
hold, an administrator's disable and one open "why" panel.

    python3 cockpit/test/screenshots.py   (with Playwright, as check-cockpit.sh sets up)
"""

import sys

from playwright.sync_api import expect, sync_playwright

from harness import REPO, Cockpit, Daemon, launch_browser

POLICY = """[bluetooth]
ReadOnly=yes
Checked=off
Reason=Bluetooth is turned off by your organisation.
"""


def main():
    out = REPO / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    daemon = Daemon(policies={"50-corp.conf": POLICY}).start()
    cockpit = Cockpit().start()
    try:
        assert daemon.ctl("disable", "email.marketing", "--reason",
                          "Marketing email is not offered on managed devices.").returncode == 0
        assert daemon.ctl("off", "notifications.mail").returncode == 0
        with sync_playwright() as playwright:
            browser = launch_browser(playwright)
            for scheme in ("light", "dark"):
                context = browser.new_context(color_scheme=scheme, viewport={"width": 900, "height": 900},
                                              reduced_motion="reduce")
                page = context.new_page()
                page.goto(cockpit.url(daemon.socket))
                expect(page.get_by_role("switch", name="Wi-Fi")).to_be_visible()
                page.get_by_role("button", name="Why? History of Bluetooth", exact=True).click()
                expect(page.get_by_text("Held read-only by a policy")).to_be_visible()
                page.mouse.move(0, 0)  # no hover left on what was clicked
                page.get_by_role("switch", name="Chat notifications").focus()
                page.keyboard.press("Shift+Tab")
                page.keyboard.press("Tab")  # a keyboard focus, so the ring shows
                page.screenshot(path=str(out / f"switches-{scheme}.png"), full_page=True,
                                animations="disabled")
                context.close()
            browser.close()
    finally:
        cockpit.stop()
        daemon.cleanup()
    print(f"wrote {out}/switches-light.png and switches-dark.png")


if __name__ == "__main__":
    sys.exit(main())
