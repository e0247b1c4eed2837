#include "blas.hpp"

#include <dlfcn.h>

#include <mutex>

namespace mnemo_cuda {

namespace {
Blas g_blas;
bool g_ok = false;
std::string g_why;
std::once_flag g_once;

template <class F>
bool resolve(void* lib, const char* name, F* out) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    if (!*out) g_why = std::string("cuBLAS lacks ") + name;
    return *out != nullptr;
}

void load() {
    // The soname of the toolkit we compiled against first, then the unversioned development name.
    const std::string versioned = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = nullptr;
    for (const std::string& name : {versioned, std::string("libcublas.so")}) {
        lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            g_blas.library = name;
            break;
        }
    }
    if (!lib) {
        g_why = "cuBLAS (" + versioned + ") is not installed; prefill GEMMs use Mnemo's own kernel";
        return;
    }
    g_ok = resolve(lib, "cublasCreate_v2", &g_blas.create) && resolve(lib, "cublasDestroy_v2", &g_blas.destroy) &&
           resolve(lib, "cublasSetStream_v2", &g_blas.set_stream) &&
           resolve(lib, "cublasSetWorkspace_v2", &g_blas.set_workspace) &&
           resolve(lib, "cublasSetMathMode", &g_blas.set_math_mode) && resolve(lib, "cublasSgemm_v2", &g_blas.sgemm);
}
}  // namespace

const Blas* load_blas(std::string* why) {
    std::call_once(g_once, load);
    if (!g_ok && why) *why = g_why;
    return g_ok ? &g_blas : nullptr;
}

}  // namespace mnemo_cuda
