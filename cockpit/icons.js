/*
 * The page's icon set: the glyph names switches.d may give in CheckedIcon=
 * and UncheckedIcon= (Material Symbols names), drawn as small stroked SVGs.
 * Decoration only (the switch's state is its position, fill and
 * aria-checked). A name this set does not have draws nothing, never the
 * name as text (SWT-17). "_off"/"_disabled"/"_inactive" names are their
 * base glyph crossed out.
 */
(function () {
    "use strict";

    const SVG = "http://www.w3.org/2000/svg";

    // 24 × 24 outlines, one path each.
    const shapes = {
        check: "M5 12.5l4.5 4.5L19 7.5",
        close: "M6 6l12 12M18 6L6 18",
        wifi: "M2.5 9.5a13.5 13.5 0 0 1 19 0M5.8 12.8a8.8 8.8 0 0 1 12.4 0M9 16a4.2 4.2 0 0 1 6 0M12 19.5v.01",
        bluetooth: "M7 7l10 10-5 5V2l5 5L7 17",
        airplanemode_active: "M12 2.5c1 0 1.5 1 1.5 2.5v4.5l8 4.5v2l-8-2.5v4.5l2.5 2v1.5L12 20l-4 1v-1.5l2.5-2V13.5l-8 2.5v-2l8-4.5V5c0-1.5.5-2.5 1.5-2.5z",
        chat: "M4 5h16v11H9l-5 4z",
        mail: "M3 6h18v12H3zM3 7l9 6 9-6",
        notifications: "M6 17V11a6 6 0 0 1 12 0v6l2 2H4zM10 21h4",
    };
    const crossedOut = /_(off|disabled|inactive)$/;
    const slash = "M3 3l18 18";

    /** The outline named `name`: the set's own, never an Object member (`__proto__`, `constructor`). */
    function shape(name) {
        return Object.prototype.hasOwnProperty.call(shapes, name) ? shapes[name] : null;
    }

    function path(d) {
        const p = document.createElementNS(SVG, "path");
        p.setAttribute("d", d);
        return p;
    }

    /** An <svg> for `name`, or null when the set has no such glyph. */
    function svg(name) {
        if (!name)
            return null;
        const base = name.replace(crossedOut, "").replace(/^airplanemode$/, "airplanemode_active");
        const d = shape(name) || shape(base);
        if (!d)
            return null;
        const node = document.createElementNS(SVG, "svg");
        node.setAttribute("viewBox", "0 0 24 24");
        node.setAttribute("aria-hidden", "true");
        node.setAttribute("focusable", "false");
        node.append(path(d));
        if (!shape(name) && crossedOut.test(name))
            node.append(path(slash));
        return node;
    }

    window.SwitchdIcons = { svg };
}());
