// Per-operator profiles (--profile ops), as runners/op_profile.py: a separate load of the model,
// one untimed inference, then N timed ones, all with the backend's per-layer timer on. Schema:
//   {"iterations", "source", "ops": [{"name", "type", "impl", "time_ms", "count"}, ... slowest
//    first], "total_ms", "inference_ms"}  or  {"unavailable": why}
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "json.h"

namespace eb {

// The profile of `events` (every layer call over all `iterations` profiled inferences, whose
// wall times are `wall_ns`).
Json summarize_ops(const std::string& source, int64_t iterations, const std::vector<OpEvent>& events,
                   const std::vector<int64_t>& wall_ns);

// The profile of `iterations` inferences of a load made by `load` on `feeds`; never throws: a
// failure is {"unavailable": why}.
Json profile_ops(const std::string& framework, const std::function<std::unique_ptr<Backend>()>& load,
                 const std::vector<Tensor>& feeds, int64_t iterations);

}  // namespace eb
