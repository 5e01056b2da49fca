"""`edgebench agent`: make this host's lab devices part of a Ray cluster (docs/cluster.md).

The cluster package is imported inside the command: other commands never import Ray."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from edgebench.cli.app import cli
from edgebench.cli.options import lab_option


@cli.command()
@click.option(
    "--cluster",
    "address",
    required=True,
    metavar="ADDRESS",
    help="The Ray head to join, host:port (as `ray start --head` printed it).",
)
@lab_option
@click.option(
    "--host",
    default="",
    help="This host's name in the cluster (`--devices host=NAME`) [default: the hostname].",
)
@click.option(
    "--node-ip",
    default=None,
    metavar="IP",
    help="The address other hosts reach this one at [default: Ray's choice].",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=1.0),
    default=30.0,
    show_default=True,
    help="Seconds between checks of which devices answer.",
)
def agent(address: str, lab_path: Path | None, host: str, node_ip: str | None, poll: float) -> None:
    """Join the cluster and offer this host's reachable lab devices to `edgebench run
    --cluster`; runs until stopped (Ctrl-C or SIGTERM), following devices as they come and go."""
    from edgebench.cluster.agent import Agent, AgentSettings

    def report(line: str) -> None:
        click.echo(line, err=True)

    runner = Agent(AgentSettings(address, lab_path, host, node_ip, poll), report)

    def on_signal(signum: int, frame: object) -> None:
        runner.stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        runner.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
