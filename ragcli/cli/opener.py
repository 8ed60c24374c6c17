"""Opening a cited file at its page in the user's viewer (`rag open`, `--open` on query and ask).

Which command opens a file, in order:

1. macOS: ``open PATH`` (Preview and friends take no page on the command line).
2. Elsewhere with a display: a PDF with a page goes to the first page-aware viewer found
   (zathura, evince, okular, mupdf); anything else to ``xdg-open``.
3. No display or no opener (a server, a container): nothing is run; the caller prints the
   path so a person or a script can take it from there.

The viewer is started detached and never waited for, so a command with `--open` finishes
(and a pipe downstream gets its end of file) whatever the viewer does.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Callable, Sequence

# Viewer -> arguments for "this file at this page" (pages count from 1).
PAGE_VIEWERS: dict[str, Callable[[str, int], list[str]]] = {
    "zathura": lambda path, page: ["zathura", "--page", str(page), path],
    "evince": lambda path, page: ["evince", "--page-label", str(page), path],
    "okular": lambda path, page: ["okular", "--page", str(page), path],
    "mupdf": lambda path, page: ["mupdf", path, str(page)],
}


def open_command(
    path: str,
    page: int | None,
    *,
    platform: str,
    has_display: bool,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str] | None:
    """The command that shows `path` (at `page` where the viewer allows), or None when none can.

    Args:
        path: the file.
        page: the page to show, or None.
        platform: `sys.platform`.
        has_display: a graphical session is available (DISPLAY / WAYLAND_DISPLAY on Linux).
        which: finds a program on PATH.
    """
    if platform == "darwin":
        return ["open", path] if which("open") else None
    if not has_display:
        return None
    if page is not None and path.lower().endswith(".pdf"):
        for viewer, command in PAGE_VIEWERS.items():
            if which(viewer):
                return command(path, page)
    return ["xdg-open", path] if which("xdg-open") else None


def launch(command: Sequence[str]) -> None:
    """Start the viewer detached from this process (its output discarded; it outlives `rag`)."""
    subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def open_in_viewer(path: str, page: int | None) -> list[str] | None:
    """Start the viewer for `path` at `page` here; the command started, or None when nothing
    can open it (no display, no opener, or the opener would not start)."""
    from ragcli.config import has_display

    command = open_command(path, page, platform=sys.platform, has_display=has_display())
    if command is None:
        return None
    try:
        launch(command)
    except OSError:
        return None
    return command


def file_to_open(shown: str) -> tuple[str, str, str | None]:
    """The file on disk a stored path is in, that file's stored path, and the part of it the
    path names, if any.

    A mailbox's message (``inbox.mbox#2``) or a mail's attachment (``note.eml#1/report.pdf``)
    has no file of its own: the viewer gets the file that holds it, and the part is said.
    """
    from ragcli.ingest.walk import disk_path
    from ragcli.text import PART_SEPARATOR

    path = disk_path(shown)
    if path.exists() or PART_SEPARATOR not in shown:
        return str(path), shown, None
    container, _, part = shown.partition(PART_SEPARATOR)
    return str(disk_path(container)), container, part


def open_cited(path: str | None, page: int | None, what: str) -> None:
    """`--open` on query and ask: open `what` (the top hit, the first cited source) and say so
    on stderr; where nothing can open it, name it on stderr. Stdout is left to the data."""
    from ragcli.cli.render import printable, stderr_console
    from ragcli.places import location

    console = stderr_console()
    if path is None:
        console.print(f"--open: no {what} to open", markup=False, highlight=False)
        return
    on_disk, _, part = file_to_open(path)
    command = open_in_viewer(on_disk, page)
    if command is None:
        note = (
            f"--open: nothing can open files here (no display or viewer); the {what}: {location(path, page)}"
        )
    else:
        inside = f" (#{part} is inside it)" if part else ""
        note = f"opened the {what} with {command[0]}: {location(on_disk, page)}{inside}"
    console.print(printable(note), markup=False, highlight=False)
