// The CUDA backend's entry points in a build without CUDA (STALESIM_CUDA=OFF, or AUTO without
// nvcc): each says so and how to get a build with it (models/cuda/cuda_model.hpp).

#include "models/cuda/cuda_model.hpp"

namespace stalesim {
namespace {

constexpr const char* kNotBuilt =
    "this stalesim was built without CUDA (configure with -DSTALESIM_CUDA=ON, or the default AUTO, on a "
    "machine with the CUDA toolkit: nvcc and cuBLAS, e.g. in /usr/local/cuda)";

}  // namespace

bool cuda_built() { return false; }

std::string CudaDevice::describe() const { return name; }

std::optional<CudaDevice> find_cuda_device(std::string* why) {
  if (why != nullptr) *why = kNotBuilt;
  return std::nullopt;
}

CudaDevice require_cuda_device() { throw DeviceError(std::string("no CUDA device: ") + kNotBuilt); }

nlohmann::json cuda_manifest(bool measured) {
  return {{"backend", "cuda"},
          {"timing", measured ? "measured" : "modelled"},
          {"device", std::string("unavailable: ") + kNotBuilt},
          {"bit_reproducible", !measured},
          {"reproducible_with", measured ? "nothing: measured GPU times drive the virtual clock"
                                         : "the same build, GPU model, driver and cuBLAS"}};
}

namespace detail {
std::unique_ptr<Model> make_cuda_dense(const std::string& type, int64_t, int32_t, const std::vector<int64_t>&,
                                       bool) {
  throw DeviceError("compute.backend \"cuda\" (" + type + " model): " + kNotBuilt);
}
std::unique_ptr<Model> make_cuda_cnn(int64_t, int32_t, bool) {
  throw DeviceError(std::string("compute.backend \"cuda\" (cnn model): ") + kNotBuilt);
}
}  // namespace detail

}  // namespace stalesim
