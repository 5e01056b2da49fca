// ncnn on Vulkan (opt.use_vulkan_compute), for backends/ncnn.cpp: the checks around the load, a
// stream that uploads, computes and downloads in separate stages, and the report of what ran.
// In a build without NCNN_VULKAN, accelerators() is empty and the cell refuses "vulkan" before
// anything here is called.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../backend.h"
#include "../io_map.h"
#include "net.h"

namespace eb {

using NamedMats = std::vector<std::pair<std::string, ncnn::Mat>>;

// A host Mat of ncnn's layout (no batch axis, channels padded to cstep) as a plain buffer.
std::vector<float> from_mat(const ncnn::Mat& mat, std::vector<int64_t>& shape);

namespace ncnn_vulkan {

// {"vulkan"} in a build with NCNN_VULKAN, else empty.
std::vector<std::string> accelerators();

// Before load_param: refuse what cannot run on Vulkan here (no device: unsupported, naming the
// packages; int8), turn Vulkan on, and return what this process holds on the device so far
// (-1 where the driver does not say).
int64_t prepare(ncnn::Net& net, const std::string& precision);

// After load_param: ncnn turns Vulkan off without failing when the device is unusable.
void check_kept(const ncnn::Net& net);

std::unique_ptr<Stream> make_stream(ncnn::Net& net, const IoMap& io, NamedMats inputs);

Json boundaries();

// After the first inference: device, driver, precision kept, layers on Vulkan, device memory
// since `memory_before` (prepare's).
Json report(const ncnn::Net& net, int64_t memory_before);

}  // namespace ncnn_vulkan
}  // namespace eb
