"""The command line's shape: help that lists each command once and states every default, one
way to name a table, the environment standing in for --warehouse, and ``acidstore abort``."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from cli_support import run, run_json

import acidstore
from acidstore.cli.abort import REASON
from acidstore.cli.main import COMMANDS, build_parser
from acidstore.engine.core import core_of
from acidstore.errors import TransactionAbortedError
from compaction import Cleaner

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
        t.insert(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    return tmp_path / "wh"


def _entry_point(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``acidstore`` command (the entry point users run)."""
    command = shutil.which("acidstore")
    assert command is not None, "the acidstore entry point is not installed"
    return subprocess.run([command, *argv], capture_output=True, text=True, timeout=300,
                          check=False, env={**_clean_env(), **env})


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("ACIDSTORE_")}


def test_help_lists_each_command_once_with_one_line() -> None:
    done = _entry_point(["--help"])
    assert done.returncode == 0, done.stderr
    names = [name for _, runs in COMMANDS for name in runs]
    for name in names:
        lines = [line for line in done.stdout.splitlines()
                 if re.match(rf"  {re.escape(name)}\b", line)]
        assert len(lines) == 1, (name, lines)
        assert len(lines[0].split(None, 1)) == 2, f"{name} has no description: {lines[0]!r}"
    assert "positional arguments" not in done.stdout


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_has_help_and_states_its_default(name: str) -> None:
    command = _subcommands()[name]
    text = command.format_help()
    for action in command._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        assert action.help, f"{name} {action.option_strings or action.dest} has no help"
        if action.option_strings and action.default not in (None, False, []):
            shown = command._get_formatter()._format_action(action)
            assert "default" in shown, f"{name} {action.option_strings} hides its default"
    assert "usage: acidstore" in text


@pytest.mark.parametrize("command", ["compact", "fsck", "advise"])
def test_a_table_is_named_as_the_positional_argument_or_by_the_old_flag(
        warehouse: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["--kind", "minor"] if command == "compact" else []
    positional = run([command, "db.t", "--warehouse", str(warehouse), *extra], capsys)
    flag = run([command, "--table", "db.t", "--warehouse", str(warehouse), *extra], capsys)
    assert positional[0] == flag[0] == 0, (positional, flag)
    code, _, err = run([command, "db.t", "--table", "db.other", "--warehouse",
                        str(warehouse)], capsys)
    assert code == 2 and "two tables given" in err
    code, _, err = run([command, "db.nope", "--warehouse", str(warehouse)], capsys)
    assert code == 2 and "TableNotFoundError" in err


def test_compact_needs_exactly_one_mode(warehouse: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["db.t", "--auto"], ["db.t", "--every", "5m"]):
        code, _, err = run(["compact", "--warehouse", str(warehouse), *argv], capsys)
        assert code == 2 and "compact needs one of" in err, argv
    with pytest.raises(SystemExit):  # argparse refuses this pair itself
        run(["compact", "--auto", "--every", "5m", "--warehouse", str(warehouse)], capsys)
    assert run(["compact", "--auto", "--warehouse", str(warehouse)], capsys)[0] == 0


def test_the_environment_names_the_warehouse_for_every_command(warehouse: Path) -> None:
    env = {"ACIDSTORE_WAREHOUSE": str(warehouse)}
    for argv in (["tables"], ["describe", "db.t"], ["history", "db.t"], ["read", "db.t"],
                 ["advise", "db.t"], ["fsck"], ["show", "transactions"], ["clean"],
                 ["compact", "db.t"]):
        done = _entry_point(argv, **env)
        assert done.returncode == 0, (argv, done.stderr)
    assert "db.t" in _entry_point(["tables"], **env).stdout
    # an explicit flag wins over the environment
    done = _entry_point(["tables", "--warehouse", str(warehouse.parent / "none")], **env)
    assert done.returncode == 2 and "WarehouseNotFoundError" in done.stderr


def test_abort_ends_an_open_transaction_whose_commit_then_fails(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with acidstore.connect(warehouse) as wh:
        txn = wh.transaction()
        txn.table("db.t").insert(pa.table({"id": [9], "dt": ["a"]}))
        other = wh.transaction()
        committed = wh.table("db.t").history().to_pylist()[-1]["txn_id"]
        # a typo or a committed id aborts nothing
        for ids in ([str(txn.txn_id), "999"], [str(other.txn_id), str(committed)]):
            code, _, err = run(["abort", *ids, "--warehouse", str(warehouse)], capsys)
            assert code == 2 and "nothing was aborted" in err, err
        states = {t.txn_id: t.state for t in wh.metastore.show_transactions()}
        assert states[txn.txn_id] == states[other.txn_id] == "open"

        done = run_json(["abort", str(txn.txn_id), str(other.txn_id), "--warehouse",
                         str(warehouse)], capsys)
        assert done == [{"txn_id": txn.txn_id, "was": "open", "now": "aborted"},
                        {"txn_id": other.txn_id, "was": "open", "now": "aborted"}]
        with pytest.raises(TransactionAbortedError, match=re.escape(REASON)):
            txn.commit()
        other.abort()
        assert sorted(wh.table("db.t").to_arrow().column("id").to_pylist()) == [1, 2]
        # again: already aborted is no error
        assert run(["abort", str(txn.txn_id), "--warehouse", str(warehouse)], capsys)[0] == 0
        Cleaner(core_of(wh), retention_seconds=0).run()
        assert wh.fsck().to_pylist() == []
