#include "window.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace eb {

// User + system CPU time of the whole process (every thread) so far, as runners/timing.py's
// process_cpu_ns.
int64_t process_cpu_ns() {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    auto ns = [](const struct timeval& tv) { return static_cast<int64_t>(tv.tv_sec) * 1000000000LL + tv.tv_usec * 1000LL; };
    return ns(usage.ru_utime) + ns(usage.ru_stime);
}

int64_t realtime_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

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

namespace {

Json stages_field(const Spec& spec, const Timing& timing, size_t streams, const Json& boundaries) {
    Json stages = Json::object();
    if (timing.staged) {
        Json samples = Json::object();
        samples.set("copy_in", Json::array_of(timing.stages.copy_in));
        samples.set("compute", Json::array_of(timing.stages.compute));
        samples.set("copy_out", Json::array_of(timing.stages.copy_out));
        stages.set("samples_ns", samples);
        stages.set("boundaries", boundaries);
    } else if (spec.stages) {
        stages.set("unavailable", std::to_string(streams) + " streams ran at once; stages are timed with one");
    }
    return stages;
}

}  // namespace

Timing time_window(const Spec& spec, const std::vector<std::unique_ptr<Stream>>& streams, const Json& boundaries,
                   Json& result) {
    Limits limits;
    limits.iterations = spec.iterations;
    limits.min_time_ns = static_cast<int64_t>(spec.min_time_s * 1e9);
    limits.max_iterations = spec.max_iterations;
    limits.max_time_ns = static_cast<int64_t>(spec.max_time_s * 1e9);
    limits.target_ci = spec.target_ci;
    std::vector<std::function<void()>> runs;
    for (const auto& stream : streams) {
        Stream* s = stream.get();
        runs.emplace_back([s] { s->run(); });
    }
    Timing timing;
    int64_t cpu_ns = 0;
    {
        mark_window(spec, "window_start");
        struct WindowEnd {
            const Spec& spec;
            ~WindowEnd() { mark_window(spec, "window_end"); }
        } window_end{spec};
        const int64_t cpu_start = process_cpu_ns();
        if (streams.size() > 1)
            timing = measure_concurrent(runs, limits);
        else if (spec.stages)
            timing = measure_staged(*streams[0], limits);
        else
            timing = measure_sequential(runs[0], limits);
        cpu_ns = cpu_start < 0 ? -1 : process_cpu_ns() - cpu_start;
    }
    if (streams.size() > 1) {
        result.set("per_stream_counts", Json::array_of(timing.per_stream_counts));
        result.set("at_once", timing.at_once);
    }
    result.set("samples_ns", Json::array_of(timing.samples_ns));
    result.set("measure_wall_ns", timing.measure_wall_ns);
    // Next to the latency, what each inference costs the CPU (on an accelerator, the driver's and
    // the host side's share): the process's CPU time over the window per inference of all streams.
    const int64_t count = static_cast<int64_t>(timing.samples_ns.size());
    result.set("cpu_ns_per_inference", count && cpu_ns >= 0 ? Json(cpu_ns / count) : Json());
    result.set("stop_reason", timing.stop_reason);
    if (spec.target_ci >= 0) result.set("median_ci", timing.has_median_ci ? Json(timing.median_ci) : Json());
    Json stages = stages_field(spec, timing, streams.size(), boundaries);
    if (stages.size()) result.set("stages", stages);
    return timing;
}

}  // namespace eb
