// The timed loops, as runners/runner.py's measure_sequential and measure_concurrent: the clock
// brackets the inference call only; the stop rules are the same.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace eb {

struct Timing {
    std::vector<int64_t> samples_ns;
    int64_t measure_wall_ns = 0;
    std::string stop_reason;
    bool has_median_ci = false;
    double median_ci = 0.0;
    std::vector<int64_t> per_stream_counts;  // concurrent runs only
};

int64_t now_ns();  // CLOCK_MONOTONIC, as Python's time.perf_counter_ns on Linux
double median_ci_halfwidth(std::vector<int64_t> samples);

// target_ci < 0: none (iterations and min_time decide).
Timing measure_sequential(const std::function<void()>& run, int64_t iterations, int64_t min_time_ns,
                          int64_t max_iterations, int64_t max_time_ns, double target_ci);
Timing measure_concurrent(const std::vector<std::function<void()>>& streams, int64_t iterations,
                          int64_t min_time_ns, int64_t max_iterations, int64_t max_time_ns);

}  // namespace eb
