// cuBLAS loaded on demand (models/cuda/cublas_api.hpp).

#include "models/cuda/cublas_api.hpp"

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace stalesim::cuda {
namespace {

struct Loaded {
  CublasApi api;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::string candidates[] = {soname, "", ""};
#ifdef STALESIM_CUBLAS_LIBRARY  // the toolkit's libcublas.so found at build time
  const std::string built = STALESIM_CUBLAS_LIBRARY;
  candidates[1] = built.substr(0, built.rfind('/') + 1) + soname;
  candidates[2] = built;
#endif
  void* lib = nullptr;
  std::string errors;
  for (const auto& path : candidates) {
    if (path.empty()) continue;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : path.c_str());
  }
  if (lib == nullptr) {
    l.why = "cannot load cuBLAS (" + errors + "); add the CUDA toolkit's lib64 folder to LD_LIBRARY_PATH";
    return l;
  }
  bool missing = false;
  const auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr) {
      l.why += (l.why.empty() ? "cuBLAS lacks " : ", ") + std::string(name);
      missing = true;
    }
  };
  bind(l.api.create, "cublasCreate_v2");
  bind(l.api.destroy, "cublasDestroy_v2");
  bind(l.api.set_stream, "cublasSetStream_v2");
  bind(l.api.set_math_mode, "cublasSetMathMode");
  bind(l.api.set_atomics_mode, "cublasSetAtomicsMode");
  bind(l.api.set_pointer_mode, "cublasSetPointerMode_v2");
  bind(l.api.sgemm, "cublasSgemm_v2");
  bind(l.api.status_string, "cublasGetStatusString");
  bind(l.api.get_property, "cublasGetProperty");
  l.ok = !missing;
  return l;
}

}  // namespace

const CublasApi* cublas(const char** why) {
  static const Loaded loaded = load();
  if (!loaded.ok && why != nullptr) *why = loaded.why.c_str();
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace stalesim::cuda
