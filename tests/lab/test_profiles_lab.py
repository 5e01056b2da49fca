"""Device profiles (built-in and user TOML) and the lab inventory: loading, validation, errors."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.errors import UserError
from edgebench.lab.cores import detect_clusters
from edgebench.lab.lab_file import LOCAL, config_dir, find_lab_path, load_lab
from edgebench.lab.profile_schema import ENERGY_SOURCES, RUNNERS, TRANSPORTS
from edgebench.lab.profiles import compare_clusters, list_profiles, load_profile, match_profile

BUILTINS = [
    "dimensity-9200",
    "jetson-orin-agx",
    "jetson-orin-nano",
    "kirin-9000",
    "raspberry-pi-5",
    "snapdragon-8-gen-2",
    "snapdragon-8-gen-3",
    "x86-generic",
    "x86-nvidia-gpu",
]

GOOD_PROFILE = """\
schema = "edgebench.profile/1"
name = "my-board"
transport = "ssh"
runner = "python"

[[clusters]]
name = "little"
cpus = "0-3"
max_freq_mhz = 1800

[[clusters]]
name = "big"
cpus = "4-7"
max_freq_mhz = 2400

[energy]
source = "none"
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_one_line(exc: pytest.ExceptionInfo[UserError], *needles: str) -> str:
    message = str(exc.value)
    assert len(message.splitlines()) == 1, message
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    return message


# --- built-in profiles ------------------------------------------------------------------------


def test_every_builtin_profile_is_listed_and_loads():
    assert list_profiles() == BUILTINS
    for name in BUILTINS:
        profile = load_profile(name)
        assert profile.name == name
        assert profile.builtin and profile.source_path is not None
        assert profile.transport in TRANSPORTS
        assert profile.runner in RUNNERS
        assert profile.energy_source in ENERGY_SOURCES
        assert profile.description and profile.work_dir.startswith("/")
        assert 0 < profile.max_temp_c <= 150


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_clusters_partition_the_cpus(name):
    profile = load_profile(name)
    if name.startswith("x86-"):
        assert profile.clusters == () and profile.detects_clusters
        assert profile.cluster_map() == {}
        return
    seen: list[int] = []
    for cluster in profile.clusters:
        seen += cluster.cpus
    assert len(seen) == len(set(seen)), "clusters overlap"
    assert sorted(seen) == list(range(len(seen))), "clusters must cover 0..N-1"
    assert profile.cluster_map()["all"] == list(range(len(seen)))


def test_phones_and_boards_defaults():
    for name in ("snapdragon-8-gen-2", "snapdragon-8-gen-3", "kirin-9000", "dimensity-9200"):
        phone = load_profile(name)
        assert (phone.transport, phone.runner) == ("adb", "auto")
        assert phone.energy_source == "android_fuel_gauge"
        assert len(phone.cpus) == 8
    agx = load_profile("jetson-orin-agx")
    assert (agx.transport, agx.runner, agx.energy_source) == ("ssh", "python", "ina3221")
    assert [len(c.cpus) for c in agx.clusters] == [4, 4, 4]
    assert {c.max_freq_mhz for c in agx.clusters} == {2200}
    assert len(load_profile("jetson-orin-nano").cpus) == 6
    pi = load_profile("raspberry-pi-5")
    assert (len(pi.cpus), pi.energy_source, pi.clusters[0].max_freq_mhz) == (4, "none", 2400)
    x86 = load_profile("x86-generic")
    assert (x86.energy_source, x86.runner) == ("rapl", "python")


def test_snapdragon_8_gen_2_cluster_map():
    names = load_profile("snapdragon-8-gen-2").cluster_map()
    assert names["little"] == [0, 1, 2]
    assert names["mid"] == [3, 4, 5, 6]
    assert names["big"] == [7]
    assert names["prime"] == [7]
    assert names["all"] == list(range(8))


def test_profile_names_agree_with_detection_on_a_matching_device():
    # cpuinfo_max_freq (kHz) as a Snapdragon 8 Gen 2 and 8 Gen 3 phone report them.
    gen2 = {0: 2016000, 1: 2016000, 2: 2016000, 3: 2803200, 4: 2803200}
    gen2 |= {5: 2803200, 6: 2803200, 7: 3187200}
    gen3 = {0: 2265600, 1: 2265600, 2: 3148800, 3: 3148800, 4: 3148800}
    gen3 |= {5: 2956800, 6: 2956800, 7: 3302400}
    for name, freqs in (("snapdragon-8-gen-2", gen2), ("snapdragon-8-gen-3", gen3)):
        profile = load_profile(name)
        detected = detect_clusters(freqs)
        assert compare_clusters(profile, detected, max_freq_khz=freqs) == []
        for cluster, cpus in detected.items():
            assert profile.cluster_map()[cluster] == cpus


