// Several instances of one model in one runner process (--instances N), as runners/instances.py:
// `separate` is N loads with one stream each; `shared` is one load serving N streams (the
// framework's own way of sharing one copy of the weights).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "json.h"

namespace eb {

struct OpenedStreams {
    // The loads made for separate instances; declared first, so the streams go before them.
    std::vector<std::unique_ptr<Backend>> extra;
    std::vector<std::unique_ptr<Stream>> streams;
    // With more than one instance: count, mode and rss_after_load_kb (the resident memory after
    // each instance was ready: loaded and its stream made); null with one.
    Json instances;
};

// `concurrency` streams on `backend` with one instance; else one stream per instance, each on
// its own load (`separate`, made by `load_another`) or all on `backend` (`shared`).
OpenedStreams open_streams(int64_t count, const std::string& mode, int64_t concurrency, const std::string& framework,
                           Backend& backend, const std::vector<Tensor>& feeds,
                           const std::function<std::unique_ptr<Backend>()>& load_another);

// VmRSS now, or null where /proc does not say.
Json rss_kb();

}  // namespace eb
