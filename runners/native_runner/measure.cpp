#include "measure.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

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

namespace {

// The sequential stop rules around `iteration`, which runs one inference, appends its sample
// to the timing and returns the clock reading that ended it.
template <typename Iteration>
Timing sequential_window(Iteration&& iteration, const Limits& limits) {
    Timing timing;
    timing.stop_reason = "max_iterations";
    timing.samples_ns.reserve(static_cast<size_t>(std::min<int64_t>(limits.max_iterations, 1 << 20)));
    int64_t next_check = std::max<int64_t>(limits.iterations, 20);
    const int64_t start = now_ns();
    while (static_cast<int64_t>(timing.samples_ns.size()) < limits.max_iterations) {
        const int64_t end = iteration(timing);
        const int64_t count = static_cast<int64_t>(timing.samples_ns.size());
        const int64_t elapsed = end - start;
        const bool enough = count >= limits.iterations && elapsed >= limits.min_time_ns;
        if (enough && limits.target_ci < 0) {
            timing.stop_reason = "target_reached";
            break;
        }
        if (enough && count >= next_check) {
            // Re-checked at growing intervals so sorting stays a small share of the run.
            if (median_ci_halfwidth(timing.samples_ns) <= limits.target_ci) {
                timing.stop_reason = "ci_reached";
                break;
            }
            next_check = count + std::max<int64_t>(16, count / 10);
        }
        if (elapsed >= limits.max_time_ns) {
            timing.stop_reason = "max_time";
            break;
        }
    }
    timing.measure_wall_ns = now_ns() - start;
    if (limits.target_ci >= 0) {
        timing.has_median_ci = !timing.samples_ns.empty();
        if (timing.has_median_ci) timing.median_ci = median_ci_halfwidth(timing.samples_ns);
    }
    return timing;
}

// The shared state of the N stream threads of one concurrent window (runners/timing.py's
// _ConcurrentWindow).
class ConcurrentWindow {
public:
    ConcurrentWindow(size_t count, const Limits& limits) : count_(count), limits_(limits), per_stream_(count) {}

    Timing run(const std::vector<std::function<void()>>& streams) {
        std::vector<std::thread> threads;
        for (size_t i = 0; i < count_; ++i) threads.emplace_back([this, &streams, i] { worker(i, streams[i]); });
        {
            std::lock_guard<std::mutex> guard(lock_);
            start_ = now_ns();
            open_ = true;
        }
        wake_.notify_all();
        for (auto& thread : threads) thread.join();
        Timing timing;
        timing.measure_wall_ns = now_ns() - start_;
        if (error_) std::rethrow_exception(error_);
        std::vector<size_t> cursor(count_, 0);
        for (size_t index : completion_) timing.samples_ns.push_back(per_stream_[index][cursor[index]++]);
        for (const auto& samples : per_stream_) timing.per_stream_counts.push_back(static_cast<int64_t>(samples.size()));
        timing.at_once = most_in_flight_;
        timing.stop_reason = reason_;
        return timing;
    }

private:
    void worker(size_t index, const std::function<void()>& run) {
        {
            std::unique_lock<std::mutex> guard(lock_);
            wake_.wait(guard, [this] { return open_; });
        }
        std::vector<int64_t>& samples = per_stream_[index];
        try {
            while (!stop_.load()) {
                const bool first = samples.empty();
                if (!first && !every_stream_started()) break;
                begin(first);
                const int64_t t0 = now_ns();
                run();
                const int64_t t1 = now_ns();
                samples.push_back(t1 - t0);
                finish(index, first, t1);
            }
        } catch (...) {
            std::lock_guard<std::mutex> guard(lock_);
            if (!error_) error_ = std::current_exception();
            halt(nullptr);
        }
    }

    // Before a stream's next request: wait until every stream has started one; false when the
    // window stopped meanwhile (or ran out of time waiting).
    bool every_stream_started() {
        std::unique_lock<std::mutex> guard(lock_);
        if (all_started_) return true;
        const int64_t left = limits_.max_time_ns - (now_ns() - start_);
        if (left <= 0 ||
            !wake_.wait_for(guard, std::chrono::nanoseconds(left), [this] { return all_started_; }))
            halt("max_time");
        return !stop_.load();
    }

    void begin(bool first) {
        std::lock_guard<std::mutex> guard(lock_);
        most_in_flight_ = std::max(most_in_flight_, ++in_flight_);
        if (first && ++started_ == count_) {
            all_started_ = true;
            wake_.notify_all();
        }
    }

    void finish(size_t index, bool first, int64_t end) {
        std::lock_guard<std::mutex> guard(lock_);
        --in_flight_;
        completion_.push_back(index);
        if (first) ++ran_;
        const int64_t done = static_cast<int64_t>(completion_.size());
        const int64_t elapsed = end - start_;
        if (done >= limits_.iterations && elapsed >= limits_.min_time_ns && ran_ == count_)
            halt("target_reached");
        else if (done >= limits_.max_iterations)
            halt(nullptr);
        else if (elapsed >= limits_.max_time_ns)
            halt("max_time");
    }

    // With lock_ held.
    void halt(const char* reason) {
        if (reason) reason_ = reason;
        stop_ = true;
        all_started_ = true;  // wakes the streams waiting for it
        wake_.notify_all();
    }

    const size_t count_;
    const Limits limits_;
    std::vector<std::vector<int64_t>> per_stream_;  // each written by its own thread only
    std::mutex lock_;
    std::condition_variable wake_;
    bool open_ = false;
    bool all_started_ = false;
    std::atomic<bool> stop_{false};
    int64_t start_ = 0;
    std::vector<size_t> completion_;  // stream index of every finished request, in order
    std::string reason_ = "max_iterations";
    std::exception_ptr error_;
    int64_t in_flight_ = 0, most_in_flight_ = 0;
    size_t started_ = 0, ran_ = 0;
};

}  // namespace

Timing measure_sequential(const std::function<void()>& run, const Limits& limits) {
    return sequential_window(
        [&run](Timing& timing) {
            const int64_t t0 = now_ns();
            run();
            const int64_t t1 = now_ns();
            timing.samples_ns.push_back(t1 - t0);
            return t1;
        },
        limits);
}

Timing measure_staged(Stream& stream, const Limits& limits) {
    StageSamples stages;
    Timing timing = sequential_window(
        [&stream, &stages](Timing& timing) {
            const int64_t t0 = now_ns();
            stream.copy_in();
            const int64_t ta = now_ns();
            stream.compute();
            const int64_t tb = now_ns();
            stream.copy_out();
            const int64_t t1 = now_ns();
            stages.copy_in.push_back(ta - t0);
            stages.compute.push_back(tb - ta);
            stages.copy_out.push_back(t1 - tb);
            timing.samples_ns.push_back(t1 - t0);
            return t1;
        },
        limits);
    timing.staged = true;
    timing.stages = std::move(stages);
    return timing;
}

Timing measure_concurrent(const std::vector<std::function<void()>>& streams, const Limits& limits) {
    ConcurrentWindow window(streams.size(), limits);
    return window.run(streams);
}

}  // namespace eb
