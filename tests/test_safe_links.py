"""Only http, https, mailto and #source-n links survive in the exported Markdown and on the Run page,
and no control character reaches an export. Checked with a CommonMark parser, not by regexes."""

from __future__ import annotations

from markdown_it import MarkdownIt

from dashboard.views import report_markdown
from research.export import to_html, to_markdown
from research.export.safe_links import allowed_href, safe_markdown
from tests.test_export import make

# Each row: a dangerous link in one form or another. Several slip past the draft's regex filter.
VECTORS = [
    "[x](javascript:alert(1)//<x>)",
    "[x](<javascript:alert(1)>)",
    "[x](JaVaScRiPt:alert(1))",
    "[x]( javascript:alert(1) 'title')",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript&colon;alert(1))",
    "[x](java%73cript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[ref link][evil]\n\n[evil]: javascript:alert(1)",
    "[evil2]\n\n[evil2]: <data:text/html,x> \"t\"",
    "<javascript:alert(1)>",
    "<FILE:///etc/passwd>",
    "![img](javascript:alert(1))",
    "![img](https://tracker.example/pixel.png)",
    '<a href="javascript:alert(1)">raw</a>',
    "<img src=x onerror=alert(1)>",
    "<div>\n<a href=javascript:alert(1)>block</a>\n</div>",
    "[x](\\javascript:alert(1))",
    "[[x](javascript:alert(1))](https://alpha.example.com/a)",
    "[x](javascript:alert(1)\n)",
    "> quoted [x](vbscript:x)",
    "| a | [x](data:,hi) |\n| --- | --- |\n| b | c |",
    "- item [x](javascript://%0aalert(1))",
]

_PERMISSIVE = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_PERMISSIVE.validateLink = lambda url: True  # type: ignore[method-assign]


def live_links(markdown: str) -> list[str]:
    """Every destination a CommonMark renderer would make live, and every raw HTML piece."""
    found: list[str] = []

    def walk(tokens: list) -> None:
        for t in tokens:
            if t.type == "link_open":
                found.append(t.attrGet("href"))
            elif t.type == "image":
                found.append("image:" + str(t.attrGet("src")))
            elif t.type in ("html_inline", "html_block") and "source-" not in t.content \
                    and t.content.strip() != "</a>":
                found.append("html:" + t.content)
            walk(t.children or [])

    walk(_PERMISSIVE.parse(markdown))
    return found


def _bad(markdown: str) -> list[str]:
    return [h for h in live_links(markdown) if h.startswith(("image:", "html:")) or not allowed_href(h)]


def test_every_vector_is_disarmed_by_the_sanitiser_alone() -> None:
    for vector in VECTORS:
        assert _bad(vector), f"the vector should be live before: {vector!r}"
        assert _bad(safe_markdown(vector)) == [], vector


def test_exported_markdown_keeps_no_dangerous_link_but_keeps_citations_and_sources() -> None:
    body = "## Findings\n\n" + "\n\n".join(
        f"Claim {i} is true [1]. See {v} and [2]." for i, v in enumerate(VECTORS))
    markdown = to_markdown(make(body))
    assert _bad(markdown) == []
    hrefs = live_links(markdown)
    assert "#source-1" in hrefs and "#source-2" in hrefs
    assert "https://alpha.example.com/a" in hrefs  # the Sources list still links out


def test_run_page_markdown_keeps_no_dangerous_link() -> None:
    body = "## Findings\n\n" + "\n\n".join(f"Fact {v} [1]." for v in VECTORS)
    markdown = report_markdown(make(body))
    assert _bad(markdown) == []
    assert "https://alpha.example.com/a" in live_links(markdown)


def test_allowed_schemes_survive_untouched() -> None:
    text = "Mail [us](mailto:a@b.org), read [doc](https://x.org/a?b=1) or <http://y.org>."
    assert safe_markdown(text) == text
    assert allowed_href("HTTPS://x.org") and not allowed_href("#other") and not allowed_href("x.html")


CONTROL = "\x1b]52;c;ZXZpbA==\x07\x1b[8mhidden\x1b[0m\x9b31m\x00\x07\x08\x7f\x85"


def test_exports_carry_no_control_characters() -> None:
    doc = make(f"## Summary {CONTROL}\n\nText{CONTROL} [1].\n", question=f"Q{CONTROL}?",
               notes=(f"note{CONTROL}",))
    for text in (to_markdown(doc), to_html(doc), report_markdown(doc)):
        bad = [c for c in text if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f]
        assert bad == [], [hex(ord(c)) for c in bad]
        assert "52;c;" not in text and "[8m" not in text