def test_compare_clusters_reports_a_mismatch():
    profile = load_profile("snapdragon-8-gen-2")
    # A phone whose prime core runs faster and whose cpus 5-6 sit in their own cluster.
    freqs = {0: 2016000, 1: 2016000, 2: 2016000, 3: 2803200, 4: 2803200}
    freqs |= {5: 2400000, 6: 2400000, 7: 3360000}
    differences = compare_clusters(profile, detect_clusters(freqs), max_freq_khz=freqs)
    text = "\n".join(differences)
    assert "cluster mid" in text and "3-6" in text
    assert "3360 MHz" in text and "3200 MHz" in text
    # Only names (no frequencies): still a difference.
    assert compare_clusters(profile, {"little": [0, 1, 2, 3], "big": [4, 5, 6, 7]})
    # Same-frequency clusters on a board: detection sees one group, nothing differs.
    agx = load_profile("jetson-orin-agx")
    assert compare_clusters(agx, {}) == []
    assert compare_clusters(agx, {"little": [0, 1, 2, 3], "big": list(range(4, 12))})
    assert compare_clusters(load_profile("x86-generic"), {"little": [0], "big": [1]}) == []


def test_match_profile_by_soc_ids():
    assert match_profile(["SM8550", "kalama"]).name == "snapdragon-8-gen-2"
    assert match_profile(["NVIDIA Jetson AGX Orin Developer Kit"]).name == "jetson-orin-agx"
    assert match_profile(["Raspberry Pi 5 Model B Rev 1.0"]).name == "raspberry-pi-5"
    assert match_profile(["mt6985"]).name == "dimensity-9200"
    assert match_profile(["something else"]) is None


def test_user_profile_from_a_path(tmp_path):
    path = write(tmp_path, "my-board.toml", GOOD_PROFILE)
    profile = load_profile(path)
    assert not profile.builtin and profile.source_path == path
    assert profile.cluster_map() == {
        "little": [0, 1, 2, 3],
        "big": [4, 5, 6, 7],
        "all": [*range(8)],
    }
    assert profile.work_dir == "/tmp/edgebench"  # the ssh default
    assert load_profile(str(path)).name == "my-board"
    assert load_profile("my-board") == profile  # loaded once, its name resolves


def test_unknown_profile_name_and_missing_file_list_the_builtins(tmp_path):
    with pytest.raises(UserError) as exc:
        load_profile("snapdragon-9-gen-9")
    assert_one_line(exc, "snapdragon-9-gen-9", "snapdragon-8-gen-2", "x86-generic")
    with pytest.raises(UserError) as exc:
        load_profile(tmp_path / "nope.toml")
    assert_one_line(exc, "nope.toml", "does not exist", "raspberry-pi-5")


# --- malformed profiles -----------------------------------------------------------------------

