// mnemo-test-ops: the conformance harness as a command-line tool.
//
//   mnemo-test-ops [test]    [-b BACKEND] [-o OP] [-c SUBSTRING]   every case vs the reference implementation
//   mnemo-test-ops support   [--markdown FILE]                     op x backend support matrix
//   mnemo-test-ops perf      [-b BACKEND] [-o OP] [-r REPEATS] [--json]   time per case
//
// `support --markdown docs/ops.md` writes the project's support matrix: one row per op, one
// column per backend module found (its first device), each cell "cases passed / cases" — a case
// counts only when the backend supports it AND its output matches the reference implementation.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "mnemo/ops/op_table.hpp"

namespace {

using namespace mnemo::conformance;

struct Options {
    std::string mode = "test";
    std::string backend, op, contains, markdown;
    int repeats = 20;
    bool json = false;
};

int usage(const char* why) {
    if (why) std::cerr << "mnemo-test-ops: " << why << "\n";
    std::cerr << "usage: mnemo-test-ops [test|support|perf] [-b BACKEND] [-o OP] [-c SUBSTRING] [-r REPEATS]\n"
                 "                      [--markdown FILE] [--json]\n";
    return 2;
}

bool selected(const Options& o, const OpCase& c) {
    if (!o.op.empty() && o.op != mnemo::op_info(c.op).name) return false;
    return o.contains.empty() || c.name.find(o.contains) != std::string::npos;
}

struct Device {
    const mnemo::BackendModule* module;
    int32_t index;
    std::string label;  // "vulkan0"
    std::string name;   // device name
};

std::vector<Device> devices(const Options& o, std::vector<std::string>& without) {
    std::vector<Device> out;
    for (const mnemo::BackendModule& m : harness_registry(MNEMO_BUILD_BIN).modules()) {
        if (!o.backend.empty() && m.name != o.backend) continue;
        const int32_t n = m.api->device_count();
        if (n <= 0) without.push_back(m.name);
        for (int32_t d = 0; d < n; ++d) {
            mnemo_device_info info{};
            m.api->device_info(d, &info);
            out.push_back({&m, d, m.name + std::to_string(d), info.name});
        }
    }
    return out;
}

int run_test(const Options& o) {
    std::vector<std::string> without;
    int failed = 0, passed = 0, unsupported = 0;
    for (const Device& d : devices(o, without)) {
        void* ctx = open_context(d.module->api, d.index);
        std::cout << "== " << d.label << " (" << d.name << ")\n";
        for (const OpCase& c : all_op_cases()) {
            if (!selected(o, c)) continue;
            const CaseResult r = run_case(d.module->api, ctx, c);
            if (r.outcome == Outcome::Unsupported) {
                ++unsupported;
                std::cout << "  not supported  " << c.name << "\n";
            } else if (r.outcome == Outcome::Fail) {
                ++failed;
                std::cout << "  FAIL  " << c.name << "\n";
                for (const std::string& f : r.failures) std::cout << "        " << f << "\n";
            } else {
                ++passed;
                std::cout << "  ok    " << c.name << "  nmse " << r.nmse << "\n";
            }
        }
    }
    for (const std::string& b : without) std::cout << "== " << b << ": no devices (skipped)\n";
    std::cout << passed << " passed, " << failed << " failed, " << unsupported << " not supported\n";
    return failed ? 1 : 0;
}

int run_support(const Options& o) {
    std::vector<std::string> without;
    const std::vector<Device> all = devices(o, without);
    // One column per backend module: its first device.
    std::vector<Device> cols;
    for (const Device& d : all)
        if (d.index == 0) cols.push_back(d);
    std::map<int32_t, std::vector<std::pair<int, int>>> cells;  // op -> per column (passed, cases)
    std::map<int32_t, std::vector<std::string>> notes;
    std::map<int32_t, std::set<int32_t>> dtypes;  // op -> dtypes of its cases' inputs
    // Block-quantized inputs: (op, dtype) -> the bound, and per column the worst NMSE measured and
    // how many cases the backend refused.
    struct Quantized {
        double bound = 1e300;          // the type's bound: the tightest of its cases'
        std::vector<double> worst;     // largest NMSE
        std::vector<double> margin;    // largest NMSE / its case's bound
        std::vector<int> refused;
        std::string reason;
    };
    std::map<std::pair<int32_t, int32_t>, Quantized> quantized;
    for (size_t k = 0; k < cols.size(); ++k) {
        void* ctx = open_context(cols[k].module->api, cols[k].index);
        for (const OpCase& c : all_op_cases()) {
            if (!selected(o, c)) continue;
            auto& row = cells[c.op];
            row.resize(cols.size());
            ++row[k].second;
            for (const InputSpec& in : c.inputs) dtypes[c.op].insert(static_cast<int32_t>(in.dtype));
            const CaseResult r = run_case(cols[k].module->api, ctx, c);
            if (r.outcome == Outcome::Pass) ++row[k].first;
            if (const std::optional<mnemo::DType> q = quantized_input_dtype(c)) {
                Quantized& qs = quantized[{c.op, static_cast<int32_t>(*q)}];
                qs.worst.resize(cols.size(), -1.0);
                qs.margin.resize(cols.size(), 0.0);
                qs.refused.resize(cols.size(), 0);
                qs.bound = std::min(qs.bound, c.max_nmse);
                if (r.outcome == Outcome::Pass) {
                    qs.worst[k] = std::max(qs.worst[k], r.nmse);
                    qs.margin[k] = std::max(qs.margin[k], r.nmse / c.max_nmse);
                }
                if (r.outcome == Outcome::Unsupported) {
                    ++qs.refused[k];
                    if (qs.reason.empty()) qs.reason = cols[k].label + ": " + r.unsupported;
                    continue;  // summarised per dtype below, not listed case by case
                }
            }
            if (r.outcome != Outcome::Pass)
                notes[c.op].push_back(cols[k].label + ": " + c.name + (r.outcome == Outcome::Unsupported ? " not supported" : " fails"));
        }
    }
    std::ostringstream md;
    md << "# Op support matrix\n\n"
       << "Generated by `build/bin/mnemo-test-ops support --markdown docs/ops.md`; do not edit by hand.\n"
       << "Each cell: conformance cases (tests/conformance/op_cases*.hpp) that the backend supports and\n"
       << "computes like the reference implementation (NMSE, NaN/Inf, guard bytes; integer outputs exact) / cases.\n"
       << "The dtypes are those of the cases' inputs (weights in f32/f16/bf16 or block-quantized; i32 indices).\n\n| op | dtypes |";
    for (const Device& d : cols) md << " " << d.module->name << " |";
    for (const std::string& b : without) md << " " << b << " |";
    md << "\n|---|---|";
    for (size_t i = 0; i < cols.size() + without.size(); ++i) md << "---|";
    md << "\n";
    for (int32_t op = 1; op < MNEMO_OP_COUNT_; ++op) {
        if (!cells.count(op)) continue;
        std::string names;
        for (int32_t dt : dtypes[op]) names += (names.empty() ? "" : ", ") + std::string(mnemo::dtype_name(static_cast<mnemo::DType>(dt)));
        md << "| `" << mnemo::op_info(op).name << "` | " << names << " |";
        for (const auto& [pass, total] : cells[op])
            md << " " << (pass == total ? "✅" : pass > 0 ? "🟡" : "❌") << " " << pass << "/" << total << " |";
        for (size_t i = 0; i < without.size(); ++i) md << " no device |";
        md << "\n";
    }
    md << "\nDevices:";
    for (const Device& d : cols) md << " " << d.module->name << " = " << d.name << ";";
    for (const std::string& b : without) md << " " << b << " = module built, no device found;";
    md << "\n";
    if (!quantized.empty()) {
        md << "\n## Block-quantized weights\n\n"
           << "Largest NMSE against the reference implementation (which dequantizes exactly and sums in double) over each\n"
           << "op's cases with that weight type, and in brackets the largest share of its case's bound any case used. The\n"
           << "bound is the type's (tests/conformance/op_cases_matmul.hpp explains it; cases of fewer than 32 outputs allow\n"
           << "10x); \"refused\" counts the cases a backend does not run yet.\n\n"
           << "| op | dtype | bound |";
        for (const Device& d : cols) md << " " << d.module->name << " |";
        md << "\n|---|---|---|";
        for (size_t i = 0; i < cols.size(); ++i) md << "---|";
        md << "\n";
        std::vector<std::string> reasons;
        for (const auto& [key, q] : quantized) {
            char bound[32];
            std::snprintf(bound, sizeof bound, "%.2g", q.bound);
            md << "| `" << mnemo::op_info(key.first).name << "` | " << mnemo::dtype_name(static_cast<mnemo::DType>(key.second)) << " | "
               << (q.bound < 1e-300 ? std::string("exact") : std::string(bound)) << " |";
            for (size_t k = 0; k < cols.size(); ++k) {
                char worst[64];
                std::snprintf(worst, sizeof worst, "%.2g (%.0f %%)", q.worst[k], 100.0 * q.margin[k]);
                if (q.refused[k] > 0) md << " refused (" << q.refused[k] << ") |";
                else md << " " << (q.worst[k] < 0 ? std::string("fails") : q.worst[k] == 0.0 ? std::string("0") : std::string(worst)) << " |";
            }
            md << "\n";
            if (!q.reason.empty() && std::find(reasons.begin(), reasons.end(), q.reason) == reasons.end()) reasons.push_back(q.reason);
        }
        if (!reasons.empty()) {
            md << "\nWhy refused (one case each):\n\n";
            for (const std::string& r : reasons) md << "- " << r << "\n";
        }
        md << "\nThe CPU column is its default kernels (AVX2, with the AVX-512 prefill GEMM and AVX-512 VNNI where the\n"
           << "CPU has them); ctest also runs every case on the plain AVX2 kernels (`cpu_avx2.conformance`,\n"
           << "`MNEMO_CPU_ISA=avx2`) and on the portable kernels (`cpu_scalar.conformance`), where a quantized\n"
           << "matmul stays near 1e-12; the quantized matmuls once more without the VNNI tiles of eight W rows\n"
           << "(`cpu_vnni_rows.conformance`, `MNEMO_CPU_TILES=0`).\n";
    }
    bool any_note = false;
    for (const auto& [op, list] : notes)
        for (const std::string& n : list) {
            if (!any_note) md << "\nCases not passing:\n\n";
            any_note = true;
            md << "- `" << mnemo::op_info(op).name << "` " << n << "\n";
        }
    if (o.markdown.empty()) {
        std::cout << md.str();
        return 0;
    }
    const std::string tmp = o.markdown + ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << md.str();
        if (!f.good()) return usage(("cannot write " + tmp).c_str());
    }
    if (std::rename(tmp.c_str(), o.markdown.c_str()) != 0) return usage(("cannot replace " + o.markdown).c_str());
    std::cout << "wrote " << o.markdown << "\n";
    return 0;
}

