#include "models/device_profile.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stalesim {

// Defined in the file CMake generates from models/profiles/*.json.
const std::vector<std::string_view>& builtin_profile_texts();

namespace {

DeviceProfile parse_profile(std::string_view text) {
  const auto j = nlohmann::json::parse(text);
  DeviceProfile p;
  p.name = j.at("name").get<std::string>();
  p.description = j.at("description").get<std::string>();
  p.peak_fp32_tflops = j.at("peak_fp32_tflops").get<double>();
  p.peak_fp16_tflops = j.value("peak_fp16_tflops", 0.0);
  p.peak_bf16_tflops = j.value("peak_bf16_tflops", 0.0);
  p.memory_bandwidth_gbs = j.at("memory_bandwidth_gbs").get<double>();
  p.efficiency = j.at("efficiency").get<double>();
  p.overhead_us = j.at("overhead_us").get<double>();
  p.source = j.at("source").get<std::string>();
  if (!(p.peak_fp32_tflops > 0) || !(p.efficiency > 0 && p.efficiency <= 1) || !(p.overhead_us >= 0) ||
      !(p.peak_fp16_tflops >= 0) || !(p.peak_bf16_tflops >= 0) || p.source.empty())
    throw std::logic_error("built-in profile '" + p.name + "' has out-of-range figures");
  return p;
}

}  // namespace

double peak_tflops(const DeviceProfile& p, std::string_view precision) {
  if (precision == "fp16") return p.peak_fp16_tflops;
  if (precision == "bf16") return p.peak_bf16_tflops;
  return p.peak_fp32_tflops;
}

const std::vector<DeviceProfile>& builtin_profiles() {
  static const std::vector<DeviceProfile> profiles = [] {
    std::vector<DeviceProfile> v;
    for (auto text : builtin_profile_texts()) v.push_back(parse_profile(text));
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return v;
  }();
  return profiles;
}

std::optional<DeviceProfile> find_profile(std::string_view name) {
  for (const auto& p : builtin_profiles())
    if (p.name == name) return p;
  return std::nullopt;
}

}  // namespace stalesim
