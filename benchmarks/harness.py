"""Run tasks in child processes: warm-up, repetitions, medians, peak RSS per child (each child
reports its own VmHWM).

A row's acidstore figure and its peer's are measured *together*: one child of each in turn,
round after round (the order reversed every other round, A B B A ..., so a load that rises or
falls through a round weighs on both sides alike), and the row's ratio is the median of the
rounds' ratios. The machine is shared: a slow minute then slows both sides of one round, where
measuring one side's repetitions and then the other's put it on one side only."""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: a task and its arguments
Spec = tuple[str, dict[str, Any]]

_groups = itertools.count(1)


@dataclass
class Measurement:
    """Median seconds over the repetitions, rows produced, max peak RSS, extra figures (each
    numeric one the median over the repetitions, as the seconds are)."""

    seconds: float
    rows: int
    peak_rss_mb: float
    extra: dict[str, Any] = field(default_factory=dict)
    #: each repetition's seconds, in the order the children ran
    samples: list[float] = field(default_factory=list)
    #: the measurements taken together with this one share a group: their samples are rounds
    group: int | None = None
    #: each repetition's extra figures, in the order of ``samples``
    sample_extras: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    def paired_ratios(self, peer: Measurement) -> list[float] | None:
        """This measurement's time over ``peer``'s, round by round, when both were taken
        together (else None: only their medians compare)."""
        if (self.group is None or self.group != peer.group
                or len(self.samples) != len(peer.samples) or not self.samples
                or min(peer.samples) <= 0):
            return None
        return [ours / theirs for ours, theirs in zip(self.samples, peer.samples, strict=True)]


def median_extras(extras: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The children's extra figures as one: a number is the median over the children (an int
    stays an int when they agree), anything else the last child's."""
    merged: dict[str, Any] = {}
    for key, last in extras[-1].items():
        values = [e[key] for e in extras if key in e]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if numeric and len(set(values)) > 1:
            merged[key] = statistics.median(values)
        else:
            merged[key] = last
    return merged


def _run_once(task: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One child; ``args["env"]`` (if any) is added to its environment, e.g. an allocator
    setting a row measures for both peers alike."""
    args = dict(args)
    env = {**os.environ, "PYTHONHASHSEED": "0", **args.pop("env", {})}
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.tasks", task, json.dumps(args)],
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"task {task} failed with exit code {proc.returncode}")
    result = json.loads(out)
    return result, float(result.pop("peak_rss_mb"))


def _summarise(results: list[tuple[dict[str, Any], float]], group: int) -> Measurement:
    samples = [float(r["seconds"]) for r, _ in results]
    extras = [{k: v for k, v in r.items() if k not in ("seconds", "rows")} for r, _ in results]
    return Measurement(statistics.median(samples), int(results[-1][0]["rows"]),
                       max(rss for _, rss in results), median_extras(extras), samples, group,
                       extras)


#: runs one child: its result (``seconds``, ``rows``, extra figures) and its peak RSS in MB
RunOne = Callable[[str, dict[str, Any]], tuple[dict[str, Any], float]]


def measure_together(specs: Sequence[Spec], *, repeat: int = 3, warmup: int = 1,
                     run_one: RunOne = _run_once) -> list[Measurement]:
    """Each spec's task ``warmup`` times, then ``repeat`` rounds of one child per spec, the
    order reversed every other round; one measurement per spec, all of one group."""
    for task, args in specs:
        for _ in range(warmup):
            run_one(task, args)
    results: list[list[tuple[dict[str, Any], float]]] = [[] for _ in specs]
    for round_ in range(repeat):
        order = range(len(specs)) if round_ % 2 == 0 else reversed(range(len(specs)))
        for i in order:
            results[i].append(run_one(*specs[i]))
    group = next(_groups)
    return [_summarise(r, group) for r in results]


def measure(task: str, args: dict[str, Any], *, repeat: int = 3, warmup: int = 1
            ) -> Measurement:
    """Run ``task`` warmup + repeat times, each in a new process; report the median."""
    return measure_together([(task, args)], repeat=repeat, warmup=warmup)[0]


class Bench:
    """How a workload measures its tasks: ``bench(task, **args)`` alone, or
    ``bench.together((task, args), ...)`` in rounds (the acidstore side beside its peers).
    ``run`` measures a list of specs together; ``Bench.children`` runs them in child
    processes with the base arguments of a family of tasks."""

    def __init__(self, run: Callable[[Sequence[Spec]], list[Measurement]]) -> None:
        self._run = run

    @classmethod
    def children(cls, base: Callable[[], dict[str, Any]], *, repeat: int, warmup: int = 1
                 ) -> Bench:
        """``base`` is called once at each measurement (it may build the states on first
        use), its arguments shared by every spec measured together."""

        def run(specs: Sequence[Spec]) -> list[Measurement]:
            shared = base()
            return measure_together([(task, {**shared, **args}) for task, args in specs],
                                    repeat=repeat, warmup=warmup)

        return cls(run)

    def __call__(self, task: str, **args: Any) -> Measurement:
        return self._run([(task, args)])[0]

    def together(self, *specs: Spec) -> list[Measurement]:
        return self._run(specs)
