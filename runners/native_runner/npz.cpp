#include "npz.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace eb {

namespace {

uint32_t crc32_of(const char* data, size_t size, uint32_t crc = 0) {
    static uint32_t table[256];
    static bool ready = false;
    if (!ready) {
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
            table[n] = c;
        }
        ready = true;
    }
    crc = ~crc;
    for (size_t i = 0; i < size; ++i)
        crc = table[(crc ^ static_cast<unsigned char>(data[i])) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void put16(std::string& out, uint32_t v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>((v >> 8) & 0xFF);
}

void put32(std::string& out, uint32_t v) {
    put16(out, v & 0xFFFF);
    put16(out, v >> 16);
}

uint32_t get16(const std::string& s, size_t at) {
    if (at + 2 > s.size()) throw std::runtime_error("truncated zip");
    return static_cast<unsigned char>(s[at]) | (static_cast<unsigned char>(s[at + 1]) << 8);
}

uint32_t get32(const std::string& s, size_t at) { return get16(s, at) | (get16(s, at + 2) << 16); }

uint64_t get64(const std::string& s, size_t at) {
    return static_cast<uint64_t>(get32(s, at)) | (static_cast<uint64_t>(get32(s, at + 4)) << 32);
}

std::string npy_bytes(const NpyArray& array) {
    std::string shape = "(";
    for (size_t i = 0; i < array.shape.size(); ++i) {
        shape += std::to_string(array.shape[i]);
        if (array.shape.size() == 1 || i + 1 < array.shape.size()) shape += ",";
        if (i + 1 < array.shape.size()) shape += " ";
    }
    shape += ")";
    std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " +
                         shape + ", }";
    // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    put16(out, static_cast<uint32_t>(header.size()));
    out += header;
    out.append(array.data.data(), array.data.size());
    return out;
}

std::vector<int64_t> parse_shape(const std::string& header) {
    std::vector<int64_t> shape;
    size_t at = header.find("'shape'");
    if (at == std::string::npos) throw std::runtime_error("npy header without shape");
    size_t open = header.find('(', at), close = header.find(')', at);
    if (open == std::string::npos || close == std::string::npos) throw std::runtime_error("bad npy shape");
    std::stringstream items(header.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(items, item, ',')) {
        size_t first = item.find_first_not_of(' ');
        if (first == std::string::npos) continue;
        shape.push_back(std::stoll(item.substr(first)));
    }
    return shape;
}

std::string quoted_value(const std::string& header, const std::string& key) {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) return "";
    size_t colon = header.find(':', at);
    size_t open = header.find('\'', colon);
    size_t close = header.find('\'', open + 1);
    if (open == std::string::npos || close == std::string::npos) return "";
    return header.substr(open + 1, close - open - 1);
}

NpyArray parse_npy(const std::string& bytes, const std::string& member) {
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
        throw std::runtime_error(member + " is not an .npy array");
    int major = static_cast<unsigned char>(bytes[6]);
    size_t header_len = 0, start = 0;
    if (major == 1) {
        header_len = get16(bytes, 8);
        start = 10;
    } else {
        header_len = get32(bytes, 8);
        start = 12;
    }
    if (start + header_len > bytes.size()) throw std::runtime_error(member + ": truncated header");
    std::string header = bytes.substr(start, header_len);
    if (header.find("'fortran_order': True") != std::string::npos)
        throw std::runtime_error(member + " is in Fortran order");
    NpyArray array;
    array.descr = quoted_value(header, "descr");
    array.shape = parse_shape(header);
    array.data.assign(bytes.begin() + static_cast<long>(start + header_len), bytes.end());
    return array;
}

}  // namespace

