"""A progress bar on stderr for long runs, only when stderr is a terminal.

tqdm draws it: widely used and maintained, pure Python with no dependencies, writes to stderr, fits the
terminal's width, shows rate and time left, and with `delay` stays hidden for runs that end within a
second. It is imported only when stderr is a terminal, so scripted and piped runs never load it. The
library side only takes a `progress(done, total)` callback and prints nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SHOW_AFTER_S = 1.0  # runs shorter than this draw no bar


@contextmanager
def progress_bar(what: str) -> Iterator[Callable[..., None] | None]:
    """A `progress(done, total, note=None)` callback that draws a bar labelled `what` on stderr (`note`, e.g.
    'failed=3', after the counts), or None when stderr is not a terminal (nothing to draw, nothing imported)."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int, note: str | None = None) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=what, file=sys.stderr, leave=False, delay=SHOW_AFTER_S, dynamic_ncols=True)
        bar.total = total
        if note is not None:
            bar.set_postfix_str(note, refresh=False)
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()
