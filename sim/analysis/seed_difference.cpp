#include "sim/analysis/seed_difference.hpp"

#include <cmath>

namespace stalesim {

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Sample standard deviation; 0 for fewer than 2 values (as papers_claims.py's sd).
double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

}  // namespace

std::string difference_verdict(double d, const std::optional<double>& se) {
  if (!se || !std::isfinite(d)) return "within 2 SE";
  if (d > 2 * *se) return "A higher";
  if (d < -2 * *se) return "A lower";
  return "within 2 SE";
}

SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b) {
  SeedDifference s;
  s.n_a = a.size();
  s.n_b = b.size();
  s.mean_a = mean_of(a);
  s.mean_b = mean_of(b);
  s.d = s.mean_a - s.mean_b;
  if (a.size() >= 2 && b.size() >= 2) {
    const double sa = sd_of(a), sb = sd_of(b);
    s.se = std::sqrt(sa * sa / static_cast<double>(a.size()) + sb * sb / static_cast<double>(b.size()));
  }
  s.verdict = difference_verdict(s.d, s.se);
  return s;
}

}  // namespace stalesim
