#include "models/device_profile.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <cstdio>

#include "base/file_read.hpp"
#include "models/profile_calibration.hpp"

namespace stalesim {

// Defined in the file CMake generates from models/profiles/*.json.
const std::vector<std::string_view>& builtin_profile_texts();

namespace {

struct Key {
  std::string_view name;
  bool number;
  bool required;
};
constexpr Key kKeys[] = {
    {"name", false, true},
    {"description", false, true},
    {"peak_fp32_tflops", true, true},
    {"peak_fp16_tflops", true, false},
    {"peak_bf16_tflops", true, false},
    {"memory_bandwidth_gbs", true, true},
    {"efficiency", true, true},
    {"overhead_us", true, true},
    {"source", false, true},
    {"calibration", false, false},   // published figures (models/profile_calibration.hpp); checked there
    {"derived_from", false, false},  // a calibrated built-in whose efficiency and overhead this one takes
};

ProfileError at(const std::string& field, const std::string& problem) {
  return ProfileError(field, (field.empty() ? std::string("/") : field) + ": " + problem);
}

std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string fmt_g3(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// A profile's efficiency where its figures fix it (issue 44: runs use the calibrated devices):
// with "calibration" figures it is their least-squares fit, to three significant digits; with
// "derived_from" it is the named calibrated built-in's efficiency, and so is its overhead.
void check_calibrated(const DeviceProfile& p, const nlohmann::json& j) {
  const auto figures = calibration_figures(j);
  if (const auto fit = fitted_efficiency(p, figures); fit && fmt_g3(*fit) != fmt_g3(p.efficiency))
    throw at("/efficiency", "expected the fit to the profile's " + std::to_string(figures.size()) +
                                " calibration figures, " + fmt_g3(*fit) +
                                " (runs use the fit; `stalesim profiles` shows each figure's error), got " +
                                num(p.efficiency));
  if (!j.contains("derived_from")) return;
  const std::string from = j["derived_from"].get<std::string>();
  for (auto text : builtin_profile_texts()) {
    const auto other = nlohmann::json::parse(text);
    if (other.value("name", "") != from || calibration_figures(other).empty() || from == p.name) continue;
    const DeviceProfile base = profile_from_json(other);
    if (base.efficiency != p.efficiency || base.overhead_us != p.overhead_us)
      throw at(base.efficiency != p.efficiency ? "/efficiency" : "/overhead_us",
               "derived from " + from + ": expected its efficiency " + num(base.efficiency) +
                   " and overhead_us " + num(base.overhead_us) + ", got " + num(p.efficiency) + " and " +
                   num(p.overhead_us));
    return;
  }
  throw at("/derived_from", "expected the name of a built-in profile with calibration figures, got " +
                                nlohmann::json(from).dump());
}

}  // namespace

const std::vector<std::string_view>& profile_keys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> v;
    for (const auto& k : kKeys) v.push_back(k.name);
    return v;
  }();
  return keys;
}

std::optional<ProfileError> profile_problem(const DeviceProfile& p) {
  const auto bad = [](std::string_view key, const std::string& expected, double got) {
    return at("/" + std::string(key), "expected a number " + expected + ", got " + num(got));
  };
  if (p.name.empty()) return at("/name", "expected a non-empty string");
  if (!(p.peak_fp32_tflops > 0) || !std::isfinite(p.peak_fp32_tflops))
    return bad("peak_fp32_tflops", "> 0", p.peak_fp32_tflops);
  if (!(p.peak_fp16_tflops >= 0) || !std::isfinite(p.peak_fp16_tflops))
    return bad("peak_fp16_tflops", ">= 0 (0: not offered)", p.peak_fp16_tflops);
  if (!(p.peak_bf16_tflops >= 0) || !std::isfinite(p.peak_bf16_tflops))
    return bad("peak_bf16_tflops", ">= 0 (0: not offered)", p.peak_bf16_tflops);
  if (!(p.memory_bandwidth_gbs >= 0) || !std::isfinite(p.memory_bandwidth_gbs))
    return bad("memory_bandwidth_gbs", ">= 0", p.memory_bandwidth_gbs);
  if (!(p.efficiency > 0 && p.efficiency <= 1)) return bad("efficiency", "in (0, 1]", p.efficiency);
  if (!(p.overhead_us >= 0) || !std::isfinite(p.overhead_us))
    return bad("overhead_us", ">= 0", p.overhead_us);
  if (p.source.empty()) return at("/source", "expected a non-empty string (where the figures come from)");
  return std::nullopt;
}

