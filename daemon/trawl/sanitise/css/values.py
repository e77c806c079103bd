"""CSS declarations and values: what a ``style`` attribute or rule body declares, and whether it hides text.

Reads the declarations that matter for visibility (escapes resolved, ``!important`` noted), lengths and font
sizes in px, colours (named, hex, ``rgb()``; transparent; images and gradients as an unknown background) and
their nearness, and judges one element's declarations with :func:`invisible_reason`.
"""

from __future__ import annotations

import re

TINY_FONT_PX = 2.0

PROPS = frozenset({
    "display", "visibility", "opacity", "font-size", "font", "transform", "clip", "clip-path", "color",
    "background", "background-color", "background-image", "left", "top", "right", "text-indent", "margin-left",
    "margin-top", "width", "height", "max-height", "max-width", "overflow", "position", "filter",
})
BG_PROPS = ("background", "background-color", "background-image")


Decls = dict[str, tuple[str, bool]]  # property -> (lower-case value, !important)


# A CSS escape: a backslash and 1-6 hex digits (one optional whitespace after them), or any other character.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|([^\n0-9a-fA-F]))")


def _unescape_char(m: re.Match[str]) -> str:
    if m.group(2) is not None:
        return m.group(2)
    n = int(m.group(1), 16)
    return chr(n) if 0 < n <= 0x10FFFF and not 0xD800 <= n <= 0xDFFF else "\ufffd"


def css_unescape(text: str) -> str:
    """CSS escapes resolved: ``n\\one`` and ``\\6e one`` are ``none``."""
    return _CSS_ESCAPE.sub(_unescape_char, text) if "\\" in text else text


# declaration text -> its declarations, for the short texts pages repeat (inline styles, rule bodies)
_DECLS: dict[str, Decls] = {}
_MAX_DECLS = 20_000
_MAX_DECL_CHARS = 2_000


def parse_declarations(text: str) -> Decls:
    """Declarations of interest (and custom properties, ``--name``) of a style attribute or rule body."""
    got = _DECLS.get(text)
    if got is not None:
        return dict(got)
    out = _parse_declarations(text)
    if len(text) <= _MAX_DECL_CHARS:
        if len(_DECLS) >= _MAX_DECLS:
            _DECLS.clear()
        _DECLS[text] = dict(out)
    return out


_IMPORTANT = re.compile(r"!\s*important$")


def _parse_declarations(text: str) -> Decls:
    out: Decls = {}
    escaped = "\\" in text
    for part in strip_comments(text).split(";"):  # an escaped ";" (\\3b) separates nothing: split first
        name, colon, value = (css_unescape(part) if escaped else part).partition(":")
        if not colon:
            continue
        prop = name.strip().lower()
        if prop not in PROPS and not prop.startswith("--"):
            continue
        v = value.strip().lower()
        bang = _IMPORTANT.search(v)  # "0 ! important" is as important as "0!important"
        important = bang is not None
        if bang is not None:
            v = v[: bang.start()].strip()
        if prop not in out or important or not out[prop][1]:
            out[prop] = (" ".join(v.split()), important)
    return out


_NUM = r"(-?\d*\.?\d+)"
_LENGTH = re.compile(_NUM + r"\s*(px|pt|em|rem|%|vw|vh|ch|ex)?$")
_SCALE = re.compile(r"scale[xy3d]?\(\s*" + _NUM + r"\s*(?:,\s*" + _NUM + r")?")
_MATRIX_ZERO = re.compile(r"matrix\(\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,")
_TRANSLATE_AWAY = re.compile(r"translate[xy3d]*\(\s*-\d{4,}")
_CLIP_RECT = re.compile(r"rect\(\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)")


def px(value: str) -> float | None:
    m = _LENGTH.match(value.strip())
    if not m:
        return None
    n, unit = float(m.group(1)), m.group(2) or "px"
    return {"px": n, "pt": n * 4 / 3, "em": n * 16, "rem": n * 16, "%": n * 0.16, "ex": n * 8, "ch": n * 8,
            "vw": n * 12.8, "vh": n * 8}[unit]


