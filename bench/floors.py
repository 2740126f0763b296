"""The two floors of the catalog benchmark, run as their own process.

    python bench/floors.py prefix ROOT   # stat + first 4 KB + orjson-parse its complete lines, every file
    python bench/floors.py full ROOT     # read every byte and orjson-parse every line, every file
    python bench/floors.py file PATH     # the same for one file (bench/huge.py's floor)

No seance code: this is what any listing must at least do (prefix) and what an exact one
must at least do (full), in one Python process.
"""

import os
import sys

import orjson


def files(root: str):
    for bucket in os.scandir(root):
        if bucket.is_dir():
            for entry in os.scandir(bucket.path):
                if entry.name.endswith(".jsonl"):
                    yield entry


def prefix(root: str) -> None:
    for entry in files(root):
        entry.stat()
        with open(entry.path, "rb") as handle:
            data = handle.read(4096)
        for line in data.split(b"\n")[:-1]:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass


def full(root: str) -> None:
    for entry in files(root):
        parse_file(entry.path)


def parse_file(path: str) -> None:
    with open(path, "rb") as handle:
        for line in handle:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass


if __name__ == "__main__":
    {"prefix": prefix, "full": full, "file": parse_file}[sys.argv[1]](sys.argv[2])
