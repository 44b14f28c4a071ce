#include "models/profile_calibration.hpp"

#include <cmath>

namespace stalesim {

const std::vector<std::string_view>& builtin_profile_texts();  // generated from models/profiles/*.json

namespace {

ProfileError bad(size_t i, const std::string& key, const std::string& problem) {
  const std::string field = "/calibration/" + std::to_string(i) + (key.empty() ? "" : "/" + key);
  return ProfileError(field, field + ": " + problem);
}

// The iteration time (seconds) of b samples of F forward FLOPs on p at `efficiency`.
double iteration_s(const DeviceProfile& p, const CalibrationFigure& f, double efficiency) {
  return 3.0 * f.forward_flops * static_cast<double>(f.batch) / (p.peak_fp32_tflops * 1e12 * efficiency) +
         p.overhead_us * 1e-6;
}

}  // namespace

std::vector<CalibrationFigure> calibration_figures(const nlohmann::json& profile) {
  std::vector<CalibrationFigure> out;
  if (!profile.is_object() || !profile.contains("calibration")) return out;
  const auto& list = profile["calibration"];
  if (!list.is_array())
    throw ProfileError("/calibration", "/calibration: expected an array, got " + list.dump());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    if (!e.is_object()) throw bad(i, "", "expected an object, got " + e.dump());
    for (auto it = e.begin(); it != e.end(); ++it)
      if (it.key() != "source" && it.key() != "model" && it.key() != "forward_flops" && it.key() != "batch" &&
          it.key() != "images_per_s")
        throw bad(i, it.key(), "unknown key; allowed: source, model, forward_flops, batch, images_per_s");
    CalibrationFigure f;
    for (const char* key : {"source", "model"}) {
      if (!e.contains(key) || !e[key].is_string() || e[key].get<std::string>().empty())
        throw bad(i, key, "expected a non-empty string");
    }
    f.source = e["source"].get<std::string>();
    f.model = e["model"].get<std::string>();
    for (const char* key : {"forward_flops", "images_per_s"}) {
      if (!e.contains(key) || !e[key].is_number() || !(e[key].get<double>() > 0) ||
          !std::isfinite(e[key].get<double>()))
        throw bad(i, key, "expected a number > 0");
    }
    f.forward_flops = e["forward_flops"].get<double>();
    f.images_per_s = e["images_per_s"].get<double>();
    if (!e.contains("batch") || !e["batch"].is_number_integer() || e["batch"].get<int64_t>() < 1)
      throw bad(i, "batch", "expected an integer >= 1");
    f.batch = e["batch"].get<int64_t>();
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// The document of the built-in profile `name` (models/profiles/NAME.json); null when there is none.
nlohmann::json builtin_document(std::string_view name) {
  for (auto text : builtin_profile_texts()) {
    auto j = nlohmann::json::parse(text);
    if (j.value("name", "") == name) return j;
  }
  return nullptr;
}

}  // namespace

std::vector<CalibrationFigure> builtin_calibration(std::string_view name) {
  return calibration_figures(builtin_document(name));
}

std::string derived_from(const nlohmann::json& profile) {
  return profile.is_object() && profile.contains("derived_from") && profile["derived_from"].is_string()
             ? profile["derived_from"].get<std::string>()
             : std::string();
}

std::string builtin_derived_from(std::string_view name) { return derived_from(builtin_document(name)); }

double predicted_images_per_s(const DeviceProfile& p, const CalibrationFigure& f, double efficiency) {
  return static_cast<double>(f.batch) / iteration_s(p, f, efficiency);
}

std::optional<double> fitted_efficiency(const DeviceProfile& p,
                                        const std::vector<CalibrationFigure>& figures) {
  if (figures.empty()) return std::nullopt;
  double uv = 0, uu = 0;  // in the figures' order (a fixed summation order)
  for (const auto& f : figures) {
    const double t = static_cast<double>(f.batch) / f.images_per_s;
    const double u = 3.0 * f.forward_flops * static_cast<double>(f.batch) / (p.peak_fp32_tflops * 1e12 * t);
    const double v = (t - p.overhead_us * 1e-6) / t;
    uv += u * v;
    uu += u * u;
  }
  return uu / uv;  // 1 / x
}

}  // namespace stalesim