NpyArray unicode_array(const std::vector<std::string>& values) {
    // Decode UTF-8 to code points; numpy stores each string as fixed-width UTF-32LE.
    std::vector<std::vector<uint32_t>> decoded;
    size_t width = 1;
    for (const auto& text : values) {
        std::vector<uint32_t> cps;
        for (size_t i = 0; i < text.size();) {
            unsigned char c = static_cast<unsigned char>(text[i]);
            int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
            uint32_t cp = extra ? c & (0x3F >> extra) : c;
            for (int k = 1; k <= extra && i + k < text.size(); ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
            cps.push_back(cp);
            i += 1 + extra;
        }
        width = std::max(width, cps.size());
        decoded.push_back(cps);
    }
    NpyArray array;
    array.descr = "<U" + std::to_string(width);
    array.shape = {static_cast<int64_t>(values.size())};
    for (const auto& cps : decoded)
        for (size_t i = 0; i < width; ++i) {
            uint32_t cp = i < cps.size() ? cps[i] : 0;
            for (int b = 0; b < 4; ++b) array.data.push_back(static_cast<char>((cp >> (8 * b)) & 0xFF));
        }
    return array;
}

void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& arrays) {
    std::string file, central;
    uint32_t count = 0;
    for (const auto& entry : arrays) {
        const std::string name = entry.first + ".npy";
        const std::string data = npy_bytes(entry.second);
        if (data.size() >= 0xFFFFFFFFULL || file.size() >= 0xFFFFFFFFULL)
            throw std::runtime_error("outputs too large for the npz writer (4 GB)");
        const uint32_t crc = crc32_of(data.data(), data.size());
        const uint32_t offset = static_cast<uint32_t>(file.size());
        // Local file header: stored, no data descriptor.
        put32(file, 0x04034b50); put16(file, 20); put16(file, 0); put16(file, 0);
        put16(file, 0); put16(file, 0x21);  // time 00:00:00, date 1980-01-01
        put32(file, crc); put32(file, static_cast<uint32_t>(data.size()));
        put32(file, static_cast<uint32_t>(data.size()));
        put16(file, static_cast<uint32_t>(name.size())); put16(file, 0);
        file += name;
        file += data;
        put32(central, 0x02014b50); put16(central, 20); put16(central, 20); put16(central, 0);
        put16(central, 0); put16(central, 0); put16(central, 0x21);
        put32(central, crc); put32(central, static_cast<uint32_t>(data.size()));
        put32(central, static_cast<uint32_t>(data.size()));
        put16(central, static_cast<uint32_t>(name.size())); put16(central, 0); put16(central, 0);
        put16(central, 0); put16(central, 0); put32(central, 0); put32(central, offset);
        central += name;
        ++count;
    }
    const uint32_t central_at = static_cast<uint32_t>(file.size());
    file += central;
    put32(file, 0x06054b50); put16(file, 0); put16(file, 0); put16(file, count);
    put16(file, count); put32(file, static_cast<uint32_t>(central.size()));
    put32(file, central_at); put16(file, 0);

    const std::string partial = path + ".part";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write " + partial);
        out.write(file.data(), static_cast<std::streamsize>(file.size()));
        if (!out) throw std::runtime_error("cannot write " + partial + " (disk full?)");
    }
    if (std::rename(partial.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename " + partial + " to " + path);
}

std::map<std::string, NpyArray> read_npz(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (s.size() < 22) throw std::runtime_error(path + " is not a zip file");
    size_t eocd = std::string::npos;
    for (size_t at = s.size() - 22 + 1; at-- > 0 && s.size() - at < 22 + 65536;)
        if (get32(s, at) == 0x06054b50) {
            eocd = at;
            break;
        }
    if (eocd == std::string::npos) throw std::runtime_error(path + " is not a zip file");
    uint64_t entries = get16(s, eocd + 10);
    uint64_t central_at = get32(s, eocd + 16);
    if ((entries == 0xFFFF || central_at == 0xFFFFFFFF) && eocd >= 20 &&
        get32(s, eocd - 20) == 0x07064b50) {
        uint64_t z64 = get64(s, eocd - 20 + 8);
        if (get32(s, z64) != 0x06064b50) throw std::runtime_error(path + ": bad zip64 record");
        entries = get64(s, z64 + 32);
        central_at = get64(s, z64 + 48);
    }
    std::map<std::string, NpyArray> arrays;
    size_t at = central_at;
    for (uint64_t i = 0; i < entries; ++i) {
        if (get32(s, at) != 0x02014b50) throw std::runtime_error(path + ": bad central directory");
        uint32_t method = get16(s, at + 10);
        uint64_t size = get32(s, at + 24);  // uncompressed (stored: the same as compressed)
        uint32_t name_len = get16(s, at + 28), extra_len = get16(s, at + 30),
                 comment_len = get16(s, at + 32);
        uint64_t local = get32(s, at + 42);
        std::string name = s.substr(at + 46, name_len);
        // zip64 extra field: the 8-byte values present are those whose 32-bit field is all ones.
        size_t x = at + 46 + name_len, x_end = x + extra_len;
        while (x + 4 <= x_end) {
            uint32_t id = get16(s, x), len = get16(s, x + 2);
            if (id == 0x0001) {
                size_t v = x + 4;
                uint64_t uncompressed = size;
                if (uncompressed == 0xFFFFFFFF) { uncompressed = get64(s, v); v += 8; }
                if (get32(s, at + 20) == 0xFFFFFFFF) v += 8;  // compressed size
                if (local == 0xFFFFFFFF) local = get64(s, v);
                size = uncompressed;
            }
            x += 4 + len;
        }
        if (method != 0)
            throw std::runtime_error(path + ": member " + name + " is compressed; save it with "
                                     "numpy.savez, not savez_compressed");
        if (get32(s, local) != 0x04034b50) throw std::runtime_error(path + ": bad local header");
        size_t data_at = local + 30 + get16(s, local + 26) + get16(s, local + 28);
        if (data_at + size > s.size()) throw std::runtime_error(path + ": truncated member " + name);
        std::string key = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0
                              ? name.substr(0, name.size() - 4)
                              : name;
        arrays[key] = parse_npy(s.substr(data_at, size), name);
        at += 46 + name_len + extra_len + comment_len;
    }
    return arrays;
}

}  // namespace eb
