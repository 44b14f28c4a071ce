#pragma once
// Device profiles (DESIGN.md section 3): what a simulated worker's device can do. They are data:
// the built-in ones are models/profiles/*.json, compiled into the binary at build time so that a
// run does not depend on the working directory; a scenario may also name a profile file of the
// same format (written by hand or by `stalesim calibrate`), loaded at run time (load_profile_file).

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.hpp"

namespace stalesim {

struct DeviceProfile {
  std::string name;                   // e.g. "gtx1060"; the key scenarios use
  std::string description;            // e.g. "NVIDIA GeForce GTX 1060 6GB (Pascal GP106)"
  double peak_fp32_tflops = 0.0;      // peak FP32 throughput, TFLOP/s
  double peak_fp16_tflops = 0.0;      // peak FP16 (Tensor Core, dense) TFLOP/s; 0 = not offered
  double peak_bf16_tflops = 0.0;      // peak BF16 (Tensor Core, dense) TFLOP/s; 0 = not offered
  double memory_bandwidth_gbs = 0.0;  // GB/s
  double efficiency = 0.0;            // fraction of peak that training kernels sustain, (0, 1]
  double overhead_us = 0.0;           // fixed per-iteration cost (launches, framework), microseconds
  std::string source;                 // where the figures come from
  bool operator==(const DeviceProfile&) const = default;
};

// A profile that breaks the format: `field` is the JSON pointer of the offending key ("/efficiency",
// "" for the document); what() is "<field>: <problem>", after "<file>: " when read from a file.
class ProfileError : public std::runtime_error {
 public:
  ProfileError(std::string field, const std::string& message)
      : std::runtime_error(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// The keys of a profile document in the order files list them; name, description,
// peak_fp32_tflops, memory_bandwidth_gbs, efficiency, overhead_us and source are required.
const std::vector<std::string_view>& profile_keys();
// The first figure out of range, as a ProfileError naming its key, or nothing:
// name non-empty, peak_fp32_tflops > 0, peak_fp16/bf16_tflops >= 0, memory_bandwidth_gbs >= 0,
// efficiency in (0, 1], overhead_us >= 0, source non-empty (a profile says where it comes from).
std::optional<ProfileError> profile_problem(const DeviceProfile& p);
// Parses a profile document strictly (unknown keys, missing keys, wrong types and out-of-range
// figures are ProfileErrors naming the key).
DeviceProfile profile_from_json(const nlohmann::json& j);
// Reads and parses a profile file; every error (unreadable, invalid JSON, bad field) is a
// ProfileError whose message starts with the path.
DeviceProfile load_profile_file(const std::string& path);
// The profile as a document profile_from_json reads back (fp16/bf16 left out when 0).
nlohmann::ordered_json profile_to_json(const DeviceProfile& p);

// A worker group's precision (cluster.workers[i].precision): which peak times its compute.
enum class Precision { kFp32, kFp16, kBf16 };
STALESIM_ENUM_NAMES(Precision, {Precision::kFp32, "fp32"}, {Precision::kFp16, "fp16"},
                    {Precision::kBf16, "bf16"})

// Peak TFLOP/s at `precision`; 0 when the device does not offer it.
double peak_tflops(const DeviceProfile& p, Precision precision);

// All built-in profiles, sorted by name.
const std::vector<DeviceProfile>& builtin_profiles();
// The built-in profile named `name`, or nullopt.
std::optional<DeviceProfile> find_profile(std::string_view name);

}  // namespace stalesim
