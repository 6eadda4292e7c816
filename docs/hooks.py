"""MkDocs hook: the table of public names on ``api-index.md``, generated from
``chainrules.__all__`` and the first line of each docstring when the site is
built (so it cannot go stale)."""

MARKER = "<!-- public-names -->"


def public_names_table():
    import chainrules

    rows = ["| name | kind | summary |", "|---|---|---|"]
    for name in sorted(chainrules.__all__, key=str.lower):
        obj = getattr(chainrules, name)
        kind = ("error" if isinstance(obj, type) and issubclass(obj, BaseException)
                else "class" if isinstance(obj, type) else "function")
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        summary = doc[0].replace("|", "\\|") if doc else ""
        rows.append(f"| `{name}` | {kind} | {summary} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown, page, config, files):
    if MARKER in markdown:
        return markdown.replace(MARKER, public_names_table())
    return markdown
