// The timed loops, as runners/timing.py's measure_sequential and measure_concurrent: the clock
// brackets the inference call only; the stop rules are the same.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend.h"

namespace eb {

// When the timed window ends (runners/protocol/spec.py documents each); target_ci < 0: none.
struct Limits {
    int64_t iterations = 100;
    int64_t min_time_ns = 0;
    int64_t max_iterations = 100000;
    int64_t max_time_ns = 0;
    double target_ci = -1.0;
};

// Per-iteration copy-in, compute and copy-out times; each iteration's three add up to its sample.
struct StageSamples {
    std::vector<int64_t> copy_in, compute, copy_out;
};

struct Timing {
    std::vector<int64_t> samples_ns;
    int64_t measure_wall_ns = 0;
    std::string stop_reason;
    bool has_median_ci = false;
    double median_ci = 0.0;
    // Concurrent runs only: requests each stream finished, and the most in flight together.
    std::vector<int64_t> per_stream_counts;
    int64_t at_once = 0;
    bool staged = false;
    StageSamples stages;
};

int64_t now_ns();  // CLOCK_MONOTONIC, as Python's time.perf_counter_ns on Linux
double median_ci_halfwidth(std::vector<int64_t> samples);

// One stream in this thread, each iteration timed whole.
Timing measure_sequential(const std::function<void()>& run, const Limits& limits);
// One stream in this thread, the clock read between its stages as well.
Timing measure_staged(Stream& stream, const Limits& limits);
// Every stream in its own thread. The window ends once `iterations` requests and min_time have
// passed and every stream has finished one, or at max_time/max_iterations; no stream starts a
// second request before every stream has started its first.
Timing measure_concurrent(const std::vector<std::function<void()>>& streams, const Limits& limits);

}  // namespace eb
