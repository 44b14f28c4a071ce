#pragma once
// The CUDA backend (compute.backend "cuda", issue 12): the softmax, MLP and CNN models on the local
// NVIDIA GPU behind the Model interface, and what `stalesim calibrate` needs to know about the
// device. Compiled in when CMake finds nvcc and cuBLAS (STALESIM_CUDA=AUTO, the default) or is
// told to (STALESIM_CUDA=ON); without it (models/cuda/cuda_stub.cpp) the entry points below say
// that the build has no CUDA and how to get one. cuBLAS is loaded on first use (cublas_api.hpp).
//
// Numerics (models/cuda/cuda_mlp.cpp, cuda_cnn.cpp and cuda_classifier.cpp): the parameter layout
// and init are the CPU model's (init runs on the CPU with our Rng, so initial parameters are
// bit-identical); GEMMs are cuBLAS SGEMM in pedantic math mode (plain FP32: no TF32, no BF16x9
// emulation) with atomics disallowed; bias add, ReLU and its mask, softmax cross-entropy and the
// bias gradients are small kernels whose sums run in a fixed order; per-sample losses are summed on
// the host in column order, in double, as on the CPU. No float atomics anywhere, so one GPU model,
// driver and build give bit-identical results run after run. One call's results differ from the CPU
// model's in the last bits (the GEMMs sum in another order), about 1e-6 relative; over thousands of
// SGD steps the two trajectories drift further apart, as any change of summation order makes them.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.hpp"

namespace stalesim {

// The GPU cannot be used: the build has no CUDA, there is no device or driver, or a CUDA call
// failed. what() says which and what to do, e.g. "no CUDA device: cudaGetDeviceCount: no
// CUDA-capable device is detected".
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when this build has the CUDA backend.
bool cuda_built();

// The local GPU (the current CUDA device, 0 unless CUDA_VISIBLE_DEVICES says otherwise).
struct CudaDevice {
  int index = 0;
  std::string name;                   // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;     // compute capability
  int sm_count = 0;                   // multiprocessors
  int fp32_lanes_per_sm = 0;          // FP32 cores per SM for the compute capability
  bool lanes_known = true;            // false: an architecture the table lacks (128 assumed)
  double clock_mhz = 0.0;             // peak SM clock (cudaDevAttrClockRate)
  double peak_fp32_tflops = 0.0;      // sm_count x fp32_lanes_per_sm x 2 FLOP x clock
  double memory_bandwidth_gbs = 0.0;  // memory clock x 2 (double data rate) x bus width / 8
  int driver_version = 0;             // e.g. 13000 for 13.0
  int runtime_version = 0;
  int cublas_version = 0;  // e.g. 130001
  // "NVIDIA H200 (sm_90, 132 SMs, 1980 MHz); driver 13.0, runtime 13.0, cuBLAS 13.0.1"
  std::string describe() const;
};

// The local GPU, or nullopt with the reason in *why ("this stalesim was built without CUDA ...",
// "cudaGetDeviceCount: ...", "no CUDA device").
std::optional<CudaDevice> find_cuda_device(std::string* why = nullptr);
// The local GPU; throws DeviceError("no CUDA device: <why>") when there is none.
CudaDevice require_cuda_device();

// The manifest's "compute" object of a run on the cuda backend: {"backend": "cuda", "timing",
// "device": CudaDevice::describe() (or "unavailable: <why>"), "bit_reproducible": false when
// `measured` (GPU times drive the virtual clock), "reproducible_with": what a rerun needs}.
nlohmann::json cuda_manifest(bool measured);

namespace detail {
// The "softmax" (no hidden layer) or "mlp" model on the GPU. REQUIRES: sizes validated by
// make_model. Throws DeviceError when the build has no CUDA or there is no usable GPU.
// he_init: He (true) or Glorot (false) initialization, as detail::WeightInit.
std::unique_ptr<Model> make_cuda_dense(const std::string& type, int64_t features, int32_t classes,
                                       const std::vector<int64_t>& hidden, bool he_init);
// The "cnn" model (models/cnn.hpp) on the GPU: im2col kernels and cuBLAS SGEMMs for the
// convolutions, pooling kernels, the dense layers as the MLP's. REQUIRES: sizes validated by
// make_model. Throws DeviceError when the build has no CUDA or there is no usable GPU.
std::unique_ptr<Model> make_cuda_cnn(int64_t features, int32_t classes, bool he_init);
}  // namespace detail

}  // namespace stalesim
