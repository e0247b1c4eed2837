// Helpers of the whole-model tests: the module registries of the build, opening a test model,
// golden ids and the error measure the goldens are compared with.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
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

// A scratch copy of a model folder that a test may corrupt; removed when it goes out of scope.
class ModelCopy {
public:
    explicit ModelCopy(const std::string& from) {
        namespace fs = std::filesystem;
        static int counter = 0;
        dir_ = (fs::temp_directory_path() /
                ("mnemo-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
                   .string();
        fs::create_directories(dir_);
        for (const auto& e : fs::directory_iterator(from)) fs::copy(e.path(), dir_ + "/" + e.path().filename().string());
    }
    ~ModelCopy() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    ModelCopy(const ModelCopy&) = delete;
    ModelCopy& operator=(const ModelCopy&) = delete;

    const std::string& dir() const { return dir_; }
    std::string read(const std::string& file) const {
        std::ifstream in(dir_ + "/" + file, std::ios::binary);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    void write(const std::string& file, const std::string& text) const {
        std::ofstream(dir_ + "/" + file, std::ios::binary | std::ios::trunc) << text;
    }

    // Sets the value of a top-level config.json field (JSON text: a scalar, list or object),
    // adding the field when absent; an empty value removes it.
    void set_config(const std::string& key, const std::string& value) const {
        std::string cfg = read("config.json");
        const size_t at = cfg.find("\"" + key + "\"");
        if (at == std::string::npos) {
            if (!value.empty()) cfg.insert(cfg.find('{') + 1, "\n  \"" + key + "\": " + value + ",");
        } else {
            const size_t colon = cfg.find(':', at);
            size_t end = colon + 1;
            for (int depth = 0; end < cfg.size(); ++end) {  // the value ends at a top-level , or }
                const char c = cfg[end];
                if (c == '[' || c == '{') ++depth;
                if (c == ']' || c == '}') {
                    if (depth == 0) break;
                    --depth;
                }
                if (c == ',' && depth == 0) break;
            }
            if (value.empty() && cfg[end] == ',') {
                cfg.erase(at, end + 1 - at);
            } else if (value.empty()) {  // the last member: drop the comma before it instead
                const size_t comma = cfg.rfind(',', at);
                cfg.erase(comma, end - comma);
            } else {
                cfg.replace(colon + 1, end - colon - 1, " " + value);
            }
        }
        write("config.json", cfg);
    }

    // Rewrites model.safetensors with `edit` applied to every tensor and its bytes (false drops it).
    void rewrite_tensors(const std::function<bool(TensorToWrite&, std::vector<uint8_t>&)>& edit) const {
        std::vector<std::vector<uint8_t>> storage;
        std::vector<TensorToWrite> out;
        {
            Checkpoint ck = Checkpoint::open(dir_);
            for (const TensorView& t : ck.tensors()) {
                TensorToWrite w{t.name, t.dtype, t.shape, nullptr};
                std::vector<uint8_t> bytes(static_cast<const uint8_t*>(t.data),
                                           static_cast<const uint8_t*>(t.data) + t.nbytes);
                if (!edit(w, bytes)) continue;
                storage.push_back(std::move(bytes));
                out.push_back(w);
            }
        }
        for (size_t i = 0; i < out.size(); ++i) out[i].data = storage[i].data();
        write_safetensors(dir_ + "/model.safetensors", out);
    }

private:
    std::string dir_;
};

}  // namespace mnemo::test
