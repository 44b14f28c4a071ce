#pragma once
// Private to models/cuda/: cuBLAS, loaded with dlopen the first time the CUDA backend needs it.
// Linking libcublas (and with it the 540 MB libcublasLt) made every start of a CUDA build of
// stalesim cost about 0.4 s of CPU and 0.65 s of wall time (relocating and initializing them),
// CPU runs and `stalesim version` included; loaded on demand, only GPU runs pay it, once.

#include <cublas_v2.h>

namespace stalesim::cuda {

// The cuBLAS functions the CUDA backend calls.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
};

// cuBLAS, loaded on the first call (thread-safe; never unloaded): libcublas.so.<major of the
// headers built against> from the loader's search path, else from the toolkit found at build
// time. nullptr when it cannot be loaded, with the reason in *why.
const CublasApi* cublas(const char** why = nullptr);

}  // namespace stalesim::cuda
