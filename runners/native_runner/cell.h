// One cell, measured (runners/cell.py): load -> feeds -> streams and first inference (after a
// shape change's earlier inference and resize) -> warm-up -> timed window (stages or several
// streams) -> outputs -> peak memory -> operator profile. Each phase writes its fields into the
// result as it finishes, so a cell that fails part-way still reports what it measured.
#pragma once

#include "json.h"
#include "spec.h"

namespace eb {

// Throws BackendError (and std::bad_alloc) for the caller to report.
void measure_cell(const Spec& spec, Json& result);

}  // namespace eb
