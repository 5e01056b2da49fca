#include "measure.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <time.h>

namespace eb {

int64_t now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

double median_ci_halfwidth(std::vector<int64_t> samples) {
    // Order statistics at n/2 -/+ 1.96 sqrt(n)/2 (the normal approximation to the binomial).
    std::sort(samples.begin(), samples.end());
    const double n = static_cast<double>(samples.size());
    const double spread = 1.96 * std::sqrt(n) / 2.0;
    const long lo = std::max(0L, static_cast<long>(n / 2.0 - spread));
    const long hi = std::min(static_cast<long>(samples.size()) - 1, static_cast<long>(n / 2.0 + spread + 1.0));
    const int64_t median = samples[samples.size() / 2];
    if (median == 0) return std::numeric_limits<double>::infinity();
    return static_cast<double>(samples[static_cast<size_t>(hi)] - samples[static_cast<size_t>(lo)]) / 2.0 /
           static_cast<double>(median);
}

Timing measure_sequential(const std::function<void()>& run, int64_t iterations, int64_t min_time_ns,
                          int64_t max_iterations, int64_t max_time_ns, double target_ci) {
    Timing timing;
    timing.stop_reason = "max_iterations";
    timing.samples_ns.reserve(static_cast<size_t>(std::min<int64_t>(max_iterations, 1 << 20)));
    int64_t next_check = std::max<int64_t>(iterations, 20);
    const int64_t start = now_ns();
    while (static_cast<int64_t>(timing.samples_ns.size()) < max_iterations) {
        const int64_t t0 = now_ns();
        run();
        const int64_t t1 = now_ns();
        timing.samples_ns.push_back(t1 - t0);
        const int64_t count = static_cast<int64_t>(timing.samples_ns.size());
        const int64_t elapsed = t1 - start;
        const bool enough = count >= iterations && elapsed >= min_time_ns;
        if (enough && target_ci < 0) {
            timing.stop_reason = "target_reached";
            break;
        }
        if (enough && count >= next_check) {
            // Re-checked at growing intervals so sorting stays a small share of the run.
            if (median_ci_halfwidth(timing.samples_ns) <= target_ci) {
                timing.stop_reason = "ci_reached";
                break;
            }
            next_check = count + std::max<int64_t>(16, count / 10);
        }
        if (elapsed >= max_time_ns) {
            timing.stop_reason = "max_time";
            break;
        }
    }
    timing.measure_wall_ns = now_ns() - start;
    if (target_ci >= 0) {
        timing.has_median_ci = !timing.samples_ns.empty();
        if (timing.has_median_ci) timing.median_ci = median_ci_halfwidth(timing.samples_ns);
    }
    return timing;
}

Timing measure_concurrent(const std::vector<std::function<void()>>& streams, int64_t iterations,
                          int64_t min_time_ns, int64_t max_iterations, int64_t max_time_ns) {
    const size_t n = streams.size();
    std::vector<std::vector<int64_t>> per_stream(n);
    std::vector<size_t> completion;  // stream index of every finished request, in order
    std::mutex lock;
    std::atomic<bool> stop(false);
    std::string reason = "max_iterations";
    std::exception_ptr error;
    int64_t start = 0;
    // A start barrier: every worker waits until the clock's origin is set.
    std::mutex gate_lock;
    std::condition_variable gate;
    bool open = false;

    auto worker = [&](size_t index) {
        {
            std::unique_lock<std::mutex> guard(gate_lock);
            gate.wait(guard, [&] { return open; });
        }
        try {
            while (!stop.load()) {
                const int64_t t0 = now_ns();
                streams[index]();
                const int64_t t1 = now_ns();
                per_stream[index].push_back(t1 - t0);
                std::lock_guard<std::mutex> guard(lock);
                completion.push_back(index);
                const int64_t done = static_cast<int64_t>(completion.size());
                const int64_t elapsed = t1 - start;
                if (done >= iterations && elapsed >= min_time_ns) {
                    reason = "target_reached";
                    stop = true;
                } else if (done >= max_iterations) {
                    stop = true;
                } else if (elapsed >= max_time_ns) {
                    reason = "max_time";
                    stop = true;
                }
            }
        } catch (...) {
            std::lock_guard<std::mutex> guard(lock);
            if (!error) error = std::current_exception();
            stop = true;
        }
    };

    std::vector<std::thread> threads;
    for (size_t i = 0; i < n; ++i) threads.emplace_back(worker, i);
    {
        std::lock_guard<std::mutex> guard(gate_lock);
        start = now_ns();
        open = true;
    }
    gate.notify_all();
    for (auto& thread : threads) thread.join();
    Timing timing;
    timing.measure_wall_ns = now_ns() - start;
    if (error) std::rethrow_exception(error);
    std::vector<size_t> cursor(n, 0);
    for (size_t index : completion) timing.samples_ns.push_back(per_stream[index][cursor[index]++]);
    for (const auto& samples : per_stream) timing.per_stream_counts.push_back(static_cast<int64_t>(samples.size()));
    timing.stop_reason = reason;
    return timing;
}

}  // namespace eb
