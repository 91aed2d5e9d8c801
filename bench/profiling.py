"""py-spy attached to Odradek during a case (`bench.data_plane --profile`): raw samples,
the hottest functions, and collapsed stacks for flamegraph.pl or speedscope.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

from bench.peers import REPO, log, venv_python

# --------------------------------------------------------------------------- profiling


class Profiler:
    """py-spy record on a pid for as long as the `with` block lasts (raw collapsed stacks)."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid = pid
        self.out = out
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profiler:
        exe = shutil.which("py-spy") or str(Path(venv_python()).parent / "py-spy")
        if not Path(exe).exists():
            log.warning("py-spy not found; profiling skipped")
            return self
        self.proc = subprocess.Popen(
            [exe, "record", "--pid", str(self.pid), "--format", "raw", "--rate", "200",
             "--nonblocking", "--output", str(self.out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(2)  # SIGINT makes py-spy write its output
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def hottest(raw_files: list[Path], top: int = 15) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive sample shares per function from py-spy raw (collapsed) output."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for raw in raw_files:
        if not raw.exists():
            continue
        for line in raw.read_text().splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [_frame_name(f) for f in stack.split(";")]
            frames = [f for f in frames if f]
            if not frames:
                continue
            total += count
            own[frames[-1]] += count
            for name in set(frames):
                inclusive[name] += count
    if not total:
        return {"self": [], "inclusive": []}
    return {
        "self": [(name, round(100 * n / total, 1)) for name, n in own.most_common(top)],
        "inclusive": [(name, round(100 * n / total, 1)) for name, n in inclusive.most_common(top)],
    }


def merge_collapsed(raw_files: list[Path], out: Path) -> None:
    """One collapsed-stack file (flamegraph.pl, speedscope) from several py-spy raw files."""
    stacks: Counter[str] = Counter()
    for raw in raw_files:
        if raw.exists():
            for line in raw.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if stack and count.isdigit():
                    stacks[stack] += int(count)
    out.write_text("".join(f"{stack} {count}\n" for stack, count in stacks.most_common()))


def _frame_name(frame: str) -> str:
    """'handle (broker/handlers/produce.py:97)' -> 'handle (broker/handlers/produce.py)'."""
    if frame.startswith("process ") or frame.startswith("thread "):
        return ""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        with contextlib.suppress(ValueError):
            path = str(Path(path).resolve().relative_to(REPO))
    return f"{name} ({path})" if path else name
