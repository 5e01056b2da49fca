// The timed window of a cell: its marks for the host's shell sampler, the loop over one stream
// (its stages timed when the spec asks) or over several at once, and the result's timing fields.
#pragma once

#include <memory>
#include <vector>

#include "backend.h"
#include "json.h"
#include "measure.h"
#include "spec.h"

namespace eb {

// User + system CPU time of the whole process (every thread) so far, as runners/timing.py's
// process_cpu_ns; -1 when unknown.
int64_t process_cpu_ns();
int64_t realtime_ns();
// Marks the timed window ("window_start", "window_end") for the shell sampler; failures to
// write are not the cell's problem.
void mark_window(const Spec& spec, const char* what);

// Runs the window and writes samples_ns, measure_wall_ns, stop_reason (median_ci, stages,
// per_stream_counts and at_once where they apply) into `result`.
Timing time_window(const Spec& spec, const std::vector<std::unique_ptr<Stream>>& streams, const Json& boundaries,
                   Json& result);

}  // namespace eb
