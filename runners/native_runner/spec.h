// The runner's input (runners/protocol/spec.py's RunSpec), read from its JSON object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.h"

namespace eb {

struct Spec {
    std::string model, framework, precision = "fp32";
    // The compute backend: "cpu", or an accelerator the framework's build selects.
    std::string backend = "cpu";
    int64_t threads = 1, warmup = 10, iterations = 100, max_iterations = 100000, concurrency = 1;
    uint64_t seed = 0;
    double min_time_s = 2.0, max_time_s = 120.0, target_ci = -1.0;
    std::vector<int> cores;
    Json inputs;  // null, or [{"name", "shape", "dtype"?}]
    Json options = Json::object();
    std::string save_outputs, input_file;
    // Time copy-in, compute and copy-out of each iteration (one stream only).
    bool stages = true;
    // After the timed window: this many inferences of a separate profiling load.
    int64_t profile_ops = 0;
    // N instances, `separate` loads or `shared` weights (concurrency equals them).
    int64_t instances = 1;
    std::string instance_mode = "separate";
    // Inputs of another shape: one inference at those first, then the resize is timed.
    Json shape_change_from;
    // The timed window, for the host's shell sampler beside the binary: "window_start NS" and
    // "window_end NS" lines (CLOCK_REALTIME, as `date +%s%N`), and a file that exists meanwhile.
    std::string marks_file, sync_marker;
    // A generative cell's workload (runners/protocol/generation_spec.py); null for a tensor cell.
    Json generation;
};

// Throws BackendError("bad_spec", ...) with runners/protocol/spec.py's messages.
Spec normalize_spec(const Json& raw);

}  // namespace eb