BAD_PROFILES = [
    ("syntax", GOOD_PROFILE + "oops = = 1\n", ["TOML syntax error", "line 18"]),
    (
        "unknown key",
        GOOD_PROFILE.replace("max_freq_mhz = 1800", "max_freq_mzh = 1800"),
        ["clusters[0].max_freq_mzh", "did you mean max_freq_mhz"],
    ),
    ("unknown top key", 'runnr = "x"\n' + GOOD_PROFILE, ["runnr", "did you mean runner"]),
    (
        "backwards range",
        GOOD_PROFILE.replace('"4-7"', '"7-4"'),
        ['clusters[1].cpus "7-4" is not a cpu list', 'e.g. "4-7"'],
    ),
    ("not a cpu list", GOOD_PROFILE.replace('"4-7"', '"four"'), ["clusters[1].cpus", '"four"']),
    (
        "overlap",
        GOOD_PROFILE.replace('"4-7"', '"3-7"'),
        ["clusters[1].cpus", "overlaps cluster 'little' at cpu 3"],
    ),
    ("gap", GOOD_PROFILE.replace('"4-7"', '"5-7"'), ["clusters", "cpu 4 in no cluster"]),
    (
        "bad energy",
        GOOD_PROFILE.replace('source = "none"', 'source = "battery"'),
        ["energy.source", '"battery"', "android_fuel_gauge"],
    ),
    (
        "wrong type freq",
        GOOD_PROFILE.replace("max_freq_mhz = 1800", 'max_freq_mhz = "1.8 GHz"'),
        ["clusters[0].max_freq_mhz", "whole number"],
    ),
    (
        "bool freq",
        GOOD_PROFILE.replace("max_freq_mhz = 1800", "max_freq_mhz = true"),
        ["clusters[0].max_freq_mhz"],
    ),
    ("wrong type cpus", GOOD_PROFILE.replace('"0-3"', "3.5"), ["clusters[0].cpus", "a float"]),
    (
        "clusters not an array",
        'clusters = "0-7"\n'
        + GOOD_PROFILE.split("[[clusters]]")[0]
        + '[energy]\nsource = "none"\n',
        ["clusters must be an array", "a string"],
    ),
    (
        "missing schema",
        GOOD_PROFILE.replace('schema = "edgebench.profile/1"\n', ""),
        ["schema is missing", "edgebench.profile/1"],
    ),
    ("future schema", GOOD_PROFILE.replace("profile/1", "profile/9"), ["schema", "profile/9"]),
    ("missing energy", GOOD_PROFILE.split("[energy]")[0], ["energy is missing"]),
    ("missing cpus", GOOD_PROFILE.replace('cpus = "4-7"\n', ""), ["clusters[1].cpus is missing"]),
    ("bad transport", GOOD_PROFILE.replace('"ssh"', '"telnet"'), ["transport", '"telnet"']),
    ("bad runner", GOOD_PROFILE.replace('runner = "python"', "runner = 3"), ["runner", "integer"]),
    (
        "duplicate cluster",
        GOOD_PROFILE.replace('name = "big"', 'name = "little"'),
        ["clusters[1].name", "used twice"],
    ),
    (
        "cluster named all",
        GOOD_PROFILE.replace('name = "big"', 'name = "all"'),
        ["clusters[1].name"],
    ),
    ("unordered", GOOD_PROFILE.replace("2400", "1200"), ["slowest to the fastest"]),
    ("bad temp", GOOD_PROFILE + "[thermal]\nmax_temp_c = 900\n", ["thermal.max_temp_c"]),
    ("zones not strings", GOOD_PROFILE + "[thermal]\nzones = [1]\n", ["thermal.zones[0]"]),
    (
        "adb relative work_dir",
        'work_dir = "tmp"\n' + GOOD_PROFILE.replace('"ssh"', '"adb"'),
        ["work_dir", "absolute"],
    ),
    (
        "multi-line value",
        GOOD_PROFILE.replace('name = "big"', 'name = """big\nger"""'),
        ["clusters[1].name"],
    ),
    (
        "builtin name",
        GOOD_PROFILE.replace('"my-board"', '"raspberry-pi-5"'),
        ["name", "built-in profile's name"],
    ),
    ("not utf-8", None, ["not UTF-8"]),
]


@pytest.mark.parametrize(
    ("case", "text", "needles"), BAD_PROFILES, ids=[c[0] for c in BAD_PROFILES]
)
def test_malformed_profile_is_one_clear_line(tmp_path, case, text, needles):
    path = tmp_path / "bad-board.toml"
    if text is None:
        path.write_bytes(GOOD_PROFILE.encode() + b'description = "caf\xe9"\n')
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as exc:
        load_profile(path)
    message = assert_one_line(exc, "bad-board.toml", *needles)
    assert message.startswith(f"profile {path}: ")


# --- the lab ----------------------------------------------------------------------------------

