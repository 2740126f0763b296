"""Stats as text: the preview's compact block, `seance show --stats`, the `seance stats` report.

Pure functions from `core.stats` values to lines of plain text; every name in them (models,
tools, paths, projects) is session text and goes through `text.display_text`.  Numbers are
written the way pi's footer writes them (`↑` input, `↓` output, `R` cache read, `W` cache
write, `1.2k`, `3.4M`).
"""

from __future__ import annotations

from datetime import date, timedelta

from .stats import FILE_OPS, Aggregate, SessionStats, Usage, local_date
from .text import display_text, home_short
from .textchart import bar, cell_width, fit, sparkline
from .timefmt import iso_ms


def tokens_text(count: int) -> str:
    """pi's `formatTokens`: 999, 1.2k, 45k, 1.2M, 45M."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    if count < 10_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{round(count / 1_000_000)}M"


def cost_text(cost: float) -> str:
    """$12.34, or four decimals below a cent ($0.0012), $0 for none; from a trillion up (a
    provider's nonsense, up to 1e308 or inf) in exponent form ($1e+308), not 309 digits."""
    if cost == 0:
        return "$0"
    if not abs(cost) < 1e12:
        return f"${cost:.3g}"
    return f"${cost:,.2f}" if abs(cost) >= 0.01 else f"${cost:.4f}"


def duration_text(ms: int) -> str:
    """A compact span: 45s, 12m, 2h 14m, 3d 4h."""
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def usage_text(usage: Usage) -> str:
    """`↑12k ↓3.4k R1.2M W80k · $1.23`, the parts pi's footer shows (zero counts left out)."""
    parts = [
        f"{mark}{tokens_text(count)}"
        for mark, count in (("↑", usage.input), ("↓", usage.output), ("R", usage.cache_read), ("W", usage.cache_write))
        if count
    ]
    return " ".join([*(parts or ["no tokens"]), "·", cost_text(usage.cost)])


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural or word + 's')}"


def _files_text(stats: SessionStats) -> str:
    counts = {op: sum(1 for ops in stats.files.values() if op in ops) for op in FILE_OPS}
    verbs = (("edit", "edited"), ("write", "written"), ("read", "read"))
    done = [f"{counts[op]:,} {verb}" for op, verb in verbs if counts[op]]
    return _plural(len(stats.files), "file") + " touched" + (f" ({', '.join(done)})" if done else "")


