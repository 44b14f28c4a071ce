#pragma once
// Private to models/cuda/: what the CUDA models share: error checks that throw DeviceError,
// cuBLAS loaded on first use, grown-on-demand device and pinned host buffers, and the stream,
// events and cuBLAS handle of one model.

#include <cstdint>
#include <string>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "models/cuda/cublas_api.hpp"
#include "models/cuda/cuda_model.hpp"

namespace stalesim::detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DeviceError(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

// cuBLAS, loaded on first use (models/cuda/cublas_api.hpp).
inline const cuda::CublasApi& blas() {
  const char* why = "";
  const cuda::CublasApi* api = cuda::cublas(&why);
  if (api == nullptr) throw DeviceError(std::string("no CUDA device: ") + why);
  return *api;
}

inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("cuBLAS: ") + what + ": " + blas().status_string(s));
}

// A device or pinned host allocation of T, grown on demand (never shrunk, contents not kept).
template <class T, bool kPinned>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), capacity_(std::exchange(o.capacity_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }
  ~Buffer() { release(); }
  void reserve(int64_t count, const char* what) {
    if (count <= capacity_) return;
    release();
    void* p = nullptr;
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    check(kPinned ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes), what);
    data_ = static_cast<T*>(p);
    capacity_ = count;
  }
  T* data() const { return data_; }

 private:
  void release() {
    if (data_ != nullptr) kPinned ? cudaFreeHost(data_) : cudaFree(data_);  // errors ignored: teardown
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  int64_t capacity_ = 0;
};
template <class T>
using DeviceBuffer = Buffer<T, false>;
template <class T>
using HostBuffer = Buffer<T, true>;

// The stream, events and cuBLAS handle of one model. Declare it before the model's buffers, so
// that it is destroyed after them (members are destroyed in reverse order), also when a
// constructor throws half-way.
struct CudaContext {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t handle = nullptr;
  CudaContext() = default;
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  ~CudaContext() {  // errors cannot be reported here
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (handle != nullptr) blas().destroy(handle);
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

}  // namespace stalesim::detail