LAB = """\
[devices.snapdragon]
transport = "adb"
serial = "R5CT1234ABC"
profile = "snapdragon-8-gen-2"

[devices.orin]
transport = "ssh"
host = "orin.lab.local"
port = 2222
user = "bench"
key = "~/.ssh/id_ed25519"
python = "/opt/venv/bin/python3"
profile = "jetson-orin-agx"
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An isolated HOME and config dir, with no EDGEBENCH_LAB."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("EDGEBENCH_LAB", raising=False)
    monkeypatch.delenv("ANDROID_ADB_SERVER_PORT", raising=False)
    return home


def test_lab_devices_with_defaults_filled_in(tmp_path, home):
    lab = load_lab(write(tmp_path, "lab.toml", LAB))
    assert list(lab.devices) == ["snapdragon", "orin"]
    assert lab.names() == [LOCAL, "snapdragon", "orin"]
    phone = lab.devices["snapdragon"]
    assert (phone.transport, phone.serial, phone.adb_host, phone.adb_port) == (
        "adb",
        "R5CT1234ABC",
        "127.0.0.1",
        5037,
    )
    assert phone.runner == "auto" and phone.work_dir == "/data/local/tmp/edgebench"
    assert phone.profile is not None and phone.profile.name == "snapdragon-8-gen-2"
    orin = lab.devices["orin"]
    assert (orin.host, orin.port, orin.user, orin.python) == (
        "orin.lab.local",
        2222,
        "bench",
        "/opt/venv/bin/python3",
    )
    assert orin.key == home / ".ssh" / "id_ed25519"
    assert orin.known_hosts == home / ".ssh" / "known_hosts"
    assert orin.runner == "python" and orin.work_dir == "/tmp/edgebench"
    assert orin.address() == "ssh bench@orin.lab.local:2222"
    assert lab.get(LOCAL).transport == "local"
    with pytest.raises(UserError) as exc:
        lab.get("pixel")
    assert_one_line(exc, "pixel", "local, snapdragon, orin")


def test_a_lab_entry_names_the_backends_its_device_measures(tmp_path, home):
    text = '[devices.o]\ntransport = "ssh"\nhost = "h"\nbackends = ["cpu", "vulkan", "cpu"]\n'
    lab = load_lab(write(tmp_path, "lab.toml", text))
    assert lab.devices["o"].backends == ("cpu", "vulkan")
    assert load_lab(write(tmp_path, "plain.toml", LAB)).devices["orin"].backends is None


def test_lab_overrides_profile_and_relative_paths(tmp_path, home):
    write(tmp_path, "board.toml", GOOD_PROFILE)
    lab = load_lab(
        write(
            tmp_path,
            "lab.toml",
            '[devices.b]\nprofile = "board.toml"\nhost = "b.local"\nwork_dir = "~/eb"\n'
            'runner = "framework-tools"\ntools_bin = "bins"\n',
        )
    )
    board = lab.devices["b"]
    assert board.transport == "ssh"  # from the profile
    assert board.profile is not None and board.profile.name == "my-board"
    assert (board.work_dir, board.runner) == ("~/eb", "framework-tools")
    assert board.tools_bin == tmp_path / "bins"
    assert board.remote_work_dir("/home/bench") == "/home/bench/eb"


def test_no_lab_file_is_an_empty_lab(home):
    lab = load_lab()
    assert lab.path is None and lab.devices == {}
    assert lab.names() == [LOCAL]


def test_lab_discovery_order(tmp_path, home, monkeypatch):
    default = config_dir() / "lab.toml"
    assert default == home / ".config" / "edgebench" / "lab.toml"
    default.parent.mkdir(parents=True)
    default.write_text('[devices.fromconfig]\ntransport = "ssh"\nhost = "a"\n')
    assert find_lab_path() == default
    assert list(load_lab().devices) == ["fromconfig"]

    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert find_lab_path() is None  # the XDG dir has no lab.toml
    (xdg / "edgebench").mkdir(parents=True)
    write(xdg / "edgebench", "lab.toml", '[devices.fromxdg]\ntransport = "ssh"\nhost = "x"\n')
    assert list(load_lab().devices) == ["fromxdg"]

    env_lab = write(tmp_path, "env-lab.toml", '[devices.fromenv]\ntransport = "ssh"\nhost = "e"\n')
    monkeypatch.setenv("EDGEBENCH_LAB", str(env_lab))
    assert find_lab_path() == env_lab
    assert list(load_lab().devices) == ["fromenv"]

    explicit = write(tmp_path, "explicit.toml", '[devices.given]\ntransport = "ssh"\nhost = "g"\n')
    assert find_lab_path(explicit) == explicit
    assert list(load_lab(explicit).devices) == ["given"]

    monkeypatch.setenv("EDGEBENCH_LAB", str(tmp_path / "gone.toml"))
    with pytest.raises(UserError) as exc:
        load_lab()
    assert_one_line(exc, "gone.toml", "does not exist", "EDGEBENCH_LAB")
    with pytest.raises(UserError) as exc:
        load_lab(tmp_path / "missing.toml")
    assert_one_line(exc, "missing.toml", "--lab")


BAD_LABS = [
    ("syntax", '[devices.a]\ntransport = "ssh"\nhost = \n', ["TOML syntax error", "line 3"]),
    (
        "unknown key",
        '[devices.a]\ntransport = "ssh"\nhots = "x"\n',
        ["devices.a.hots", "did you mean host"],
    ),
    ("unknown top key", '[device.a]\ntransport = "ssh"\n', ["device ", "did you mean devices"]),
    ("missing serial", '[devices.p]\ntransport = "adb"\n', ["devices.p.serial is missing"]),
    ("missing host", '[devices.o]\ntransport = "ssh"\nuser = "u"\n', ["devices.o.host is missing"]),
    ("missing transport", '[devices.o]\nhost = "h"\n', ["devices.o.transport is missing"]),
    (
        "unknown transport",
        '[devices.o]\ntransport = "telnet"\nhost = "h"\n',
        ["devices.o.transport", '"telnet"', "adb, ssh or local"],
    ),
    (
        "port type",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nport = "22"\n',
        ["devices.o.port", "1 to 65535", '"22"'],
    ),
    (
        "port range",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nport = 70000\n',
        ["devices.o.port", "70000"],
    ),
    (
        "adb port bool",
        '[devices.p]\ntransport = "adb"\nserial = "S"\nadb_port = true\n',
        ["devices.p.adb_port"],
    ),
    (
        "unknown profile",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nprofile = "orin-xl"\n',
        ["devices.o.profile", '"orin-xl"', "jetson-orin-agx"],
    ),
    (
        "password",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\npassword = "hunter2"\n',
        ["devices.o.password", "keys", "agent"],
    ),
    (
        "password typo",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\npasword = "hunter2"\n',
        ["devices.o.pasword", "agent"],
    ),
    (
        "ssh_password",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nssh_password = "hunter2"\n',
        ["devices.o.ssh_password", "agent"],
    ),
    (
        "pasted key",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\n'
        'key = """-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"""\n',
        ["devices.o.key", "path to a private key file"],
    ),
    ("local redefined", '[devices.local]\ntransport = "local"\n', ["devices.local", "built-in"]),
    (
        "bad device name",
        '[devices."my phone"]\ntransport = "adb"\nserial = "S"\n',
        ['devices."my phone"', "device name"],
    ),
    (
        "wrong transport key",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nserial = "S"\n',
        ["devices.o.serial", "only used by adb"],
    ),
    ("device not a table", 'devices.o = "ssh://h"\n', ["devices.o", "must be a table"]),
    ("devices not a table", 'devices = ["o"]\n', ["devices", "must be a table"]),
    (
        "option injection host",
        '[devices.o]\ntransport = "ssh"\nhost = "-oProxyCommand=x"\n',
        ["devices.o.host", "is not a host name"],
    ),
    (
        "bad runner",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nrunner = "java"\n',
        ["devices.o.runner", '"java"'],
    ),
    (
        "adb work_dir",
        '[devices.p]\ntransport = "adb"\nserial = "S"\nwork_dir = "~/x"\n',
        ["devices.p.work_dir", "absolute"],
    ),
    (
        "work_dir root",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nwork_dir = "/"\n',
        ["devices.o.work_dir", "folder of its own"],
    ),
    (
        "user type",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nuser = 7\n',
        ["devices.o.user", "integer"],
    ),
    ("schema", 'schema = "edgebench.lab/2"\n', ["schema", "lab/2"]),
    (
        "unknown backend",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nbackends = ["cpu", "metal"]\n',
        ["devices.o.backends", '"metal" is not a backend', "vulkan"],
    ),
    (
        "backends not a list",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nbackends = "vulkan"\n',
        ["devices.o.backends", "must be a list of backend names"],
    ),
    (
        "bad profile file",
        '[devices.o]\ntransport = "ssh"\nhost = "h"\nprofile = "p.toml"\n',
        ["devices.o.profile", "p.toml", "max_freq_mzh"],
    ),
]


@pytest.mark.parametrize(("case", "text", "needles"), BAD_LABS, ids=[c[0] for c in BAD_LABS])
def test_malformed_lab_is_one_clear_line(tmp_path, home, case, text, needles):
    write(tmp_path, "p.toml", GOOD_PROFILE.replace("max_freq_mhz = 1800", "max_freq_mzh = 1"))
    path = write(tmp_path, "bad-lab.toml", text)
    with pytest.raises(UserError) as exc:
        load_lab(path)
    message = assert_one_line(exc, "bad-lab.toml", *needles)
    assert message.startswith(f"lab {path}: ")
    assert "hunter2" not in message and "b3BlbnNzaC1rZXkt" not in message


# --- fuzzing: nothing but UserError, whatever the file holds ---------------------------------

_FRAGMENTS = [
    "[devices.a]",
    "[devices.local]",
    '[devices."x y"]',
    "[[clusters]]",
    "[energy]",
    "[thermal]",
    'transport = "adb"',
    'transport = "ssh"',
    "transport = 1",
    'serial = "S1"',
    'host = "h"',
    'host = "-x"',
    "port = 0",
    "port = 22",
    "adb_port = 99999999999999999999",
    'key = "~nouser/k"',
    'known_hosts = "~/.ssh/kh"',
    'profile = "snapdragon-8-gen-2"',
    'profile = "missing.toml"',
    'profile = "~nosuchuser/p.toml"',
    'schema = "edgebench.profile/1"',
    'name = "fz"',
    'runner = "python"',
    'cpus = "0-3"',
    'cpus = "0-99999"',
    "cpus = [0, 1, -1]",
    'cpus = "3-1"',
    "max_freq_mhz = 1e9",
    'source = "rapl"',
    "zones = []",
    "max_temp_c = nan",
    'work_dir = "/"',
    'password = "s3cret"',
    "clusters = []",
    "x = [[[[[[[[[[1]]]]]]]]]]",
    "= =",
    "\x00",
    "\ufeff",
]

toml_ish = st.lists(st.sampled_from(_FRAGMENTS), max_size=12).map("\n".join)

_KEYS = ["transport", "serial", "host", "port", "user", "key", "known_hosts", "python"]
_KEYS += ["profile", "work_dir", "runner", "tools_bin", "adb_host", "adb_port", "password"]
_VALUES = st.one_of(
    st.sampled_from(["adb", "ssh", "local", "python", "native", "x86-generic", "/tmp/x", "~/x"]),
    st.sampled_from(["h", "S1", "-x", "~nouser/k", "a.toml", "snapdragon-8-gen-2", "/"]),
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(min_value=-3, max_value=9), max_size=3),
)


def _toml_value(value: object) -> str:
    """TOML for a generated value (json's syntax is TOML's for these, except floats/bools)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return json.dumps(value, ensure_ascii=False)


