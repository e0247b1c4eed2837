// A minimal reader for NumPy .npy files (format versions 1-3), enough for test data written by the
// Python tools: little-endian '<f4', '<i4', '<f2', '<u2' (and '|u1'), C order, any rank. Every
// length in the header is bounds-checked; a malformed file throws mnemo::Error naming the file.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mnemo/error.hpp"

namespace mnemo::test {

struct NpyArray {
    std::string descr;           // "<f4", "<i4", "<f2", "<u2", "|u1"
    std::vector<int64_t> shape;  // empty for a 0-d array
    std::vector<uint8_t> bytes;  // raw little-endian elements

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    size_t item_size() const { return descr == "|u1" ? 1 : (descr == "<f2" || descr == "<u2") ? 2 : 4; }

    std::vector<float> as_f32() const { return typed<float>("<f4"); }
    std::vector<int32_t> as_i32() const { return typed<int32_t>("<i4"); }
    std::vector<uint16_t> as_u16() const {  // f16 or bf16 bit patterns
        if (descr != "<f2" && descr != "<u2") throw Error("npy: array is " + descr + ", expected <f2 or <u2");
        return typed<uint16_t>(descr);
    }

private:
    template <typename T>
    std::vector<T> typed(const std::string& want) const {
        if (descr != want) throw Error("npy: array is " + descr + ", expected " + want);
        std::vector<T> v(bytes.size() / sizeof(T));
        if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
        return v;
    }
};

namespace npy_detail {

// Value of `'key': <value>` in the header dict, as raw text up to the next top-level ',' or '}'.
inline std::string dict_value(const std::string& header, const std::string& key, const std::string& file) {
    const std::string pattern = "'" + key + "'";
    size_t at = header.find(pattern);
    if (at == std::string::npos) throw Error(file + ": npy header has no '" + key + "'");
    at = header.find(':', at + pattern.size());
    if (at == std::string::npos) throw Error(file + ": npy header: no value for '" + key + "'");
    ++at;
    while (at < header.size() && header[at] == ' ') ++at;
    size_t end = at;
    int depth = 0;
    while (end < header.size()) {
        const char ch = header[end];
        if (ch == '(') ++depth;
        if (ch == ')') --depth;
        if (depth == 0 && (ch == ',' || ch == '}')) break;
        if (depth < 0) break;
        ++end;
    }
    if (depth > 0 && end >= header.size()) throw Error(file + ": npy header: unterminated '" + key + "'");
    // Include the closing parenthesis of a tuple.
    if (end < header.size() && header[end] == ')') ++end;
    return header.substr(at, end - at);
}

inline std::vector<int64_t> parse_shape(const std::string& text, const std::string& file) {
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
        throw Error(file + ": npy shape '" + text + "' is not a tuple");
    std::vector<int64_t> shape;
    int64_t cur = -1;
    for (size_t i = 1; i + 1 < text.size(); ++i) {
        const char ch = text[i];
        if (ch >= '0' && ch <= '9') {
            if (cur < 0) cur = 0;
            if (cur > (int64_t{1} << 40)) throw Error(file + ": npy shape '" + text + "' is too large");
            cur = cur * 10 + (ch - '0');
        } else if (ch == ',') {
            if (cur < 0) throw Error(file + ": npy shape '" + text + "' has an empty entry");
            shape.push_back(cur);
            cur = -1;
        } else if (ch != ' ' && ch != 'L') {
            throw Error(file + ": npy shape '" + text + "' has an unexpected character");
        }
    }
    if (cur >= 0) shape.push_back(cur);
    return shape;
}

inline uint64_t read_le(const uint8_t* p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

}  // namespace npy_detail

// Parse an .npy image held in memory; `file` names it in error messages.
inline NpyArray parse_npy(const std::vector<uint8_t>& data, const std::string& file) {
    static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (data.size() < 10 || std::memcmp(data.data(), kMagic, 6) != 0) throw Error(file + ": not an .npy file");
    const uint8_t major = data[6];
    if (major < 1 || major > 3) throw Error(file + ": unsupported .npy version " + std::to_string(major));
    const size_t len_bytes = major == 1 ? 2 : 4;
    const size_t prefix = 8 + len_bytes;
    if (data.size() < prefix) throw Error(file + ": truncated .npy header");
    const uint64_t header_len = npy_detail::read_le(data.data() + 8, len_bytes);
    if (header_len > data.size() - prefix) throw Error(file + ": .npy header length runs past the end of the file");
    const std::string header(reinterpret_cast<const char*>(data.data() + prefix), static_cast<size_t>(header_len));

    NpyArray a;
    std::string descr = npy_detail::dict_value(header, "descr", file);
    if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') || descr.back() != descr.front())
        throw Error(file + ": npy descr " + descr + " is not a string");
    a.descr = descr.substr(1, descr.size() - 2);
    if (a.descr != "<f4" && a.descr != "<i4" && a.descr != "<f2" && a.descr != "<u2" && a.descr != "|u1")
        throw Error(file + ": npy dtype " + a.descr + " is not supported (expected <f4, <i4, <f2, <u2 or |u1)");
    if (npy_detail::dict_value(header, "fortran_order", file).rfind("False", 0) != 0)
        throw Error(file + ": Fortran-ordered arrays are not supported");
    a.shape = npy_detail::parse_shape(npy_detail::dict_value(header, "shape", file), file);

    // Overflow-safe element count against the bytes actually present.
    const uint64_t available = data.size() - prefix - header_len;
    uint64_t count = 1;
    for (int64_t d : a.shape) {
        if (d != 0 && count > available / static_cast<uint64_t>(d)) throw Error(file + ": npy data is shorter than its shape");
        count *= static_cast<uint64_t>(d);
    }
    const uint64_t need = count * a.item_size();
    if (need > available) throw Error(file + ": npy data is shorter than its shape");
    const auto* begin = data.data() + prefix + header_len;
    a.bytes.assign(begin, begin + need);
    return a;
}

inline NpyArray load_npy(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(path + ": cannot open");
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return parse_npy(data, path);
}

}  // namespace mnemo::test
