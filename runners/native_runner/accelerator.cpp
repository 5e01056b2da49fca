// What every backend's accelerator report shares (runners/backends/accelerator.py in Python).
#include "backend.h"

namespace eb {

Json accelerator_object(const std::string& api) {
    Json report = Json::object();
    // The keys of edgebench/results/accelerator_part.py's AcceleratorRun, in its order.
    for (const char* key : {"api", "device", "device_type", "software", "driver", "api_version", "precision",
                            "delegated_ops", "total_ops", "device_memory_mb", "device_memory_unavailable",
                            "stages_note", "engine_build_ms", "engine_cache", "cuda_graph", "placement"})
        report.set(key, Json());
    report.set("api", api);
    report.set("software", false);
    return report;
}

BackendError fallback_error(const std::string& framework, const std::string& backend, const std::string& words) {
    return BackendError("fallback", framework + " asked for " + backend + " and ran on the CPU: " + words);
}

}  // namespace eb