def _font_size(decls: Decls) -> float | None:
    if "font-size" in decls:
        return px(decls["font-size"][0])
    if "font" in decls:  # shorthand: "... 1px/1 sans-serif"; the size is what stands before "/" ("0/0 a")
        value = decls["font"][0]
        if "/" in value:
            before = value.split("/", 1)[0].split()
            size = px(before[-1]) if before else None
            if size is not None:
                return size
        for tok in value.replace("/", " ").split():
            size = px(tok)
            if size is not None and (tok == "0" or not tok.replace(".", "").isdigit()):
                return size
    return None


def _offscreen(decls: Decls) -> bool:
    for prop in ("left", "top", "right", "text-indent", "margin-left", "margin-top"):
        if prop in decls:
            at = px(decls[prop][0])
            if at is not None and at <= -999:
                return True
    return False


_FILTER_OPACITY = re.compile(r"opacity\(\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*\)")


def invisible_reason(decls: Decls) -> str | None:
    """Why these declarations (one element's, cascaded) make its text invisible; None when they do not.
    Colour against an inherited background is judged by the caller; here only colour against its own."""
    get = lambda p: decls[p][0] if p in decls else ""  # noqa: E731
    if get("display") == "none":
        return "display:none"
    if get("visibility") in ("hidden", "collapse"):
        return "visibility:hidden"
    op = get("opacity")
    if op:
        try:
            if float(op.rstrip("%")) <= 0.01:
                return "opacity:0"
        except ValueError:
            pass
    flt = get("filter").lower()
    if "opacity(" in flt:  # filter: opacity(0) paints nothing, as opacity: 0 (several multiply)
        alpha = 1.0
        for amount, pct in _FILTER_OPACITY.findall(flt):
            alpha *= float(amount) / (100 if pct else 1)
        if alpha < 0.05:
            return "opacity:0"
    size = _font_size(decls)
    if size is not None and size <= TINY_FONT_PX:
        return "font:tiny"
    tf = get("transform")
    if tf:
        m = _SCALE.search(tf)
        if m and any(g is not None and abs(float(g)) <= 0.01 for g in m.groups()):
            return "transform:scale0"
        if _MATRIX_ZERO.search(tf):
            return "transform:scale0"
        if _TRANSLATE_AWAY.search(tf):
            return "offscreen"
    if _offscreen(decls):
        return "offscreen"
    clip, clip_path = get("clip"), get("clip-path")
    if (clip and _CLIP_RECT.search(clip)) or clip_path.startswith(("inset(50%", "inset(100%", "circle(0")):
        return "clip"
    if get("overflow") in ("hidden", "clip") and any(get(p) in ("0", "0px") for p in ("width", "height", "max-height",
                                                                              "max-width")):
        return "zero-box"
    colour = get("color")
    if colour:
        c = parse_colour(colour)
        if c == TRANSPARENT:
            return "colour:background"
        bg = background_of(decls)
        if c is not None and bg is not None and bg not in (TRANSPARENT, UNKNOWN_BG) and near(c, bg):
            return "colour:background"
    return None


def style_hides(style: str) -> bool:
    """An inline style (or a rule's declarations) that makes its element invisible to people."""
    return bool(style) and invisible_reason(parse_declarations(style)) is not None


# --- colours -------------------------------------------------------------------------------------------

