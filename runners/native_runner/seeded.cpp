#include "seeded.h"

namespace eb {

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr double kSqrt3 = 1.7320508075688772;  // the same double as tensors.py's _SQRT3

uint64_t key_of(uint64_t seed, const std::string& name) {
    return mix64(seed * kGolden + fnv1a64(name));
}
}  // namespace

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& text) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ULL;
    return h;
}

uint64_t seeded_bits(uint64_t seed, const std::string& name, uint64_t index) {
    return mix64(key_of(seed, name) + index * kGolden);
}

void seeded_floats(uint64_t seed, const std::string& name, float* out, size_t count) {
    const uint64_t key = key_of(seed, name);
    for (size_t i = 0; i < count; ++i) {
        const uint64_t bits = mix64(key + static_cast<uint64_t>(i) * kGolden);
        const uint64_t total = (bits & 0xFFFF) + ((bits >> 16) & 0xFFFF) +
                               ((bits >> 32) & 0xFFFF) + (bits >> 48);
        double value = (static_cast<double>(total) + 2.0) / 65536.0 - 2.0;
        value = value * kSqrt3;
        out[i] = static_cast<float>(value);
    }
}

void seeded_ints64(uint64_t seed, const std::string& name, int64_t* out, size_t count) {
    const uint64_t key = key_of(seed, name);
    for (size_t i = 0; i < count; ++i)
        out[i] = static_cast<int64_t>(mix64(key + static_cast<uint64_t>(i) * kGolden) % 100);
}

}  // namespace eb
