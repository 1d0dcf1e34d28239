/*
 * Light or dark as Cockpit's own style choice says (its shell's menu:
 * localStorage "shell:style", "auto", "light" or "dark"), "auto" as the
 * system says, as Cockpit's pages follow it: the page followed only the
 * system, and disagreed with the shell around it (an audit). A page in a
 * frame of the shell learns of a change through the `storage` event (the
 * shell's own window gets a "cockpit-style" event, listened to as well).
 *
 * Loaded in <head> without `defer` (an inline script is what Cockpit's
 * content policy forbids): the class is set before the first paint, so
 * a dark page never shows white first.
 */
"use strict";

(function () {
    function followCockpitStyle(chosen) {
        let style = chosen;
        if (!style) {
            try {
                style = window.localStorage.getItem("shell:style");
            } catch (e) {
                style = null; // storage refused: as "auto"
            }
        }
        const systemDark = window.matchMedia("(prefers-color-scheme: dark)").matches;
        const dark = style === "dark" || (style !== "light" && systemDark);
        document.documentElement.classList.toggle("theme-dark", dark);
    }
    window.addEventListener("storage", event => {
        // null: the whole storage was cleared (back to "auto").
        if (event.key === "shell:style" || event.key === null)
            followCockpitStyle();
    });
    window.addEventListener("cockpit-style", event => followCockpitStyle(event.detail && event.detail.style));
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => followCockpitStyle());
    followCockpitStyle();
}());
