// edgebench-native: one JSON spec in, one JSON result line out, like runners/runner.py, from a
// static binary for devices without Python.
//
//   edgebench-native SPEC.json | - | '{"schema": ...}'   measure one cell
//   edgebench-native --probe                             what this binary and device can run
//   edgebench-native --seeded-input SEED NAME DTYPE DIMS OUT   write one seeded input's raw bytes
//
// The result is the last stdout line, "EDGEBENCH_RESULT " then compact JSON; anything the
// framework prints goes to stderr (stdout is pointed there while the cell runs).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "backend.h"
#include "cell.h"
#include "json.h"
#include "process.h"
#include "protocol.h"
#include "seeded.h"
#include "spec.h"

namespace eb {

std::vector<BackendEntry>& backend_registry() {
    static std::vector<BackendEntry> entries;
    return entries;
}

namespace {

Json new_result(const Json* raw) {
    auto field = [&](const char* key, Json fallback) -> Json {
        const Json* v = raw && raw->is_object() ? raw->find(key) : nullptr;
        return v ? *v : fallback;
    };
    Json result = Json::object();
    result.set("schema", kResultSchema);
    result.set("status", "failed");
    result.set("error", Json());
    result.set("framework", field("framework", Json()));
    result.set("framework_version", Json());
    result.set("model", field("model", Json()));
    result.set("precision", field("precision", "fp32"));
    result.set("threads", field("threads", Json()));
    result.set("concurrency", field("concurrency", 1));
    result.set("cores_requested", field("cores", Json()));
    result.set("cores_effective", Json());
    result.set("python", Json());
    result.set("runner", kRunnerName);
    result.set("runner_version", kRunnerVersion);
    result.set("pid", static_cast<int64_t>(getpid()));
    result.set("rss_before_load_kb", Json());
    result.set("peak_rss_kb", Json());
    result.set("load_ns", Json());
    result.set("first_inference_ns", Json());
    result.set("warmup_samples_ns", Json::array());
    result.set("samples_ns", Json::array());
    result.set("measure_wall_ns", Json());
    result.set("stop_reason", Json());
    result.set("inputs", Json());
    result.set("input_generator", kInputGenerator);
    result.set("outputs", Json());
    return result;
}

void set_error(Json& result, const std::string& kind, const std::string& message, const std::string& detail = "") {
    result.set("status", kind == "unsupported" ? "unsupported" : "failed");
    Json error = Json::object();
    error.set("kind", kind);
    error.set("message", message);
    error.set("detail", detail.size() > 4000 ? detail.substr(detail.size() - 4000) : detail);
    result.set("error", error);
}

Json execute(const Json* raw) {
    Json result = new_result(raw);
    try {
        const Spec spec = normalize_spec(*raw);
        apply_affinity(spec.cores);
        result.set("cores_effective", Json::array_of(effective_cores()));
        measure_cell(spec, result);
    } catch (const BackendError& exc) {
        set_error(result, exc.kind, exc.what(), exc.detail);
    } catch (const std::bad_alloc&) {
        set_error(result, "out_of_memory",
                  "out of memory on the device; use a smaller input or batch, or free memory");
    } catch (const JsonError& exc) {
        set_error(result, "bad_spec", std::string("malformed spec: ") + exc.what());
    } catch (const std::exception& exc) {
        set_error(result, "internal", std::string("runner error: ") + exc.what());
    }
    if (result.find("peak_rss_kb")->is_null()) {
        const int64_t peak = status_kb("VmHWM");
        if (peak >= 0) result.set("peak_rss_kb", peak);
    }
    return result;
}

Json probe() {
    Json frameworks = Json::object();
    for (const auto& entry : backend_registry()) {
        Json info = Json::object();
        info.set("available", true);
        info.set("version", entry.version);
        info.set("precisions", Json::array_of(entry.precisions));
        std::vector<std::string> backends = {"cpu"};
        backends.insert(backends.end(), entry.accelerators.begin(), entry.accelerators.end());
        info.set("backends", Json::array_of(backends));
        info.set("generative", static_cast<bool>(entry.make_generative));  // runs generative models only
        frameworks.set(entry.framework, info);
    }
    const auto emulation = detect_emulation();
    Json probe = Json::object();
    probe.set("schema", kProbeSchema);
    probe.set("python", Json());
    probe.set("numpy", Json());
    probe.set("runner", kRunnerName);
    probe.set("runner_version", kRunnerVersion);
    probe.set("machine", machine_name());
    probe.set("cpu_count", static_cast<int64_t>(cpu_count()));
    probe.set("affinity", Json::array_of(effective_cores()));
    probe.set("frameworks", frameworks);
    probe.set("emulated", emulation.first);
    probe.set("emulation", emulation.first ? Json(emulation.second) : Json());
    const std::string boot = boot_id();
    probe.set("boot_id", boot.empty() ? Json() : Json(boot));
    return probe;
}

int write_seeded_input(char** argv) {
    // SEED NAME DTYPE DIMS OUT: the raw little-endian bytes of one seeded input (for tests).
    const uint64_t seed = std::stoull(argv[0]);
    const std::string name = argv[1], dtype = argv[2];
    std::vector<int64_t> shape;
    std::stringstream dims(argv[3]);
    std::string dim;
    while (std::getline(dims, dim, 'x')) shape.push_back(std::stoll(dim));
    const size_t count = static_cast<size_t>(element_count(shape));
    std::ofstream out(argv[4], std::ios::binary);
    if (dtype == "float32") {
        std::vector<float> values(count);
        seeded_floats(seed, name, values.data(), count);
        out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
    } else if (dtype == "int64") {
        std::vector<int64_t> values(count);
        seeded_ints64(seed, name, values.data(), count);
        out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(count * sizeof(int64_t)));
    } else {
        std::cerr << "dtype must be float32 or int64\n";
        return 2;
    }
    return out ? 0 : 1;
}

}  // namespace
}  // namespace eb

