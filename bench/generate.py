"""Write a generated pi sessions root (`seance.core.generate`) from the command line.

    python bench/generate.py OUT [--sessions N] [--projects M] [--seed S] [--mean-bytes B] [--huge K]

Used by `bench/run.py` (in a child process, so the benchmark stays small).  A dev tool, not
part of `seance`: the core parses no command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seance.core.generate import generate_corpus


def main(argv: list[str] | None = None) -> int:
    """`python bench/generate.py OUT ...`: generate, then say how much was written."""
    parser = argparse.ArgumentParser(description="write a generated pi sessions root")
    parser.add_argument("out", type=Path)
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--projects", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mean-bytes", type=int, default=60_000)
    parser.add_argument("--huge", type=int, default=0)
    args = parser.parse_args(argv)
    corpus = generate_corpus(
        args.out, args.sessions, args.projects, seed=args.seed, mean_bytes=args.mean_bytes, huge=args.huge
    )
    print(f"wrote {len(corpus.files)} sessions, {corpus.bytes / 1e6:.1f} MB under {corpus.root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
