#include "sim/worker/jitter.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/file_read.hpp"

namespace stalesim {

namespace {
constexpr double kMinNormalFactor = 1e-3;
constexpr double kMaxTraceMs =
    1e9;  // about 11.6 days: keeps times inside SimTime with room for factors  //
          // normal draws are clipped here (DESIGN.md section 3: "clipped positive")
}  // namespace

std::vector<double> read_iteration_trace(const std::string& path) {
  std::string why;
  const auto text = read_regular_file(path, kMaxTraceBytes, why);
  if (!text) throw ScenarioError(fmt::format("{}: cannot read the jitter trace: {}", path, why));
  std::istringstream in(*text);
  std::vector<double> out;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || !std::isfinite(v) || !(v > 0) || v > kMaxTraceMs)
        throw ScenarioError(
            fmt::format("{}:{}: expected an iteration time in ms (a number > 0 and <= {:g}), got \"{}\"",
                        path, lineno, kMaxTraceMs, word));
      out.push_back(v);
    }
  }
  if (out.empty()) throw ScenarioError(fmt::format("{}: the jitter trace holds no iteration time", path));
  return out;
}

JitterSampler::JitterSampler(const JitterSpec& spec, const std::string& where) : spec_(spec) {
  if (spec_.type != JitterType::kTrace) return;
  try {
    trace_ms_ = read_iteration_trace(spec_.path);
  } catch (const ScenarioError& e) {
    throw ScenarioError(fmt::format("{}/path: {}", where, e.what()));
  }
  double sum = 0;
  for (double t : trace_ms_) sum += t;  // fixed order
  trace_mean_ms_ = sum / static_cast<double>(trace_ms_.size());
}

double JitterSampler::sample_ns(double base_ns, Rng& rng) const {
  switch (spec_.type) {
    case JitterType::kLognormal: {
      if (!(spec_.sigma > 0)) return base_ns;
      const double s = spec_.sigma;
      return base_ns * rng.lognormal(-0.5 * s * s, s);  // mean exp(mu + s^2 / 2) = 1
    }
    case JitterType::kNone:
      return base_ns;
    case JitterType::kConstant:
      return base_ns * spec_.factor;
    case JitterType::kNormal:
      return base_ns * std::max(kMinNormalFactor, rng.normal(1.0, spec_.cv));
    case JitterType::kExponential:
      return base_ns * (spec_.shift + rng.exponential(1.0 - spec_.shift));
    case JitterType::kGamma: {  // shape k = 1 / cv^2, scale cv^2: mean 1, variance cv^2
      const double v = spec_.cv * spec_.cv;
      return base_ns * rng.gamma(1.0 / v, v);
    }
    case JitterType::kTrace:
      break;
  }
  // trace: one recorded time, drawn uniformly
  const double ms = trace_ms_[static_cast<size_t>(rng.below(trace_ms_.size()))];
  return spec_.scale == TraceScale::kRelative ? base_ns * ms / trace_mean_ms_ : ms * 1e6;
}

double JitterSampler::mean_factor() const {
  if (spec_.type == JitterType::kConstant) return spec_.factor;
  return 1.0;  // every other kind has mean 1 by construction (normal: before clipping)
}

double JitterSampler::variance_factor() const {
  const JitterType t = spec_.type;
  if (t == JitterType::kLognormal)
    return std::expm1(spec_.sigma * spec_.sigma);  // (e^{s^2} - 1) e^{2mu + s^2}
  if (t == JitterType::kNormal || t == JitterType::kGamma) return spec_.cv * spec_.cv;
  if (t == JitterType::kExponential) return (1.0 - spec_.shift) * (1.0 - spec_.shift);
  if (t == JitterType::kTrace) {
    double ss = 0;
    for (double x : trace_ms_) ss += (x / trace_mean_ms_ - 1.0) * (x / trace_mean_ms_ - 1.0);
    return ss / static_cast<double>(trace_ms_.size());
  }
  return 0.0;
}

}  // namespace stalesim
