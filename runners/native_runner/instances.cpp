#include "instances.h"

#include "process.h"

namespace eb {

Json rss_kb() {
    const int64_t kb = status_kb("VmRSS");
    return kb >= 0 ? Json(kb) : Json();
}

OpenedStreams open_streams(int64_t count, const std::string& mode, int64_t concurrency, const std::string& framework,
                           Backend& backend, const std::vector<Tensor>& feeds,
                           const std::function<std::unique_ptr<Backend>()>& load_another) {
    OpenedStreams opened;
    if (count <= 1) {
        for (int64_t i = 0; i < concurrency; ++i) opened.streams.push_back(backend.make_stream(feeds));
        return opened;
    }
    if (mode != "separate" && mode != "shared")
        throw BackendError("bad_spec", "instance_mode '" + mode + "' is not one of separate, shared");
    if (mode == "shared") {
        const std::string why = backend.no_shared_instances();
        if (!why.empty())
            throw BackendError("unsupported", framework + " cannot serve " + std::to_string(count) +
                                                  " instances from one loaded model: " + why);
    }
    Json after = Json::array();
    opened.streams.push_back(backend.make_stream(feeds));
    after.push(rss_kb());
    for (int64_t i = 1; i < count; ++i) {
        Backend* owner = &backend;
        if (mode == "separate") {
            opened.extra.push_back(load_another());
            owner = opened.extra.back().get();
        }
        opened.streams.push_back(owner->make_stream(feeds));
        after.push(rss_kb());
    }
    opened.instances = Json::object();
    opened.instances.set("count", count);
    opened.instances.set("mode", mode);
    opened.instances.set("rss_after_load_kb", after);
    return opened;
}

}  // namespace eb
