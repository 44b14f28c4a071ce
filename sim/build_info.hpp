#pragma once
// What the build is, for manifests (DESIGN.md section 2, rule 6), and the pinning of Eigen's
// cache-size-dependent GEMM blocking (rule 3).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace stalesim {

struct BuildInfo {
  std::string version;       // stalesim version
  std::string git_revision;  // at build time, "-dirty" when uncommitted changes; or "unknown"
  std::string compiler;
  std::string build_type;
  std::string flags;
  std::string isa;  // -march level
  std::string eigen_version;
  int64_t eigen_l1 = 0, eigen_l2 = 0, eigen_l3 = 0;  // pinned cache sizes, bytes
  bool operator==(const BuildInfo&) const = default;
};

const BuildInfo& build_info();
nlohmann::json build_info_json();

// Sets Eigen's cache sizes to fixed values so GEMM blocking, and with it the summation order,
// is the same on every machine. Call before any run; idempotent.
void pin_eigen_cache_sizes();

}  // namespace stalesim
