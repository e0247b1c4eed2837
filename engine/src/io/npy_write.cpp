// .npy v1.0 writer: header dict padded so the data starts on a 64-byte boundary, as numpy does.
#include "mnemo/io/npy.hpp"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "mnemo/error.hpp"

namespace mnemo {

std::string npy_f32_header(const std::vector<int64_t>& shape) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0) {
            throw Error("npy: dimension " + std::to_string(i) + " is negative (" +
                        std::to_string(shape[i]) + ")");
        }
        if (i > 0) dict += ", ";
        dict += std::to_string(shape[i]);
    }
    if (shape.size() == 1) dict += ",";  // a one-element tuple needs its comma in Python syntax
    dict += "), }";
    // magic(6) + version(2) + length(2) + dict + padding + '\n' must be a multiple of 64.
    const size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > std::numeric_limits<uint16_t>::max()) {
        throw Error("npy: header too long for format version 1.0 (" + std::to_string(shape.size()) +
                    " dimensions)");
    }
    std::string header("\x93NUMPY\x01\x00", 8);
    header += static_cast<char>(dict.size() & 0xff);
    header += static_cast<char>((dict.size() >> 8) & 0xff);
    header += dict;
    return header;
}

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
    const std::string header = npy_f32_header(shape);
    uint64_t count = 1;
    for (int64_t d : shape) {
        if (d != 0 && count > std::numeric_limits<uint64_t>::max() / 4 / static_cast<uint64_t>(d)) {
            throw Error("npy: array too large for '" + path + "'");
        }
        count *= static_cast<uint64_t>(d);
    }
    if (count > 0 && data == nullptr) throw Error("npy: no data given for '" + path + "'");

    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) {
        throw Error("cannot create '" + tmp + "' (for '" + path + "'): " + std::strerror(errno));
    }
    bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
    if constexpr (std::endian::native == std::endian::little) {
        if (ok && count > 0) ok = std::fwrite(data, sizeof(float), count, f) == count;
    } else {
        for (uint64_t i = 0; ok && i < count; ++i) {
            uint32_t bits;
            std::memcpy(&bits, &data[i], 4);
            const unsigned char le[4] = {static_cast<unsigned char>(bits), static_cast<unsigned char>(bits >> 8),
                                         static_cast<unsigned char>(bits >> 16),
                                         static_cast<unsigned char>(bits >> 24)};
            ok = std::fwrite(le, 1, 4, f) == 4;
        }
    }
    const int saved = errno;
    if (std::fclose(f) != 0 && ok) ok = false;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = ok ? errno : saved;
        std::remove(tmp.c_str());
        throw Error("cannot write '" + path + "': " + std::strerror(err));
    }
}

}  // namespace mnemo