RGB = tuple[int, int, int]
TRANSPARENT: RGB = (-1, -1, -1)
UNKNOWN_BG: RGB = (-2, -2, -2)  # an image or gradient: the colour behind the text cannot be told
_NAMED: dict[str, RGB] = {
    "white": (255, 255, 255), "snow": (255, 250, 250), "ivory": (255, 255, 240), "ghostwhite": (248, 248, 255),
    "whitesmoke": (245, 245, 245), "floralwhite": (255, 250, 240), "mintcream": (245, 255, 250),
    "azure": (240, 255, 255), "aliceblue": (240, 248, 255), "seashell": (255, 245, 238), "linen": (250, 240, 230),
    "black": (0, 0, 0), "red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255), "gray": (128, 128, 128),
    "grey": (128, 128, 128), "silver": (192, 192, 192), "yellow": (255, 255, 0), "navy": (0, 0, 128),
}
_HEX = re.compile(r"#([0-9a-f]{3,8})\b")
_RGB_FN = re.compile(r"rgba?\(\s*(\d{1,3}(?:\.\d+)?)[\s,]+(\d{1,3}(?:\.\d+)?)[\s,]+(\d{1,3}(?:\.\d+)?)"
                     r"(?:\s*[,/]\s*([\d.]+%?))?\s*\)")


def parse_colour(value: str) -> RGB | None:
    v = value.strip().lower()
    if v == "transparent":
        return TRANSPARENT
    if v in _NAMED:
        return _NAMED[v]
    m = _HEX.fullmatch(v) if v.startswith("#") else None
    if m:
        h = m.group(1)
        if len(h) in (3, 4):
            if len(h) == 4 and h[3] == "0":
                return TRANSPARENT
            return (int(h[0] * 2, 16), int(h[1] * 2, 16), int(h[2] * 2, 16))
        if len(h) in (6, 8):
            if len(h) == 8 and h[6:] == "00":
                return TRANSPARENT
            return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))
        return None
    m = _RGB_FN.fullmatch(v)
    if m:
        alpha = m.group(4)
        if alpha is not None and float(alpha.rstrip("%")) == 0:
            return TRANSPARENT
        r, g, b = (min(255, int(float(x))) for x in m.groups()[:3])
        return (r, g, b)
    return None


def background_of(decls: Decls) -> RGB | None:
    """The colour a declaration block paints behind its text; UNKNOWN_BG for images; None when unset."""
    for prop in ("background-image", "background"):
        if prop in decls and ("url(" in decls[prop][0] or "gradient(" in decls[prop][0]):
            return UNKNOWN_BG
    for prop in ("background-color", "background"):
        if prop in decls:
            v = decls[prop][0]
            m = _HEX.search(v) or _RGB_FN.search(v)
            c = parse_colour(m.group(0)) if m else parse_colour(v.split()[0]) if v else None
            if c is not None and c != TRANSPARENT and m is not None and _translucent(m):
                return UNKNOWN_BG  # "rgba(255,255,255,.1)" over a dark footer: what shows is mostly beneath
            if c is not None:
                return c
            if v in ("none", "initial", "unset", "inherit"):
                continue
            return UNKNOWN_BG
    return None


def _translucent(m: re.Match[str]) -> bool:
    """A matched hex or rgb() colour that is partly see-through (alpha below 1, not 0)."""
    text = m.group(0)
    if text.startswith("#"):
        h = m.group(1)
        return (len(h) == 4 and h[3] != "f") or (len(h) == 8 and h[6:] != "ff")
    alpha = m.group(4)
    if alpha is None:
        return False
    try:
        a = float(alpha.rstrip("%")) / (100.0 if alpha.endswith("%") else 1.0)
    except ValueError:
        return True
    return a < 1.0


def near(a: RGB, b: RGB) -> bool:
    return max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 24


def near_white(c: RGB) -> bool:
    return min(c) >= 235


def strip_comments(css: str) -> str:
    if "/*" not in css:
        return css
    parts: list[str] = []
    pos = 0
    while (start := css.find("/*", pos)) != -1:
        parts.append(css[pos:start])
        end = css.find("*/", start + 2)
        if end == -1:
            return "".join(parts)
        pos = end + 2
    parts.append(css[pos:])
    return "".join(parts)


_BARE_HEX = re.compile(r"[0-9a-f]{6}|[0-9a-f]{3}")


def presentational_colour(value: str) -> str | None:
    """A legacy colour attribute (``<font color>``) as a CSS colour, when we can read it."""
    v = value.strip().lower()
    if _BARE_HEX.fullmatch(v):
        v = "#" + v
    return v if parse_colour(v) is not None else None
