"""A device profile's ``[gpu]`` table: the Jetson profiles name their Orin GPU and its sysfs
paths, and a bad value is one line naming the field."""

from __future__ import annotations

import pytest

from edgebench.errors import UserError
from edgebench.lab.profiles import load_profile

PROFILE = """\
schema = "edgebench.profile/1"
name = "my-jetson"
transport = "ssh"
runner = "python"
clusters = []

[energy]
source = "tegrastats"

[gpu]
name = "Orin (nvgpu)"
{line}
"""


@pytest.mark.parametrize("name", ["jetson-orin-nano", "jetson-orin-agx"])
def test_jetson_profiles_name_the_orin_gpu(name):
    gpu = load_profile(name).gpu
    assert gpu is not None and gpu.compute_capability == "8.7"
    assert gpu.devfreq == "/sys/class/devfreq/17000000.gpu"
    assert gpu.load.endswith("17000000.gpu/load")
    assert load_profile(name).energy_source == "ina3221"


def test_the_nvidia_box_profile_measures_the_gpu_board():
    profile = load_profile("x86-nvidia-gpu")
    assert profile.energy_source == "nvml" and profile.gpu is None


def test_a_good_gpu_table_loads(tmp_path):
    path = tmp_path / "my-jetson.toml"
    path.write_text(PROFILE.format(line='compute_capability = "8.7"'))
    profile = load_profile(str(path))
    assert profile.gpu.name == "Orin (nvgpu)" and profile.energy_source == "tegrastats"


@pytest.mark.parametrize(
    "line, field",
    [
        ('compute_capability = "sm_87"', "gpu.compute_capability"),
        ("compute_capability = 8.7", "gpu.compute_capability"),
        ('devfreq = "class/devfreq/17000000.gpu"', "gpu.devfreq"),
        ('load = "/proc/gpu"', "gpu.load"),
        ('clock = "fast"', "gpu"),
    ],
)
def test_a_bad_gpu_value_is_one_line(tmp_path, line, field):
    path = tmp_path / "my-jetson.toml"
    path.write_text(PROFILE.format(line=line))
    with pytest.raises(UserError) as raised:
        load_profile(str(path))
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and field in message, message
