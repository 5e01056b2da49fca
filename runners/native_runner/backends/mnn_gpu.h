// MNN on Vulkan or OpenCL, for backends/mnn.cpp: the device MNN's runtime will take (found first
// through the API's own loader, gpu_devices.h: MNN's Vulkan runtime dereferences a missing one), the
// check that the session really runs there, and the report of what ran. A build without MNN's
// GPU backends (no EB_MNN_VULKAN or EB_MNN_OPENCL) has no accelerators, and the cell refuses
// them before anything here is called.
#pragma once

#include <MNN/Interpreter.hpp>

#include <string>
#include <vector>

#include "../gpu_devices.h"
#include "../json.h"

namespace eb {
namespace mnn_gpu {

std::vector<std::string> accelerators();

// The device MNN's runtime for `backend` takes (the API's first one it accepts); throws
// unsupported, naming what provides one, when there is none.
GpuDevice find_device(const std::string& backend);

// MNN's forward type for `backend` (MNN_FORWARD_VULKAN, MNN_FORWARD_OPENCL).
MNNForwardType forward_type(const std::string& backend);

// After createSession: MNN makes a CPU session, saying so only in its log, when its runtime for
// the backend cannot start; the session's forward type tells (a fallback error).
void check_session(MNN::Interpreter& interpreter, MNN::Session* session, const std::string& backend);

Json report(const GpuDevice& device, const std::string& backend, const std::string& precision);

}  // namespace mnn_gpu
}  // namespace eb
