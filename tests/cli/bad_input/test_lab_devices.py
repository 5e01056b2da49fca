"""`edgebench run`, `clean` and `devices` with labs a user gets wrong (issue 26): two names for
one device, a local device with its own python, runner and work_dir, and adb devices whose
server is not there or does not list them.

Each refusal is one ``edgebench: error:`` line and exit 2; a device that cannot be used fails
or skips its cells with the reason, and no run waits for itself.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from fakes.adb_fixtures import AdbServer
from fakes.cli_checks import (
    FAST,
    assert_failed_record,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model

ORT = ["--frameworks", "onnxruntime"]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_conv_model(tmp_path_factory.mktemp("model") / "tiny.onnx", [1, 3, 32, 32])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_lab(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lab = folder / "lab.toml"
    lab.write_text(text)
    return lab


def run_args(model: Path, lab: Path, devices: str) -> list[str]:
    return ["run", "--lab", str(lab), "--devices", devices, "--models", str(model), *ORT, *FAST]


def stored_runs(env: dict[str, str]) -> set[Path]:
    results = Path(env["EDGEBENCH_RESULTS"])
    return set(results.iterdir()) if results.is_dir() else set()


# --------------------------------------------------------------------- two names, one device

#: name -> (lab, --devices, the two names, what they both reach). ``{port}``: a port nothing
#: listens on (nothing is connected to before the refusal).
ALIASES = {
    "local_entry_and_builtin": (
        '[devices.box]\ntransport = "local"\n',
        "box,local",
        ("box", "local"),
        "this machine",
    ),
    "two_local_entries": (
        f'[devices.a]\ntransport = "local"\n[devices.b]\ntransport = "local"\n'
        f'python = "{sys.executable}"\n',
        "a,b",
        ("a", "b"),
        "this machine",
    ),
    "one_adb_serial_two_servers": (
        '[devices.p1]\ntransport = "adb"\nserial = "R5CT1234ABC"\nadb_port = {port}\n'
        '[devices.p2]\ntransport = "adb"\nserial = "R5CT1234ABC"\nadb_host = "localhost"\n'
        "adb_port = {port}\n",
        "p1,p2",
        ("p1", "p2"),
        "adb serial R5CT1234ABC",
    ),
    "one_ssh_host_two_users": (
        '[devices.s1]\ntransport = "ssh"\nhost = "127.0.0.1"\nport = {port}\nuser = "bench"\n'
        '[devices.s2]\ntransport = "ssh"\nhost = "127.0.0.1"\nport = {port}\nuser = "root"\n',
        "s2,s1",
        ("s2", "s1"),
        "ssh 127.0.0.1:{port}",
    ),
}


@pytest.mark.parametrize("wait", ["wait", "no-wait"])
@pytest.mark.parametrize("case", sorted(ALIASES))
def test_run_refuses_two_names_for_one_device(mod_env, tmp_path, model, case, wait):
    """Before: the run took the device's host lock under the first name, then waited for
    itself under the second (or, with --no-wait, named its own pid as the holder)."""
    text, devices, (first, second), identity = ALIASES[case]
    port = free_port()
    lab = write_lab(tmp_path, text.format(port=port))
    before = stored_runs(mod_env)
    more = ["--no-wait"] if wait == "no-wait" else []
    result = cli([*run_args(model, lab, devices), *more], mod_env)
    line = assert_one_error_line(result)
    expected = f"devices {first} and {second} are the same device ({identity.format(port=port)})"
    assert expected in line, line
    assert "keep one of them in --devices" in line, line
    assert "busy" not in result.stderr and "pid" not in result.stderr, result.stderr
    assert stored_runs(mod_env) == before


def test_devices_and_clean_still_list_both_names(mod_env, tmp_path):
    """Only a run refuses aliases: listing or cleaning a device under two names is harmless."""
    lab = write_lab(tmp_path, '[devices.box]\ntransport = "local"\n')
    listing = cli(["devices", "--lab", str(lab)], mod_env)
    assert listing.returncode == 0, listing.stderr
    assert (
        "\nlocal  [local]  online" in listing.stdout and "\nbox  [local]  online" in listing.stdout
    )
    cleaned = cli(["clean", "--lab", str(lab), "--devices", "box,local"], mod_env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stdout.splitlines() == [
        "box: nothing to clean on the host",
        "local: nothing to clean on the host",
    ]


# --------------------------------------------------------------------- local devices


def test_local_device_runs_its_own_python_with_its_work_dir(mod_env, tmp_path, model):
    """python (a path relative to the lab file's folder) and work_dir are honoured: the runner
    is started by that interpreter, with the work dir as its private HOME and outputs there."""
    labs = tmp_path / "labs"
    log = tmp_path / "python.log"
    wrapper = labs / "bin" / "python-wrapper"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(
        f'#!/bin/sh\necho "HOME=$HOME $*" >> "{log}"\nexec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    work = tmp_path / "box-work"
    lab = write_lab(
        labs,
        f'[devices.box]\ntransport = "local"\npython = "bin/python-wrapper"\nwork_dir = "{work}"\n',
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = cli(run_args(model, lab, "box"), mod_env, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    (record,) = records_of(result)
    assert record["status"] == "ok", record
    lines = log.read_text().splitlines()
    assert any(line.endswith("runner.py --probe") for line in lines), lines
    assert any(line.endswith("runner.py -") for line in lines), lines
    assert all(line.startswith(f"HOME={work} ") for line in lines), lines
    assert (work / "outputs").is_dir()


@pytest.mark.parametrize("runner", ["python", "auto"])
def test_local_device_with_a_missing_python_names_it(mod_env, tmp_path, model, runner):
    """Before: the lab's python was dropped and the cell measured with edgebench's own."""
    env = dict(mod_env, EDGEBENCH_NATIVE_DIR=str(tmp_path / "no-native-builds"))
    missing = tmp_path / "no-venv" / "bin" / "python3"
    lab = write_lab(
        tmp_path,
        f'[devices.box]\ntransport = "local"\npython = "{missing}"\nrunner = "{runner}"\n',
    )
    result = cli(run_args(model, lab, "box"), env)
    assert_no_traceback(result)
    (record,) = records_of(result)
    assert record["status"] == "skipped", record
    assert f"{missing} could not run the runner: no such executable" in record["error"], record
    if runner == "auto":
        assert "no edgebench-native build for" in record["error"], record


#: key lines -> the field the one error line names.
LOCAL_REFUSED = {
    "runner_framework_tools": (
        'runner = "framework-tools"\n',
        'devices.box.runner "framework-tools"',
    ),
    "tools_bin": ('tools_bin = "bin"\n', "devices.box.tools_bin"),
}


@pytest.mark.parametrize("command", ["run", "devices", "clean"])
@pytest.mark.parametrize("case", sorted(LOCAL_REFUSED))
def test_local_device_refuses_what_only_remote_devices_do(mod_env, tmp_path, model, case, command):
    lines, field = LOCAL_REFUSED[case]
    lab = write_lab(tmp_path, f'[devices.box]\ntransport = "local"\n{lines}')
    args = {
        "run": run_args(model, lab, "box"),
        "devices": ["devices", "--lab", str(lab), "--devices", "box"],
        "clean": ["clean", "--lab", str(lab), "--devices", "box"],
    }[command]
    line = assert_one_error_line(cli(args, mod_env))
    assert f"lab {lab}: {field}" in line and "local devices" in line, line
    assert "adb or ssh" in line, line


# --------------------------------------------------------------------- adb server missing


def assert_names_the_missing_server(text: str, port: int) -> None:
    assert f"no adb server at 127.0.0.1:{port}" in text, text
    assert f"start it with `adb -P {port} start-server`" in text, text
    assert "not connected" not in text and "cable" not in text, text


@pytest.fixture(params=["adb_port", "ANDROID_ADB_SERVER_PORT"])
def serverless(request, mod_env, tmp_path) -> tuple[Path, dict[str, str], int]:
    """A lab phone whose adb server port (from the lab, or from adb's own variable) has
    nothing listening."""
    port = free_port()
    env = dict(mod_env)
    env.pop("ANDROID_ADB_SERVER_PORT", None)
    text = '[devices.phone]\ntransport = "adb"\nserial = "R5CT1234ABC"\n'
    if request.param == "adb_port":
        text += f"adb_port = {port}\n"
    else:
        env["ANDROID_ADB_SERVER_PORT"] = str(port)
    return write_lab(tmp_path, text), env, port


def test_run_without_an_adb_server_says_so_once(serverless, model):
    """The unreachable phone's cell fails with the reason, without retrying a connection that
    never existed ("connection lost ... retrying" three times, 7 s of backoff, before)."""
    lab, env, port = serverless
    result = cli(run_args(model, lab, "phone"), env)
    assert result.returncode == 1, result.stderr
    assert_no_traceback(result)
    (record,) = records_of(result)
    assert_failed_record(record)
    assert_names_the_missing_server(record["error"], port)
    assert "connection lost" not in result.stderr and "retrying" not in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["clean", "devices"])
def test_clean_and_devices_without_an_adb_server_say_so(serverless, command):
    lab, env, port = serverless
    result = cli([command, "--lab", str(lab), "--devices", "phone"], env)
    assert_no_traceback(result)
    assert result.returncode == (1 if command == "clean" else 0), result.stderr
    assert_names_the_missing_server(result.stderr + result.stdout, port)


# --------------------------------------------------------------------- adb server without it


@pytest.mark.parametrize("serial", ["network", "R5CT1234ABC"])
def test_a_server_that_does_not_list_the_phone_says_how_to_connect_it(
    adb_server: AdbServer, mod_env, tmp_path, model, serial
):
    """An adb server that was restarted (adb starts one on any command) has forgotten the
    phones connected over the network: say `adb connect`, and the cable only for USB ones."""
    if serial == "network":
        serial = f"127.0.0.1:{free_port()}"
    lab = write_lab(
        tmp_path,
        f'[devices.phone]\ntransport = "adb"\nserial = "{serial}"\nadb_port = {adb_server.port}\n',
    )
    cleaned = cli(["clean", "--lab", str(lab), "--devices", "phone"], mod_env)
    ran = cli(run_args(model, lab, "phone"), mod_env)
    (record,) = records_of(ran)
    assert_failed_record(record)
    for text in (cleaned.stderr, record["error"]):
        assert f"{serial} is not connected to the adb server at 127.0.0.1:{adb_server.port}" in (
            text
        ), text
        if ":" in serial:
            assert f"`adb -P {adb_server.port} connect {serial}`" in text, text
            assert "cable" not in text, text
        else:
            assert "check the USB cable" in text and f"adb -P {adb_server.port} devices" in text