DeviceProfile profile_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw at("", "expected an object, got " + j.dump());
  std::string allowed;
  for (const auto& k : kKeys) allowed += (allowed.empty() ? "" : ", ") + std::string(k.name);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const Key& k) { return k.name == it.key(); }))
      throw at("/" + it.key(), "unknown key; allowed: " + allowed);
  for (const auto& k : kKeys) {
    const std::string key(k.name);
    if (!j.contains(key)) {
      if (k.required) throw at("/" + key, "required");
      continue;
    }
    const auto& v = j[key];
    if (key == "calibration") {
      (void)calibration_figures(j);  // throws a ProfileError naming the bad entry
      continue;
    }
    if (k.number ? !v.is_number() : !v.is_string())
      throw at("/" + key,
               std::string("expected a ") + (k.number ? "number" : "string") + ", got " + v.dump());
  }
  DeviceProfile p;
  p.name = j["name"].get<std::string>();
  p.description = j["description"].get<std::string>();
  p.peak_fp32_tflops = j["peak_fp32_tflops"].get<double>();
  p.peak_fp16_tflops = j.value("peak_fp16_tflops", 0.0);
  p.peak_bf16_tflops = j.value("peak_bf16_tflops", 0.0);
  p.memory_bandwidth_gbs = j["memory_bandwidth_gbs"].get<double>();
  p.efficiency = j["efficiency"].get<double>();
  p.overhead_us = j["overhead_us"].get<double>();
  p.source = j["source"].get<std::string>();
  if (auto problem = profile_problem(p)) throw *problem;
  check_calibrated(p, j);
  return p;
}

DeviceProfile load_profile_file(const std::string& path) {
  std::string error;
  const auto j = read_json_file(path, kMaxProfileBytes, error);
  if (!j) throw ProfileError("", path + ": " + error + " (a device profile: see stalesim profiles)");
  try {
    return profile_from_json(*j);
  } catch (const ProfileError& e) {
    throw ProfileError(e.field(), path + ": " + e.what() + " (a device profile: see stalesim profiles)");
  }
}

nlohmann::ordered_json profile_to_json(const DeviceProfile& p) {
  nlohmann::ordered_json j = {
      {"name", p.name}, {"description", p.description}, {"peak_fp32_tflops", p.peak_fp32_tflops}};
  if (p.peak_fp16_tflops > 0) j["peak_fp16_tflops"] = p.peak_fp16_tflops;
  if (p.peak_bf16_tflops > 0) j["peak_bf16_tflops"] = p.peak_bf16_tflops;
  j["memory_bandwidth_gbs"] = p.memory_bandwidth_gbs;
  j["efficiency"] = p.efficiency;
  j["overhead_us"] = p.overhead_us;
  j["source"] = p.source;
  return j;
}

double peak_tflops(const DeviceProfile& p, Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return p.peak_fp16_tflops;
    case Precision::kBf16:
      return p.peak_bf16_tflops;
    case Precision::kFp32:
      break;
  }
  return p.peak_fp32_tflops;
}

const std::vector<DeviceProfile>& builtin_profiles() {
  static const std::vector<DeviceProfile> profiles = [] {
    std::vector<DeviceProfile> v;
    for (auto text : builtin_profile_texts()) {
      try {
        v.push_back(profile_from_json(nlohmann::json::parse(text)));
      } catch (const std::exception& e) {
        throw std::logic_error(std::string("a built-in profile (models/profiles/) is malformed: ") +
                               e.what());
      }
    }
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
