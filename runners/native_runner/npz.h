// numpy's .npz: writing the outputs file the host's output check loads (np.load), and reading
// the inputs file the host prepares for --input. Stored (uncompressed) zip members only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace eb {

struct NpyArray {
    std::string descr;            // numpy dtype string, e.g. "<f4"
    std::vector<int64_t> shape;
    std::vector<char> data;       // C order, little endian
};

// Members are written in order; names get ".npy" appended. Throws std::runtime_error.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& arrays);
std::map<std::string, NpyArray> read_npz(const std::string& path);

// A 1-d array of fixed-width unicode strings ("<U{n}"), as np.array(list_of_str) makes.
NpyArray unicode_array(const std::vector<std::string>& values);

}  // namespace eb
