// Helpers of the whole-model tests: the module registries of the build, opening a test model,
// golden ids and the error measure the goldens are compared with.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/session.hpp"

namespace mnemo::test {

inline const BackendRegistry& backends() {
    static BackendRegistry r({MNEMO_BUILD_BIN});
    return r;
}
inline const PluginRegistry& plugins() {
    static PluginRegistry r({MNEMO_BUILD_BIN});
    return r;
}

inline std::string model_dir(const std::string& name) { return std::string(MNEMO_TEST_DATA) + "/models/" + name; }

inline std::unique_ptr<Session> open_model(const std::string& dir, int32_t n_ctx = 64, int32_t n_seq = 1, int32_t ubatch = 256) {
    SessionOptions o;
    o.model_dir = dir;
    o.n_ctx = n_ctx;
    o.n_seq = n_seq;
    o.n_ubatch = ubatch;
    o.n_threads = 2;
    o.backends = &backends();
    o.plugins = &plugins();
    return Session::open(o);
}

inline std::vector<int32_t> read_ids(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read " + path);
    std::vector<int32_t> ids;
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty() && item != "\n") ids.push_back(std::stoi(item));
    return ids;
}

// max |a - b| relative to the largest reference magnitude.
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
    }
    return scale > 0 ? diff / scale : diff;
}

inline bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

}  // namespace mnemo::test
