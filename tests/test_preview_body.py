"""The preview's body draws only the lines in view, from lines its worker wrapped, and shows
a long context as the `Static` it replaced showed it (the snapshot tests compare the pixels)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static

from seance.app.widgets import preview_body
from seance.app.widgets.preview_body import PreviewBody, wrapped_lines

LONG = Content("\n\n".join(f"message {number}: " + "word " * 60 for number in range(400)))


class BodyApp(App[None]):
    CSS = "PreviewBody { height: 1fr; width: 40; scrollbar-size-vertical: 1; overflow-x: hidden; }"

    def compose(self) -> ComposeResult:
        yield PreviewBody(id="body")


async def test_only_the_lines_in_view_are_rendered_and_scrolling_renders_the_next_ones() -> None:
    async with BodyApp().run_test(size=(60, 20)) as pilot:
        body = pilot.app.query_one(PreviewBody)
        body.update(LONG)
        await pilot.pause()
        width, height, scrollbar = body.geometry() or (0, 0, 0)
        lines = wrapped_lines(LONG, width, height, scrollbar)
        assert len(lines) > 1000 and body.virtual_size.height == len(lines)
        assert 0 < len(body._strips) <= height, "a screenful rendered, not the whole text"
        body.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        shown = [strip.text.rstrip() for strip in (body.render_line(y) for y in range(height))]
        assert shown == [line.plain.rstrip() for line in lines[-height:]]
        assert "message 399" in "".join(shown)


async def test_lines_wrapped_by_the_worker_for_this_geometry_are_used_as_they_are(monkeypatch) -> None:
    async with BodyApp().run_test(size=(60, 20)) as pilot:
        body = pilot.app.query_one(PreviewBody)
        await pilot.pause()
        geometry = body.geometry()
        assert geometry is not None
        prepared = wrapped_lines(LONG, *geometry)
        calls: list[int] = []
        original = preview_body.wrapped_lines
        monkeypatch.setattr(preview_body, "wrapped_lines", lambda *args: calls.append(1) or original(*args))
        body.update(LONG, (geometry, prepared))
        assert not calls and body._lines is prepared, "no wrapping on the UI thread"
        stale = ((geometry[0] + 5, *geometry[1:]), prepared)
        body.update(Content("other text"), stale)
        assert calls, "lines made for another width are wrapped again"


async def test_the_lines_read_as_a_static_of_the_same_text_with_its_one_cell_margin() -> None:
    text = Content("first line\n\n" + "word " * 30 + "\n" + "x" * 95)

    class Both(App[None]):
        CSS = "#a, #b { width: 40; height: 10; } #a { overflow-x: hidden; } #b { padding: 0 1 0 0; }"

        def compose(self) -> ComposeResult:
            yield PreviewBody(id="a")
            yield Static(text, id="b")

    async with Both().run_test(size=(60, 24)) as pilot:
        body = pilot.app.query_one(PreviewBody)
        body.update(text)
        await pilot.pause()
        static = pilot.app.query_one(Static)
        mine = [body.render_line(y).text.rstrip() for y in range(10)]
        theirs = [strip.text.rstrip() for strip in static.render_lines(static.size.region)]
        assert mine == theirs and mine[0] == "first line" and mine[-1] == ""
