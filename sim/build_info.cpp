#include "sim/build_info.hpp"

#include <Eigen/Core>

namespace stalesim {

const char* git_revision();  // generated at build time

namespace {
// Fixed, typical x86-64 sizes. Changing them changes results: it breaks recorded hashes.
constexpr std::ptrdiff_t kL1 = 32 * 1024;
constexpr std::ptrdiff_t kL2 = 1024 * 1024;
constexpr std::ptrdiff_t kL3 = 8 * 1024 * 1024;
}  // namespace

const BuildInfo& build_info() {
  static const BuildInfo info{STALESIM_VERSION,
                              git_revision(),
                              STALESIM_COMPILER,
                              STALESIM_BUILD_TYPE,
                              STALESIM_CXX_FLAGS,
                              STALESIM_ISA,
                              std::to_string(EIGEN_WORLD_VERSION) + "." +
                                  std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                  std::to_string(EIGEN_MINOR_VERSION),
                              kL1,
                              kL2,
                              kL3};
  return info;
}

nlohmann::json build_info_json() {
  const auto& b = build_info();
  return {{"stalesim_version", b.version},
          {"git_revision", b.git_revision},
          {"compiler", b.compiler},
          {"build_type", b.build_type},
          {"flags", b.flags},
          {"isa", b.isa},
          {"eigen", {{"version", b.eigen_version}, {"cache_sizes", {b.eigen_l1, b.eigen_l2, b.eigen_l3}}}}};
}

void pin_eigen_cache_sizes() { Eigen::setCpuCacheSizes(kL1, kL2, kL3); }

}  // namespace stalesim
