// edgebench-native: one JSON spec in, one JSON result line out, like runners/runner.py, from a
// static binary for devices without Python.
//
//   edgebench-native SPEC.json | - | '{"schema": ...}'   measure one cell
//   edgebench-native --probe                             what this binary and device can run
//   edgebench-native --seeded-input SEED NAME DTYPE DIMS OUT   write one seeded input's raw bytes
//
// The result is the last stdout line, "EDGEBENCH_RESULT " then compact JSON; anything the
// framework prints goes to stderr (stdout is pointed there while the cell runs).
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "backend.h"
#include "io_map.h"
#include "json.h"
#include "measure.h"
#include "npz.h"
#include "outputs.h"
#include "process.h"
#include "seeded.h"

namespace eb {

// Keep in step with runners/protocol.py (a test compares them).
constexpr const char* kSpecSchema = "edgebench.spec/1";
constexpr const char* kResultSchema = "edgebench.result/1";
constexpr const char* kProbeSchema = "edgebench.probe/1";
constexpr const char* kResultPrefix = "EDGEBENCH_RESULT ";
constexpr const char* kRunnerName = "edgebench-native";
constexpr const char* kRunnerVersion = "1";

std::vector<BackendEntry>& backend_registry() {
    static std::vector<BackendEntry> entries;
    return entries;
}

namespace {

struct Spec {
    std::string model, framework, precision = "fp32";
    int64_t threads = 1, warmup = 10, iterations = 100, max_iterations = 100000, concurrency = 1;
    uint64_t seed = 0;
    double min_time_s = 2.0, max_time_s = 120.0, target_ci = -1.0;
    std::vector<int> cores;
    const Json* inputs = nullptr;
    Json options = Json::object();
    std::string save_outputs, input_file;
    // The timed window, for the host's shell sampler beside the binary: "window_start NS" and
    // "window_end NS" lines (CLOCK_REALTIME, as `date +%s%N`), and a file that exists meanwhile.
    std::string marks_file, sync_marker;
};

Spec normalize_spec(const Json& raw) {
    if (!raw.is_object()) throw BackendError("bad_spec", "the spec must be a JSON object");
    const Json* schema = raw.find("schema");
    if (!schema || !schema->is_string() || schema->as_string() != kSpecSchema)
        throw BackendError("bad_spec", std::string("spec schema is not '") + kSpecSchema + "'");
    Spec spec;
    for (const char* key : {"model", "framework"}) {
        const Json* value = raw.find(key);
        if (!value || !value->is_string() || value->as_string().empty())
            throw BackendError("bad_spec", std::string("spec field '") + key + "' must be a non-empty string");
    }
    spec.model = raw.find("model")->as_string();
    spec.framework = raw.find("framework")->as_string();
    if (const Json* v = raw.find("precision"); v && v->is_string()) spec.precision = v->as_string();
    struct IntField { const char* key; int64_t* into; };
    int64_t seed = 0;
    for (IntField field : {IntField{"threads", &spec.threads}, IntField{"warmup", &spec.warmup},
                           IntField{"iterations", &spec.iterations}, IntField{"max_iterations", &spec.max_iterations},
                           IntField{"concurrency", &spec.concurrency}, IntField{"seed", &seed}}) {
        const Json* v = raw.find(field.key);
        if (!v || v->is_null()) continue;
        if (!v->is_int() || v->as_int() < 0)
            throw BackendError("bad_spec", std::string("spec field '") + field.key + "' must be a non-negative integer");
        *field.into = v->as_int();
    }
    spec.seed = static_cast<uint64_t>(seed);
    if (spec.threads < 1 || spec.concurrency < 1 || spec.max_iterations < 1)
        throw BackendError("bad_spec", "threads, concurrency and max_iterations must be >= 1");
    struct NumberField { const char* key; double* into; };
    for (NumberField field : {NumberField{"min_time_s", &spec.min_time_s}, NumberField{"max_time_s", &spec.max_time_s}}) {
        const Json* v = raw.find(field.key);
        if (!v || v->is_null()) continue;
        if (!v->is_number() || v->as_double() < 0)
            throw BackendError("bad_spec", std::string("spec field '") + field.key + "' must be a non-negative number");
        *field.into = v->as_double();
    }
    if (const Json* v = raw.find("target_ci"); v && v->is_number()) spec.target_ci = v->as_double();
    if (const Json* v = raw.find("cores"); v && !v->is_null()) {
        if (!v->is_array()) throw BackendError("bad_spec", "spec field 'cores' must be a list of cpu ids");
        for (const auto& c : v->items()) {
            if (!c.is_int() || c.as_int() < 0) throw BackendError("bad_spec", "spec field 'cores' must be a list of cpu ids");
            spec.cores.push_back(static_cast<int>(c.as_int()));
        }
    }
    if (const Json* v = raw.find("inputs"); v && v->is_array() && v->size()) spec.inputs = v;
    if (const Json* v = raw.find("options"); v && v->is_object()) spec.options = *v;
    if (const Json* v = raw.find("save_outputs"); v && v->is_string()) spec.save_outputs = v->as_string();
    if (const Json* v = raw.find("input_file"); v && v->is_string()) spec.input_file = v->as_string();
    if (const Json* t = raw.find("telemetry"); t && t->is_object()) {
        if (const Json* v = t->find("marks_file"); v && v->is_string()) spec.marks_file = v->as_string();
        if (const Json* v = t->find("sync_marker"); v && v->is_string()) spec.sync_marker = v->as_string();
    }
    return spec;
}

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

int64_t realtime_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Marks the timed window for the shell sampler; failures to write are not the cell's problem.
void mark_window(const Spec& spec, const char* what) {
    const bool start = std::strcmp(what, "window_start") == 0;
    if (!spec.sync_marker.empty()) {
        if (start) {
            std::ofstream marker(spec.sync_marker);
            marker << getpid();
        } else {
            std::remove(spec.sync_marker.c_str());
        }
    }
    if (!spec.marks_file.empty()) {
        std::ofstream marks(spec.marks_file, std::ios::app);
        marks << what << " " << realtime_ns() << "\n";
    }
}

const BackendEntry& find_backend(const std::string& framework) {
    std::string built;
    for (const auto& entry : backend_registry()) {
        if (entry.framework == framework) return entry;
        built += (built.empty() ? "" : ", ") + entry.framework;
    }
    throw BackendError("not_installed", framework + " is not built into this edgebench-native (it has: " +
                                            (built.empty() ? "none" : built) +
                                            "); `edgebench runners build --framework NAME` builds in a "
                                            "framework that has a native backend");
}

std::vector<TensorInfo> resolve_inputs(const Spec& spec, const std::vector<TensorInfo>& model_inputs) {
    if (!spec.inputs) return model_inputs;
    std::vector<TensorInfo> resolved = model_inputs;
    for (const auto& item : spec.inputs->items()) {
        const Json* name = item.find("name");
        const Json* shape = item.find("shape");
        if (!name || !name->is_string() || !shape || !shape->is_array())
            throw BackendError("bad_spec", "each spec input needs a name and a shape");
        bool known = false;
        for (auto& input : resolved)
            if (input.name == name->as_string()) {
                known = true;
                input.shape.clear();
                for (const auto& d : shape->items()) input.shape.push_back(d.as_int());
                if (const Json* dtype = item.find("dtype"); dtype && dtype->is_string()) input.dtype = dtype->as_string();
            }
        if (!known) {
            std::string names;
            for (const auto& input : model_inputs) names += (names.empty() ? "" : ", ") + input.name;
            throw BackendError("bad_spec", "input '" + name->as_string() + "' is not an input of the model (it has " + names + ")");
        }
    }
    return resolved;
}

std::vector<Tensor> make_feeds(const Spec& spec, const std::vector<TensorInfo>& inputs, Json& described) {
    std::map<std::string, NpyArray> file;
    if (!spec.input_file.empty()) {
        try {
            file = read_npz(spec.input_file);
        } catch (const std::exception& exc) {
            throw BackendError("bad_spec", std::string("cannot read the inputs file: ") + exc.what());
        }
    }
    std::vector<Tensor> feeds;
    described = Json::array();
    for (const auto& input : inputs) {
        for (int64_t d : input.shape)
            if (d < 0) throw BackendError("bad_spec", "input '" + input.name + "' has dynamic dimensions; give a concrete shape");
        if (input.dtype != "float32")
            throw BackendError("unsupported", "input '" + input.name + "' is " + input.dtype +
                                                  "; the native runner feeds float32 inputs only");
        Tensor feed{input.name, input.shape, std::vector<float>(static_cast<size_t>(element_count(input.shape)))};
        Json entry = Json::object();
        entry.set("name", input.name);
        entry.set("shape", Json::array_of(input.shape));
        entry.set("dtype", input.dtype);
        if (!spec.input_file.empty()) {
            auto found = file.find(input.name);
            if (found == file.end())
                throw BackendError("bad_spec", "the inputs file has no array for input '" + input.name + "'");
            const NpyArray& array = found->second;
            if (array.descr != "<f4" || array.data.size() != feed.data.size() * sizeof(float))
                throw BackendError("bad_spec", "the inputs file's '" + input.name + "' is " + array.descr +
                                                   " with " + std::to_string(array.data.size()) +
                                                   " bytes; the model wants float32 of its shape");
            std::memcpy(feed.data.data(), array.data.data(), array.data.size());
            entry.set("source", "file");
        } else {
            seeded_floats(spec.seed, input.name, feed.data.data(), feed.data.size());
        }
        described.push(entry);
        feeds.push_back(std::move(feed));
    }
    return feeds;
}

void measure_cell(const Spec& spec, Json& result) {
    const BackendEntry& entry = find_backend(spec.framework);
    result.set("framework_version", entry.version);
    const int64_t rss = status_kb("VmRSS");
    result.set("rss_before_load_kb", rss >= 0 ? Json(rss) : Json());
    struct stat info;
    if (stat(spec.model.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        throw BackendError("model_load", "model file not found: " + spec.model);
    bool supported = false;
    std::string precisions;
    for (const auto& p : entry.precisions) {
        supported = supported || p == spec.precision;
        precisions += (precisions.empty() ? "" : ", ") + p;
    }
    if (!supported)
        throw BackendError("unsupported", spec.framework + " does not support precision " + spec.precision +
                                              " here (supported: " + precisions + ")");
    std::unique_ptr<Backend> backend = entry.make();
    int64_t t0 = now_ns();
    backend->load(spec.model, static_cast<int>(spec.threads), spec.precision, spec.options);
    result.set("load_ns", now_ns() - t0);

    const std::vector<TensorInfo> inputs = resolve_inputs(spec, backend->model_inputs());
    Json described;
    const std::vector<Tensor> feeds = make_feeds(spec, inputs, described);
    result.set("inputs", described);
    std::vector<std::unique_ptr<Stream>> streams;
    for (int64_t i = 0; i < spec.concurrency; ++i) streams.push_back(backend->make_stream(feeds));

    t0 = now_ns();
    streams[0]->run();
    result.set("first_inference_ns", now_ns() - t0);
    Json warmup = Json::array();
    for (auto& stream : streams)
        for (int64_t i = 0; i < spec.warmup; ++i) {
            t0 = now_ns();
            stream->run();
            warmup.push(now_ns() - t0);
        }
    result.set("warmup_samples_ns", warmup);

    const int64_t min_ns = static_cast<int64_t>(spec.min_time_s * 1e9);
    const int64_t max_ns = static_cast<int64_t>(spec.max_time_s * 1e9);
    Timing timing;
    mark_window(spec, "window_start");
    struct WindowEnd {
        const Spec& spec;
        ~WindowEnd() { mark_window(spec, "window_end"); }
    } window_end{spec};
    if (spec.concurrency == 1) {
        Stream* stream = streams[0].get();
        timing = measure_sequential([stream] { stream->run(); }, spec.iterations, min_ns, spec.max_iterations,
                                    max_ns, spec.target_ci);
    } else {
        std::vector<std::function<void()>> runs;
        for (auto& stream : streams) {
            Stream* s = stream.get();
            runs.emplace_back([s] { s->run(); });
        }
        timing = measure_concurrent(runs, spec.iterations, min_ns, spec.max_iterations, max_ns);
        result.set("per_stream_counts", Json::array_of(timing.per_stream_counts));
    }
    result.set("samples_ns", Json::array_of(timing.samples_ns));
    result.set("measure_wall_ns", timing.measure_wall_ns);
    result.set("stop_reason", timing.stop_reason);
    if (spec.target_ci >= 0) result.set("median_ci", timing.has_median_ci ? Json(timing.median_ci) : Json());

    // The outputs of stream 0's last timed inference: no extra run.
    const std::vector<Tensor> outputs = streams[0]->outputs();
    result.set("outputs", summarize_outputs(outputs));
    if (!spec.save_outputs.empty()) {
        try {
            save_outputs(spec.save_outputs, outputs);
        } catch (const std::exception& exc) {
            throw BackendError("internal", std::string("could not save outputs: ") + exc.what());
        }
        result.set("outputs_file", spec.save_outputs);
    }
    const int64_t peak = status_kb("VmHWM");
    result.set("peak_rss_kb", peak >= 0 ? Json(peak) : Json());
    result.set("status", "ok");
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
                     "Measures one cell as edgebench's runner protocol says; see docs/native-runner.md\n";
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
