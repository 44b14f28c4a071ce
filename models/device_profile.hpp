#pragma once
// Device profiles (design.md section 3): what a simulated worker's device can do. They are data,
// in models/profiles/*.json, compiled into the binary at build time so that a run does not
// depend on the working directory.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Peak TFLOP/s at `precision` ("fp32", "fp16", "bf16"); 0 when the device does not offer it.
double peak_tflops(const DeviceProfile& p, std::string_view precision);

// All built-in profiles, sorted by name.
const std::vector<DeviceProfile>& builtin_profiles();
// The profile named `name`, or nullopt.
std::optional<DeviceProfile> find_profile(std::string_view name);

}  // namespace stalesim
