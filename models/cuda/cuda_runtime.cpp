// The local GPU as `stalesim calibrate` and the manifest describe it (models/cuda/cuda_model.hpp).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "models/cuda/cublas_api.hpp"
#include "models/cuda/cuda_model.hpp"

namespace stalesim {
namespace {

// FP32 lanes (CUDA cores) per SM by compute capability, from the CUDA C++ Programming Guide's
// "Arithmetic Instructions" throughput table (32-bit floating-point add, multiply, multiply-add
// results per clock cycle per multiprocessor). 0 = not in the table.
int fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 3:
      return 192;  // Kepler
    case 5:
      return 128;  // Maxwell
    case 6:
      return minor == 0 ? 64 : 128;  // Pascal: GP100 64, GP10x 128
    case 7:
      return 64;  // Volta, Turing
    case 8:
      return minor == 0 ? 64 : 128;  // Ampere: GA100 64; GA10x, Ada 128
    case 9:
      return 128;  // Hopper
    case 10:
      return 128;  // Blackwell (data centre)
    case 11:
      return 128;  // Jetson Thor
    case 12:
      return 128;  // Blackwell (GeForce, workstation)
    default:
      return 0;
  }
}

std::string version_text(int v) {  // 13000 -> "13.0", 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

bool cuda_built() { return true; }

std::string CudaDevice::describe() const {
  return name + " (sm_" + std::to_string(cc_major) + std::to_string(cc_minor) + ", " +
         std::to_string(sm_count) + " SMs, " + std::to_string(static_cast<int>(clock_mhz + 0.5)) +
         " MHz); driver " + version_text(driver_version) + ", runtime " + version_text(runtime_version) +
         ", cuBLAS " + std::to_string(cublas_version / 10000) + "." +
         std::to_string((cublas_version / 100) % 100) + "." + std::to_string(cublas_version % 100);
}

std::optional<CudaDevice> find_cuda_device(std::string* why) {
  auto fail = [why](std::string text) {
    if (why != nullptr) *why = std::move(text);
    return std::nullopt;
  };
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it for later calls
    std::string hint;
    if (e == cudaErrorInsufficientDriver)
      hint = " (no NVIDIA driver is loaded, or it is older than this CUDA runtime)";
    if (e == cudaErrorNoDevice)
      hint = " (no NVIDIA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    return fail(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + hint);
  }
  if (count == 0)
    return fail("cudaGetDeviceCount found no device (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  CudaDevice d;
  if (cudaGetDevice(&d.index) != cudaSuccess) return fail("cudaGetDevice failed");
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, d.index); e != cudaSuccess)
    return fail(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  int clock_khz = 0, mem_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d.index);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, d.index);
  d.clock_mhz = clock_khz / 1e3;
  d.fp32_lanes_per_sm = fp32_lanes_per_sm(d.cc_major, d.cc_minor);
  if (d.fp32_lanes_per_sm == 0) {
    d.lanes_known = false;
    d.fp32_lanes_per_sm = 128;
  }
  d.peak_fp32_tflops = static_cast<double>(d.sm_count) * d.fp32_lanes_per_sm * 2.0 * (clock_khz * 1e3) / 1e12;
  d.memory_bandwidth_gbs = 2.0 * (mem_khz * 1e3) * prop.memoryBusWidth / 8.0 / 1e9;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  const char* blas_why = "";
  const cuda::CublasApi* blas = cuda::cublas(&blas_why);
  if (blas == nullptr) return fail(blas_why);
  int major = 0, minor = 0, patch = 0;
  blas->get_property(MAJOR_VERSION, &major);
  blas->get_property(MINOR_VERSION, &minor);
  blas->get_property(PATCH_LEVEL, &patch);
  d.cublas_version = major * 10000 + minor * 100 + patch;
  return d;
}

CudaDevice require_cuda_device() {
  std::string why;
  auto d = find_cuda_device(&why);
  if (!d) throw DeviceError("no CUDA device: " + why);
  return *d;
}

nlohmann::json cuda_manifest(bool measured) {
  std::string why;
  const auto d = find_cuda_device(&why);
  return {{"backend", "cuda"},
          {"timing", measured ? "measured" : "modelled"},
          {"device", d ? d->describe() : "unavailable: " + why},
          {"bit_reproducible", !measured},
          {"reproducible_with", measured ? "nothing: measured GPU times drive the virtual clock"
                                         : "the same build, GPU model, driver and cuBLAS"}};
}

}  // namespace stalesim