def _lab_text(devices: dict[str, dict[str, object]]) -> str:
    lines = []
    for name, table in devices.items():
        lines.append(f"[devices.{json.dumps(name, ensure_ascii=False)}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


_BY_TRANSPORT = {
    "adb": ["serial", "adb_host", "adb_port", "profile", "work_dir", "runner", "python"],
    "ssh": ["host", "port", "user", "key", "known_hosts", "profile", "work_dir", "python"],
    "local": ["profile", "work_dir", "runner", "tools_bin", "python"],
}


def _device_table(transport: str) -> st.SearchStrategy[dict[str, object]]:
    table = st.dictionaries(st.sampled_from(_BY_TRANSPORT[transport]), _VALUES, max_size=5)
    return table.map(lambda t: {"transport": transport, **t})


structured_labs = st.dictionaries(
    st.one_of(st.sampled_from(["a", "b.c", "local", "x y"]), st.text(max_size=6)),
    st.one_of(
        st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6),
        st.sampled_from(list(_BY_TRANSPORT)).flatmap(_device_table),
    ),
    max_size=3,
).map(_lab_text)

file_contents = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    toml_ish.map(str.encode),
    structured_labs.map(lambda t: t.encode("utf-8", "surrogatepass")),
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(content=file_contents)
def test_any_file_content_raises_only_user_error(home, content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_bytes(content)
        for load in (load_lab, load_profile):
            try:
                load(path)
            except UserError as exc:
                assert len(str(exc).splitlines()) == 1, str(exc)
                assert "s3cret" not in str(exc)