int main(int argc, char** argv) {
    using namespace eb;
    if (argc == 7 && std::strcmp(argv[1], "--seeded-input") == 0) return write_seeded_input(argv + 2);
    if (argc != 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
        std::cerr << "usage: edgebench-native SPEC.json | - | '{...}' | --probe\n"
                     "Measures one cell as edgebench's runner protocol says; see docs/edgebench-native.md\n";
        return 2;
    }
    // Keep the real stdout for the result; everything else (native logs too) goes to stderr.
    const int result_fd = dup(1);
    dup2(2, 1);
    Json payload;
    const std::string arg = argv[1];
    if (arg == "--probe") {
        payload = probe();
    } else {
        std::string text;
        if (arg == "-") {
            std::stringstream buffer;
            buffer << std::cin.rdbuf();
            text = buffer.str();
        } else if (arg.find_first_not_of(" \t\n") != std::string::npos && arg[arg.find_first_not_of(" \t\n")] == '{') {
            text = arg;
        } else {
            std::ifstream in(arg, std::ios::binary);
            if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            else text = "";
            if (!in) {
                payload = new_result(nullptr);
                Json error = Json::object();
                error.set("kind", "bad_spec");
                error.set("message", "cannot read spec: " + arg);
                payload.set("error", error);
            }
        }
        if (payload.is_null()) {
            try {
                Json raw = Json::parse(text);
                payload = execute(&raw);
            } catch (const JsonError& exc) {
                payload = new_result(nullptr);
                Json error = Json::object();
                error.set("kind", "bad_spec");
                error.set("message", std::string("cannot read spec: ") + exc.what());
                payload.set("error", error);
            }
        }
    }
    std::fflush(stdout);
    std::cout.flush();
    const std::string line = std::string(kResultPrefix) + payload.dump() + "\n";
    size_t written = 0;
    while (written < line.size()) {
        ssize_t n = write(result_fd, line.data() + written, line.size() - written);
        if (n <= 0) return 1;
        written += static_cast<size_t>(n);
    }
    close(result_fd);
    return 0;
}
