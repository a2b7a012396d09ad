"""The HTML every berth page shares: one self-contained file (inline CSS, images as data
URIs, no scripts, no request of any kind), so a report can be mailed, attached to a ticket or
opened from a CI artifact and look the same."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from berth.report.figures import Plot, data_uri, image_size

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
  max-width: 70em; padding: 0 1.5em; color: #222; line-height: 1.4; }
h1, h2, h3 { font-weight: 600; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; vertical-align: top;
  white-space: nowrap; }
td.text { white-space: normal; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
td.better { background: #e3f4e1; }
td.worse { background: #fbe3e1; }
figure { margin: 0.5em 0 1.5em; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: #666; font-size: 0.9em; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(26em, 1fr)); gap: 1em; }
.note { color: #666; }
nav a { margin-right: 1em; }
"""


def table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int = 1) -> str:
    """An HTML table of already-formatted cells; the first ``text_columns`` are left-aligned."""

    def cells(tag: str, values: Sequence[str]) -> str:
        left = ' class="text"'
        return "".join(
            f"<{tag}{left if i < text_columns else ''}>{escape(v)}</{tag}>"
            for i, v in enumerate(values)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><tr>{cells('th', header)}</tr>{body}</table>"


def figure(plot: Plot) -> str:
    """A plot embedded in the page, with its title and caption."""
    width, height = image_size(plot.path)
    caption = f" <span class='note'>({escape(plot.caption)})</span>" if plot.caption else ""
    return (
        f'<figure><img src="{data_uri(plot.path)}" alt="{escape(plot.title)}" '
        f'width="{width}" height="{height}">'
        f"<figcaption>{escape(plot.title)}{caption}</figcaption></figure>"
    )


def figures(plots: Sequence[Plot], pair: bool = False) -> str:
    """Several plots, side by side when ``pair`` (small ones: CDFs) and the window is wide."""
    body = "".join(figure(plot) for plot in plots)
    return f'<div class="pair">{body}</div>' if pair else body


def page(title: str, sections: Sequence[str], nav: Sequence[tuple[str, str]] = ()) -> str:
    """The whole document; ``nav`` lists (anchor, label) links to sections."""
    links = "".join(f'<a href="#{escape(a)}">{escape(label)}</a>' for a, label in nav)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>\n"
        + (f"<nav>{links}</nav>\n" if links else "")
        + "\n".join(section for section in sections if section)
        + "\n</body></html>\n"
    )


def heading(anchor: str, text: str) -> str:
    return f'<h2 id="{escape(anchor)}">{escape(text)}</h2>'
