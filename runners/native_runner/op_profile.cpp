#include "op_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <tuple>

#include "measure.h"

namespace eb {

namespace {

double round6(double value) { return std::round(value * 1e6) / 1e6; }

Json unavailable(const std::string& why) {
    Json out = Json::object();
    out.set("unavailable", why);
    return out;
}

}  // namespace

Json summarize_ops(const std::string& source, int64_t iterations, const std::vector<OpEvent>& events,
                   const std::vector<int64_t>& wall_ns) {
    struct Total {
        const OpEvent* first;
        int64_t ns = 0;
        int64_t calls = 0;
    };
    using Key = std::tuple<std::string, std::string, std::string>;
    std::map<Key, size_t> index;
    std::vector<Total> totals;  // in the order the ops first ran
    for (const auto& event : events) {
        auto found = index.emplace(Key{event.name, event.type, event.impl}, totals.size());
        if (found.second) totals.push_back(Total{&event});
        Total& total = totals[found.first->second];
        total.ns += event.ns;
        total.calls += 1;
    }
    struct Row {
        const OpEvent* op;
        double time_ms;
        int64_t count;
    };
    const double n = static_cast<double>(std::max<int64_t>(1, iterations));
    std::vector<Row> rows;
    for (const auto& total : totals) {
        const double time_ms = static_cast<double>(total.ns) / n / 1e6;
        if (time_ms <= 0) continue;  // below the clock's resolution, or never run
        const int64_t count = std::max<int64_t>(1, std::llround(static_cast<double>(total.calls) / n));
        rows.push_back(Row{total.first, round6(time_ms), count});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.time_ms > b.time_ms; });
    Json ops = Json::array();
    double total_ms = 0;
    for (const auto& row : rows) {
        Json op = Json::object();
        op.set("name", row.op->name);
        op.set("type", row.op->type);
        op.set("impl", row.op->impl.empty() ? Json() : Json(row.op->impl));
        op.set("time_ms", row.time_ms);
        op.set("count", row.count);
        ops.push(op);
        total_ms += row.time_ms;
    }
    double wall = 0;
    for (int64_t ns : wall_ns) wall += static_cast<double>(ns);
    Json out = Json::object();
    out.set("iterations", iterations);
    out.set("source", source);
    out.set("ops", ops);
    out.set("total_ms", round6(total_ms));
    out.set("inference_ms", wall_ns.empty() ? 0.0 : round6(wall / static_cast<double>(wall_ns.size()) / 1e6));
    return out;
}

Json profile_ops(const std::string& framework, const std::function<std::unique_ptr<Backend>()>& load,
                 const std::vector<Tensor>& feeds, int64_t iterations) {
    try {
        std::unique_ptr<Backend> backend = load();
        std::unique_ptr<Stream> stream = backend->make_stream(feeds);
        std::vector<OpEvent> events;
        // The untimed first inference, profiled too: whatever the timer's way of running first
        // allocates (ncnn's kept blobs) is then in place for the timed ones.
        stream->run_profiled(events);
        events.clear();
        std::vector<int64_t> wall;
        for (int64_t i = 0; i < std::max<int64_t>(1, iterations); ++i) {
            const int64_t t0 = now_ns();
            stream->run_profiled(events);
            wall.push_back(now_ns() - t0);
        }
        return summarize_ops(backend->profile_source(), static_cast<int64_t>(wall.size()), events, wall);
    } catch (const BackendError& exc) {
        if (exc.kind == "unsupported") return unavailable(exc.what());
        return unavailable(framework + " profiling failed: " + exc.what());
    } catch (const std::bad_alloc&) {
        return unavailable(framework + " profiling failed: out of memory");
    } catch (const std::exception& exc) {
        return unavailable(framework + " profiling failed: " + exc.what());
    }
}

}  // namespace eb