def _top(items: dict[str, int], limit: int) -> list[tuple[str, int]]:
    return sorted(items.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _model_count(usage: Usage, bare: str) -> str:
    """`×N` assistant messages; a model used only outside the conversation (oh-my-pi's
    `model_usage`: a title, a prediction) has usage but none: "no messages", in `bare`."""
    return f"×{usage.messages:,}" if usage.messages else bare.format("no messages")


def compact_lines(stats: SessionStats) -> list[str]:
    """The preview's block: five short lines, the whole tree's totals."""
    models = sorted(stats.models.items(), key=lambda item: (-item[1].messages, item[0]))
    model_text = ", ".join(f"{display_text(name)} {_model_count(usage, '({})')}" for name, usage in models[:3])
    if len(models) > 3:
        model_text += f", +{len(models) - 3} more"
    tools = _top(stats.tools, 6)
    tool_text = " · ".join(f"{display_text(name)} {count:,}" for name, count in tools)
    if len(stats.tools) > len(tools):
        tool_text += f" · +{len(stats.tools) - len(tools)} more"
    users = stats.roles.get("user", 0)
    return [
        f"tokens {usage_text(stats.usage)}",
        f"models {model_text or 'none'}",
        f"tools  {tool_text or 'none'}",
        f"files  {_files_text(stats)}",
        " · ".join(
            [
                f"{_plural(stats.messages, 'message')} ({users:,} user)",
                _plural(stats.leaves, "branch", "branches"),
                _plural(stats.compactions, "compaction"),
                duration_text(stats.duration_ms),
            ]
        ),
    ]


def detail_lines(stats: SessionStats, width: int = 80) -> list[str]:
    """`seance show S --stats`: the compact block, then models, tools (bars) and files in full."""
    lines = [f"session  {display_text(stats.id)}  ({display_text(stats.path)})", *compact_lines(stats)]
    if stats.first_ms is not None and stats.last_ms is not None:
        lines.append(f"time   {iso_ms(stats.first_ms)} → {iso_ms(stats.last_ms)}")
    lines.append("counted over the whole tree (every branch), as pi's footer counts")
    if stats.models:
        lines += ["", "models"]
        for name, usage in sorted(stats.models.items(), key=lambda item: (-item[1].messages, item[0])):
            lines.append(f"  {display_text(name)}  {_model_count(usage, '{}')}  {usage_text(usage)}")
    if stats.tools:
        lines += ["", "tool calls"]
        tools = _top(stats.tools, len(stats.tools))
        label = min(max(cell_width(display_text(name)) for name, _ in tools), 24)
        largest = tools[0][1]
        room = max(width - label - 12, 4)
        for name, count in tools:
            lines.append(f"  {fit(display_text(name), label)} {count:>7,} {bar(count, largest, room)}".rstrip())
    if stats.files:
        lines += ["", "files touched (read / edit / write: pi's and oh-my-pi's file tools)"]
        for path, ops in sorted(stats.files.items()):
            done = ", ".join(f"{op} {ops[op]}" for op in FILE_OPS if op in ops)
            lines.append(f"  {display_text(_short(path, stats.cwd))}  ({done})")
    return lines


def _short(path: str, cwd: str) -> str:
    """A touched file relative to the session's cwd when inside it, else `~`-shortened."""
    prefix = cwd.rstrip("/") + "/"
    if cwd and path.startswith(prefix):
        return path[len(prefix) :]
    return home_short(path)


def day_series(days: Aggregate) -> tuple[list[str], list[float]]:
    """Every day from the first to the last of a by-day aggregate (gaps as 0) and its cost."""
    dated = {group.key: group.usage.cost for group in days.groups if len(group.key) == 10 and group.key[4] == "-"}
    if not dated:
        return [], []
    try:
        first, last = date.fromisoformat(min(dated)), date.fromisoformat(max(dated))
    except ValueError:
        return sorted(dated), [dated[key] for key in sorted(dated)]
    keys = [(first + timedelta(days=offset)).isoformat() for offset in range((last - first).days + 1)]
    return keys, [dated.get(key, 0.0) for key in keys]


def report_lines(report: Aggregate, days: Aggregate, width: int = 80) -> list[str]:
    """`seance stats`: totals, a sparkline of cost per day, then one row per group with a bar."""
    # the local date, as the day rows (`--since 2026-01-31` is that day's local midnight)
    since = f" since {local_date(report.since_ms)}" if report.since_ms is not None else ""
    lines = [
        f"{_plural(report.sessions, 'session')}{since} · {_plural(report.total.messages, 'assistant message')}",
        f"tokens {usage_text(report.total)}",
    ]
    keys, costs = day_series(days)
    if keys:
        spark = sparkline(costs[-max(width - 31, 8) :])  # "cost/day " + two dates + spaces: 31 cells
        lines.append(f"cost/day {keys[-len(spark)]} {spark} {keys[-1]}")
    if not report.groups:
        lines.append("no usage recorded" + (" in that time" if since else ""))
        return lines
    tokens = [tokens_text(group.usage.tokens) for group in report.groups]
    costs_shown = [cost_text(group.usage.cost) for group in report.groups]
    token_cells = max(7, *map(len, tokens))  # wider only for absurd counts (pi writes 9223372036855M)
    cost_cells = max(10, *map(len, costs_shown))
    numbers = 4 + 7 + 8 + token_cells + cost_cells + 2  # spaces, sessions, messages, tokens, cost, before the bar
    names = [display_text(home_short(group.key) if report.by == "project" else group.key) for group in report.groups]
    label = max(min(max(cell_width(name) for name in names), width - numbers - 8, 48), 8)
    room = max(width - label - numbers, 4)
    largest = max(group.usage.cost for group in report.groups)
    lines.append("")
    lines.append(
        f"{fit(report.by, label)} {'sessions':>7} {'messages':>8} {'tokens':>{token_cells}} {'cost':>{cost_cells}}"
    )
    for name, group, token, cost in zip(names, report.groups, tokens, costs_shown, strict=True):
        row = (
            f"{fit(name, label)} {group.sessions:>7,} {group.usage.messages:>8,} "
            f"{token:>{token_cells}} {cost:>{cost_cells}}"
        )
        lines.append(f"{row}  {bar(group.usage.cost, largest, room)}".rstrip())
    return lines
