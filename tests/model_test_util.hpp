// Helpers of the whole-model tests: the module registries of the build, the tiny test models on
// disk, opening one, golden ids and the error measure the goldens are compared with. Scratch
// copies to break are in fixtures/model_copy.hpp, the errors they give in fixtures/load_errors.hpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "fixtures/model_copy.hpp"
#include "mnemo/error.hpp"
#include "mnemo/session/session.hpp"

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

// Every folder under tests/data/models with a config.json, sorted (default-model-golden only holds
// the goldens of assets/default-model).
inline std::vector<std::string> tiny_model_folders() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::string(MNEMO_TEST_DATA) + "/models", ec))
        if (std::filesystem::is_regular_file(e.path() / "config.json")) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A gtest name for a parameterised case from a model folder or label: every character that is not
// a letter or digit becomes '_' ("llama-tiny-f32" -> "llama_tiny_f32").
inline std::string param_name(std::string s) {
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}
inline std::string param_name_of(const ::testing::TestParamInfo<std::string>& info) { return param_name(info.param); }

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
