// The process and its machine: /proc/self/status, CPU affinity, the kernel's boot id, and
// whether an emulator translates this process's instructions (as runners/emulation.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eb {

// A "kB" field of /proc/self/status (VmHWM, VmRSS); -1 when absent.
int64_t status_kb(const std::string& key);
// Cpus_allowed_list as the kernel applied it; empty when unknown.
std::vector<int> effective_cores();
// sched_setaffinity to exactly these cores; an empty list changes nothing. Throws BackendError.
void apply_affinity(const std::vector<int>& cores);
std::vector<int> parse_cpu_list(const std::string& text);  // "0-3,6"; throws on bad syntax
std::string machine_name();  // uname -m
std::string boot_id();
int cpu_count();
// (emulated, evidence): this process's machine against the CPU /proc/cpuinfo describes.
std::pair<bool, std::string> detect_emulation();
std::string read_text(const std::string& path, size_t limit = 1 << 20);

}  // namespace eb
