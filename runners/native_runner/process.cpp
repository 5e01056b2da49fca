#include "process.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "backend.h"

namespace eb {

std::string read_text(const std::string& path, size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    std::string text(limit, '\0');
    in.read(&text[0], static_cast<std::streamsize>(limit));
    text.resize(static_cast<size_t>(in.gcount()));
    return text;
}

namespace {

std::string status_field(const std::string& key) {
    std::istringstream lines(read_text("/proc/self/status"));
    std::string line;
    while (std::getline(lines, line)) {
        size_t colon = line.find(':');
        if (colon != std::string::npos && line.compare(0, colon, key) == 0) {
            size_t first = line.find_first_not_of(" \t", colon + 1);
            return first == std::string::npos ? "" : line.substr(first);
        }
    }
    return "";
}

std::string trim(const std::string& text) {
    size_t a = text.find_first_not_of(" \t\r\n");
    size_t b = text.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? "" : text.substr(a, b - a + 1);
}

}  // namespace

int64_t status_kb(const std::string& key) {
    std::string value = status_field(key);
    if (value.empty()) return -1;
    try {
        return std::stoll(value);
    } catch (...) {
        return -1;
    }
}

std::vector<int> parse_cpu_list(const std::string& text) {
    std::set<int> cpus;
    std::stringstream parts(text);
    std::string part;
    while (std::getline(parts, part, ',')) {
        part = trim(part);
        if (part.empty()) throw std::invalid_argument("empty item in cpu list '" + text + "'");
        size_t dash = part.find('-');
        std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
        auto digits = [](const std::string& s) {
            return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit);
        };
        if (!digits(lo) || !digits(hi)) throw std::invalid_argument("'" + part + "' is not a cpu id or range");
        int a = std::stoi(lo), b = std::stoi(hi);
        if (a > b) throw std::invalid_argument("bad cpu range '" + part + "'");
        for (int c = a; c <= b; ++c) cpus.insert(c);
    }
    return std::vector<int>(cpus.begin(), cpus.end());
}

std::vector<int> effective_cores() {
    std::string allowed = status_field("Cpus_allowed_list");
    if (!allowed.empty()) {
        try {
            return parse_cpu_list(allowed);
        } catch (const std::invalid_argument&) {
        }
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cores;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cores.push_back(c);
    return cores;
}

void apply_affinity(const std::vector<int>& cores) {
    if (cores.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores) {
        if (c < 0 || c >= CPU_SETSIZE) throw BackendError("pinning", "cpu " + std::to_string(c) + " does not exist");
        CPU_SET(c, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        std::string list;
        for (size_t i = 0; i < cores.size(); ++i) list += (i ? ", " : "") + std::to_string(cores[i]);
        throw BackendError("pinning", "could not pin to cores [" + list + "]: " + std::strerror(errno));
    }
}

std::string machine_name() {
    struct utsname info;
    return uname(&info) == 0 ? info.machine : "";
}

std::string boot_id() { return trim(read_text("/proc/sys/kernel/random/boot_id", 256)); }

int cpu_count() {
    long n = sysconf(_SC_NPROCESSORS_CONF);
    return n > 0 ? static_cast<int>(n) : 1;
}

std::pair<bool, std::string> detect_emulation() {
    std::string machine = machine_name();
    std::string lower = machine;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    std::string own;
    if (lower.rfind("arm", 0) == 0 || lower == "aarch64") own = "arm";
    else if (lower == "x86_64" || lower == "amd64" || lower == "i386" || lower == "i686" || lower == "x86") own = "x86";
    std::string cpuinfo = read_text("/proc/cpuinfo", 1 << 16);
    if (cpuinfo.empty()) return {false, ""};
    std::map<std::string, std::string> fields;
    std::istringstream lines(cpuinfo);
    std::string line;
    while (std::getline(lines, line)) {
        size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = trim(line.substr(0, colon));
        if (!fields.count(key)) fields[key] = trim(line.substr(colon + 1));
    }
    std::string name = fields.count("model name") ? fields["model name"]
                       : fields.count("Hardware") ? fields["Hardware"]
                       : fields.count("Processor") ? fields["Processor"] : "";
    static const char* vendors[] = {"GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "Shanghai"};
    std::string described;
    for (const char* v : vendors)
        if (fields["vendor_id"] == v) described = "x86";
    if (described.empty() && (" " + fields["flags"] + " ").find(" sse2 ") != std::string::npos) described = "x86";
    if (described.empty() && (fields.count("CPU implementer") ||
                              (" " + fields["Features"] + " ").find(" asimd ") != std::string::npos))
        described = "arm";
    if (!own.empty() && !described.empty() && own != described) {
        std::string cpu = name.empty() ? "" : " (" + name + ")";
        return {true, "the process runs as " + machine + " but the kernel's /proc/cpuinfo describes an " +
                          described + " CPU" + cpu +
                          ": a user-mode emulator such as qemu translates every instruction"};
    }
    return {false, ""};
}

}  // namespace eb
