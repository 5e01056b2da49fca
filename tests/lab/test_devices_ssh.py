"""Boards over SSH: a real sshd on 127.0.0.1 running the Python runner on this host."""

import json
from pathlib import Path

import pytest
from fakes.labs import write_lab
from fakes.ssh_fixtures import SshServer

from edgebench.errors import UserError
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports.ssh import SshTarget, SshTransport

pytestmark = pytest.mark.load_sensitive

QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0"]


def transport_for(server: SshServer, known_hosts: Path | None = None) -> SshTransport:
    return SshTransport(
        SshTarget(
            "box",
            server.host,
            server.port,
            server.user,
            server.client_key,
            known_hosts or server.known_hosts,
        )
    )


def test_transport_runs_quoted_commands_and_moves_files(shared_sshd, tmp_path):
    transport = transport_for(shared_sshd)
    try:
        result = transport.run(["printf", "%s|", "a b", "c;d", "$HOME"], timeout=30)
        assert result.returncode == 0 and result.stdout == "a b|c;d|$HOME|"
        assert transport.run(["sh", "-c", "echo oops >&2; exit 7"], timeout=30).returncode == 7
        assert transport.run(["sh", "-c", "echo oops >&2; exit 7"], timeout=30).stderr == "oops\n"
        slow = transport.run(["sleep", "30"], timeout=0.5)
        assert slow.timed_out and slow.returncode is None

        blob = tmp_path / "blob.bin"
        blob.write_bytes(bytes(range(256)) * 4096)
        remote = str(tmp_path / "remote" / "deep" / "blob.bin")
        transport.push(blob, remote)
        back = tmp_path / "back.bin"
        assert transport.pull(remote, back) and back.read_bytes() == blob.read_bytes()
        assert not transport.pull(str(tmp_path / "missing"), tmp_path / "x")
        digests = transport.sha256([remote, str(tmp_path / "missing")])
        assert list(digests) == [remote] and len(digests[remote]) == 64
        files = transport.read_many(["/proc/sys/kernel/ostype", str(tmp_path / "missing")])
        assert files["/proc/sys/kernel/ostype"].strip() == "Linux"
        assert files[str(tmp_path / "missing")] is None
    finally:
        transport.close()


def test_output_that_arrives_after_the_exit_status_is_read_too(shared_sshd):
    """sshd sends a command's exit status as soon as its process ends, and what is still in
    its output pipes after that (on a loaded host, routinely: the probe's whole answer) comes
    later: the output is read to the channel's end, not only to the exit status. Here the
    shell exits at once and a process it started writes to the same pipes a second later."""
    late = "p=$$; (while kill -0 $p 2>/dev/null; do :; done; sleep 1; echo late; echo err >&2) &"
    transport = transport_for(shared_sshd)
    try:
        result = transport.run(["sh", "-c", f"{late} exit 3"], timeout=60)
    finally:
        transport.close()
    assert (result.returncode, result.stdout, result.stderr) == (3, "late\n", "err\n")


def test_unknown_host_key_is_refused_with_its_fingerprint(shared_sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    transport = transport_for(shared_sshd, empty)
    with pytest.raises(UserError) as info:
        transport.run(["true"], timeout=10)
    message = str(info.value)
    assert "is not in" in message and "SHA256:" in message
    assert f"ssh-keyscan -p {shared_sshd.port} -t ed25519 127.0.0.1" in message
    assert "\n" not in message


def test_changed_host_key_is_refused(shared_sshd, tmp_path):
    other = tmp_path / "other_key"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, key = other.with_suffix(".pub").read_text().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{shared_sshd.port} {kind} {key}\n")
    with pytest.raises(UserError, match="CHANGED"):
        transport_for(shared_sshd, wrong).run(["true"], timeout=10)


def test_deploy_sends_only_changed_files(shared_sshd, tmp_path):
    device = RemoteDevice("box", transport_for(shared_sshd), work_dir=str(tmp_path / "wd"))
    try:
        device.ensure_runner()
        first = device.deployed.sent
        assert first >= 3  # runner.py and the backends
        assert (tmp_path / "wd" / "runner" / "runner.py").is_file()
        model = tmp_path / "m.bin"
        model.write_bytes(b"model-v1")
        remote = device.stage_model([model])
        assert Path(remote).read_bytes() == b"model-v1"
        again = RemoteDevice("box", transport_for(shared_sshd), work_dir=str(tmp_path / "wd"))
        again.ensure_runner()
        again.stage_model([model])
        assert again.deployed.sent == 0 and again.deployed.unchanged == first + 1
        assert "removed" in again.clean()
        assert not (tmp_path / "wd").exists()
    finally:
        device.transport.close()


def test_run_over_ssh_end_to_end(run_cli, ssh_lab, conv_model):
    lab = ssh_lab.path
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "ssh-box,local",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {r["device"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(records) == {"ssh-box", "local"}
    remote = records["ssh-box"]
    assert remote["status"] == "ok", remote["error"]
    assert remote["cores_effective"] == [0]
    assert remote["output_check"]["passed"]
    assert remote["n_samples"] >= 5
    # Nothing left behind but the deployed runner and model, and the marker `clean` reads.
    leftovers = {p.name for p in ssh_lab.work_dir.iterdir()}
    assert leftovers <= {"runner", "models", "specs", "outputs", "run.pid", ".edgebench-deployed"}
    assert not list((ssh_lab.work_dir / "outputs").glob("*.npz"))


def test_hostile_model_file_name_runs_and_deletes_nothing(run_cli, shared_sshd, tmp_path):
    from fakes.models import save_conv_model

    victim = tmp_path / "x.onnx"
    victim.write_text("do not delete")
    hostile = save_conv_model(tmp_path / "a b;rm -rf x.onnx", [1, 3, 16, 16])
    lab = write_lab(tmp_path / "lab.toml", shared_sshd, tmp_path / "wd with space")
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "ssh-box",
            "--models",
            str(hostile),
            "--frameworks",
            "onnxruntime",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    assert victim.read_text() == "do not delete"
    staged = list((tmp_path / "wd with space" / "models").rglob("a b;rm -rf x.onnx"))
    assert len(staged) == 1


def test_unreachable_device_fails_its_cells_and_others_finish(run_cli, sshd, tmp_path, conv_model):
    lab = write_lab(tmp_path / "lab.toml", sshd, tmp_path / "wd")
    sshd.stop()
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "ssh-box,local",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 1
    records = {r["device"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert records["local"]["status"] == "ok"
    assert records["ssh-box"]["status"] == "failed"
    assert "cannot reach" in records["ssh-box"]["error"]
    assert "Traceback" not in result.stderr


def test_devices_command_shows_probed_facts(run_cli, ssh_lab, tmp_path):
    lab = ssh_lab.path
    result = run_cli(["devices", "--lab", str(lab)])
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "ssh-box" in text and "online" in text
    assert "frameworks: onnxruntime" in text
    assert "profile: x86-generic" in text
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    bad_lab = write_lab(tmp_path / "lab2.toml", ssh_lab.server, ssh_lab.work_dir, known_hosts=empty)
    refused = run_cli(["devices", "--lab", str(bad_lab), "--devices", "ssh-box"])
    assert "OFFLINE" in refused.stdout and "is not in" in refused.stdout