int run_perf(const Options& o) {
    std::vector<std::string> without;
    bool first = true;
    if (o.json) std::cout << "[\n";
    for (const Device& d : devices(o, without)) {
        void* ctx = open_context(d.module->api, d.index);
        for (const OpCase& c : all_op_cases()) {
            if (!selected(o, c)) continue;
            const CaseResult r = run_case(d.module->api, ctx, c, o.repeats);
            if (r.outcome != Outcome::Pass || r.run_ns <= 0.0) continue;  // in-place ops are not re-run
            if (o.json) {
                std::cout << (first ? "" : ",\n") << "  {\"device\": \"" << d.label << "\", \"case\": \"" << c.name
                          << "\", \"op\": \"" << mnemo::op_info(c.op).name << "\", \"us\": " << r.run_ns / 1000.0 << "}";
            } else {
                std::printf("%-10s %-56s %12.1f us\n", d.label.c_str(), c.name.c_str(), r.run_ns / 1000.0);
            }
            first = false;
        }
    }
    if (o.json) std::cout << "\n]\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    int i = 1;
    if (i < argc && argv[i][0] != '-') o.mode = argv[i++];
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string r;
        if (a == "-b" || a == "--backend") { if (!value(o.backend)) return usage("-b needs a backend name"); }
        else if (a == "-o" || a == "--op") { if (!value(o.op)) return usage("-o needs an op name"); }
        else if (a == "-c" || a == "--case") { if (!value(o.contains)) return usage("-c needs a substring"); }
        else if (a == "--markdown") { if (!value(o.markdown)) return usage("--markdown needs a file"); }
        else if (a == "-r" || a == "--repeats") {
            if (!value(r)) return usage("-r needs a count");
            o.repeats = std::max(2, std::atoi(r.c_str()));
        } else if (a == "--json") o.json = true;
        else if (a == "-h" || a == "--help") return usage(nullptr), 0;
        else return usage(("unknown argument '" + a + "'").c_str());
    }
    if (!o.op.empty() && !mnemo::op_from_name(o.op)) return usage(("unknown op '" + o.op + "'").c_str());
    try {
        if (o.mode == "test") return run_test(o);
        if (o.mode == "support") return run_support(o);
        if (o.mode == "perf") return run_perf(o);
    } catch (const std::exception& e) {
        std::cerr << "mnemo-test-ops: " << e.what() << "\n";
        return 1;
    }
    return usage(("unknown mode '" + o.mode + "'").c_str());
}
