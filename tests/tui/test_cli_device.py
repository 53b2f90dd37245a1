"""``webshepherd tui`` argument handling, and the local device readings."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
from rich.console import Console
from webshepherd.daemon.cli import main
from webshepherd.daemon.cli import tui as cli_tui
from webshepherd.tui import device
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.widgets.device_panel import device_table


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="webshepherd")
    cli_tui.add_tui_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_parser_defaults_and_flags():
    args = parse(["tui"])
    assert (args.url, args.token_file, args.func) == (
        None,  # --url, else $WEBSHEPHERD_URL, else the default (tui_app resolves it)
        None,
        cli_tui.cmd_tui,
    )
    args = parse(["tui", "--url", "ws://127.0.0.1:9/v1", "--token-file", "t"])
    assert (args.url, args.token_file) == ("ws://127.0.0.1:9/v1", Path("t"))


def test_token_from_the_local_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("WEBSHEPHERD_TOKEN", raising=False)
    assert main(["tui"]) == 1
    assert "no pairing token" in capsys.readouterr().err
    (tmp_path / "token").write_text("stored-token\n")
    started = []
    monkeypatch.setattr(WebShepherdApp, "run", lambda self: started.append(self))
    assert cli_tui.cmd_tui(parse(["tui", "--url", "ws://127.0.0.1:9/v1"])) == 0
    (app,) = started
    assert app.link.url == "ws://127.0.0.1:9/v1" and app.link.client._token == "stored-token"


def test_proc_fallbacks_read_this_machine():
    cpu = device._ProcCpu()
    assert cpu.percent() is None  # the first call only primes
    sum(range(200_000))
    pct = cpu.percent()
    assert pct is None or 0.0 <= pct <= 100.0
    used, total = device._proc_mem()
    assert total is not None and used is not None and 0 < used < total


@pytest.mark.parametrize("use_psutil", [True, False])
def test_probe_reads_cpu_and_ram(use_psutil):
    reading = device.DeviceProbe(use_psutil=use_psutil).read()
    assert reading.cpus and reading.ram_total_mb and reading.ram_total_mb > 0
    assert reading.source.startswith("psutil" if use_psutil else "/proc")


@pytest.mark.parametrize("gpu", [True, False])
def test_device_table_prefers_a_local_gpu(gpu):
    local = device.DeviceReading(
        gpus=[device.GpuReading("Local GPU", 1024.0, 4096.0, 50.0)] if gpu else [],
        cpus=2,
        cpu_percent=10.0,
        ram_used_mb=1.0,
        ram_total_mb=2.0,
    )
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(device_table(local, None))
    text = console.export_text()
    assert ("Local GPU" in text) is gpu and ("no GPU: CPU" in text) is (not gpu)
    assert "no stats yet" in text and "10% of 2 cores" in text
